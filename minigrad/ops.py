"""The ops: each is a Function whose node has torch's name and saves what torch saves.

``forward`` computes on storage (plain torch tensors, no autograd); ``backward`` is written
with minigrad ops, so running it with grad mode on (``create_graph=True``) records a graph of
its own and gives higher-order gradients.
"""
import torch

from . import broadcast
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
        a, b, result = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad * b * a ** (b - 1) if need_a else None
        grad_b = None
        if need_b:
            safe_log = a.log() * constant(((a._data != 0) | (b._data < 0)).to(result.dtype))
            grad_b = grad * result * safe_log
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
        b, result = ctx.saved_tensors
        if ctx.base == 0:
            return None, grad * constant(torch.zeros_like(result._data))
        return None, grad * result * float(torch.log(torch.tensor(float(ctx.base), dtype=torch.float64)))


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
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(d % ndim if ndim else 0 for d in dims)


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
        a, result = ctx.saved_tensors
        mask = (a._data == result._data).to(grad.dtype)
        return grad * constant(mask / mask.sum())


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
    node_name = "torch::autograd::CopyBackwards"

    @staticmethod
    def forward(ctx, a, source):
        ctx.source = (source.shape, source.dtype, source.device)
        return source._data.to(dtype=a.dtype, device=a.device).expand(a.shape).clone()

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
