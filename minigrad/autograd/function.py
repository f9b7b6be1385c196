"""``minigrad.autograd.function``, as ``torch.autograd.function``: where user code finds Function,
once_differentiable and InplaceFunction. The first two live in ``minigrad.function``, beside the
nodes they build."""
from ..function import Function, once_differentiable

__all__ = ["Function", "InplaceFunction", "once_differentiable"]


class InplaceFunction(Function):
    """torch keeps this base for old code only (a Function whose instances said whether to work in
    place); a Function subclassing it behaves as any other."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
