"""Checking minigrad against PyTorch, the oracle: run one scenario with each library, compare.

Used by the test suite, the lessons and the exercises' graded tests.
"""
import ast
import inspect
import json
import linecache
import math
import os
import sys
import textwrap
import traceback

import torch

import minigrad


_rejected = {}  # what ``graded`` found, by the name of the definition
_made = []  # (namespace, what the cell defined in it) of each cell ``graded`` made anew, earliest first
_with_torch = False  # whether ``both`` is running a scenario with torch (the guards stand aside)
_raised = None
"""While a check runs its scenario, a list: the exceptions ``outcome`` caught in minigrad's run, first
first (for the report); otherwise None, so that nothing keeps an exception's frames alive."""
_LIBRARIES = tuple(os.path.dirname(path) + os.sep for path in (torch.__file__, minigrad.__file__, __file__, os.__file__))
"""Where the frames lie that a learner's traceback leaves out: theirs are the rest. (The grader's
harness adds its own file.)"""


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
        if _raised is not None and not _with_torch:
            _raised.append(error)
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
    exercise's minigrad (``inside/``: the grader's, not the engine's, with the exercise's policy in
    ``policy.json``); where they are not at hand (a lesson, the test suite), the definition comes
    back as it is.

    First the static check: a construct grading rejects fails every check after it, so Validate
    names it before the learner submits. Then the cell's definitions made anew under the run-time
    guards, with the exercise's policy: what they deny while the checks run fails every check after
    it too, named as grading names it. Grading itself gives the definition back as it is (it
    compiled it under the guards already)."""
    try:
        from inside import graded_code, guards
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

    def report(_kind, construct, _filename, line):
        _rejected[name] = f"`{construct}` at the cell of {name}, line {line} is not allowed in graded code"

    from inside.policy import POLICY_FILE

    with open(os.path.join(os.path.dirname(os.path.dirname(guards.__file__)), POLICY_FILE)) as file:
        policy = json.load(file)  # staged beside the guards, for their exercise
    namespace = guards.Guards(policy, report, {filename}, sys._getframe, aside=lambda: _with_torch).namespace()
    cell_globals = next(f.__globals__ for f in functions if hasattr(f, "__globals__"))
    namespace.update({key: value for key, value in cell_globals.items()
                      if not key.startswith("__") and getattr(value, "__module__", None) != __name__})
    # As in grading, where the learner's cells share one namespace: each sees what the others defined
    # under the guards (one class Freed, not the kernel's and a remade one), later ones included
    # (exercise 8's recompute calls rerun, a later part).
    for _, defined in _made:
        namespace.update(defined)
    before = dict(namespace)
    exec(guards.compile_graded(tree, filename), namespace)  # noqa: S102 - the learner's own cell, as grading runs it
    defined = {key: value for key, value in namespace.items() if before.get(key, namespace) is not value}
    for earlier, _ in _made:
        earlier.update(defined)
    _made.append((namespace, defined))
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


class CheckFailed(AssertionError):
    """A check that failed: its message is the whole report, shown without a traceback (IPython
    prints what ``_render_traceback_`` gives, and nbgrader's Validate shows that)."""

    def _render_traceback_(self):
        return str(self).splitlines()


def check(name, scenario, *args, message=False):
    """The graded check: ``scenario(lib)`` must give the same result with minigrad as with torch.

    Errors must be of torch's type; their wording counts only in checks with ``message=True``, so a
    wrong string costs the check that grades it, not every check that meets the error. On failure
    the message names the scenario, where the results first differ (by what the scenario recorded
    there), what each library gave there, the exception the learner's code raised, with its last
    lines of their code, and the parts the test cell exercises (its ``PARTS`` line).
    """
    global _raised
    if _rejected:
        raise CheckFailed(f"not graded: {next(iter(_rejected.values()))}")
    reference = _reference_result(name)
    _raised = []
    try:
        if reference is None:
            expected, actual = both(scenario, *args)
        else:
            expected, actual = reference[0], outcome(scenario, minigrad, *args)
    except BaseException:  # a run-time guard's denial (guards.Denied), which no ``except Exception`` catches
        if _rejected:
            raise CheckFailed(f"not graded: {next(iter(_rejected.values()))}") from None
        raise
    finally:
        raised, _raised = _raised, None
    if not message:
        expected, actual = without_messages(expected), without_messages(actual)
    if not nearly_equal(actual, expected):
        cell = "".join(linecache.getlines(sys._getframe(1).f_code.co_filename))
        raise CheckFailed(difference(name, expected, actual, [(type(e).__name__, raised_lines(e)) for e in raised],
                                     parts_of(cell), _labels_of_function(scenario)))


EXPECTATIONS = "expected.json"
"""Beside an exercise's release: torch's side of its checks that run a program the learner writes."""


def _reference_result(name):
    """torch's result of check ``name`` from the reference, as grading has it, where the exercise's
    release holds it (``expected.json`` beside the notebook, made by the grader's
    ``stage_expectations``), in a 1-tuple; else None (torch's side is run here). A check that runs a
    program the learner writes (a training loop) with either library reads torch's side there: the
    learner's program run with torch would repeat its own bugs."""
    try:
        with open(EXPECTATIONS) as file:
            made = json.load(file)
    except (OSError, ValueError):
        return None
    if name not in made.get("checks", {}):
        return None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if (made.get("torch"), made.get("device")) != (torch.__version__, device):
        raise CheckFailed(f"'{name}': torch's results for this check were made with torch {made.get('torch')} on "
                          f"{made.get('device')}, and this kernel runs torch {torch.__version__} on {device}: "
                          "run `./run lab` again, which makes them anew (or ask your instructor)")
    return (made["checks"][name],)


WIDTH = 100
"""Characters per line of a check's report."""


PARTS = "# These checks exercise: "
"""The line of a test cell (``grader/notebooks.py`` writes it from the spec) naming the parts its
checks exercise: where a check fails, the learner looks there first."""


def parts_of(source):
    """The parts a test cell's ``PARTS`` line names, in order."""
    return [part for line in source.splitlines() if line.startswith(PARTS)
            for part in line[len(PARTS):].split(", ") if part]


def labels_of(source, name):
    """What the scenario ``name`` defined in ``source`` recorded in each place of the tuple it returns
    (its last ``return`` of a tuple), as written: ``y._version``, or ``y.add_(1)`` for
    ``outcome(lambda: y.add_(1))``; None when it returns no tuple there (a dict's keys are their own
    labels). A report says "at y._version", not "at [1]"."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name), None)
    if function is None:
        return None
    returns, stack = [], list(function.body)
    while stack:  # the function's own returns, not those of functions defined in it
        node = stack.pop(0)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            returns.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    if not returns:
        return None
    return [_label(value) for value in max(returns, key=lambda node: node.lineno).value.elts]


def _label(node):
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "outcome" and node.args:
        called, *args = node.args
        if isinstance(called, ast.Lambda):
            return ast.unparse(called.body)
        return f"{ast.unparse(called)}({', '.join(ast.unparse(a) for a in args)})"
    return ast.unparse(node)


def _labels_of_function(scenario):
    """``labels_of`` for a function at hand (in the learner's kernel, whose cells' text
    ``inspect`` finds); None where its text is not to be had."""
    try:
        source = inspect.getsource(scenario)
    except (OSError, TypeError):
        return None
    return labels_of(textwrap.dedent(source), getattr(scenario, "__name__", ""))


def difference(name, expected, actual, raised=(), parts=(), labels=None):
    """A failed check in a few lines: the scenario, where its results first differ (a key, an index,
    an element of a tensor; an index of the tuple the scenario returns told by what the scenario put
    there, ``labels``), torch's and minigrad's values there, each cut to a line around where they
    differ; then, when minigrad gave an error there, the first exception of that type among
    ``raised`` (what minigrad's run raised: (type name, ``raised_lines``) pairs); then the ``parts``
    the check exercises."""
    where, want, got = first_difference(expected, actual)
    lines = [f"'{name}'", f"  minigrad differs from torch{f' at {labelled(where, labels)}' if where else ''}",
             f"  torch:    {short(want, got)}", f"  minigrad: {short(got, want)}"]
    lines += next((told for kind, told in raised if _is_error(got) and kind == got[1]), [])
    lines = [line if len(line) <= WIDTH else line[:WIDTH - 1] + "…" for line in lines]
    if parts:
        lines += textwrap.wrap(f"  parts this test exercises: {', '.join(parts)}", WIDTH,
                               subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(lines)


def labelled(where, labels):
    """``[1][0]`` as ``results[0] (result [1][0])`` where the scenario's tuple has ``results`` at 1."""
    index, _, rest = where[1:].partition("]")
    if not (labels and where.startswith("[") and index.isdigit() and int(index) < len(labels)):
        return where
    return f"{labels[int(index)]}{rest} (result {where})"


def raised_lines(error):
    """``error`` told in a few lines: its type and first line, then the last three lines it came
    through that are neither torch's nor minigrad's nor the checks' own (``coursekit``, the grader's
    harness and run-time guards, staged beside minigrad): the learner's code, and the scenario's.
    Each frame is named by its qualified name (``Mul.forward``)."""
    try:
        text = str(error).splitlines()
    except Exception:  # noqa: BLE001 - a learner's exception whose __str__ fails is told by its type
        text = []
    told = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    if isinstance(error, NotImplementedError) and not text:
        told += " (a part not written yet)"
    guards = sys.modules.get("inside.guards")
    not_theirs = _LIBRARIES + ((guards.__file__,) if guards else ())
    frames = []
    for frame, line_number in traceback.walk_tb(error.__traceback__):
        code = frame.f_code
        line = linecache.getline(code.co_filename, line_number, frame.f_globals).strip()
        if not code.co_filename.startswith(not_theirs) and line:
            frames.append(f"    in {code.co_qualname.replace('.<locals>', '')}, line {line_number}: {line}")
    return [f"  your code raised {told}", *frames[-3:]]


def first_difference(expected, actual, where=""):
    """(where, torch's part, minigrad's part) at the first place two plain results differ: a dict's
    key (torch's order), a list's index, a tensor's element (its index; its shape when shapes differ)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            if key not in actual or key not in expected:
                return f"{where}[{key!r}]", expected.get(key, "(nothing)"), actual.get(key, "(nothing)")
            if not nearly_equal(actual[key], expected[key]):
                return first_difference(expected[key], actual[key], f"{where}[{key!r}]")
    elif _is_tensor(expected) and _is_tensor(actual) and expected[2:] == actual[2:]:
        want, got = torch.tensor(expected[1], dtype=torch.float64), torch.tensor(actual[1], dtype=torch.float64)
        if want.shape != got.shape:
            return f"{where} shape".strip(), list(want.shape), list(got.shape)
        index = next(i for i, (w, g) in enumerate(zip(want.flatten().tolist(), got.flatten().tolist()))
                     if not nearly_equal(g, w))
        element = [int(i) for i in torch.unravel_index(torch.tensor(index), want.shape)] if want.dim() else []
        return f"{where} tensor element {element}".strip(), want.flatten()[index].item(), got.flatten()[index].item()
    elif (type(expected) is type(actual) and isinstance(expected, (list, tuple)) and len(expected) == len(actual)
          and not _is_tensor(expected) and not _is_error(expected)):
        for i, (want, got) in enumerate(zip(expected, actual)):
            if not nearly_equal(got, want):
                return first_difference(want, got, f"{where}[{i}]")
    return where, expected, actual


def _is_tensor(value):  # a tuple, or the list JSON made of one (the grader's results)
    return isinstance(value, (tuple, list)) and len(value) >= 2 and value[0] == "tensor"


def _is_error(value):
    return isinstance(value, (tuple, list)) and len(value) >= 2 and value[0] == "error"


def short(value, other):
    """``value`` on one line: an error as ``Type: message``, a tensor as ``tensor([...])``; a line
    too long is cut around where it first differs from ``other``'s line."""
    text, against = _line(value), _line(other)
    if len(text) <= WIDTH - 12:
        return text
    start = next((i for i, (a, b) in enumerate(zip(text, against)) if a != b), min(len(text), len(against)))
    start = max(0, min(start - 30, len(text) - (WIDTH - 14)))
    return ("…" if start else "") + text[start:start + WIDTH - 14] + ("…" if start + WIDTH - 14 < len(text) else "")


def _line(value):
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == "node":
        return f"{value[1]} (a node)"
    if _is_error(value):
        return f"{value[1]}: {value[2]}" if len(value) > 2 and value[2] else value[1]
    if _is_tensor(value):
        return f"tensor({value[1]}{''.join(f', {d}' for d in value[2:])})"
    return " ".join(repr(value).split())


def blamed(warning, caller, module):
    """Where ``warning`` points, comparable between the libraries: "library" for a line of the library's
    own code (torch blames some warnings on its own Python), "caller" for a line of the file ``caller``,
    else that file. ``module``: the library's module holding the line the warning should name; where it is
    compiled (minigrad on a class's hub) it has no frames, and the caller's line is the nearest there is."""
    if warning.filename == caller:
        return "caller" if module.__file__.endswith(".py") else "library"
    package = sys.modules[module.__name__.partition(".")[0]]
    return "library" if warning.filename.startswith(os.path.dirname(package.__file__) + os.sep) else warning.filename


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
