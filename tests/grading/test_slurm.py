"""Issue 27: grading on a Slurm cluster (a single node here, Debian's packages): grader/cluster/slurm's
prepare job, array of shards and gather job, into one PostgreSQL gradebook; a shard cancelled while it
grades is resubmitted by gather, and every grade is then right."""
import csv
import subprocess
import sys
import time

from grader import records
from grader.build import nbgrader_env
from support import (EXERCISE, course_with_submissions, database, needs_postgres, needs_slurm,  # noqa: F401
                     postgres, slurm)  # database, postgres, slurm: fixtures

pytestmark = [needs_slurm, needs_postgres]


def test_an_array_of_shards_grades_every_submission_right_after_one_is_cancelled(tmp_path, slurm, database):
    root = tmp_path / "course"
    expected = course_with_submissions(root, 3)  # right, stub, wrong
    env = {**slurm, **nbgrader_env(root), "MINIGRAD_GRADEBOOK_URL": database, "MINIGRAD_PYTHON": sys.executable,
           "MINIGRAD_SHARD_CPUS": "1", "MINIGRAD_SHARD_MEM": "2G"}
    submitted = subprocess.run(["grader/cluster/slurm/submit.sh", EXERCISE, "3"], cwd=root, env=env,
                               capture_output=True, text=True, check=True).stdout
    shards = submitted.split("shards ")[1].split(",")[0]
    deadline = time.monotonic() + 600
    while not records.read(database, EXERCISE):  # the first submission graded: shards 0 and 1 are running
        assert time.monotonic() < deadline and queue(env), logs(root)
        time.sleep(0.5)
    subprocess.run(["scancel", f"{shards}_1"], env=env, check=True)
    while queue(env):  # gather, and what it resubmits
        assert time.monotonic() < deadline, logs(root)
        time.sleep(1)
    assert "attempt 2: shards 1 again" in logs(root), logs(root)
    with open(root / ".course" / f"{EXERCISE}-grades.csv") as handle:
        grades = {row["student"]: (row["status"], float(row["score"])) for row in csv.DictReader(handle)}
    assert grades == {student: ("graded", score) for student, score in expected.items()}, logs(root)


def queue(env):
    """The jobs still queued or running."""
    return subprocess.run(["squeue", "-h", "-o", "%i %T"], env=env, capture_output=True, text=True).stdout.split("\n")[:-1]


def logs(root):
    return "\n".join(f"--- {path.name}\n{path.read_text()}" for path in sorted((root / ".course" / "logs").glob("slurm-*.out")))
