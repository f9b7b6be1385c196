"""The ops: each is a Function whose node has torch's name and saves what torch saves.

``forward`` computes on storage (plain torch tensors, no autograd); ``backward`` is written
with minigrad ops, so running it with grad mode on (``create_graph=True``) records a graph of
its own and gives higher-order gradients.
"""
import math

import torch

from . import broadcast, grad_mode
from .function import Function, constant


# --- arithmetic -------------------------------------------------------------------------------

class Add(Function):
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b):
        return a._data + b._data

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (grad if need_a else None, grad if need_b else None)


class Sub(Function):
    node_name = "SubBackward0"

    @staticmethod
    def forward(ctx, a, b):
        return a._data - b._data

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (grad if need_a else None, -grad if need_b else None)


class AddScaled(Function):
    """``a.add(b, alpha=k)``, ``a - k * b`` for ``sub``: torch's add with alpha, one node that keeps k."""

    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.alpha = alpha
        return torch.add(a._data, b._data, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b, _ = ctx.needs_input_grad
        return (grad if need_a else None, grad * ctx.alpha if need_b else None, None)


class SubScaled(AddScaled):
    node_name = "SubBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        return AddScaled.forward(ctx, a, b, -alpha)


class Rsub(Function):
    """``number - tensor``: torch's rsub.Scalar, so only the tensor is an input of the node."""

    node_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, a, number):
        return number - a._data

    @staticmethod
    def backward(ctx, grad):
        return -grad, None


# BEGIN EXERCISE 1
class Mul(Function):
    """``a * b`` with broadcasting. d(a*b)/da = b and d(a*b)/db = a: each input's gradient needs
    only the *other* input, so torch saves ``other`` only if ``self`` needs a gradient, and vice versa."""

    node_name = "MulBackward0"
    saved_names = ("self", "other")
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a, b):
        """Save (self, other), each or None, with ctx.save_for_backward; return the product's storage."""
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        return a._data * b._data

    @staticmethod
    def backward(ctx, grad):
        """Gradients for (a, b), or None where one is not needed. Like torch, leave them shaped like
        the broadcast result: the engine reduces each to its input's shape (with ``sum_to``)."""
        a, b = ctx.saved_tensors
        return (grad * b if b is not None else None, grad * a if a is not None else None)
# END EXERCISE 1


class Div(Function):
    node_name = "DivBackward0"
    saved_names = ("self", "other")
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b)
        return a._data / b._data

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (grad / b if need_a else None, -grad * a / (b * b) if need_b else None)


class Reciprocal(Function):
    node_name = "ReciprocalBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.reciprocal()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return -grad * result * result


class Neg(Function):
    node_name = "NegBackward0"

    @staticmethod
    def forward(ctx, a):
        return -a._data

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Pow(Function):
    """``tensor ** number``."""

    node_name = "PowBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return a._data ** exponent

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        exponent = ctx.exponent
        if exponent == 0:
            return grad * 0, None
        return grad * exponent * a ** (exponent - 1), None


class PowTensor(Function):
    """``tensor ** tensor``."""

    node_name = "PowBackward1"
    saved_names = ("self", "exponent", "result")

    @staticmethod
    def forward(ctx, a, b):
        result = a._data ** b._data
        ctx.save_for_backward(a, b, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        """torch's pow_backward_self and pow_backward_exponent: 0 where the exponent is 0 (for self),
        and where self is 0 and the exponent is not negative (for the exponent): there ``b * a**(b-1)``
        and ``log(a)`` are not finite, and the limit is 0."""
        a, b, result = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = (grad * b * a ** (b - 1)).masked_fill(constant(b._data == 0), 0) if need_a else None
        grad_b = (grad * result * a.log()).masked_fill(constant((a._data == 0) & (b._data >= 0)), 0) if need_b else None
        return grad_a, grad_b


class PowScalarBase(Function):
    """``number ** tensor``."""

    node_name = "PowBackward2"
    saved_names = ("exponent", "result")

    @staticmethod
    def forward(ctx, base, b):
        result = torch.pow(base, b._data)
        ctx.save_for_backward(b, result)
        ctx.base = base
        return result

    @staticmethod
    def backward(ctx, grad):
        """``grad * result * log(base)``; for base 0, torch's limit 0 where the exponent is not negative."""
        b, result = ctx.saved_tensors
        grad_b = grad * result * float(torch.log(torch.tensor(float(ctx.base), dtype=torch.float64)))
        return None, grad_b.masked_fill(constant(b._data >= 0), 0) if ctx.base == 0 else grad_b


# --- unary -----------------------------------------------------------------------------------

# BEGIN EXERCISE 1
class Exp(Function):
    """d exp(a)/da = exp(a): the backward needs the output, so torch saves the *result*, not the input."""

    node_name = "ExpBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        """Save the result (the storage you return) and return it."""
        result = a._data.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        """The gradient for a, from the saved result."""
        (result,) = ctx.saved_tensors
        return grad * result
# END EXERCISE 1


class Log(Function):
    node_name = "LogBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._data.log()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


class Relu(Function):
    node_name = "ReluBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.relu()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return ThresholdBackward.apply(grad, result)


class ThresholdBackward(Function):
    """relu's backward, grad where result > 0 else 0, in one kernel (torch's threshold_backward).

    It is an op itself, so with create_graph=True relu's backward can be differentiated again.
    """

    node_name = "ThresholdBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, result):
        ctx.result = result
        return torch.ops.aten.threshold_backward.default(grad._data, result._data, 0)

    @staticmethod
    def backward(ctx, grad):
        return ThresholdBackward.apply(grad, ctx.result), None


class Tanh(Function):
    node_name = "TanhBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.tanh()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return TanhBackward.apply(grad, result)


class TanhBackward(Function):
    """tanh's backward, grad * (1 - result²), in one kernel (torch's tanh_backward): one op instead
    of three. An op itself, so with create_graph=True it can be differentiated again."""

    node_name = "TanhBackwardBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, result):
        ctx.save_for_backward(grad, result)
        return torch.ops.aten.tanh_backward.default(grad._data, result._data)

    @staticmethod
    def backward(ctx, g):
        grad, result = ctx.saved_tensors
        need_grad, need_result = ctx.needs_input_grad
        return (TanhBackward.apply(g, result) if need_grad else None,
                g * grad * -2 * result if need_result else None)


class Sigmoid(Function):
    node_name = "SigmoidBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.sigmoid()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return SigmoidBackward.apply(grad, result)


class SigmoidBackward(Function):
    """sigmoid's backward, grad * result * (1 - result), in one kernel (torch's sigmoid_backward)."""

    node_name = "SigmoidBackwardBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, result):
        ctx.save_for_backward(grad, result)
        return torch.ops.aten.sigmoid_backward.default(grad._data, result._data)

    @staticmethod
    def backward(ctx, g):
        grad, result = ctx.saved_tensors
        need_grad, need_result = ctx.needs_input_grad
        return (SigmoidBackward.apply(g, result) if need_grad else None,
                g * grad * (1 - 2 * result) if need_result else None)


class Abs(Function):
    node_name = "AbsBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._data.abs()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * constant(a._data.sign())


class Clone(Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a, memory_format=torch.preserve_format):
        return a._data.clone(memory_format=memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ToCopy(Function):
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, a, dtype, device):
        ctx.source = (a.dtype, a.device)
        return a._data.to(dtype=dtype, device=device)

    @staticmethod
    def backward(ctx, grad):
        dtype, device = ctx.source
        return grad.to(dtype=dtype, device=device), None, None


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
        """Remember what backward needs (shapes, dims) as ctx attributes; return the sum's storage."""
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
    node_name = "MeanBackward1"

    @staticmethod
    def forward(ctx, a, dim, keepdim):
        result = a._data.mean(dim, keepdim=keepdim)
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, _normalize_dims(dim, a.dim()), keepdim
        ctx.count = a.numel() // max(result.numel(), 1)
        return result

    @staticmethod
    def backward(ctx, grad):
        return _keep_dims(grad, ctx.dims, ctx.keepdim).expand(ctx.shape) / ctx.count, None, None


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


# --- linear algebra --------------------------------------------------------------------------

def mat2_grad(grad, mat1, mat2_strides):
    """mat1.T @ grad, laid out like mat2 (as torch's mm_mat2_backward does).

    For nn.Linear, mat2 is weight.t(): computing (grad.T @ mat1).T lets weight.grad come out
    contiguous, so AccumulateGrad can keep it without a copy.
    """
    if mat2_strides[0] == 1 and mat2_strides[1] != 1:
        return grad.t().mm(mat1).t()
    return mat1.t().mm(grad)


# BEGIN EXERCISE 1
class Mm(Function):
    """``a @ b`` for matrices: grad_a = grad @ b.T needs b, grad_b = a.T @ grad needs a. As for mul,
    torch saves each only if the other input needs a gradient."""

    node_name = "MmBackward0"
    saved_names = ("self", "mat2")

    @staticmethod
    def forward(ctx, a, b):
        """Save (self, mat2), each or None; keep b's strides in ctx.mat2_layout for mat2_grad."""
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.mat2_layout = b._data.stride()
        return a._data.mm(b._data)

    @staticmethod
    def backward(ctx, grad):
        """Gradients for (a, b), or None where not needed; b's is ``mat2_grad(grad, a, ctx.mat2_layout)``."""
        a, b = ctx.saved_tensors
        return (grad.mm(b.t()) if b is not None else None,
                mat2_grad(grad, a, ctx.mat2_layout) if a is not None else None)
# END EXERCISE 1


class Mv(Function):
    node_name = "MvBackward0"
    saved_names = ("self", "vec")

    @staticmethod
    def forward(ctx, m, v):
        need_m, need_v = ctx.needs_input_grad
        ctx.save_for_backward(m if need_v else None, v if need_m else None)
        return m._data.mv(v._data)

    @staticmethod
    def backward(ctx, grad):
        m, v = ctx.saved_tensors
        return (grad.unsqueeze(1).mm(v.unsqueeze(0)) if v is not None else None,
                m.t().mv(grad) if m is not None else None)


class Dot(Function):
    node_name = "DotBackward0"
    saved_names = ("self", "tensor")

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        return a._data.dot(b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad * b if b is not None else None, grad * a if a is not None else None)


class Addmm(Function):
    """``bias + mat1 @ mat2``: what nn.Linear runs on a batch."""

    node_name = "AddmmBackward0"
    saved_names = ("mat1", "mat2")

    @staticmethod
    def forward(ctx, bias, mat1, mat2):
        _, need_1, need_2 = ctx.needs_input_grad
        ctx.save_for_backward(mat1 if need_2 else None, mat2 if need_1 else None)
        ctx.mat2_layout = mat2._data.stride()
        return torch.addmm(bias._data, mat1._data, mat2._data)

    @staticmethod
    def backward(ctx, grad):
        mat1, mat2 = ctx.saved_tensors
        need_bias = ctx.needs_input_grad[0]
        return (grad if need_bias else None,
                grad.mm(mat2.t()) if mat2 is not None else None,
                mat2_grad(grad, mat1, ctx.mat2_layout) if mat1 is not None else None)


# --- views -----------------------------------------------------------------------------------

class T(Function):
    node_name = "TBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a):
        return a._data.t()

    @staticmethod
    def backward(ctx, grad):
        return grad.t()


class Transpose(Function):
    node_name = "TransposeBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return a._data.transpose(dim0, dim1)

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(*ctx.dims), None, None


class Reshaping(Function):
    """An op that only rearranges elements (view, squeeze, ...): its backward reshapes the gradient
    back to the input's shape. Subclasses name the storage method in ``method``."""

    is_view = True
    method = None

    @classmethod
    def forward(cls, ctx, a, *args):
        ctx.shape = a.shape
        return getattr(a._data, cls.method)(*args)

    @staticmethod
    def backward(ctx, grad):
        """The gradient for ``a``, and None for the shape or dim argument (when there is one)."""
        return grad.reshape(ctx.shape), None


class View(Reshaping):
    node_name, method = "ViewBackward0", "view"


class UnsafeView(Reshaping):
    """The view torch's reshape takes of the copy it had to make of a non-contiguous input."""

    node_name, method, is_view = "UnsafeViewBackward0", "view", False


class Squeeze(Reshaping):
    node_name, method = "SqueezeBackward0", "squeeze"


class SqueezeDim(Reshaping):
    node_name, method = "SqueezeBackward1", "squeeze"


class SqueezeDims(Reshaping):
    node_name, method = "SqueezeBackward2", "squeeze"


class Expand(Function):
    node_name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a.shape
        return a._data.expand(shape)

    @staticmethod
    def backward(ctx, grad):
        return broadcast.sum_to(grad, ctx.shape), None


class Unsqueeze(Function):
    node_name = "UnsqueezeBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        result = a._data.unsqueeze(dim)
        ctx.dim = dim % result.dim()
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim), None


class SqueezeDimInplace(SqueezeDim):
    """The squeeze_(dim) matmul applies to its result for a vector on the left."""

    node_name = "SqueezeBackward4"


class Alias(Function):
    """``x[...]``: the whole tensor, as a new view."""

    node_name = "AliasBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a):
        return a._data.view_as(a._data)

    @staticmethod
    def backward(ctx, grad):
        return grad


class Select(Function):
    """``tensor[i]`` along one dimension."""

    node_name = "SelectBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.shape, ctx.key = a.shape, (slice(None),) * dim + (index,)
        return a._data.select(dim, index)

    @staticmethod
    def backward(ctx, grad):
        return IndexBackward.apply(grad, ctx.shape, ctx.key), None, None


class Slice(Function):
    """``tensor[start:stop:step]`` along one dimension."""

    node_name = "SliceBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim, piece):
        ctx.shape, ctx.key = a.shape, (slice(None),) * dim + (piece,)
        return a._data[ctx.key]

    @staticmethod
    def backward(ctx, grad):
        return IndexBackward.apply(grad, ctx.shape, ctx.key), None, None


class IndexBackward(Function):
    """Place a gradient of ``tensor[key]`` into zeros of the tensor's shape (select/slice backward)."""

    @staticmethod
    def forward(ctx, grad, shape, key):
        ctx.key = key
        result = grad._data.new_zeros(shape)
        result[key] = grad._data
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.key], None, None


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


# --- losses ----------------------------------------------------------------------------------

class MseLoss(Function):
    node_name = "MseLossBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, a, target, reduction):
        ctx.save_for_backward(a, target)
        ctx.reduction = reduction
        return torch.nn.functional.mse_loss(a._data, target._data, reduction=reduction)

    @staticmethod
    def backward(ctx, grad):
        a, target = ctx.saved_tensors
        need_a, need_target = ctx.needs_input_grad[:2]
        scale = 2 / a.numel() if ctx.reduction == "mean" else 2
        grad_a = grad * scale * (a - target)
        return grad_a if need_a else None, -grad_a if need_target else None, None


# --- rounding and roots ------------------------------------------------------------------------

class Round(Function):
    """Piecewise constant: its gradient is zero everywhere (torch's ``zeros_like(grad)``, no graph)."""

    node_name = "RoundBackward0"

    @staticmethod
    def forward(ctx, a):
        return a._data.round()

    @staticmethod
    def backward(ctx, grad):
        return constant(torch.zeros_like(grad._data))


class Sqrt(Function):
    node_name = "SqrtBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.sqrt()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad / (2 * result)


class MaskedFill(Function):
    """``a.masked_fill(mask, number)``: the filled places get no gradient. The mask (storage) is not
    an input of the node, as in torch."""

    node_name = "MaskedFillBackward0"
    saved_names = ("mask",)

    @staticmethod
    def forward(ctx, a, mask, value):
        ctx.save_for_backward(constant(mask))
        return a._data.masked_fill(mask, value)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return MaskedFill.apply(grad, mask._data, 0), None, None


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


class ReshapeAlias(Reshaping):
    """The view torch's reshape takes of a non-contiguous input whose elements it can view without copying."""

    node_name, method = "ReshapeAliasBackward0", "view"


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
        sign = constant(a._data.sign())
        if p == 1:
            grad_a = sign * grad
        elif p == 2:
            grad_a = grad * (a / norm).masked_fill(norm == 0, 0)
        elif p in (float("inf"), float("-inf")):
            absolute = a._data.abs()
            mask = ((absolute == norm._data) | absolute.isnan()).to(grad.dtype)
            count = mask.sum(ctx.dims, keepdim=True) if ctx.dims else mask.sum()
            grad_a = sign * (grad / constant(count) * constant(mask))
        elif p < 1:
            scaled = (sign * a.abs() ** (p - 1)).masked_fill(a == 0, 0)
            grad_a = scaled * grad * norm ** (1 - p)
        elif p < 2:
            grad_a = sign * a.abs() ** (p - 1) * (grad / norm ** (p - 1)).masked_fill(norm == 0, 0)
        else:
            grad_a = a * a.abs() ** (p - 2) * (grad / norm ** (p - 1)).masked_fill(norm == 0, 0)
        return grad_a, None, None, None


# --- batched matrix product ------------------------------------------------------------------

class Bmm(Function):
    node_name = "BmmBackward0"
    saved_names = ("self", "mat2")

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        return a._data.bmm(b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (Bmm.apply(grad, b.transpose(1, 2)) if b is not None else None,
                Bmm.apply(a.transpose(1, 2), grad) if a is not None else None)


# --- softmax ---------------------------------------------------------------------------------
# Each backward is an op of its own running torch's fused kernel (the same numbers as torch), with
# a backward written in minigrad ops, so that create_graph=True can differentiate it again.

class Softmax(Function):
    node_name = "SoftmaxBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a, dim):
        result = a._data.softmax(dim)
        ctx.save_for_backward(result)
        ctx.dim = dim
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return SoftmaxBackwardData.apply(grad, result, ctx.dim), None


class SoftmaxBackwardData(Function):
    """result * (grad - sum(grad * result)): softmax's backward (torch's _softmax_backward_data)."""

    node_name = "SoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, output, dim):
        ctx.save_for_backward(grad, output)
        ctx.dim = dim
        return torch._softmax_backward_data(grad._data, output._data, dim, output.dtype)

    @staticmethod
    def backward(ctx, g):
        grad, output = ctx.saved_tensors
        need_grad, need_output = ctx.needs_input_grad[:2]
        dim = ctx.dim
        grad_output = None
        if need_output:
            grad_output = (g * grad - (output * grad).sum(dim, keepdim=True) * g
                           - grad * (output * g).sum(dim, keepdim=True))
        return SoftmaxBackwardData.apply(g, output, dim) if need_grad else None, grad_output, None


class LogSoftmax(Function):
    node_name = "LogSoftmaxBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a, dim):
        result = a._data.log_softmax(dim)
        ctx.save_for_backward(result)
        ctx.dim = dim
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return LogSoftmaxBackwardData.apply(grad, result, ctx.dim), None


class LogSoftmaxBackwardData(Function):
    """grad - exp(result) * sum(grad): log_softmax's backward (torch's _log_softmax_backward_data)."""

    node_name = "LogSoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, output, dim):
        ctx.save_for_backward(grad, output)
        ctx.dim = dim
        return torch._log_softmax_backward_data(grad._data, output._data, dim, output.dtype)

    @staticmethod
    def backward(ctx, g):
        grad, output = ctx.saved_tensors
        need_grad, need_output = ctx.needs_input_grad[:2]
        dim = ctx.dim
        return (g - (g * output.exp()).sum(dim, keepdim=True) if need_grad else None,
                -grad.sum(dim, keepdim=True) * output.exp() * g if need_output else None, None)


# --- GELU ------------------------------------------------------------------------------------

class Gelu(Function):
    node_name = "GeluBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, approximate):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        return torch.nn.functional.gelu(a._data, approximate=approximate)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return GeluBackward.apply(grad, a, ctx.approximate), None


class GeluBackward(Function):
    """grad * gelu'(self) in torch's kernel (gelu_backward); its own backward needs gelu''."""

    node_name = "GeluBackwardBackward0"
    saved_names = ("grad_output", "self")

    @staticmethod
    def forward(ctx, grad, a, approximate):
        ctx.save_for_backward(grad, a)
        ctx.approximate = approximate
        return torch.ops.aten.gelu_backward.default(grad._data, a._data, approximate=approximate)

    @staticmethod
    def backward(ctx, g):
        grad, a = ctx.saved_tensors
        need_grad, need_a = ctx.needs_input_grad[:2]
        return (GeluBackward.apply(g, a, ctx.approximate) if need_grad else None,
                g * grad * _gelu_second_derivative(a, ctx.approximate) if need_a else None, None)


def _gelu_second_derivative(x, approximate):
    """gelu'' in minigrad ops. Exact: gelu = x Φ(x), so gelu'' = φ(x) (2 - x²). With tanh:
    gelu = x (1 + tanh u) / 2, u = k (x + c x³), so gelu'' = (1 - t²) (u' + x (u'' - 2 t u'²) / 2)."""
    if approximate == "none":
        return (x * x * -0.5).exp() * (2 - x * x) * (1 / math.sqrt(2 * math.pi))
    k, c = math.sqrt(2 / math.pi), 0.044715
    t = ((x + x * x * x * c) * k).tanh()
    du, ddu = (x * x * (3 * c) + 1) * k, x * (6 * c * k)
    return (1 - t * t) * (du + x * (ddu - t * du * du * 2) * 0.5)


# --- layer norm ------------------------------------------------------------------------------

class NativeLayerNorm(Function):
    """torch's fused layer norm: one node for normalisation, scale and shift, saving the input and
    the per-row mean and 1/std (``result1``, ``result2``) as torch does."""

    node_name = "NativeLayerNormBackward0"
    saved_names = ("input", "weight", "bias", "result1", "result2")

    @staticmethod
    def forward(ctx, a, normalized_shape, weight, bias, eps):
        out, mean, rstd = torch.native_layer_norm(a._data, normalized_shape, _storage_or_none(weight),
                                                  _storage_or_none(bias), eps)
        ctx.save_for_backward(a, _defined(weight), _defined(bias), constant(mean), constant(rstd))
        ctx.normalized_shape, ctx.eps = tuple(normalized_shape), eps
        return out

    @staticmethod
    def backward(ctx, grad):
        """torch's fused backward when nothing records it; with create_graph=True, the same formula in
        minigrad ops, with the mean and 1/std recomputed from the input so they are differentiated too."""
        a, weight, bias, mean, rstd = ctx.saved_tensors
        need_a, _, need_weight, need_bias, _ = ctx.needs_input_grad
        if not grad_mode.is_grad_enabled():
            grads = torch.ops.aten.native_layer_norm_backward.default(
                grad._data, a._data, ctx.normalized_shape, mean._data, rstd._data, _storage_or_none(weight),
                _storage_or_none(bias), [need_a, need_weight, need_bias])
            grad_a, grad_weight, grad_bias = (None if g is None else constant(g) for g in grads)
            return grad_a, None, grad_weight, grad_bias, None
        dims = tuple(range(a.dim() - len(ctx.normalized_shape), a.dim()))
        rows = tuple(range(a.dim() - len(ctx.normalized_shape)))
        mean = a.mean(dims, keepdim=True)
        centered = a - mean
        rstd = ((centered * centered).mean(dims, keepdim=True) + ctx.eps) ** -0.5
        normalized = centered * rstd
        scaled = grad if weight is None else grad * weight
        grad_a = rstd * (scaled - scaled.mean(dims, keepdim=True)
                         - normalized * (scaled * normalized).mean(dims, keepdim=True)) if need_a else None
        grad_weight = (grad * normalized).sum(rows) if rows else grad * normalized
        grad_bias = grad.sum(rows) if rows else grad
        return grad_a, None, grad_weight if need_weight else None, grad_bias if need_bias else None, None


def _storage_or_none(tensor):
    return None if tensor is None or tensor is _undefined else tensor._data


_undefined = None


def undefined():
    """An optional tensor argument left out (torch's undefined tensor), for ops whose node has an edge
    for it all the same (``(None, 0)``, as torch gives every optional tensor input): layer_norm without
    weight. Made on first use: ops is imported before Tensor exists."""
    global _undefined
    if _undefined is None:
        _undefined = constant(torch.empty(0))
    return _undefined


def _defined(tensor):
    return None if tensor is _undefined else tensor


# --- embedding -------------------------------------------------------------------------------

class Embedding(Function):
    """Rows of ``weight`` picked by ``indices`` (storage: not an input of the node, as in torch)."""

    node_name = "EmbeddingBackward0"
    saved_names = ("indices",)

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        ctx.save_for_backward(constant(indices))
        ctx.num_weights, ctx.padding_idx, ctx.scale_grad_by_freq = weight.shape[0], padding_idx, scale_grad_by_freq
        return torch.embedding(weight._data, indices, padding_idx, scale_grad_by_freq)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return EmbeddingDenseBackward.apply(grad, indices._data, ctx.num_weights, ctx.padding_idx,
                                            ctx.scale_grad_by_freq), None, None, None


class EmbeddingDenseBackward(Function):
    """Sum each row's gradients into a weight-shaped gradient (torch's embedding_dense_backward)."""

    node_name = "EmbeddingDenseBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
        ctx.indices, ctx.padding_idx = indices, padding_idx
        return torch.ops.aten.embedding_dense_backward.default(grad._data, indices, num_weights, padding_idx,
                                                               scale_grad_by_freq)

    @staticmethod
    def backward(ctx, g):
        rows = Embedding.apply(g, ctx.indices, -1, False)
        if ctx.padding_idx >= 0:
            rows = rows * constant((ctx.indices != ctx.padding_idx).unsqueeze(-1).to(rows.dtype))
        return rows, None, None, None, None


# --- classification losses -------------------------------------------------------------------

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


class NllLoss(Function):
    """Negative log-likelihood of class indices. The target and the class weights are storage: torch
    does not differentiate the loss with respect to them."""

    node_name = "NllLossBackward0"
    saved_names = ("self", "target", "weight", "total_weight")

    @staticmethod
    def forward(ctx, a, target, weight, reduction, ignore_index):
        out, total_weight = torch.ops.aten.nll_loss_forward.default(a._data, target, weight, REDUCTIONS[reduction],
                                                                    ignore_index)
        ctx.save_for_backward(a, constant(target), None if weight is None else constant(weight), constant(total_weight))
        ctx.reduction, ctx.ignore_index = reduction, ignore_index
        return out

    @staticmethod
    def backward(ctx, grad):
        a, target, weight, total_weight = ctx.saved_tensors
        return NllLossBackward.apply(grad, a, target._data, _storage_or_none(weight), ctx.reduction, ctx.ignore_index,
                                     total_weight._data), None, None, None, None


class NllLossBackward(Function):
    """The loss's gradient, -weight[target] at each row's target class (scaled for "mean"). Linear in
    ``grad``, so its own gradient for ``grad`` is the loss of the incoming gradient; none for ``self``."""

    node_name = "NllLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, a, target, weight, reduction, ignore_index, total_weight):
        ctx.args = target, weight, reduction, ignore_index
        return torch.ops.aten.nll_loss_backward.default(grad._data, a._data, target, weight, REDUCTIONS[reduction],
                                                        ignore_index, total_weight)

    @staticmethod
    def backward(ctx, g):
        grad_grad = NllLoss.apply(g, *ctx.args) if ctx.needs_input_grad[0] else None
        return grad_grad, None, None, None, None, None, None


# --- dropout on accelerators -----------------------------------------------------------------

class NativeDropout(Function):
    """What torch's dropout runs on CUDA: a fused kernel that returns the output and the kept mask."""

    node_name = "NativeDropoutBackward0"
    saved_names = ("result1",)

    @staticmethod
    def forward(ctx, a, p, train):
        out, mask = torch.native_dropout(a._data, p, train)
        ctx.save_for_backward(constant(mask))
        ctx.scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * constant(mask._data.to(grad.dtype) * ctx.scale), None, None
