"""Reductions: sum, mean, var (and var_mean), prod, max, min, median and nanmedian (whole tensor or along dims),
and the unique ops."""
import math

import torch

from ..function import Function, constant
from .arithmetic import DivScalar, MulScalar


# --- reductions ------------------------------------------------------------------------------

class Sum(Function):
    node_name = "SumBackward0"

    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a._data.sum()

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.shape)


def _keep_dims(grad, dims, keepdim):
    """Put back the reduced dimensions of a reduction's gradient, as size 1."""
    if not keepdim:
        for dim in sorted(dims):
            grad = grad.unsqueeze(dim)
    return grad


def _normalize_dims(dim, ndim):
    """The reduced dims, made non-negative. A 0-dim tensor's dim 0 (or -1) is no dim at all: none
    to put back in backward (torch's sum_backward unsqueezes only an input that had dims)."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(d % ndim for d in dims) if ndim else ()


# BEGIN EXERCISE 1
class SumDim(Function):
    """``a.sum(dim, keepdim)``: every summed element gets the gradient of its sum. Only shapes are
    needed, so it saves no tensor (a second backward through it works)."""

    node_name = "SumBackward1"

    @staticmethod
    def forward(ctx, a, dim, keepdim):
        """Return the sum's storage; what backward needs (shapes only) stays on ctx."""
        result = a._data.sum(dim, keepdim=keepdim)
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, _normalize_dims(dim, a.dim()), keepdim
        return result

    @staticmethod
    def backward(ctx, grad):
        """The gradient for a (broadcast back over the summed dims), None for dim and keepdim."""
        return _keep_dims(grad, ctx.dims, ctx.keepdim).expand(ctx.shape), None, None
# END EXERCISE 1


class Mean(Function):
    node_name = "MeanBackward0"

    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a._data.mean()

    @staticmethod
    def backward(ctx, grad):
        """torch's mean_backward: the gradient spread out, divided by a number (DivBackward1)."""
        return DivScalar.apply(grad.expand(ctx.shape), max(ctx.shape.numel(), 1))


class MeanDim(Function):
    """``a.mean(dim, keepdim)``, torch's MeanBackward1: SumDim's gradient divided by how many elements
    each mean took, as torch's mean_backward divides its sum_backward. So this node runs SumDim's
    forward, for what SumDim keeps on ctx (its sum is dropped: the result is torch's mean), and SumDim's
    backward. SumDim is a name of this module looked up when they run: exercise 1's plug cell sets it
    to the learner's (``minigrad.ops.reductions.SumDim = SumDim``)."""

    node_name = "MeanBackward1"

    @staticmethod
    def forward(ctx, a, dim, keepdim):
        result = a._data.mean(dim, keepdim=keepdim)
        SumDim.forward(ctx, a, dim, keepdim)
        ctx.mean_count = a.numel() // max(result.numel(), 1)
        return result

    @staticmethod
    def backward(ctx, grad):
        grad_a, _, _ = SumDim.backward(ctx, grad)
        return DivScalar.apply(grad_a, ctx.mean_count), None, None


def _var_backward(grad, a, dims, correction, keepdim):
    """torch's var_backward: ``2 / (n - correction) * grad * (a - a.mean(dims))``, n the count of
    each variance. Where n - correction <= 0 the factor is infinite: torch's gradient is then NaN
    where a equals its mean (inf * 0) and inf elsewhere, times grad."""
    if not dims:
        dof = a.numel() - correction
        if dof <= 0:
            data = a._data
            return grad * constant(torch.where(data == data.mean(), math.nan, math.inf).to(data.dtype))
        return MulScalar.apply(grad, 2.0 / dof) * (a - a.mean())  # torch's (2.0 / dof) * grad: a number's product
    if not keepdim and a.dim() > 1:
        grad = _keep_dims(grad, dims, False)
    dof = math.prod(a.shape[d] for d in dims) - correction
    return MulScalar.apply(grad, 2.0 / dof if dof else math.inf) * (a - a.mean(dims, keepdim=True))


def _dims(a, dim):
    """The dims a var reduces (none: all of them, as for a 0-dim tensor)."""
    return None if dim is None or a.dim() == 0 else _normalize_dims(dim, a.dim())


class Var(Function):
    """``a.var(dim, correction=..., keepdim=...)``: saves a, whose distance to its mean is the
    gradient (torch's VarBackward0)."""

    node_name = "VarBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, dim, correction, keepdim):
        ctx.save_for_backward(a)
        ctx.dims, ctx.correction, ctx.keepdim = _dims(a, dim), correction, keepdim
        return a._data.var(dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return _var_backward(grad, a, ctx.dims, ctx.correction, ctx.keepdim), None, None, None


class VarMean(Function):
    """``torch.var_mean``: two outputs, one node (VarMeanBackward0), which saves a. As torch's
    var_mean_backward, each output's part of the gradient is computed only when that output got a
    gradient (no zeros stand in for a missing one: ``set_materialize_grads(False)``), so a mean alone
    never meets var's infinite factor."""

    node_name = "VarMeanBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, dim, correction, keepdim):
        ctx.save_for_backward(a)
        ctx.set_materialize_grads(False)
        ctx.dims, ctx.correction, ctx.keepdim = _dims(a, dim), correction, keepdim
        return torch.var_mean(a._data, dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_var, grad_mean):
        (a,) = ctx.saved_tensors
        dims, keepdim = ctx.dims, ctx.keepdim
        grad = None if grad_var is None else _var_backward(grad_var, a, dims, ctx.correction, keepdim)
        if grad_mean is not None:
            if dims is None:  # torch's mean_backward, divided by a number (DivBackward1)
                mean = DivScalar.apply(grad_mean.expand(a.shape), a.numel())
            else:
                mean = DivScalar.apply(_keep_dims(grad_mean, dims, keepdim).expand(a.shape),
                                       math.prod(a.shape[d] for d in dims))
            grad = mean if grad is None else grad + mean
        return grad, None, None, None


def _prod_backward(grad, a, result):
    """torch's prod_backward where no element is zero: ``grad * result / a``. With a zero that
    division fails; torch then takes products of the others (cumprod from both ends), which minigrad
    does not have."""
    if (a._data == 0).any():
        raise NotImplementedError("minigrad's prod backward takes no zero elements")
    return grad * (result / a)


class Prod(Function):
    """``a.prod()``: saves a and the result, whose quotient is the gradient (ProdBackward0)."""

    node_name = "ProdBackward0"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a):
        result = a._data.prod()
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        return grad if a.dim() == 0 else _prod_backward(grad, a, result)


class ProdDim(Function):
    """``a.prod(dim, keepdim)``: as Prod, along one dim (ProdBackward1)."""

    node_name = "ProdBackward1"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a, dim, keepdim):
        result = a._data.prod(dim, keepdim=keepdim)
        ctx.save_for_backward(a, result)
        ctx.dim, ctx.keepdim = dim % max(a.dim(), 1), keepdim
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        if a.dim() == 0:
            return grad, None, None
        if not ctx.keepdim:
            grad, result = grad.unsqueeze(ctx.dim), result.unsqueeze(ctx.dim)
        return _prod_backward(grad, a, result), None, None


class Max(Function):
    """``tensor.max()``: the gradient is shared evenly between the elements equal to the max."""

    node_name = "MaxBackward1"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a):
        result = a._data.max()
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        """torch's evenly_distribute_backward: the elements equal to the max (the NaN ones when the
        max is NaN) share the gradient, as ``mask * (grad / count)``: a boolean mask and the result,
        no float copy of the mask. On the CPU torch picks the mask by asking whether the max is NaN;
        elsewhere (CUDA, meta) it doesn't wait for the device, and builds it with isnan in full."""
        a, result = ctx.saved_tensors
        data, value = a._data, result._data
        if data.device.type == "cpu":
            mask = data.isnan() if value.isnan().item() else data == value
        else:
            mask = (data == value).logical_or_(data.isnan().logical_and_(value.isnan()))
        return constant(mask) * (grad / constant(mask.sum()))


class Min(Max):
    """``tensor.min()``: as max, the gradient shared evenly between the elements equal to the min."""

    node_name = "MinBackward1"

    @staticmethod
    def forward(ctx, a):
        result = a._data.min()
        ctx.save_for_backward(a, result)
        return result


class Median(Max):
    """``tensor.median()``, the lower of the two middle values: torch spreads its gradient evenly over the
    elements equal to it too (evenly_distribute_backward; NaN, where the median is NaN)."""

    node_name = "MedianBackward0"

    @staticmethod
    def forward(ctx, a):
        result = a._data.median()
        ctx.save_for_backward(a, result)
        return result


class Nanmedian(Max):
    """``tensor.nanmedian()``, the median of the elements that are not NaN: its gradient as median's."""

    node_name = "NanmedianBackward0"

    @staticmethod
    def forward(ctx, a):
        result = a._data.nanmedian()
        ctx.save_for_backward(a, result)
        return result


class MaxDim(Function):
    """``tensor.max(dim)``; the values and indices come from the caller's single torch.max call. min, median
    and nanmedian along a dim are the same node under their names (torch's value_selecting_reduction_backward)."""

    node_name = "MaxBackward0"
    saved_names = ("indices",)

    @staticmethod
    def forward(ctx, a, dim, keepdim, values, indices):
        ctx.save_for_backward(constant(indices))
        ctx.shape, ctx.dim, ctx.keepdim = a.shape, dim % max(a.dim(), 1), keepdim
        return values

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        index = indices._data if ctx.keepdim else indices._data.unsqueeze(ctx.dim)
        mask = torch.zeros(ctx.shape, dtype=grad.dtype, device=grad.device).scatter_(ctx.dim, index, 1)
        return _keep_dims(grad, (ctx.dim,), ctx.keepdim) * constant(mask), None, None, None, None


class MinDim(MaxDim):
    """``tensor.min(dim)``: as max(dim), the gradient goes to the index chosen (MinBackward0)."""

    node_name = "MinBackward0"


class MedianDim(MaxDim):
    """``tensor.median(dim)``: the gradient goes to the index of each median (MedianBackward1)."""

    node_name = "MedianBackward1"


class NanmedianDim(MaxDim):
    """``tensor.nanmedian(dim)``: as median(dim) (NanmedianBackward1)."""

    node_name = "NanmedianBackward1"


# --- unique ----------------------------------------------------------------------------------

def _unique_outputs(ctx, outputs):
    """The unique values, then the integer outputs (inverse indices, counts): those out of the graph."""
    values, *integers = outputs
    integers = [constant(t) for t in integers]
    ctx.mark_non_differentiable(*integers)
    return (values, *integers)


class Unique2(Function):
    """``torch.unique`` without a dim: torch records a node for it but has no derivative, so backward
    through it fails. So do the other unique ops below, each under its own name: their values require
    grad, the inverse indices and counts are not differentiable at all."""

    node_name = "Unique2Backward0"

    @staticmethod
    def forward(ctx, a, sorted, return_inverse, return_counts):
        return _unique_outputs(ctx, torch._unique2(a._data, sorted, return_inverse, return_counts))

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for '_unique2' is not implemented.")


class Unique(Function):
    """``torch._unique``: the values and the inverse indices (empty unless asked for)."""

    node_name = "UniqueBackward0"

    @staticmethod
    def forward(ctx, a, sorted, return_inverse):
        return _unique_outputs(ctx, torch._unique(a._data, sorted, return_inverse))

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for '_unique' is not implemented.")


class UniqueDim(Function):
    """``torch.unique(..., dim=d)``: the unique slices along d."""

    node_name = "UniqueDimBackward0"

    @staticmethod
    def forward(ctx, a, dim, sorted, return_inverse, return_counts):
        return _unique_outputs(ctx, torch._VF.unique_dim(a._data, dim, sorted, return_inverse, return_counts))

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'unique_dim' is not implemented.")


class UniqueConsecutive(Function):
    """``torch.unique_consecutive``: one of each run of equal elements (or slices along a dim)."""

    node_name = "UniqueConsecutiveBackward0"

    @staticmethod
    def forward(ctx, a, return_inverse, return_counts, dim):
        outputs = torch._VF.unique_consecutive(a._data, return_inverse=return_inverse, return_counts=return_counts,
                                               dim=dim)
        return _unique_outputs(ctx, outputs)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'unique_consecutive' is not implemented.")
