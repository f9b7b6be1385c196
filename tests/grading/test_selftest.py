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
from grader.verdicts import solution_cells, unmet_requirements

ALL = [spec.stem for spec in exercise_specs(ROOT)]
EXERCISES = [exercise for exercise in ALL  # those this machine can grade: exercise 9 needs the kernels extra
             if not unmet_requirements(nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", 4))]
SANDBOX = [] if check_available() is None else ["--no-sandbox"]  # tests/grading/test_sandbox.py fails CI without one
WITHOUT_TRITON = "import sys\nsys.modules['triton'] = None  # import triton fails, as when it is not installed\n"
KERNELS = ("ex9_gpu_kernel: not gradable here: the exercise needs triton, which the grading machine does not have "
           "installed; install the kernels extra: MINIGRAD_EXTRAS=kernels ./run grader selftest ex9_gpu_kernel")


def test_this_machine_grades_every_exercise_as_it_must():
    """The README's `./run grader selftest`: every exercise graded right, or (without its extra) reported apart."""
    done = subprocess.run([sys.executable, "-m", "grader", "selftest", *SANDBOX], cwd=ROOT,
                          env=nbgrader_env(ROOT), capture_output=True, text=True, timeout=3600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["exercise", "expected:"]
    rows = {line.split()[0]: line for line in lines[1:1 + len(ALL)]}
    assert list(rows) == ALL, done.stdout
    assert all(row.endswith(" not gradable here") for exercise, row in rows.items() if exercise not in EXERCISES)
    apart = len(ALL) - len(EXERCISES)
    assert lines[1 + len(ALL):-1] == ([KERNELS] if apart else [])
    rows = {exercise: row for exercise, row in rows.items() if exercise in EXERCISES}
    assert all(row.endswith(" ok") for row in rows.values()), done.stdout
    for exercise, row in rows.items():
        assert f", 0, {len(MISTAKES[exercise])} below " in row  # expected: the reference's points, 0, each wrong version below
        designs = len(versions(exercise))
        assert not designs or f", {designs} designs " in row  # and each design at full marks
        count = len(MISTAKES[exercise])
        assert re.search(rf" {count}/{count} \(100%\) +{count}/{count} \(100%\) ", row)  # caught: graded, Validate
        assert ("bubblewrap" in row) is not bool(SANDBOX)
    assert lines[-1] == f"selftest: {len(ALL)} exercises, 0 mismatches" + (f", {apart} not gradable here" * bool(apart))
    said = [line for line in done.stderr.splitlines() if line.startswith("minigrad: selftest, ")]  # as each starts
    assert said == [f"minigrad: selftest, grading and validating: {exercise} ({number}/{len(ALL)})"
                    for number, exercise in enumerate(ALL, 1)], done.stderr


def test_without_triton_exercise_9_is_reported_apart_with_how_to_install_it():
    """Issue 35: the README's default install has no Triton; exercise 9 then fails nothing."""
    done = subprocess.run([sys.executable, "-c", WITHOUT_TRITON + "from grader.__main__ import main\nsys.exit(main())",
                           "selftest", "ex9_gpu_kernel", *SANDBOX], cwd=ROOT, env=nbgrader_env(ROOT),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split()[0] == "ex9_gpu_kernel" and re.search(r" not installed +- +not gradable here$", lines[1])
    assert lines[2:] == [KERNELS, "selftest: 1 exercises, 0 mismatches, 1 not gradable here"]
    assert "minigrad: selftest, grading and validating: ex9_gpu_kernel (1/1)" in done.stderr.splitlines()


def test_without_triton_a_broken_reference_still_fails(monkeypatch, capsys):
    """Exercise 9 reported apart hides no mismatch of another exercise: a reference that frees with
    retain_graph loses points, and the selftest says so and exits 1 (each step said on stderr)."""
    monkeypatch.setitem(sys.modules, "triton", None)
    (_, part, right, wrong, test) = MISTAKES["ex3_freeing"][1]
    monkeypatch.setitem(MISTAKES, "ex3_freeing", [])  # built from the reference: none would fit the broken one

    def broken(notebook, without_markers=False):
        cells = solution_cells(notebook, without_markers)
        return {**cells, part: cells[part].replace(right, wrong, 1)} if part in cells else cells
    monkeypatch.setattr(selftest, "solution_cells", broken)
    assert main(["selftest", "ex9_gpu_kernel", "ex3_freeing", *SANDBOX]) == 1
    out, err = capsys.readouterr()
    out = out.splitlines()
    assert out[1].endswith("not gradable here") and out[2].split()[0] == "ex3_freeing" and out[2].endswith("MISMATCH")
    assert out[3] == KERNELS
    assert out[4].startswith("ex3_freeing: reference solution: ") and test in out[4], out
    assert out[-1].startswith("selftest: 2 exercises, ") and out[-1].endswith(
        " mismatches, 1 not gradable here -- do not grade learners on this machine until they are fixed")
    assert [line for line in err.splitlines() if re.fullmatch(r"minigrad: .* \(\d+/\d+\)", line)] == [
        "minigrad: recording in the gradebook: ex3_freeing (1/1)",
        "minigrad: selftest, grading and validating: ex9_gpu_kernel (1/2)",
        "minigrad: selftest, grading and validating: ex3_freeing (2/2)"], err


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
    one that is not graded, a release that scores, a wrong version with full marks, or one that loses
    points elsewhere than on the test it names; and what issue 34's learner met: a Validate that fails
    the reference, or passes a wrong version or the release."""
    def row(score, tests=None, reason="", validate="1 of 6 visible checks fail."):
        return {"status": "not graded" if reason else "graded", "score": score, "reason": reason, "tests": tests or {},
                "validate": validate}

    graded = [("reference", "reference solution", row(14.0, {"test-Mul-broadcast-hidden": 0.0, "test-Mul": 2.0})),
              ("untouched", "untouched release", row(1.0, validate=None)),
              ("wrong01", "Mul saves both inputs", row(15.0)),
              ("wrong02", "sum_to sums one dim", row("", reason="kernel died in cell 7", validate=None)),
              ("wrong03", "Mul's gradient halved", row(13.0, {"test-Mul": 2.0, "test-Mul-hidden": 0.0}))]
    expected, got, mismatches = selftest.verdict(15, graded, {"wrong03": "test-Mul"})
    assert (expected, got) == ("15, 0, 3 below 15", "14, 1, 1 below (max 15)")
    assert mismatches == ["reference solution: 14/15, failed test-Mul-broadcast-hidden",
                          "reference solution: Validate fails: 1 of 6 visible checks fail.",
                          "untouched release: 1/15, not 0", "untouched release: Validate passes it",
                          "wrong version 'Mul saves both inputs': full marks",
                          "sum_to sums one dim: not graded: kernel died in cell 7",
                          "wrong version 'sum_to sums one dim': Validate passes it",
                          "wrong version 'Mul's gradient halved': test-Mul keeps its points"]
    assert selftest.kill_rate(15, graded) == ("1/3 (33%)", "2/3 (67%)")  # graded below full, failed by Validate
