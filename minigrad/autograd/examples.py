"""Two custom Functions written as a user of ``torch.autograd.Function`` writes them: the tutorial's
stable log-sum-exp and straight-through estimator (seed 004, "Custom Gradients with
torch.autograd.Function"). Not part of torch's API, and nothing in minigrad uses them: they are the
reference solutions of the course's exercise 7, which live in the package as every exercise's do
(``grader/parts.py``).

``StableLogSumExp`` mends the tutorial's version where it gives nan (a row of -inf, a row holding
inf): it computes what ``torch.logsumexp`` computes. ``StraightThroughEstimator`` is the tutorial's
as it is: its backward is not the derivative of its forward, so gradcheck rejects it, by design.
"""
import math

from .function import Function


# BEGIN EXERCISE 7
class StableLogSumExp(Function):
    """``log(sum(exp(x)))`` over ``dim``, as ``torch.logsumexp(x, dim)``.

    Computed shifted by each row's max m: ``m + log(sum(exp(x - m)))``, so exp never sees a positive
    number and cannot overflow (a row of 1000s gives 1000 + log n, not inf). A row whose max is
    infinite is shifted by 0 instead, since ``-inf - -inf`` is nan: a row of -inf (fully masked)
    gives -inf, a row holding inf gives inf, as torch.logsumexp does.

    Its gradient is the softmax of x over ``dim``, times grad_output (which has no ``dim``: put it
    back to broadcast), computed with the same shift; ``dim`` is not a tensor: its gradient is None.
    """

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        shift = x.max(dim=dim, keepdim=True).values
        shift = shift.masked_fill(shift.abs() == math.inf, 0)
        ctx.save_for_backward(x, shift)
        return (x - shift).exp().sum(dim=dim, keepdim=True).log().squeeze(dim) + shift.squeeze(dim)

    @staticmethod
    def backward(ctx, grad_output):
        x, shift = ctx.saved_tensors
        shifted = (x - shift).exp()
        softmax = shifted / shifted.sum(dim=ctx.dim, keepdim=True)
        return grad_output.unsqueeze(ctx.dim) * softmax, None
# END EXERCISE 7


# BEGIN EXERCISE 7
class StraightThroughEstimator(Function):
    """Rounds x to a grid of ``2 ** num_bits - 1`` steps per unit (``round(x * scale) / scale``), and
    passes the gradient back unchanged, as if forward were the identity: rounding's own derivative
    is 0 wherever it exists, which would stop every gradient. ``num_bits`` is not a tensor: its
    gradient is None."""

    @staticmethod
    def forward(ctx, x, num_bits=8):
        scale = 2 ** num_bits - 1
        return x.mul(scale).round().div(scale)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None
# END EXERCISE 7
