"""Plain ``nbgrader autograde`` against the course's ``python -m grader autograde``, on the same 40
submissions of exercise 3, measured in one run: ``python bench/autograde.py [--submissions N]``.

Prints both wall times, their ratio, and whether the two gave every submission the same score.
Target (issue 36): ours at least 6x faster on 2 cores, identical grades.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.build import nbgrader_env  # noqa: E402

EXERCISE = "ex3_freeing"
MISTAKE = ("tuple(None if s is None else _FREED for s in self._saved)", "tuple(_FREED for s in self._saved)")


def make_course(where, submissions):
    """A scratch course with ``submissions`` students: a third solved, a third untouched, a third with a mistake."""
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, where / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", EXERCISE, "--force"], cwd=where,
                   env=nbgrader_env(where), check=True, capture_output=True)
    source = nbformat.read(where / "solutions" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    reference = {c.metadata["nbgrader"]["grade_id"]: "\n".join(
        line for line in c.source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
        for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")}
    for number in range(submissions):
        folder = where / ".course" / "submitted" / f"student-{number:02d}" / EXERCISE
        shutil.copytree(where / "exercises" / EXERCISE, folder)
        kind = number % 3
        if kind == 1:
            continue
        path = folder / f"{EXERCISE}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in reference:
                cell.source = reference[grade_id].replace(*MISTAKE) if kind == 2 else reference[grade_id]
        nbformat.write(notebook, path)


def scores(where):
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(where / ".course" / "gradebook.db")) as gradebook:
        return {s.student_id: s.score for s in gradebook.assignment_submissions(EXERCISE)}


def timed(command, where):
    start = time.perf_counter()
    subprocess.run(command, cwd=where, env=nbgrader_env(where), check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-autograde-") as scratch:
        plain, ours = Path(scratch) / "plain", Path(scratch) / "ours"
        for where in (plain, ours):
            where.mkdir()
            make_course(where, args.submissions)
        with open(plain / "grader" / "nbgrader_config.py", "a") as config:  # nbgrader as it ships
            config.write('c.Autograde.autograde_preprocessors[0] = "nbgrader.preprocessors.Execute"\n'
                         'c.Autograde.autograde_preprocessors.remove("grader.verdicts.RecordOutcome")\n')
        plain_time = timed([sys.executable, "-m", "nbgrader", "autograde", EXERCISE], plain)
        ours_time = timed([sys.executable, "-m", "grader", "autograde", EXERCISE, "--workers", str(args.workers)], ours)
        same = scores(plain) == scores(ours)
    print(f"{args.submissions} submissions of {EXERCISE}, {os.cpu_count()} cores")
    print(f"plain nbgrader autograde:          {plain_time:7.1f} s")
    print(f"python -m grader autograde (x{args.workers}):  {ours_time:7.1f} s  (sandboxed, verdicts outside the kernel)")
    print(f"speed-up {plain_time / ours_time:.2f}x (target >= 6), identical grades: {same}")


if __name__ == "__main__":
    main()
