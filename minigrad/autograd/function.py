"""``minigrad.autograd.function``, as ``torch.autograd.function``: where user code finds Function,
once_differentiable and InplaceFunction. Function lives in ``minigrad.function``, beside the nodes
it builds; once_differentiable here, with the node it puts behind what it returns."""
import functools

from .. import grad_mode
from ..function import UINT64_MAX, Function, Node
from ..tensor import Tensor

__all__ = ["Function", "InplaceFunction", "once_differentiable"]


class InplaceFunction(Function):
    """torch keeps this base for old code only (a Function whose instances said whether to work in
    place); a Function subclassing it behaves as any other."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class Error(Node):
    """A node that fails when backward reaches it (torch's Error, which its DelayedError makes): what
    ``once_differentiable`` puts behind the gradients it returns when someone could differentiate
    them again. Its edges lead to those gradients, detached into leaves (None where there is none).
    Like AccumulateGrad it runs as soon as it is ready (torch's sequence number UINT64_MAX): to stop
    the backward."""

    def __init__(self, message, edges):
        Node.__init__(self, UINT64_MAX)
        self.message = message
        self.next_functions = tuple(edges)

    def _output_count(self):
        return len(self.next_functions)

    def name(self):
        return "torch::autograd::Error"

    def apply(self, grads):
        raise RuntimeError(self.message)


def once_differentiable(backward):
    """Decorate a Function's backward that can't be differentiated itself: it runs with grad mode
    off, and its results, when they could require grad, lead to an Error node."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            outputs = backward(ctx, *grads)
        if not (grad_mode.is_grad_enabled() and any(isinstance(g, Tensor) and g.requires_grad for g in grads)):
            return outputs
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        leaves = [None if o is None else Tensor(o._data, requires_grad=True) for o in outputs]
        error = Error("trying to differentiate twice a function that was marked with @once_differentiable",
                      [(None, 0) if leaf is None else leaf._gradient_edge() for leaf in leaves])
        return tuple(None if o is None else Tensor(o._data, grad_fn=error, output_nr=i) for i, o in enumerate(outputs))
    return wrapper
