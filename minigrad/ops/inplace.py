"""The in-place ops' own nodes: zero_, fill_ and copy_."""
import torch

from .. import broadcast
from ..function import Function


# --- in-place --------------------------------------------------------------------------------

class Zero(Function):
    node_name = "ZeroBackward0"

    @staticmethod
    def forward(ctx, a):
        return torch.zeros_like(a._data)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0


class Fill(Function):
    node_name = "FillBackward2"

    @staticmethod
    def forward(ctx, a, value):
        return torch.full_like(a._data, value)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0, None


class FillTensor(Function):
    """``fill_`` with a 0-dim tensor: what ``x[i] = scalar_tensor`` runs."""

    node_name = "FillBackward3"

    @staticmethod
    def forward(ctx, a, value):
        return a._data.clone().fill_(value._data)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0, grad.sum() if ctx.needs_input_grad[1] else None


class Copy(Function):
    """``a.copy_(source)``: torch's copy_ into new memory like ``a``'s, so the cast, the move between
    devices, the broadcast and their errors are torch's."""

    node_name = "torch::autograd::CopyBackwards"

    @staticmethod
    def forward(ctx, a, source):
        ctx.source = (source.shape, source.dtype, source.device)
        return torch.empty_like(a._data).copy_(source._data)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, device = ctx.source
        grad_source = broadcast.sum_to(grad, shape).to(dtype=dtype, device=device) if ctx.needs_input_grad[1] else None
        return grad * 0, grad_source
