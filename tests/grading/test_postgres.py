"""Issues 4 and 27: several graders on one gradebook — PostgreSQL through nbgrader's db_url, against a
real server (Debian's postgresql) that the tests start on a unix socket of their own: worker processes
of one grader, and shards, each a grader of its own."""
import signal
import subprocess
import sys
import time

from grader import records, workflow
from grader.build import nbgrader_env
from grader.sandbox import check_available
from support import (EXERCISE, FULL, course_with_submissions, database, needs_postgres,  # noqa: F401
                     postgres)  # database and postgres are fixtures

pytestmark = needs_postgres


def test_parallel_graders_share_a_postgresql_gradebook(tmp_path, database):
    root = tmp_path / "course"
    expected = course_with_submissions(root, 2)
    with open(root / "grader" / "nbgrader_config.py", "a") as config:
        config.write(f"c.CourseDirectory.db_url = {database!r}\n")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", EXERCISE, "--force"], cwd=root,
                   env=nbgrader_env(root), check=True, capture_output=True)
    sandboxed = check_available() is None
    workflow.autograde(EXERCISE, workers=2, root=root, progress=lambda line: None, sandbox=sandboxed)
    assert {row["student"]: row["score"] for row in workflow.scores(EXERCISE, root=root)} == expected
    assert not (root / ".course" / "gradebook.db").exists()


def test_shards_grade_into_one_gradebook_and_a_killed_shard_is_regraded_by_a_rerun(tmp_path, database):
    """Issue 27: ``prepare`` once, then three ``autograde --shard I/3`` at once, each its own process
    (as a Slurm array's tasks or a Kubernetes Job's pods are), into the PostgreSQL gradebook named by
    MINIGRAD_GRADEBOOK_URL. One shard is killed (-9) while grading: the others finish, and a plain
    rerun of it grades what it left without an outcome; every grade is then right."""
    root = tmp_path / "course"
    expected = course_with_submissions(root, 3)
    env = {**nbgrader_env(root), "MINIGRAD_GRADEBOOK_URL": database}
    grader = [sys.executable, "-m", "grader"]
    sandbox = [] if check_available() is None else ["--no-sandbox"]

    def shard(index):
        return subprocess.Popen([*grader, "autograde", EXERCISE, "--shard", f"{index}/3", "--workers", "1", *sandbox],
                                cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    unprepared = subprocess.run([*grader, "autograde", EXERCISE, "--shard", "0/3", *sandbox], cwd=root, env=env,
                                capture_output=True, text=True, timeout=300)
    assert unprepared.returncode == 2 and f"run `python -m grader prepare {EXERCISE}`" in unprepared.stderr
    prepared = subprocess.run([*grader, "prepare", EXERCISE, *sandbox], cwd=root, env=env, capture_output=True,
                              text=True, timeout=600)
    assert prepared.returncode == 0 and f"prepared {EXERCISE}: 9 submissions" in prepared.stdout, prepared.stderr
    shards = [shard(index) for index in range(3)]
    while not workflow_outcomes(database):  # the first submission graded: shard 1 is busy with its own
        assert all(process.poll() is None for process in shards), [process.stdout.read() for process in shards]
        time.sleep(0.2)
    shards[1].send_signal(signal.SIGKILL)
    assert [process.wait(timeout=600) for process in shards] == [0, -signal.SIGKILL, 0], \
        [process.stdout.read() for process in shards]
    left = [f"learner-{n}" for n in (1, 4, 7) if f"learner-{n}" not in workflow_outcomes(database)]
    assert left, "shard 1 finished before it was killed: the test proves nothing"
    rerun = shard(1)
    out = rerun.communicate(timeout=600)[0]
    assert rerun.returncode == 0 and f"{len(left)}/{len(left)} done" in out, out
    assert "shard 1/3 of ex3_freeing: every submission has its outcome" in out, out
    outcomes = workflow_outcomes(database)
    assert sorted(outcomes) == [f"learner-{n}" for n in range(9)] and set(outcomes.values()) == {None}, outcomes
    status = subprocess.run([*grader, "status", EXERCISE], cwd=root, env=env, capture_output=True, text=True,
                            timeout=300).stdout.splitlines()
    assert status == [f"{student}: graded {score:g}/{FULL:g}" for student, score in sorted(expected.items())], status
    report = subprocess.run([*grader, "report", EXERCISE], cwd=root, env=env, capture_output=True, text=True,
                            timeout=300)  # issue 39: what the class got wrong, from the shards' checks
    assert report.returncode == 0 and report.stdout.startswith(f"{EXERCISE}: 9 graded submissions\n"), report.stdout
    checks = records.read_checks(database, EXERCISE)
    assert sorted(checks) == sorted(outcomes) and all(check.passed for n in (0, 3, 6) for check in checks[f"learner-{n}"])
    assert not all(check.passed for check in checks["learner-2"])  # the kept mistake
    assert not (root / ".course" / "gradebook.db").exists()


def workflow_outcomes(database):
    """{student: None or the reason}, straight from the shared gradebook."""
    return {student: outcome.reason for student, outcome in records.read(database, EXERCISE).items()}
