"""Issue 27: grading shards as containers (what a Kubernetes indexed Job's pods run): the grader's image
(grader/cluster/container, built by .ci/run), no network, a CPU and a memory limit, and only the
capabilities the sandbox needs; one PostgreSQL gradebook on a unix socket the containers share. A
container killed while it grades is run again, and every grade is then right."""
import os
import shutil
import subprocess
import time

import pytest

from grader import records
from grader.sandbox import CONTAINER_FLAGS
from support import (EXERCISE, FULL, course_with_submissions, database, needs_postgres,  # noqa: F401
                     postgres)  # database, postgres: fixtures

IMAGE = "minigrad-grader"


def _image_missing():
    if not shutil.which("docker") or subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "no Docker daemon"
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        return f"no image {IMAGE} (grader/cluster/container/build.sh)"
    return None


pytestmark = [needs_postgres, pytest.mark.skipif(_image_missing() is not None and not os.environ.get("CI"),
                                                 reason=f"{_image_missing()} (CI builds it)")]


def test_shards_in_containers_grade_every_submission_right_after_one_is_killed(tmp_path, database):
    root = tmp_path / "course"
    expected = course_with_submissions(root, 3)  # right, stub, wrong
    sockets = database.split("host=")[1]

    def container(*command, name=None):
        return ["docker", "run", "--rm", "--network", "none", "--cpus", "1", "--memory", "4g", *CONTAINER_FLAGS,
                *(["--name", name] if name else []), "-v", f"{root}:/course", "-v", f"{sockets}:{sockets}",
                "-e", f"MINIGRAD_GRADEBOOK_URL={database}", IMAGE, "python", "-m", "grader", *command]

    prepared = subprocess.run(container("prepare", EXERCISE), capture_output=True, text=True, timeout=600)
    assert prepared.returncode == 0 and f"prepared {EXERCISE}: 9 submissions" in prepared.stdout, prepared.stderr
    names = [f"minigrad-shard-{os.getpid()}-{index}" for index in range(3)]
    shards = [subprocess.Popen(container("autograde", EXERCISE, "--shard", f"{index}/3", name=names[index]),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for index in range(3)]
    deadline = time.monotonic() + 600
    while not records.read(database, EXERCISE):  # the first submission graded: shard 1 is busy with its own
        assert time.monotonic() < deadline and all(shard.poll() is None for shard in shards), \
            [shard.stdout.read() for shard in shards if shard.poll() is not None]
        time.sleep(0.2)
    subprocess.run(["docker", "kill", names[1]], check=True, capture_output=True)
    outputs = [shard.communicate(timeout=600)[0] for shard in shards]
    assert [shard.returncode for shard in shards] == [0, 137, 0], outputs  # 137: killed (128 + SIGKILL)
    assert "shard 0/3 of ex3_freeing: every submission has its outcome" in outputs[0], outputs[0]
    left = [f"learner-{n}" for n in (1, 4, 7) if f"learner-{n}" not in records.read(database, EXERCISE)]
    assert left, "shard 1 finished before it was killed: the test proves nothing"
    rerun = subprocess.run(container("autograde", EXERCISE, "--shard", "1/3"), capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0 and f"{len(left)}/{len(left)} done" in rerun.stdout, rerun.stdout + rerun.stderr
    status = subprocess.run(container("status", EXERCISE), capture_output=True, text=True, timeout=300).stdout
    assert status.splitlines() == [f"{student}: graded {score:g}/{FULL:g}" for student, score in sorted(expected.items())], \
        status
