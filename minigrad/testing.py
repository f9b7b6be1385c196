"""Checking minigrad against PyTorch, the oracle: run one scenario with each library, compare.

Used by the test suite, the lessons and the exercises' graded tests.
"""
import linecache
import math
import sys

import torch

import minigrad


_rejected = {}  # what ``graded`` found, by the name of the definition
_with_torch = False  # whether ``both`` is running a scenario with torch (the guards stand aside)


def plain(value):
    """Tensors (of either library), nodes, errors and containers as plain Python data, comparable with ==.
    A tensor off the CPU names its device: a result on cpu is not torch's on cuda:0."""
    if isinstance(value, (torch.Tensor, minigrad.Tensor)):
        data = value.detach() if isinstance(value, torch.Tensor) else value._data
        where = () if data.device.type == "cpu" else (str(data.device),)
        return ("tensor", data.cpu().tolist(), *where)
    if isinstance(value, (torch.autograd.graph.Node, minigrad.function.Node)):  # exact nodes, no look-alike
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
    global _with_torch
    _with_torch = True
    try:
        expected = outcome(scenario, torch, *args)
    finally:
        _with_torch = False
    return expected, outcome(scenario, minigrad, *args)


def nearly_equal(actual, expected, rel=1e-6, abs_=1e-9):
    """== for plain data, but finite floats compare within tolerance; an infinity equals only itself,
    and nan equals nan (torch's nan, met by minigrad's, is the same result)."""
    if isinstance(expected, float) and isinstance(actual, float):
        if not (math.isfinite(actual) and math.isfinite(expected)):
            return actual == expected or math.isnan(actual) and math.isnan(expected)
        return abs(actual - expected) <= abs_ + rel * abs(expected)
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                and all(nearly_equal(a, e, rel, abs_) for a, e in zip(actual, expected)))
    if isinstance(expected, dict):
        return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
            nearly_equal(actual[k], expected[k], rel, abs_) for k in expected)
    return actual == expected


def assert_same(scenario, *args, close=False):
    """Same plain results from both libraries (floats within tolerance when ``close``)."""
    expected, actual = both(scenario, *args)
    same = nearly_equal(actual, expected) if close else actual == expected
    assert same, f"\ntorch:    {expected}\nminigrad: {actual}"


def graded(definition):
    """Check, in the learner's kernel, the cell that defined ``definition`` (a function or class) as
    grading will, and give it back as grading runs it. The grader's checks are staged beside each
    exercise's minigrad (``graded_code.py``, ``guards.py``: the grader's, not the engine's); where
    they are not at hand (a lesson, the test suite), the definition comes back as it is.

    First the static check: a construct grading rejects fails every check after it, so Validate
    names it before the learner submits. Then the cell's definitions made anew under the run-time
    guards, with the exercise's policy: what they deny while the checks run fails every check after
    it too, named as grading names it. Grading itself gives the definition back as it is (it
    compiled it under the guards already)."""
    try:
        import graded_code
        import guards
    except ImportError:
        return definition
    functions = [definition] if hasattr(definition, "__code__") else [
        getattr(member, "__func__", member) for member in vars(definition).values()]
    files = {f.__code__.co_filename for f in functions if hasattr(f, "__code__")}
    _rejected.pop(definition.__name__, None)
    for filename in files:
        source = "".join(linecache.getlines(filename))
        if source:
            try:
                tree = graded_code.definitions(source)
            except SyntaxError:
                continue
            reason = graded_code.violation(tree, f"the cell of {definition.__name__},")
            if reason:
                _rejected[definition.__name__] = reason
                return definition
            return _under_guards(guards, definition, functions, tree, filename)
    return definition


def _under_guards(guards, definition, functions, tree, filename):
    """``definition`` made anew from its cell's definitions ``tree`` under the grader's run-time
    guards, in a namespace of the names its cell could use. While ``check`` runs a scenario with
    torch, the guards stand aside: grading never hands the learner's code torch's objects (its torch
    run is the reference's), the learner's kernel does."""
    name = definition.__name__

    def report(construct, _filename, line):
        _rejected[name] = f"`{construct}` at the cell of {name}, line {line} is not allowed in graded code"

    policy = guards.POLICIES.get(getattr(guards, "EXERCISE", None), {})
    namespace = guards.Guards(policy, report, {filename}, sys._getframe, aside=lambda: _with_torch).namespace()
    cell_globals = next(f.__globals__ for f in functions if hasattr(f, "__globals__"))
    namespace.update({key: value for key, value in cell_globals.items()
                      if not key.startswith("__") and getattr(value, "__module__", None) != __name__})
    exec(guards.compile_graded(tree, filename), namespace)  # noqa: S102 - the learner's own cell, as grading runs it
    return namespace.get(name, definition)


def without_messages(value):
    """Plain data with each error's message left out: what an error is, not how it is worded."""
    if isinstance(value, (list, tuple)):
        if len(value) == 3 and value[0] == "error":
            return type(value)(value[:2])
        return type(value)(without_messages(v) for v in value)
    if isinstance(value, dict):
        return {k: without_messages(v) for k, v in value.items()}
    return value


def check(name, scenario, *args, message=False):
    """The graded check: ``scenario(lib)`` must give the same result with minigrad as with torch.

    Errors must be of torch's type; their wording counts only in checks with ``message=True``, so a
    wrong string costs the check that grades it, not every check that meets the error. On failure
    the message names the scenario and shows what each library did.
    """
    if _rejected:
        raise AssertionError(f"not graded:\n{next(iter(_rejected.values()))}")
    try:
        expected, actual = both(scenario, *args)
    except BaseException:  # a run-time guard's denial (guards.Denied), which no ``except Exception`` catches
        if _rejected:
            raise AssertionError(f"not graded:\n{next(iter(_rejected.values()))}") from None
        raise
    if not message:
        expected, actual = without_messages(expected), without_messages(actual)
    if not nearly_equal(actual, expected):
        raise AssertionError(f"scenario '{name}' differs from PyTorch\n  torch did:    {expected}\n"
                             f"  minigrad did: {actual}")


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
