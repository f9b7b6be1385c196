"""Verdicts decided outside the learner's kernel.

nbgrader gives a test cell its points when the cell runs without an error in the learner's kernel
— where the learner's code could have patched ``torch.equal`` or the test helpers. Here every test
cell is run again by ``harness.py``: once with torch and the reference solutions (the expected
results), once with minigrad and the learner's definitions; a cell earns its points when both runs
saw the same results for every check and neither raised. The gradebook then gets these points.
"""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from minigrad.testing import nearly_equal

HARNESS = Path(__file__).with_name("harness.py")
GRADED_ON = "graded-on.txt"  # in the autograded folder: the device the verdicts were decided on


def plan(source_notebook, solutions):
    """The cells the harness runs, in order: locked code, solutions (from ``solutions`` by grade_id), tests."""
    cells = []
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta:
            continue
        kind = "test" if meta.get("grade") else "solution" if meta.get("solution") else "locked"
        source = solutions.get(meta["grade_id"], "") if kind == "solution" else cell.source
        cells.append({"kind": kind, "id": meta["grade_id"], "source": source, "points": meta.get("points", 0)})
    return cells


def solution_cells(notebook_path):
    notebook = nbformat.read(notebook_path, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def run(folder, cells, library, command_wrapper=lambda argv, folder: argv, timeout=600):
    """Run the harness in ``folder``; its results by test id ({"checks": [...], "error": ...})."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=".verdict-") as scratch:
        plan_path, results_path = Path(scratch) / "plan.json", Path(scratch) / "results.json"
        plan_path.write_text(json.dumps(cells))
        harness = shutil.copy(HARNESS, scratch)  # grader/ itself is hidden from sandboxed code
        argv = [sys.executable, harness, str(plan_path), str(results_path), library]
        subprocess.run(command_wrapper(argv, folder), cwd=folder, timeout=timeout, capture_output=True)
        try:
            return json.loads(results_path.read_text())
        except (OSError, ValueError):
            return {}


def compare(expected, actual):
    """{test id: (passed, why)} — a test passes when the learner's run saw what torch's run saw."""
    verdicts = {}
    for test_id, want in expected.items():
        if test_id.startswith("_"):
            continue
        got = actual.get(test_id)
        if got is None:
            verdicts[test_id] = (False, "the checks did not run")
        elif got["error"]:
            verdicts[test_id] = (False, got["error"].splitlines()[0])
        elif len(got["checks"]) != len(want["checks"]):
            verdicts[test_id] = (False, f"{len(got['checks'])} of {len(want['checks'])} checks ran")
        else:
            wrong = [name for (name, seen), (_, wanted) in zip(got["checks"], want["checks"])
                     if not nearly_equal(seen, wanted)]
            verdicts[test_id] = (not wrong, f"scenario '{wrong[0]}' differs from PyTorch" if wrong else "")
    return verdicts


def expected_results(source_folder, exercise):
    """What torch gives, with the reference solutions (no learner code involved)."""
    notebook = source_folder / f"{exercise}.ipynb"
    reference = {k: _without_markers(v) for k, v in solution_cells(notebook).items()}
    return run(source_folder, plan(notebook, reference), "torch")


def _without_markers(code):
    return "\n".join(line for line in code.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def regrade(api, exercise, student, expected, command_wrapper=lambda argv, folder: argv):
    """Run the learner's checks outside their kernel and store the verdicts' points in the gradebook.

    Returns the notes for the failed tests ("test-id: why").
    """
    from nbgrader.api import Gradebook

    root = Path(api.coursedir.root)
    folder = root / api.coursedir.autograded_directory / student / exercise
    source = root / api.coursedir.source_directory / exercise / f"{exercise}.ipynb"
    cells = plan(source, solution_cells(folder / f"{exercise}.ipynb"))
    actual = run(folder, cells, "minigrad", command_wrapper)
    (folder / GRADED_ON).write_text(actual.pop("_device", "unknown device"))
    verdicts = compare(expected, actual)
    points = {cell["id"]: cell["points"] for cell in cells if cell["kind"] == "test"}
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
        for test_id, (passed, _) in verdicts.items():
            grade = gradebook.find_grade(test_id, exercise, exercise, student)
            grade.auto_score = points[test_id] if passed else 0
        gradebook.db.commit()
    return [f"{test_id}: {why}" for test_id, (passed, why) in verdicts.items() if not passed]
