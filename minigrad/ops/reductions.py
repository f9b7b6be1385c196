"""Reductions: sum, mean and max (whole tensor or along dims), and unique."""
import torch

from ..function import Function, constant


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
        return grad.expand(ctx.shape) / max(ctx.shape.numel(), 1)


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
        return grad_a / ctx.mean_count, None, None


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


class MaxDim(Function):
    """``tensor.max(dim)``; the values and indices come from the caller's single torch.max call."""

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


# --- unique ----------------------------------------------------------------------------------

class Unique2(Function):
    """``torch.unique``: torch records a node for it but has no derivative, so backward through it
    fails (the inverse indices and counts are not differentiable at all)."""

    node_name = "Unique2Backward0"

    @staticmethod
    def forward(ctx, a, sorted, return_inverse, return_counts):
        output, inverse, counts = torch._unique2(a._data, sorted, return_inverse, return_counts)
        inverse, counts = constant(inverse), constant(counts)
        ctx.mark_non_differentiable(inverse, counts)
        return output, inverse, counts

    @staticmethod
    def backward(ctx, grad, grad_inverse, grad_counts):
        raise NotImplementedError("the derivative for '_unique2' is not implemented.")
