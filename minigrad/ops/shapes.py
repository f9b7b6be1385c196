"""Shape ops: views (t, transpose, view, squeeze, unsqueeze, expand, select, slice) and reshapes."""
from .. import broadcast
from ..function import Function


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


class TransposeInplace(Transpose):
    """The node of ``transpose_``: the tensor itself takes the new sizes and strides, as its history's
    next step (``Tensor._record_inplace``), so the result is no new view."""

    node_name = "TransposeBackward1"
    is_view = False


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


class ReshapeAlias(Reshaping):
    """The view torch's reshape takes of a non-contiguous input whose elements it can view without copying."""

    node_name, method = "ReshapeAliasBackward0", "view"
