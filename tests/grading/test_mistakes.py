"""Plausible wrong versions of each part (``grader/mistakes.py``) and right versions in other designs
(``grader/designs.py``): each is graded through the whole pipeline, and validated, by ``python -m
grader selftest`` (``test_selftest.py``: a wrong version must lose the points of the visible test it
names, a design must keep full marks). Here: that each still fits the reference it edits, and the
cases that grading alone cannot tell (a message's wording, the capstone's unchanged script)."""
import os
import shutil

import nbformat
import pytest

from grader import selftest, verdicts
from grader.build import ROOT
from grader.devices import grading_device
from grader.designs import DESIGNS, versions
from grader.mistakes import MISTAKES, capstone_unchanged
from grader.notebooks import cells_of

CASES = [pytest.param(exercise, *case, id=f"{exercise}: {case[0]}") for exercise, cases in MISTAKES.items()
         for case in cases]


DESIGN_CASES = [pytest.param(exercise, design, replacements, id=f"{exercise}: {design}")
                for exercise in DESIGNS for design, replacements in versions(exercise).items()]


def test_every_exercise_keeps_wrong_versions():
    assert sorted(MISTAKES) == sorted(p.stem for p in (ROOT / "grader" / "exercises").glob("ex*.py"))
    assert all(len(cases) >= 10 for cases in MISTAKES.values())  # issue 34: at least 10 wrong versions each


def test_every_exercise_keeps_another_design():
    """Issue 34: at least one part of each exercise passes in a design that is not the reference's."""
    assert sorted(DESIGNS) == sorted(p.stem for p in (ROOT / "grader" / "exercises").glob("ex*.py"))


def source_of(exercise, root):
    """The exercise's source folder (staged minigrad included) copied under ``root``, its notebook, its
    reference and torch's results; skipped where this machine cannot grade it (exercise 9 without
    Triton, except on CI, which installs it)."""
    folder = root / exercise
    shutil.copytree(ROOT / "solutions" / exercise, folder)
    source = nbformat.read(folder / f"{exercise}.ipynb", as_version=4)
    unmet = None if os.environ.get("CI") else verdicts.unmet_requirements(source)
    if unmet:
        pytest.skip(unmet)
    expected = verdicts.expected_results(folder, f"{exercise}.ipynb", root / f"{exercise}.json", grading_device(False))
    return folder, source, verdicts.solution_cells(source, without_markers=True), expected


@pytest.mark.parametrize("exercise, what, part, right, wrong, failing_test", CASES)
def test_a_wrong_version_fits_its_reference_and_names_a_visible_test(exercise, what, part, right, wrong, failing_test):
    assert not failing_test.endswith("-hidden")  # issue 34: a visible check fails it, so Validate does too
    source = nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    assert verdicts.solution_cells(source, without_markers=True)[part].count(right) == 1, what
    assert failing_test in {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in source.cells}, what


@pytest.mark.parametrize("exercise, design, replacements", DESIGN_CASES)
def test_another_design_fits_its_reference(exercise, design, replacements):
    source = nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    reference = verdicts.solution_cells(source, without_markers=True)
    for part, right, other in replacements:
        assert right != other and reference[part].count(right) == 1, f"{design}: {right!r} in {part}"


def test_a_wrongly_worded_error_costs_only_the_check_that_grades_the_wording(tmp_path):
    """Exercise 3's errors are compared by type in every check and word for word in one: a learner's
    own message for a freed graph loses that one test's point, not the exercise."""
    folder, source, reference, expected = source_of("ex3_freeing", tmp_path)
    part = "BackwardFunction-_unpack"
    solutions = {**reference, part: reference[part].replace(
        "raise RuntimeError(ERR_BACKWARD_TWICE)", "raise RuntimeError('saved tensors were freed')", 1)}
    results = verdicts.compare(expected, verdicts.run(folder, verdicts.plan(source, solutions), "minigrad"))
    assert [test for test, (passed, _) in results.items() if not passed] == ["test-error-message"]


def _capstone_cells():
    """Exercise 10's setup and colleague's script, and the reference fix, run here: {name: definition}."""
    spec = (ROOT / "grader" / "exercises" / "ex10_capstone.py").read_text()
    namespace = {}
    for kind, args, body in cells_of(spec):
        if kind == "locked" and args[0] in ("setup", "broken"):
            exec(compile(body, f"<ex10 {args[0]}>", "exec"), namespace)  # noqa: S102 - the course's own cells
        elif kind == "answer" and args[0] == "fixed_train":
            exec(compile(body, "<ex10 fixed_train>", "exec"), namespace)  # noqa: S102
    return namespace


def test_the_colleagues_script_unchanged_fails_validate_and_loses_points(tmp_path):
    """Exercise 10 (issue 34): the colleague's script submitted as the fix, renamed. torch raises its
    in-place error as minigrad does; under the saved-tensor hooks that measure torch's bytes it would
    not (torch checks no version of a tensor a hook packed), so torch's side of the checks is the fixed
    script's, around which those hooks change nothing. Grading takes the points of every check the
    script runs in; Validate fails it, naming the error."""
    import torch

    import minigrad
    import minigrad.memory
    from coursekit.testing import outcome, plain

    cells = _capstone_cells()
    threads = torch.get_num_threads()
    try:
        broken = [outcome(cells["broken_train"], lib, 2, 50, 0, lambda *args: None) for lib in (torch, minigrad)]
        assert broken[0] == broken[1] and broken[0][:2] == ("error", "RuntimeError")
        assert "modified by an inplace operation" in broken[0][2] and "output 0 of Relu" in broken[0][2]
        with minigrad.memory.SavedBytes(torch):
            assert outcome(cells["broken_train"], torch, 2, 50, 0, lambda *args: None)[0] != "error"

        def fixed():
            log, layers = cells["fixed_train"](torch, 25, 50, 0, lambda *args: None)
            return plain([log, [p for layer in layers for p in layer.parameters()]])
        without_hooks = fixed()
        with minigrad.memory.SavedBytes(torch):
            assert fixed() == without_hooks
    finally:
        torch.set_num_threads(threads)  # the setup cell's one thread, for its tiny tensors

    right, wrong = capstone_unchanged()
    folder, source, reference, expected = source_of("ex10_capstone", tmp_path / "graded")
    solutions = {**reference, "fixed_train": reference["fixed_train"].replace(right, wrong, 1)}
    results = verdicts.compare(expected, verdicts.run(folder, verdicts.plan(source, solutions), "minigrad"))
    assert sorted(test for test, (passed, _) in results.items() if not passed) == sorted(
        f"{test}{hidden}" for test in ("test-training", "test-logs", "test-memory", "test-graph") for hidden in ("", "-hidden"))
    assert "RuntimeError" in results["test-training"][1]

    release = nbformat.read(ROOT / "exercises" / "ex10_capstone" / "ex10_capstone.ipynb", as_version=4)
    for cell in release.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in solutions:
            cell.source = solutions[grade_id]
    for folder in ("grader", "exercises"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    said = selftest.validated(tmp_path, "ex10_capstone", {"learner": release}, 1)["learner"]
    assert said.startswith("4 of 5 visible checks fail."), said
    assert "minigrad: RuntimeError" in said and "gradient computation has been modi" in said
