"""Issue 35, item 2: hub/setup.sh runs from the admin's clone, which holds solutions/ and the
reference minigrad/; it refuses a clone the hub's users could read, before it makes anything."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from grader.build import ROOT


def _clone_in(folder, mode, clone_mode=0o755):
    """A copy of the repository's hub/ in ``folder/clone`` (what hub/setup.sh reads of its clone
    before its check), ``folder`` with ``mode``; the clone made with the default umask's 755."""
    folder.chmod(mode)
    clone = folder / "clone"
    shutil.copytree(ROOT / "hub", clone / "hub")
    clone.chmod(clone_mode)
    return clone


@pytest.fixture
def scratch():
    """A fresh folder in /tmp, as ``mktemp -d`` makes it (mode 700), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="hub-clone."))
    yield folder
    shutil.rmtree(folder)


def test_setup_refuses_a_clone_others_can_read(scratch):
    clone = _clone_in(scratch, 0o755)
    env = dict(os.environ, HUB_PREFIX=str(scratch / "prefix"), MINIGRAD_EXCHANGE=str(scratch / "exchange"),
               HUB_LEARNERS="hubclonetest", HUB_INSTRUCTOR="hubclonetest")
    run = subprocess.run(["hub/setup.sh"], cwd=clone, env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert run.stderr.startswith(f"hub/setup.sh: the hub's users could read {clone} (solutions/, the reference minigrad/)")
    assert f"modes: {clone} 755, {scratch} 755, /tmp 1777, / 755" in run.stderr
    assert f"chmod 700 {clone}" in run.stderr
    assert sorted(p.name for p in scratch.iterdir()) == ["clone"]  # no prefix, no exchange
    assert subprocess.run(["getent", "passwd", "hubclonetest"], capture_output=True).returncode == 2


@pytest.mark.parametrize("folder_mode, clone_mode, closed", [
    (0o700, 0o755, True),   # where the project's CI clones (../shared/tools/fresh-ci: mktemp -d, then git clone)
    (0o755, 0o700, True),   # the clone itself closed
    (0o750, 0o755, False),  # open to the folder's group
    (0o711, 0o755, False),  # others may not list the folder, but may enter it
], ids=["ci-folder-700", "clone-700", "group-750", "others-711"])
def test_check_wants_one_folder_closed_to_group_and_others(scratch, folder_mode, clone_mode, closed):
    clone = _clone_in(scratch, folder_mode, clone_mode)
    run = subprocess.run([clone / "hub" / "check_clone.sh"], capture_output=True, text=True)
    assert (run.returncode == 0) == closed, run.stderr
    assert (run.stderr == "") == closed
