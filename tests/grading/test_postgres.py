"""Issue 4: several graders on one gradebook — PostgreSQL through nbgrader's db_url, against a real
server (Debian's postgresql) that the test starts on a unix socket of its own."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader import workflow
from grader.build import ROOT, nbgrader_env
from grader.sandbox import check_available
from support import EXERCISE, FULL, RELEASE_PART, RIGHT, WRONG, reference_solutions, write_submission

BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
pytestmark = pytest.mark.skipif(not BINARIES, reason="Debian's postgresql is not installed")


def _as_postgres(argv):
    """The server refuses to run as root: as root, run its tools as the package's postgres user."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="module")
def database():
    home = Path(tempfile.mkdtemp(prefix="minigrad-pg-"))  # pytest's folders are closed to the postgres user
    data, sockets = home / "data", home / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
        shutil.chown(sockets, "postgres")
    tools = BINARIES[-1]
    subprocess.run(_as_postgres([f"{tools}/initdb", "-D", str(data), "-A", "trust", "-U", "grader"]),
                   check=True, capture_output=True)
    subprocess.run(_as_postgres([f"{tools}/pg_ctl", "-D", str(data), "-w", "-l", str(home / "log"), "-o",
                                 f"-k {sockets} -c listen_addresses=''", "start"]), check=True, capture_output=True)
    subprocess.run(_as_postgres([f"{tools}/createdb", "-h", str(sockets), "-U", "grader", "gradebook"]),
                   check=True, capture_output=True)
    yield f"postgresql+psycopg2://grader@/gradebook?host={sockets}"
    subprocess.run(_as_postgres([f"{tools}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"]), capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


def test_parallel_graders_share_a_postgresql_gradebook(tmp_path, database):
    root = tmp_path / "course"
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "grader" / "nbgrader_config.py", "a") as config:
        config.write(f"c.CourseDirectory.db_url = {database!r}\n")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", EXERCISE, "--force"], cwd=root,
                   env=nbgrader_env(root), check=True, capture_output=True)
    reference = reference_solutions(root, EXERCISE)
    mistaken = {**reference, RELEASE_PART: reference[RELEASE_PART].replace(RIGHT, WRONG)}
    for number, solutions in enumerate([reference, None, mistaken] * 2):
        write_submission(root, f"learner-{number}", solutions)
    sandboxed = check_available() is None
    workflow.autograde(EXERCISE, workers=2, root=root, progress=lambda line: None, sandbox=sandboxed)
    rows = {row["student"]: row for row in workflow.scores(EXERCISE, root=root)}
    assert [rows[f"learner-{n}"]["score"] for n in range(6)] == [FULL, 0, FULL - 2] * 2  # the mistake fails the visible seed-003 checks
    assert not (root / ".course" / "gradebook.db").exists()
