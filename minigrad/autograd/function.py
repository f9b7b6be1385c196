"""``minigrad.autograd.function``, as ``torch.autograd.function``: where user code finds Function and
once_differentiable. Both live in ``minigrad.function``, beside the nodes they build."""
from ..function import Function, once_differentiable

__all__ = ["Function", "once_differentiable"]
