"""Linear algebra: matrix products (mm, mv, dot, bmm), vector norms and trace."""
import torch

from ..function import Function, constant
# Every product here saves its factors with save_factors, a name of this module looked up when it runs:
# exercise 1's plug cell sets it to the learner's (minigrad.ops.linalg.save_factors = save_factors).
from .arithmetic import save_factors
from .reductions import _keep_dims, _normalize_dims


# --- linear algebra --------------------------------------------------------------------------

def mat1_grad(grad, mat2, mat1_strides):
    """grad @ mat2.T, laid out like mat1 (as torch's mm_mat1_backward does): for a column-major mat1
    (``x.t()`` of a contiguous x), computed as (mat2 @ grad.T).T, so that x's gradient is contiguous."""
    if mat1_strides[0] == 1 and mat1_strides[1] == grad.shape[0]:
        return mat2.mm(grad.t()).t()
    return grad.mm(mat2.t())


def mat2_grad(grad, mat1, mat2_strides):
    """mat1.T @ grad, laid out like mat2 (as torch's mm_mat2_backward does).

    For nn.Linear, mat2 is weight.t(): computing (grad.T @ mat1).T lets weight.grad come out
    contiguous, so AccumulateGrad can keep it without a copy.
    """
    if mat2_strides[0] == 1 and mat2_strides[1] == mat1.shape[1]:
        return grad.t().mm(mat1).t()
    return mat1.t().mm(grad)


# BEGIN EXERCISE 1
class Mm(Function):
    """``a @ b`` for matrices, torch's MmBackward0: grad_a = grad @ b.T, grad_b = a.T @ grad. It saves
    what torch's node saves, no more (``_saved_self``, ``_saved_mat2``)."""

    node_name = "MmBackward0"
    saved_names = ("self", "mat2")

    @staticmethod
    def forward(ctx, a, b):
        """Save (self, mat2) with save_factors; keep both layouts; return the product's storage."""
        save_factors(ctx, a, b)
        ctx.mat1_layout, ctx.mat2_layout = a._data.stride(), b._data.stride()
        return a._data.mm(b._data)

    @staticmethod
    def backward(ctx, grad):
        """Gradients for (a, b), or None where not needed; each laid out like its input (as torch's
        mm_mat1_backward and mm_mat2_backward: for nn.Linear's ``weight.t()``, a contiguous weight.grad)."""
        a, b = ctx.saved_tensors
        return (mat1_grad(grad, b, ctx.mat1_layout) if b is not None else None,
                mat2_grad(grad, a, ctx.mat2_layout) if a is not None else None)
# END EXERCISE 1


class Mv(Function):
    node_name = "MvBackward0"
    saved_names = ("self", "vec")

    @staticmethod
    def forward(ctx, m, v):
        save_factors(ctx, m, v)
        return m._data.mv(v._data)

    @staticmethod
    def backward(ctx, grad):
        """torch's: ``grad.ger(vec)`` (an outer product, computed as ``grad.reshape(n, 1) * vec``) for self,
        ``self.t().mv(grad)`` for vec."""
        m, v = ctx.saved_tensors
        return (grad.reshape(grad.shape[0], 1) * v if v is not None else None,
                m.t().mv(grad) if m is not None else None)


class Dot(Function):
    node_name = "DotBackward0"
    saved_names = ("self", "tensor")

    @staticmethod
    def forward(ctx, a, b):
        save_factors(ctx, a, b)
        return a._data.dot(b._data)

    @staticmethod
    def backward(ctx, grad):
        """torch's: ``grad * tensor`` for self, ``grad * self`` for tensor (grad is 0-dim)."""
        a, b = ctx.saved_tensors
        return tuple(None if other is None else grad * other for other in (b, a))


# --- norms -----------------------------------------------------------------------------------

class LinalgVectorNorm(Function):
    """``torch.linalg.vector_norm`` (what ``tensor.norm`` runs), with torch's backward for each order."""

    node_name = "LinalgVectorNormBackward0"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a, ord, dim, keepdim):
        result = torch.linalg.vector_norm(a._data, ord, dim, keepdim)
        ctx.save_for_backward(a, result)
        ctx.ord, ctx.keepdim = float(ord), keepdim
        ctx.dims = () if dim is None else _normalize_dims(dim, a.dim())
        return result

    @staticmethod
    def backward(ctx, grad):
        a, norm = ctx.saved_tensors
        p = ctx.ord
        if not ctx.keepdim and a.dim():
            grad, norm = _keep_dims(grad, ctx.dims, False), _keep_dims(norm, ctx.dims, False)
        if p == 0:
            return None, None, None, None
        if p == 1:
            grad_a = a.sgn() * grad
        elif p == 2:
            grad_a = grad * (a / norm).masked_fill(norm == 0, 0)
        elif p in (float("inf"), float("-inf")):
            absolute = a._data.abs()
            mask = ((absolute == norm._data) | absolute.isnan()).to(grad.dtype)
            count = mask.sum(ctx.dims, keepdim=True) if ctx.dims else mask.sum()
            grad_a = a.sgn() * (grad / constant(count) * constant(mask))
        elif p < 1:
            scaled = a.sgn() * (a.abs() ** (p - 1)).masked_fill(a == 0, 0)
            grad_a = scaled * grad * norm ** (1 - p)
        elif p < 2:
            grad_a = a.sgn() * a.abs() ** (p - 1) * (grad / norm ** (p - 1)).masked_fill(norm == 0, 0)
        else:
            grad_a = a * a.abs() ** (p - 2) * (grad / norm ** (p - 1)).masked_fill(norm == 0, 0)
        return grad_a, None, None, None


# --- batched matrix product ------------------------------------------------------------------

class Bmm(Function):
    node_name = "BmmBackward0"
    saved_names = ("self", "mat2")

    @staticmethod
    def forward(ctx, a, b):
        save_factors(ctx, a, b)
        return a._data.bmm(b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (Bmm.apply(grad, b.transpose(1, 2)) if b is not None else None,
                Bmm.apply(a.transpose(1, 2), grad) if a is not None else None)


class Trace(Function):
    """``a.trace()``: the sum of a matrix's diagonal. Only the shape is needed (TraceBackward0 saves
    self's sizes): the gradient is grad on the diagonal, zeros elsewhere, as torch's trace_backward lays
    it out, whose positions the installed torch computes here: torch 2.11 also writes past the diagonal
    of a tall matrix (pytorch issue 171704, fixed by 2.13)."""

    node_name = "TraceBackward0"

    @staticmethod
    def forward(ctx, a):
        result = a._data.trace()
        ctx.shape = a.shape
        return result

    @staticmethod
    def backward(ctx, grad):
        one = torch.ones((), dtype=grad.dtype, device=grad.device)
        return grad * constant(torch.ops.aten.trace_backward.default(one, ctx.shape))
