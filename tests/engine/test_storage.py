"""Principle 2: storage is a plain torch.Tensor — torch's autograd never does minigrad's work."""
import gc

import torch

import minigrad


def live_storages():
    """Every torch tensor held by a live minigrad Tensor, as storage or as a saved tensor's data."""
    for obj in gc.get_objects():
        if isinstance(obj, minigrad.Tensor):
            yield obj._data
        elif isinstance(obj, minigrad.function.SavedTensor) and obj.tensor is None:
            yield obj.data


def workload():
    """A bit of everything: training steps, double backward, in-place edits, indexing, retain_grad."""
    minigrad.manual_seed(0)
    net = [minigrad.nn.Linear(4, 8), minigrad.nn.Linear(8, 1)]
    keep = []
    for _ in range(3):
        x = minigrad.randn(5, 4, requires_grad=True)
        hidden = net[0](x).tanh()
        hidden.retain_grad()
        loss = minigrad.nn.functional.mse_loss(net[1](hidden).sigmoid(), minigrad.rand(5, 1))
        (gx,) = minigrad.autograd.grad(loss, x, create_graph=True)
        (gx.pow(2).sum() + loss).backward()
        keep += [x, hidden, gx]
    y = minigrad.ones(3, requires_grad=True) * 2
    y[0] = 5.0
    y.add_(minigrad.ones(3))
    z = (y.exp() @ minigrad.eye(3)).max(0).values + y[1:].sum().log()
    z.backward(retain_graph=True)
    keep += [y, z]
    return keep


def test_no_storage_requires_grad_or_has_a_torch_grad_fn():
    keep = workload()
    storages = list(live_storages())
    assert len(storages) > 20
    assert not [s for s in storages if s.requires_grad or s.grad_fn is not None]
    assert keep


def test_ops_run_with_torch_grad_mode_on_and_still_record_nothing_in_torch():
    """Even where torch's own grad mode is enabled, minigrad's storage stays out of torch's graph."""
    assert torch.is_grad_enabled()
    x = minigrad.randn(3, requires_grad=True)
    y = (x * x).sum()
    assert y._data.grad_fn is None and not y._data.requires_grad
    y.backward()
    assert x.grad._data.grad_fn is None and not x.grad._data.requires_grad
