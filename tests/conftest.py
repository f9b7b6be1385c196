"""Shared fixtures: PyTorch is the oracle, so most tests run one scenario with both libraries."""
import pytest
import torch

import minigrad

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=[torch, minigrad], ids=["torch", "minigrad"])
def lib(request):
    """A scenario written once against the torch API runs with each library."""
    return request.param
