"""Tools for differential tests: run a scenario with torch and with minigrad, compare what happened."""
import torch

import minigrad


def plain(value):
    """Tensors (of either library), errors and containers as plain Python data, comparable with ==."""
    if isinstance(value, (torch.Tensor, minigrad.Tensor)):
        return ("tensor", value.detach().cpu().tolist() if isinstance(value, torch.Tensor) else value._data.cpu().tolist())
    if hasattr(value, "next_functions") and hasattr(value, "name"):
        return ("node", value.name())
    if isinstance(value, BaseException):
        return ("error", type(value).__name__, str(value))
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value) if type(value) in (list, tuple) else tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def outcome(fn, *args):
    """What calling fn did: its result, or the exception it raised, as plain data."""
    try:
        return plain(fn(*args))
    except Exception as error:  # noqa: BLE001 - the error is the result being compared
        return plain(error)


def both(scenario, *args):
    """Run ``scenario(lib, *args)`` with torch and with minigrad; return (torch's, minigrad's) plain results."""
    return outcome(scenario, torch, *args), outcome(scenario, minigrad, *args)


def assert_same(scenario, *args, close=False):
    expected, actual = both(scenario, *args)
    if close:
        assert_close_plain(actual, expected)
    else:
        assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"


def assert_close_plain(actual, expected, rel=1e-6, abs_=1e-9):
    """== for plain data, but floats compare within tolerance."""
    if isinstance(expected, float) and isinstance(actual, float):
        assert abs(actual - expected) <= abs_ + rel * abs(expected), f"{actual} != {expected}"
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), f"{actual} != {expected}"
        for a, e in zip(actual, expected):
            assert_close_plain(a, e, rel, abs_)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), f"{actual} != {expected}"
        for key in expected:
            assert_close_plain(actual[key], expected[key], rel, abs_)
    else:
        assert actual == expected, f"{actual} != {expected}"


def graph_signature(tensor):
    """The backward graph below ``tensor`` as nested (name, [children]) tuples, walked without recursion."""
    root = tensor.grad_fn
    if root is None:
        return None
    result = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node is None or node in result:
            continue
        if expanded:
            result[node] = (node.name(), tuple(None if n is None else (result[n], i) for n, i in node.next_functions))
        else:
            stack.append((node, True))
            stack.extend((n, False) for n, _ in node.next_functions if n is not None and n not in result)
    return result[root]
