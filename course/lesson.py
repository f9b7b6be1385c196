"""The lessons' tools: ``predict`` (the learner's guess, checked against what torch does),
``side_by_side`` (one scenario run with torch and with minigrad, shown as two aligned columns) and
``picture`` (the graph a scenario builds, drawn once both libraries agree on it); ``attempt`` and
``saved`` make an error and a node's saved tensors into values a column can show; ``source`` is
minigrad's code as the lessons print it.

A scenario is a function of the library, ``scenario(torch)``, that returns what to look at: a dict
of labelled values (tensors, nodes, errors, numbers, strings), or a single value. Written once, it
runs with ``torch`` and with ``minigrad``, as the tests run everything.
"""
import ast
import inspect
import math
import sys
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import minigrad
from coursekit import viz
from minigrad import releases
from coursekit.testing import nearly_equal, plain
from coursekit.viz.graph import saved_entries

WIDTH = 34  # characters per column


def outcome(scenario, *args):
    """What ``scenario(torch, *args)`` does: its result, or the error it raises (an exception object)."""
    try:
        return scenario(torch, *args)
    except Exception as error:  # noqa: BLE001 - the error is the outcome being predicted
        return error


def predict(answer, scenario, *args, binary=False):
    """Check the learner's ``answer`` against what torch does with ``scenario``: which error ("error: "
    and key words of its message, separated by commas: "error: version, modified"), the value it
    returns (numbers and lists of numbers within rounding, a node's name), or "works" when it
    returns nothing. A question that asks only whether it works (``binary=True``) takes "works" and
    "error"; any other takes them as a first step and asks for the value or the error's words.
    Prints feedback; an unanswered ``...`` gets a nudge."""
    if answer is Ellipsis:
        print("Your turn: replace ... with your prediction (a value, \"error\", \"error: key words\" or "
              "\"works\") and run this cell.")
        return
    happened = outcome(scenario, *args)
    said = describe(happened)
    failed = isinstance(happened, Exception)
    if isinstance(answer, str) and _kind(answer) in ("error", "works") and not failed:
        said = "works" if happened is None else f"works, and gives {said}"
    if not binary and _kind(answer) == "error" and failed:
        print(f"An error, yes. Which one? Say it with key words of its message: \"error: word, word\". torch: {said}")
    elif not binary and _kind(answer) == "works" and not failed and happened is not None:
        print(f"It works, yes. What does it give? torch: {said}")
    elif _matches(answer, happened):
        print(f"Right. torch: {said}")
    elif _kind(answer) == "error:" and isinstance(happened, Exception):
        missing = [word for word in _key_words(answer) if word not in _error_text(happened)]
        print(f"An error, yes, but not with {', '.join(map(repr, missing))} in it. torch: {said}\n"
              "Keep your guess in mind: the next cells show why.")
    else:
        print(f"Not what torch does. You said {answer!r}; torch: {said}\n"
              "Keep your guess in mind: the next cells show why.")


def _kind(answer):
    """"error", "works", "error:" (which error), or None (a value)."""
    if not isinstance(answer, str):
        return None
    word = answer.strip().lower()
    return "error:" if word.startswith("error:") else word if word in ("error", "works") else None


def _key_words(answer):
    return [word.strip().lower() for word in answer.split(":", 1)[1].split(",") if word.strip()]


def _error_text(error):
    return f"{type(error).__name__}: {error}".lower()


def _matches(answer, happened):
    failed = isinstance(happened, Exception)
    kind = _kind(answer)
    if kind in ("error", "works"):
        return failed == (kind == "error")
    if kind == "error:":
        return failed and all(word in _error_text(happened) for word in _key_words(answer))
    if failed:
        return isinstance(answer, str) and answer in (type(happened).__name__, str(happened).split("\n")[0])
    return nearly_equal(_data(answer), _data(happened), rel=1e-4, abs_=1e-6)


def _data(value):
    """Plain data to compare a prediction with: a tensor is its list of numbers, a node its name."""
    if hasattr(value, "next_functions") and hasattr(value, "name"):
        return describe(value)
    data = plain(value)
    return data[1] if isinstance(data, tuple) and len(data) == 2 and data[0] == "tensor" else data


def side_by_side(scenario, *args):
    """Run ``scenario`` with torch and with minigrad and print what each gave, row by row, in two
    columns. minigrad is meant to do exactly what torch does: if it does not, this raises (it is
    also how the course's tests check the lessons). An error too long for its column is written
    out in full under the table, once: the message is often the point."""
    results = {lib.__name__: _rows(_run(scenario, lib, *args)) for lib in (torch, minigrad)}
    labels = list(dict.fromkeys([*results["torch"], *results["minigrad"]]))
    label_width = max([len(label) for label in labels] + [0])
    print(f"{'':{label_width}}  {'torch':{WIDTH}}  minigrad")
    different, in_full = [], {}
    for label in labels:
        ours, theirs = results["minigrad"].get(label), results["torch"].get(label)
        same = nearly_equal(plain(ours), plain(theirs))
        print(f"{label:{label_width}}  {_cell(theirs):{WIDTH}}  {_cell(ours)}{'' if same else '   <- differs'}")
        if not same:
            different.append(label)
        for value in (theirs, ours):
            if isinstance(value, BaseException) and len(describe(value)) > WIDTH:
                in_full.setdefault(describe(value), []).append(label)
    for text, where in in_full.items():
        print(textwrap.fill(text, width=100, initial_indent=f"\n{', '.join(dict.fromkeys(where))}: ",
                            subsequent_indent="    "))
    if different:
        _differs(f"minigrad differs from torch in: {', '.join(different)}")


def _differs(message):
    """minigrad differs from the installed torch. For a release minigrad follows that is a bug, which
    stops the lesson (and the course's tests); for another release (a newer torch may word an error
    differently) the lesson says so and goes on: the difference is not the learner's doing."""
    if releases.FOLLOWED:
        raise AssertionError(message)
    first, last = (".".join(map(str, release)) for release in releases.SUPPORTED)
    print(f"\n{message}\n(minigrad follows torch {first} to {last}; yours, {torch.__version__}, differs here: "
          "the lesson goes on.)")


def attempt(fn, *args):
    """What ``fn(*args)`` does: its result, or the error it raises — so that an error can be one
    row of a side-by-side run, next to the values computed before and after it."""
    try:
        return fn(*args)
    except Exception as error:  # noqa: BLE001 - the error is the value to show
        return error


def saved(node):
    """What ``node`` (a ``grad_fn`` of either library) keeps for its backward, in words: the saved
    tensors by name, with "(freed)" or "(edited in place)" once backward can no longer use them,
    or "nothing". torch shows the same through ``node._saved_<name>``, which raises once freed."""
    if node is None:
        return "no node"
    states = {"alive": "", "freed": " (freed)", "modified": " (edited in place)"}
    return ", ".join(entry.name + states[entry.state] for entry in saved_entries(node)) or "nothing"


def picture(scenario, *roots, title=None):
    """Draw the backward graph below ``roots`` that ``scenario`` builds. ``scenario(torch)`` returns
    a dict of named tensors (the picture labels them by these names) and ``roots`` are names in it.
    The picture is torch's graph; minigrad's must be described the same (``viz.describe``: nodes,
    edges, saved tensors alive or freed, small values), or this raises."""
    graphs = {}
    for lib in (torch, minigrad):
        named = scenario(lib)
        tensors = {name: value for name, value in named.items() if isinstance(value, (torch.Tensor, minigrad.Tensor))}
        graphs[lib.__name__] = viz.describe(*(named[root] for root in roots), names=tensors)
    if graphs["torch"] != graphs["minigrad"]:
        _differs(f"minigrad's graph differs from torch's:\ntorch:    {graphs['torch']}\nminigrad: {graphs['minigrad']}")
    viz.draw(graphs["torch"], title=title)
    plt.show()


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
    """A value as a learner reads it: tensors as rounded lists, nodes by name (torch's
    ``torch::autograd::`` left out), errors by type and first line, text as it is; lists and tuples
    item by item."""
    if isinstance(value, BaseException):
        first = str(value).split("\n")[0]
        return f"{type(value).__name__}: {first}"
    if isinstance(value, (torch.Tensor, minigrad.Tensor)):
        return _numbers(plain(value)[1])
    if hasattr(value, "next_functions") and hasattr(value, "name"):
        return value.name().removeprefix("torch::autograd::")
    if isinstance(value, float):
        return _numbers(value)
    if isinstance(value, str):
        return value
    if type(value) in (list, tuple):
        items = ", ".join(describe(v) for v in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
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


def source(obj):
    """``obj``'s source, as ``inspect.getsource`` gives it. On a class's hub the lessons run minigrad's
    modules that hold the learners' parts compiled (hub/setup.sh), beside their text with each part
    a stub, as exercise 1 hands it out: for those, the definition is read from that text, so that a
    part shows its signature and docstring, not its answer, and the rest shows as it runs."""
    try:
        return inspect.getsource(obj)
    except (TypeError, OSError):
        module = sys.modules[obj.__module__]
        text = Path(module.__file__).with_name(module.__name__.rpartition(".")[2] + ".py").read_text()
        node = ast.parse(text)
        for name in obj.__qualname__.split("."):
            (node,) = [child for child in node.body if getattr(child, "name", None) == name]
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        return "".join(text.splitlines(keepends=True)[first - 1:node.end_lineno])
