"""``python -m grader selftest``: a grading machine proves itself before it grades learners.

On this machine and its device, each exercise's reference solution must get full marks, its
untouched release 0, each of its kept wrong versions (``mistakes.py``) less than full marks, losing
the points of the visible test the version names, and each of its right versions in another design
(``designs.py``) full marks.
They are graded as learners' submissions are: placed in a scratch copy of the course as ``collect``
leaves them, then graded by ``workflow.autograde`` (nbgrader's pipeline, the sandbox, the verdict
harness, the same device choice). Each is also validated as a learner's lab validates it (the
course's Validate, ``grader/lab/course_validate.py``, on a copy of the release): Validate must pass
the reference and every design and fail the release and every wrong version, so that its "pass"
means the grade keeps the points. The table names, per exercise, what was expected and what came, how many wrong
versions grading and Validate caught, the device and sandbox that graded, torch's and Triton's
versions, and the time it took. An exercise that needs what this machine lacks (exercise 9 without
Triton, the ``kernels`` extra) is reported apart, with how to install it, and fails nothing: a
machine without the extra grades every other exercise.
"""
import asyncio
import functools
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from . import workflow
from .build import ROOT, exercise_specs
from .designs import versions
from .mistakes import MISTAKES
from .progress import each_exercise
from .verdicts import solution_cells, unmet_requirements

COPIED = ("minigrad", "coursekit", "grader", "solutions", "exercises")


def submissions(root, exercise):
    """{student: (what it is, the notebook as a learner would submit it)}: the reference, the
    untouched release, one per wrong version (``wrong01``, ...) and one per design (``design01``, ...)."""
    release = nbformat.read(root / "exercises" / exercise / f"{exercise}.ipynb", as_version=4)
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    reference = solution_cells(source, without_markers=True)

    def solved(changes):
        notebook = nbformat.from_dict(release)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in reference:
                cell.source = changes.get(grade_id, reference[grade_id])
        return notebook

    made = {"reference": ("reference solution", solved({})), "untouched": ("untouched release", release)}
    for number, (what, part, right, wrong, _) in enumerate(MISTAKES.get(exercise, []), 1):
        if reference[part].count(right) != 1:
            raise ValueError(f"{exercise}: the wrong version '{what}' no longer fits {part}'s reference")
        made[f"wrong{number:02d}"] = (what, solved({part: reference[part].replace(right, wrong, 1)}))
    for number, (design, replacements) in enumerate(versions(exercise).items(), 1):
        changed = dict(reference)
        for part, right, text in replacements:
            if changed[part].count(right) != 1:
                raise ValueError(f"{exercise}: the design '{design}' no longer fits {part}'s reference")
            changed[part] = changed[part].replace(right, text, 1)
        made[f"design{number:02d}"] = (design, solved(changed))
    return made


def grade(root, exercise, workers, sandbox):
    """Place the exercise's submissions, grade them and, at the same time, validate them; returns
    [(student, what, row of workflow.scores with "validate": what Validate says when it fails, else None)]."""
    made = submissions(root, exercise)
    for student, (_, notebook) in made.items():
        folder = root / ".course" / "submitted" / student / exercise
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{exercise}.ipynb")
    notebooks = {student: notebook for student, (_, notebook) in made.items()}
    _course_validate()  # imported here, before the grading starts
    with ThreadPoolExecutor(1) as beside:  # either alone leaves the CPUs idle much of the time (starting, recording)
        failing = beside.submit(validated, root, exercise, notebooks, workers)
        workflow.autograde(exercise, workers=workers, root=root, progress=lambda line: None, sandbox=sandbox, force=True)
    rows = {row["student"]: row for row in workflow.scores(exercise, root)}
    return [(student, what, {**rows[student], "validate": failing.result()[student]})
            for student, (what, _) in made.items()]


@functools.cache
def _course_validate():
    """The course's Validate (the grader's own: a scratch course's copy goes away), imported before
    grading starts beside it: the import puts its folder first on sys.path for a moment."""
    sys.path.insert(0, str(Path(__file__).parent / "lab"))
    try:
        import course_validate
    finally:
        sys.path.pop(0)
    return course_validate


def validated(root, exercise, notebooks, workers):
    """{student: None where the course's Validate passes their notebook, else what it says},
    each notebook validated in a copy of the release (its staged minigrad and the reference's
    results Validate reads), by ``workers`` checkers at once."""
    course_validate = _course_validate()
    paths = {}
    for student, notebook in notebooks.items():
        folder = root / ".course" / "validated" / student / exercise
        shutil.copytree(root / "exercises" / exercise, folder)
        nbformat.write(notebook, folder / f"{exercise}.ipynb")
        paths[student] = str(folder / f"{exercise}.ipynb")

    async def validate_all():
        queue, said = list(paths.items()), {}

        async def checker():
            one = course_validate.Checker()
            while queue:
                student, path = queue.pop()
                answer = await course_validate.validate(path, one)
                value = answer["value"]
                said[student] = (None if answer["success"] and "failed" not in value else
                                 "\n".join((value["failed"][0]["source"], value["failed"][0]["raw_error"]))
                                 if answer["success"] else str(value))
            if one.process is not None:
                one.process.kill()
                await one.process.wait()
        await asyncio.gather(*(checker() for _ in range(max(1, workers or 1))))
        return said
    return asyncio.run(validate_all())


def _first_lines(said):
    """A failing Validate's header and the first line of its first report, on one line."""
    return " ".join(said.splitlines()[:2])


def points(root, exercise):
    """What the exercise is worth: its test cells' points, from its source notebook."""
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    return sum(cell.metadata.get("nbgrader", {}).get("points", 0) for cell in source.cells)


def verdict(full, graded, catching=None):
    """(expected, got, mismatches) for one exercise worth ``full`` points, from its graded submissions;
    ``catching``: {wrong version's student: the visible test that must take its points}."""
    mismatches, catching = [], catching or {}
    for student, what, row in graded:
        if row["status"] != "graded":
            mismatches.append(f"{what}: {row['status']}: {row['reason']}")
        elif student == "reference" and row["score"] != full:
            lost = [test for test, score in row["tests"].items() if not score]
            mismatches.append(f"{what}: {row['score']:g}/{full:g}, failed {', '.join(lost)}")
        elif student == "untouched" and row["score"] != 0:
            mismatches.append(f"{what}: {row['score']:g}/{full:g}, not 0")
        elif student.startswith("wrong") and row["score"] >= full:
            mismatches.append(f"wrong version '{what}': full marks")
        elif student in catching and row["tests"].get(catching[student]):
            mismatches.append(f"wrong version '{what}': {catching[student]} keeps its points")
        elif student.startswith("design") and row["score"] != full:
            lost = [test for test, score in row["tests"].items() if not score]
            mismatches.append(f"design '{what}': {row['score']:g}/{full:g}, failed {', '.join(lost)}")
        if (student == "reference" or student.startswith("design")) and row.get("validate"):
            mismatches.append(f"{what if student == 'reference' else 'design ' + repr(what)}: Validate fails: "
                              f"{_first_lines(row['validate'])}")
        elif (student == "untouched" or student.startswith("wrong")) and "validate" in row and row["validate"] is None:
            mismatches.append(f"{'wrong version ' + repr(what) if student.startswith('wrong') else what}: "
                              "Validate passes it")
    scores = {student: row["score"] for student, _, row in graded if row["status"] == "graded"}
    wrong = [score for student, score in scores.items() if student.startswith("wrong")]
    count = sum(student.startswith("wrong") for student, _, _ in graded)
    designs = [score for student, score in scores.items() if student.startswith("design")]
    count_designs = sum(student.startswith("design") for student, _, _ in graded)
    expected = f"{_points(full)}, 0, {count} below {_points(full)}"
    got = (f"{_points(scores.get('reference'))}, {_points(scores.get('untouched'))}, "
           f"{sum(score < full for score in wrong)} below (max {_points(max(wrong, default=None))})")
    if count_designs:
        expected += f", {count_designs} designs {_points(full)}"
        got += f", {sum(score == full for score in designs)} designs {_points(full)}"
    return expected, got, mismatches


def kill_rate(full, graded):
    """How many of the kept wrong versions lost points (graded below ``full``), and how many Validate
    failed, each as "n/m (p%)"."""
    wrong = [row for student, _, row in graded if student.startswith("wrong")]
    if not wrong:
        return "-", "-"
    by_grading = sum(row["status"] == "graded" and row["score"] < full for row in wrong)
    by_validate = sum(row.get("validate") is not None for row in wrong)
    return tuple(f"{caught}/{len(wrong)} ({caught / len(wrong):.0%})" for caught in (by_grading, by_validate))


def _points(score):
    return "-" if score is None else f"{score:g}"


def environment(sandbox):
    """(sandbox, torch, triton): what this machine grades with."""
    if sandbox:
        found = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, check=False).stdout.split()
        sandboxed = f"bubblewrap {found[-1]}" if found else "bubblewrap"
    else:
        sandboxed = "none (--no-sandbox)"
    return (sandboxed, *(importlib.metadata.version(name) if importlib.util.find_spec(name) else "not installed"
                         for name in ("torch", "triton")))


def not_gradable(root, exercise):
    """Why this machine cannot grade ``exercise`` and how to make it able to, or None."""
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    reason = unmet_requirements(source)
    if reason is None:
        return None
    missing = {name for name in source.metadata["minigrad"]["requires"] if importlib.util.find_spec(name) is None}
    extras = {found[2] for found in (re.fullmatch(r'([\w.-]+)[^;]*; extra == "(\w+)"', requirement)
                                     for requirement in importlib.metadata.requires("minigrad") or [])
              if found and found[1] in missing}  # the extras that bring what is missing (numpy is the test extra's too)
    return reason + "".join(f"; install the {extra} extra: MINIGRAD_EXTRAS={extra} ./run grader selftest {exercise}"
                            for extra in sorted(extras))


def run(exercises=None, workers=1, sandbox=True, out=print, root=ROOT):
    """Grade every exercise (or those named) in a scratch copy of the course at ``root``, saying which
    on stderr as it goes; print the table, then each exercise this machine cannot grade and why, then
    each mismatch. Returns the number of mismatches (0: the machine grades as it must what it can grade)."""
    exercises = exercises or [spec.stem for spec in exercise_specs(root)]
    unknown = sorted(set(exercises) - {spec.stem for spec in exercise_specs(root)})
    if unknown:
        raise ValueError(f"no such exercise: {', '.join(unknown)}")
    sandboxed, torch_version, triton_version = environment(sandbox)
    header = ("exercise", "expected: reference, release, wrong", "got", "wrong caught: grading", "Validate", "device",
              "sandbox", "torch", "triton", "time", "result")
    table, apart, problems = [], [], []
    with tempfile.TemporaryDirectory(prefix="minigrad-selftest-") as scratch:
        course = Path(scratch)
        for folder in COPIED:
            shutil.copytree(root / folder, course / folder, ignore=shutil.ignore_patterns("__pycache__"))
        unable = {exercise: not_gradable(course, exercise) for exercise in exercises}
        workflow.register(course, [exercise for exercise in exercises if not unable[exercise]])  # each saying so
        for exercise in each_exercise(exercises, "selftest, grading and validating"):
            if unable[exercise]:
                table.append((exercise, *"-----", sandboxed, torch_version, triton_version, "-", "not gradable here"))
                apart.append(f"{exercise}: not gradable here: {unable[exercise]}")
                continue
            start = time.monotonic()
            graded = grade(course, exercise, workers, sandbox)
            catching = {f"wrong{number:02d}": test for number, (*_, test) in enumerate(MISTAKES.get(exercise, []), 1)}
            expected, got, mismatches = verdict(points(course, exercise), graded, catching)
            device = next(row["device"] for student, _, row in graded if student == "reference") or "-"
            table.append((exercise, expected, got, *kill_rate(points(course, exercise), graded), device, sandboxed,
                          torch_version, triton_version, f"{time.monotonic() - start:.0f} s",
                          "ok" if not mismatches else "MISMATCH"))
            problems += [f"{exercise}: {line}" for line in mismatches]
    widths = [max(len(str(row[i])) for row in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        out("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    for line in apart + problems:
        out(line)
    out(f"selftest: {len(exercises)} exercises, {len(problems)} mismatches" +
        (f", {len(apart)} not gradable here" if apart else "") +
        ("" if not problems else " -- do not grade learners on this machine until they are fixed"))
    return len(problems)

