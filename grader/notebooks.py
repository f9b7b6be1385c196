"""Exercise notebooks from text: grader/exercises/<id>.py holds the prose and the tests, the marked
parts of minigrad hold the solutions. A spec is a Python file cut into cells by header lines:

    # %% markdown              prose (each line's leading "# " is dropped)
    # %% code                  a code cell the learner may edit
    # %% locked NAME           a read-only code cell (nbgrader locks it)
    # %% part NAME             the solution cell of the marked part NAME (its body in the spec is empty)
    # %% answer NAME           a solution cell written in the spec, for an answer that is not part of
                               minigrad (its body marks the solution with nbgrader's ### BEGIN/END SOLUTION)
    # %% tests NAME V+H PART...
                               graded tests: visible checks worth V points, then hidden ones (between
                               nbgrader's HIDDEN TESTS markers) worth H, built as two cells — NAME and
                               NAME-hidden — so a failing visible check reaches the learner's feedback
                               in full while a hidden one shows only its title (``NAME V``: no hidden).
                               The visible scenarios' definitions go in a locked cell before them,
                               NAME-scenarios: the graded cell holds only the ``check(...)`` calls, all
                               that Validate and the feedback show of it. The hidden cell's release
                               keeps a note naming its checks (their titles: literal strings), which
                               Validate lists as still to run. PART...: the parts (or answers)
                               the visible checks' scenarios call, which the test cell names on its
                               first line (``coursekit.testing.PARTS``) and a failing check's report
                               names, so that a learner knows where to look
    # %% tests NAME V+H from-reference PART...
                               the same, for checks that run a program the learner writes (a training
                               loop) with either library: in Validate, torch's side of the visible
                               checks is not run with the learner's program but read from the
                               reference's results (``verdicts.stage_expectations``), as grading does
    # %% requires MODULE ...   no cell: the modules the exercise needs beyond the course's own (an
                               optional extra's), kept in the notebook's metadata; where one is
                               missing, grading says so instead of grading (verdicts.unmet_requirements)
"""
import ast
import re

import nbformat

from coursekit.testing import PARTS

from .parts import solution_cell

HIDDEN_START = "### BEGIN HIDDEN TESTS"
HIDDEN_NOTE = "# Hidden tests ({points}): they run when your work is graded; your feedback names each that fails:\n"
HIDDEN_TITLE = "#   {title!r}\n"
FROM_REFERENCE = "from-reference"
# The first code cell of every exercise: a learner sees at once which torch and device, and which
# minigrad, the notebook runs (the exercise's staged copy, beside the notebook, holds the stubs).
SETUP_CHECK = """\
# Check my setup: run this cell first.
import os

import torch

import minigrad

print("torch   ", torch.__version__)
print("CUDA    ", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no (the CPU is enough)")
staged = os.path.dirname(minigrad.__file__) == os.path.join(os.getcwd(), "minigrad")
print("minigrad", os.path.dirname(minigrad.__file__),
      "(this exercise's own copy: good)" if staged else "-- NOT this exercise's copy: open the notebook from its folder")"""
HEADER = re.compile(r"^# %% (?P<kind>markdown|code|locked|part|answer|tests|requires)(?: (?P<args>.*))?$", re.M)


def cells_of(spec):
    """(kind, args, body) for each cell of a spec's text."""
    headers = list(HEADER.finditer(spec))
    for header, following in zip(headers, headers[1:] + [None]):
        body = spec[header.end():following.start() if following else len(spec)].strip("\n")
        yield header["kind"], (header["args"] or "").split(), body


def _nbgrader(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _test_cells(name, points, body, options, answers):
    visible_points, _, hidden_points = points.partition("+")
    visible, marker, hidden = body.partition(HIDDEN_START)
    if bool(marker) != bool(hidden_points):
        raise ValueError(f"tests {name} {points}: hidden points need a hidden block, and a hidden block points")
    parts = [option for option in options if option != FROM_REFERENCE]
    if not parts or set(parts) - set(answers):
        raise ValueError(f"tests {name} {points}: name the parts its checks exercise, of {sorted(answers)}: {parts}")
    scenarios, checks = _split_checks(visible.rstrip("\n"))
    checks = f"{PARTS}{', '.join(parts)}\n{checks}"
    cells = [nbformat.v4.new_code_cell(scenarios, id=f"{name}-scenarios", metadata=_nbgrader(
        f"{name}-scenarios", locked=True))] if scenarios else []
    cells.append(nbformat.v4.new_code_cell(checks, id=name, metadata=_nbgrader(
        name, grade=True, locked=True, points=int(visible_points))))
    if FROM_REFERENCE in options:
        cells[-1].metadata["minigrad"] = {"torch's side": "reference"}
    if marker:
        note = HIDDEN_NOTE.format(points=f"{hidden_points} point{'' if hidden_points == '1' else 's'}") + "".join(
            HIDDEN_TITLE.format(title=title) for title in check_titles(hidden, f"tests {name}'s hidden block"))
        cells.append(nbformat.v4.new_code_cell(note + marker + hidden, id=f"{name}-hidden", metadata=_nbgrader(
            f"{name}-hidden", grade=True, locked=True, points=int(hidden_points))))
    return cells


def check_titles(source, where):
    """The titles of the ``check(...)`` calls in ``source``, in order; each a literal string (a
    hidden check's title is all that the learner sees of it)."""
    titles = []
    calls = [node for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"]
    for node in sorted(calls, key=lambda call: (call.lineno, call.col_offset)):
        if not (node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            raise ValueError(f"{where}: a check's title is not a literal string: {ast.unparse(node)[:80]}")
        titles.append(node.args[0].value)
    return titles


def _split_checks(source):
    """(definitions, checks): the trailing top-level statements that call ``check``, with the comment
    lines just above them, and what comes before."""
    statements = ast.parse(source).body
    first = len(statements)
    while first and any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"
                        for node in ast.walk(statements[first - 1])):
        first -= 1
    if first == len(statements):
        raise ValueError(f"a tests cell ends with its check(...) calls:\n{source}")
    lines = source.splitlines()
    start = statements[first].lineno - 1
    while start and lines[start - 1].startswith("#"):
        start -= 1
    return "\n".join(lines[:start]).strip("\n"), "\n".join(lines[start:])


def build_notebook(spec, parts_by_name):
    """The nbgrader source notebook of one exercise; cell ids are fixed so rebuilding changes nothing."""
    cells, requires = [], []
    answers = [args[0] for kind, args, _ in cells_of(spec) if kind in ("part", "answer")]
    for index, (kind, args, body) in enumerate(cells_of(spec)):
        if kind == "requires":
            requires += args
            continue
        if kind == "markdown":
            text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
            cell = nbformat.v4.new_markdown_cell(text, id=f"text-{index}")
        elif kind == "code":
            cell = nbformat.v4.new_code_cell(body, id=f"code-{index}")
        elif kind == "locked":
            cell = nbformat.v4.new_code_cell(body, id=args[0], metadata=_nbgrader(args[0], locked=True))
        elif kind == "part":
            grade_id = args[0].replace(".", "-")
            cell = nbformat.v4.new_code_cell(solution_cell(parts_by_name[args[0]]), id=grade_id,
                                             metadata=_nbgrader(grade_id, solution=True))
        elif kind == "answer":
            if "### BEGIN SOLUTION" not in body:
                raise ValueError(f"answer {args[0]}: the reference goes between nbgrader's solution markers")
            cell = nbformat.v4.new_code_cell(body, id=args[0], metadata=_nbgrader(args[0], solution=True))
        else:
            cells += _test_cells(args[0], args[1], body, args[2:], answers)
            continue
        cells.append(cell)
        if len(cells) == 1:  # after the title
            cells.append(nbformat.v4.new_code_cell(SETUP_CHECK, id="check-setup"))
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"}}
    if requires:
        metadata["minigrad"] = {"requires": requires}
    notebook = nbformat.v4.new_notebook(cells=cells, metadata=metadata)
    nbformat.validate(notebook)
    return notebook
