"""Issue 22, item 2: ``python -m grader selftest`` — the grading machine proves itself: each exercise's
reference gets full marks, its untouched release 0 and each kept wrong version less than full,
graded as learners' submissions are (nbgrader's pipeline, the sandbox, the verdict harness)."""
import re
import subprocess
import sys

import nbformat

from grader import selftest
from grader.__main__ import main
from grader.build import ROOT, exercise_specs, nbgrader_env
from grader.designs import versions
from grader.mistakes import MISTAKES
from grader.sandbox import check_available
from grader.verdicts import unmet_requirements

EXERCISES = [spec.stem for spec in exercise_specs(ROOT)
             if not unmet_requirements(nbformat.read(ROOT / "solutions" / spec.stem / f"{spec.stem}.ipynb", 4))]
SANDBOX = [] if check_available() is None else ["--no-sandbox"]  # tests/grading/test_sandbox.py fails CI without one


def test_this_machine_grades_every_exercise_as_it_must():
    done = subprocess.run([sys.executable, "-m", "grader", "selftest", *EXERCISES, *SANDBOX], cwd=ROOT,
                          env=nbgrader_env(ROOT), capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["exercise", "expected:"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    assert list(rows) == EXERCISES and all(row.endswith(" ok") for row in rows.values()), done.stdout
    for exercise, row in rows.items():
        assert f", 0, {len(MISTAKES[exercise])} below " in row  # expected: the reference's points, 0, each wrong version below
        designs = len(versions(exercise))
        assert not designs or f", {designs} designs " in row  # and each design at full marks
        count = len(MISTAKES[exercise])
        assert re.search(rf" {count}/{count} \(100%\) +{count}/{count} \(100%\) ", row)  # caught: graded, Validate
        assert ("bubblewrap" in row) is not bool(SANDBOX)
    assert lines[-1] == f"selftest: {len(EXERCISES)} exercises, 0 mismatches"


def test_a_machine_that_grades_wrong_says_what_and_fails(monkeypatch, capsys):
    """A "wrong version" that is in fact right keeps full marks: the selftest names it and exits 1."""
    (what, part, right, _, test), *_ = MISTAKES["ex3_freeing"]
    monkeypatch.setitem(MISTAKES, "ex3_freeing", [("a harmless rewrite", part, right, right + "  # same", test)])
    assert main(["selftest", "ex3_freeing", *SANDBOX]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[0] == "ex3_freeing" and out[1].endswith("MISMATCH")
    assert out[2:] == ["ex3_freeing: wrong version 'a harmless rewrite': full marks",
                       "ex3_freeing: wrong version 'a harmless rewrite': Validate passes it",
                       "selftest: 1 exercises, 2 mismatches -- do not grade learners on this machine until they are fixed"]


def test_an_unknown_exercise_is_refused(capsys):
    assert main(["selftest", "ex0_nothing"]) == 2
    assert capsys.readouterr().err == "no such exercise: ex0_nothing\n"


def test_the_wrong_versions_are_built_from_the_reference():
    made = selftest.submissions(ROOT, "ex3_freeing")
    wrong, designs = len(MISTAKES["ex3_freeing"]), list(versions("ex3_freeing"))
    assert list(made)[:2] == ["reference", "untouched"] and len(made) == 2 + wrong + len(designs)
    assert [what for what, _ in list(made.values())[2:2 + wrong]] == [case[0] for case in MISTAKES["ex3_freeing"]]
    assert [what for what, _ in list(made.values())[2 + wrong:]] == designs


def test_each_kind_of_mismatch_is_named():
    """What issue 22's H100 would have printed: a reference that loses a test (there, on the device),
    one that is not graded, a release that scores, a wrong version with full marks; and what issue
    34's learner met: a Validate that fails the reference, or passes a wrong version or the release."""
    def row(score, tests=None, reason="", validate="1 of 6 visible checks fail."):
        return {"status": "not graded" if reason else "graded", "score": score, "reason": reason, "tests": tests or {},
                "validate": validate}

    graded = [("reference", "reference solution", row(14.0, {"test-Mul-broadcast-hidden": 0.0, "test-Mul": 2.0})),
              ("untouched", "untouched release", row(1.0, validate=None)),
              ("wrong01", "Mul saves both inputs", row(15.0)),
              ("wrong02", "sum_to sums one dim", row("", reason="kernel died in cell 7", validate=None))]
    expected, got, mismatches = selftest.verdict(15, graded)
    assert (expected, got) == ("15, 0, 2 below 15", "14, 1, 0 below (max 15)")
    assert mismatches == ["reference solution: 14/15, failed test-Mul-broadcast-hidden",
                          "reference solution: Validate fails: 1 of 6 visible checks fail.",
                          "untouched release: 1/15, not 0", "untouched release: Validate passes it",
                          "wrong version 'Mul saves both inputs': full marks",
                          "sum_to sums one dim: not graded: kernel died in cell 7",
                          "wrong version 'sum_to sums one dim': Validate passes it"]
    assert selftest.kill_rate(15, graded) == ("0/2 (0%)", "1/2 (50%)")  # graded below full, failed by Validate
