"""The lessons' two tools: ``predict`` (the learner's guess, checked against what torch does) and
``side_by_side`` (one scenario run with torch and with minigrad, shown as two aligned columns).

A scenario is a function of the library, ``scenario(torch)``, that returns what to look at: a dict
of labelled values (tensors, nodes, errors, numbers, strings), or a single value. Written once, it
runs with ``torch`` and with ``minigrad``, as the tests run everything.
"""
import math

import torch

import minigrad
from minigrad.testing import nearly_equal, plain

WIDTH = 34  # characters per column


def outcome(scenario, *args):
    """What ``scenario(torch, *args)`` does: its result, or the error it raises (an exception object)."""
    try:
        return scenario(torch, *args)
    except Exception as error:  # noqa: BLE001 - the error is the outcome being predicted
        return error


def predict(answer, scenario, *args):
    """Check the learner's ``answer`` against what torch does with ``scenario``: "error", "works"
    (no error), or the value it returns (numbers and lists of numbers within rounding). Prints
    feedback; an unanswered ``...`` gets a nudge."""
    if answer is Ellipsis:
        print("Your turn: replace ... with your prediction (a value, \"error\" or \"works\") and run this cell.")
        return
    happened = outcome(scenario, *args)
    if _matches(answer, happened):
        print(f"Right. torch: {describe(happened)}")
    else:
        print(f"Not what torch does. You said {answer!r}; torch: {describe(happened)}\n"
              "Keep your guess in mind: the next cells show why.")


def _matches(answer, happened):
    failed = isinstance(happened, Exception)
    if isinstance(answer, str) and answer.lower() in ("error", "works"):
        return failed == (answer.lower() == "error")
    if failed:
        return isinstance(answer, str) and answer in (type(happened).__name__, str(happened).split("\n")[0])
    return nearly_equal(_data(answer), _data(happened), rel=1e-4, abs_=1e-6)


def _data(value):
    """Plain data to compare a prediction with: a tensor is its list of numbers."""
    data = plain(value)
    return data[1] if isinstance(data, tuple) and len(data) == 2 and data[0] == "tensor" else data


def side_by_side(scenario, *args):
    """Run ``scenario`` with torch and with minigrad and print what each gave, row by row, in two
    columns. minigrad is meant to do exactly what torch does: if it does not, this raises (it is
    also how the course's tests check the lessons)."""
    results = {lib.__name__: _rows(_run(scenario, lib, *args)) for lib in (torch, minigrad)}
    labels = list(dict.fromkeys([*results["torch"], *results["minigrad"]]))
    label_width = max([len(label) for label in labels] + [0])
    print(f"{'':{label_width}}  {'torch':{WIDTH}}  minigrad")
    different = []
    for label in labels:
        ours, theirs = results["minigrad"].get(label), results["torch"].get(label)
        same = nearly_equal(plain(ours), plain(theirs))
        print(f"{label:{label_width}}  {_cell(theirs):{WIDTH}}  {_cell(ours)}{'' if same else '   <- differs'}")
        if not same:
            different.append(label)
    if different:
        raise AssertionError(f"minigrad differs from torch in: {', '.join(different)}")


def _run(scenario, lib, *args):
    try:
        return scenario(lib, *args)
    except Exception as error:  # noqa: BLE001 - an error is a result to show
        return error


def _rows(result):
    if isinstance(result, dict):
        return dict(result)
    return {"result": result}


def describe(value):
    """A value as a learner reads it: tensors as rounded lists, nodes by name, errors by type and first line."""
    if isinstance(value, BaseException):
        first = str(value).split("\n")[0]
        return f"{type(value).__name__}: {first}"
    if isinstance(value, (torch.Tensor, minigrad.Tensor)):
        return _numbers(plain(value)[1])
    if hasattr(value, "next_functions") and hasattr(value, "name"):
        return value.name()
    if isinstance(value, float):
        return _numbers(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (torch.Tensor, minigrad.Tensor)) or
                                                         hasattr(v, "next_functions") for v in value):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return repr(value)


def _numbers(data):
    if isinstance(data, list):
        return "[" + ", ".join(_numbers(d) for d in data) + "]"
    if isinstance(data, float):
        return "nan" if math.isnan(data) else f"{round(data, 4):g}"
    return repr(data)


def _cell(value):
    text = describe(value)
    return text if len(text) <= WIDTH else text[:WIDTH - 1] + "…"
