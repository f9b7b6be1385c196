"""Issue 39: what the class got wrong. A class of exercise 3's kept wrong versions (``grader/mistakes.py``)
and the reference, graded as learners' submissions are (``workflow.autograde``: nbgrader's pipeline,
the sandbox where bubblewrap works); ``python -m grader report`` must then count, per scenario,
exactly the learners whose check the grader failed (each submission's checks judged again here by
the grader's own ``verdicts.run`` and ``verdicts.failed_checks``, and its lost points by nbgrader's
scores), name each scenario's lesson section, and name a hidden check only by its title."""
import csv
import shutil
import subprocess
import sys

import nbformat
import pytest

from grader import records, report, selftest, verdicts, workflow
from grader.build import ROOT, nbgrader_env
from grader.devices import grading_device
from grader.mistakes import MISTAKES
from grader.sandbox import check_available

EXERCISE = "ex3_freeing"
COPIED = ("minigrad", "coursekit", "grader", "solutions", "exercises")


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """(course root, {student: (what it is, the solution cells it submitted)}): the reference and each
    wrong version, collected and autograded in a scratch copy of the course."""
    root = tmp_path_factory.mktemp("report") / "course"
    for folder in COPIED:
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "course").mkdir()
    shutil.copy(ROOT / "course" / "README.md", root / "course" / "README.md")
    workflow.register(root, [EXERCISE])
    made = {student: made for student, made in selftest.submissions(root, EXERCISE).items()
            if student == "reference" or student.startswith("wrong")}
    for student, (_, notebook) in made.items():
        folder = root / ".course" / "submitted" / student / EXERCISE
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{EXERCISE}.ipynb")
    workflow.autograde(EXERCISE, workers=2, root=root, progress=lambda line: None, sandbox=check_available() is None)
    return root, {student: (what, verdicts.solution_cells(notebook)) for student, (what, notebook) in made.items()}


def failing_checks(root, submitted):
    """{student: [(test, title), ...] of the checks the grader fails}, judged again here, as
    ``verdicts.compare`` judges: torch's results of the reference against each submission's run."""
    folder = root / "solutions" / EXERCISE
    source = nbformat.read(folder / f"{EXERCISE}.ipynb", as_version=4)
    expected = verdicts.expected_results(folder, f"{EXERCISE}.ipynb", root / ".course" / "expected-here.json",
                                         grading_device(False))
    failing = {}
    for student, (_, solutions) in submitted.items():
        actual = verdicts.run(folder, verdicts.plan(source, solutions), "minigrad")
        failing[student] = [(test, title) for test, want in expected.items() if not test.startswith("_")
                            for _, title, *_ in verdicts.failed_checks(want, actual.get(test))]
    return expected, failing


def test_the_report_counts_exactly_what_the_grader_failed_for_each_wrong_version(graded_class, tmp_path):
    root, submitted = graded_class
    expected, failing = failing_checks(root, submitted)
    assert not failing["reference"]
    scores = {row["student"]: row for row in workflow.scores(EXERCISE, root)}
    for student, (what, _) in submitted.items():
        assert scores[student]["status"] == "graded", (what, scores[student]["reason"])
        lost = {test for test, points in scores[student]["tests"].items() if not points}
        assert lost == {test for test, _ in failing[student]}, what  # nbgrader's points agree with the checks
    for number, (what, *_, visible_test) in enumerate(MISTAKES[EXERCISE], 1):
        assert visible_test in {test for test, _ in failing[f"wrong{number:02d}"]}, what

    found, not_graded = report.scenarios(EXERCISE, root)
    assert not_graded == 0
    assert [(s.test, s.title, s.hidden, s.graded, sorted(s.failing)) for s in found] == [
        (test, title, test.endswith("-hidden"), len(submitted),
         sorted(student for student, checks in failing.items() if (test, title) in checks))
        for test, want in expected.items() if not test.startswith("_") for title, *_ in want["checks"]]
    for scenario in found:  # each names the lesson section it comes from, and a visible one how it failed
        assert scenario.lesson and scenario.question, scenario.title
        if scenario.hidden:
            assert not scenario.differences and scenario.common() == "(hidden)"
        else:
            assert sum(scenario.differences.values()) == len(scenario.failing), scenario.title

    lines = report.lines(EXERCISE, found, not_graded)
    assert lines[0] == f"{EXERCISE}: {len(submitted)} graded submissions"
    for line, scenario in zip(lines[2:], found, strict=True):
        share = f"{len(scenario.failing)}/{len(submitted)} ({len(scenario.failing) / len(submitted):.0%})"
        assert line.startswith(scenario.test) and f"  {share}  " in line, line


def test_report_writes_the_table_a_csv_a_figure_and_a_notebook_with_no_learner_text(graded_class):
    """The README's `./run grader report EXERCISE`, in the scratch course: what it prints, and where."""
    root, submitted = graded_class
    done = subprocess.run([sys.executable, "-m", "grader", "report", EXERCISE], cwd=root, env=nbgrader_env(root),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    state = root / ".course"
    paths = [state / f"{EXERCISE}-report.{suffix}" for suffix in ("csv", "png", "ipynb")]
    found, _ = report.scenarios(EXERCISE, root)
    assert done.stdout.splitlines() == report.lines(EXERCISE, found, 0) + [
        f"wrote {paths[0]}, {paths[1]} and {paths[2]} (in the instructor's lab: File → Open from Path…)"]
    with open(paths[0], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["test"], row["scenario"], int(row["failing"])) for row in rows] == [
        (s.test, s.title, len(s.failing)) for s in found]
    assert all(row["first_differences"] == "(hidden)" for row in rows if row["hidden"] == "True")
    assert paths[1].read_bytes().startswith(b"\x89PNG")
    made = nbformat.read(paths[2], as_version=4)
    assert made.cells[-1].outputs[0]["data"]["image/png"]
    written = paths[0].read_text() + paths[2].read_text()
    for what, part, right, wrong, _ in MISTAKES[EXERCISE]:  # no line of what a learner wrote
        assert not [line for line in wrong.splitlines() if len(line.strip()) > 12 and line.strip() in written], what


def test_hidden_checks_are_kept_only_by_their_title(graded_class):
    root, _ = graded_class
    kept = records.read_checks(workflow.course_api(root).coursedir.db_url, EXERCISE)
    hidden = [check for checks in kept.values() for check in checks if check.hidden]
    assert hidden and any(not check.passed for check in hidden)
    assert all(check.difference == check.raised == "" for check in hidden)


def test_a_place_or_an_exception_the_learner_named_is_not_kept():
    """A key only the learner's result has, an exception class of the learner's: not in the gradebook."""
    expected = {"test-a": {"checks": [["keys", [{"grad": 1}], False, []], ["raises", [1], False, []]]}}
    actual = {"test-a": {"checks": [["keys", [{"grad": 1, "my secret answer": 2}], False, []],
                                    ["raises", [["error", "MySecretAnswerError", "no"]], False, []]], "error": None}}
    kept = report.kept_checks(expected, actual, [])
    assert [(check.passed, check.difference, check.raised) for check in kept] == [
        (False, report.WHOLE, ""), (False, "[0]", "an exception of its own class")]
