"""What the grading tests share (tests/test_exercises.py, test_hostile.py, test_postgres.py,
test_fresh_clone.py and the browser tests): an exercise's points, its reference answers, a
learner's submission made from the release with answers changed, and exercise 3's kept mistake,
the one the pipeline tests submit."""
import shutil

import nbformat

from grader.build import ROOT


def max_score(root, exercise):
    """The points an exercise is worth, from its source notebook."""
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in source.cells)


def reference_solutions(root, exercise):
    """The solution cells of the source notebook, without nbgrader's markers, by grade_id."""
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: _without_markers(c.source) for c in source.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def submission_like(path, change_solution, reference):
    """The notebook at ``path`` with each solution cell's code set to ``change_solution(grade_id,
    reference code, released code)``."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in reference:
            cell.source = change_solution(grade_id, reference[grade_id], cell.source)
    nbformat.write(notebook, path)


def _without_markers(code):
    return "\n".join(line for line in code.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


EXERCISE = "ex3_freeing"
"""The exercise the pipeline tests submit: small, and quick to grade."""
NOTEBOOK = f"{EXERCISE}.ipynb"
FULL = max_score(ROOT, EXERCISE)
RELEASE_PART = "BackwardFunction-_release_saved"
RIGHT, WRONG = "tuple(None if s is None else _FREED for s in self._saved)", "tuple(_FREED for s in self._saved)"


def write_submission(root, student, solutions=None, edit=None):
    """``student``'s submission of EXERCISE in the course at ``root``: the release, with the solution
    cells given ({grade_id: source}), then ``edit(folder, notebook path)`` if given."""
    folder = root / ".course" / "submitted" / student / EXERCISE
    shutil.copytree(root / "exercises" / EXERCISE, folder)
    path = folder / NOTEBOOK
    if solutions is not None:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in solutions:
                cell.source = solutions[grade_id]
        nbformat.write(notebook, path)
    if edit:
        edit(folder, path)
