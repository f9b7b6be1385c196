"""Shared fixtures: PyTorch is the oracle, so most tests run one scenario with both libraries."""
import os
import shutil
import tempfile

import pytest
import torch

import minigrad

JUPYTER_STATE = pytest.StashKey[str]()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=[torch, minigrad], ids=["torch", "minigrad"])
def lib(request):
    """A scenario written once against the torch API runs with each library."""
    return request.param


def pytest_configure(config):
    """Kernels, nbgrader and matplotlib started by the tests keep their state out of $HOME. (The
    course's and grading tests stage the exercises first: their conftest.py; the engine's need
    neither the grader nor its dependencies.)"""
    state = config.stash[JUPYTER_STATE] = tempfile.mkdtemp(prefix="minigrad-jupyter-")
    for variable, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                             ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "mpl")):
        os.environ[variable] = os.path.join(state, folder)


def pytest_unconfigure(config):
    """Their state goes with the run."""
    shutil.rmtree(config.stash[JUPYTER_STATE], ignore_errors=True)
