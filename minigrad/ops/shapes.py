"""Shape ops: views (t, transpose, view, squeeze, unsqueeze, expand, select, slice, diagonal), their
in-place forms (t_, transpose_, squeeze_, unsqueeze_, as_strided_), reshapes, and indexing with index
tensors and masks (index, index_put), which copies. Several views at once (unbind, split, chunk) and the
copies that join tensors (stack, cat) are in ``splits``."""
import torch

from .. import broadcast, views
from ..function import Function, constant
from ..saved_tensors import other_attributes


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


class Permute(Function):
    """The dims in a new order (``x.T``: reversed), a view; backward puts them back."""

    node_name = "PermuteBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return a._data.permute(dims)

    @staticmethod
    def backward(ctx, grad):
        count = len(ctx.dims)
        inverse = sorted(range(count), key=lambda i: ctx.dims[i] % count)
        return Permute.apply(grad, tuple(inverse)), None


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


class Squeeze(Function):
    """``a.squeeze()``, every dim of size 1 dropped, a view. Its backward puts them back one ``unsqueeze``
    each, as torch's unsqueeze_to (not a reshape); SqueezeDim and SqueezeDims, those of their dims."""

    node_name = "SqueezeBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, *dims):
        ctx.shape, ctx.dims = a.shape, dims[0] if dims else None
        return a._data.squeeze(*dims)

    @staticmethod
    def backward(ctx, grad):
        shape, dims = ctx.shape, ctx.dims
        if dims is not None:
            dims = {d % len(shape) for d in ((dims,) if isinstance(dims, int) else dims)} if shape else ()
        for d, size in enumerate(shape):
            if size == 1 and (dims is None or d in dims):
                grad = grad.unsqueeze(d)
        return grad, None


class SqueezeDim(Squeeze):
    node_name = "SqueezeBackward1"


class SqueezeDims(Squeeze):
    node_name = "SqueezeBackward2"


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


# --- the in-place view ops: the tensor itself takes the new sizes and strides (``Tensor._inplace_view``),
# as its history's next step (``Tensor._record_inplace``), so the result is no new view.

class SqueezeDimInplace(SqueezeDim):
    """``squeeze_(dim)``; also what matmul applies to its result for a vector on the left, which torch
    squeezes in place (a result that is no view)."""

    node_name = "SqueezeBackward4"
    is_view = False


class SqueezeInplace(Squeeze):
    node_name = "SqueezeBackward3"
    is_view = False


class SqueezeDimsInplace(SqueezeDims):
    node_name = "SqueezeBackward5"
    is_view = False


class UnsqueezeInplace(Unsqueeze):
    node_name = "UnsqueezeBackward1"
    is_view = False


class TInplace(T):
    node_name = "TBackward1"
    is_view = False


class AsStridedInplace(Function):
    """``as_strided_(size, stride, storage_offset)``: sizes and strides on the tensor's memory. Its
    gradient is grad put where the result lies in the input's layout (torch's as_strided_backward), so
    the node keeps both layouts (AsStridedBackward1)."""

    node_name = "AsStridedBackward1"

    @staticmethod
    def forward(ctx, a, size, stride, storage_offset):
        result = a._data.as_strided(size, stride, storage_offset)
        ctx.geometries = [(tuple(t.shape), t.stride(), t.storage_offset()) for t in (a._data, result)]
        return result

    @staticmethod
    def backward(ctx, grad):
        return views.AsStridedScatter.apply(grad, *ctx.geometries), None, None, None


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
        ctx.shape, ctx.dim, ctx.index = a.shape, dim, index
        return a._data.select(dim, index)

    @staticmethod
    def backward(ctx, grad):
        return SelectBackward.apply(grad, ctx.shape, ctx.dim, ctx.index), None, None


class Slice(Function):
    """``tensor[start:stop:step]`` along one dimension."""

    node_name = "SliceBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim, piece):
        ctx.shape, ctx.dim, ctx.piece = a.shape, dim, piece
        return a._data[(slice(None),) * dim + (piece,)]

    @staticmethod
    def backward(ctx, grad):
        return SliceBackward.apply(grad, ctx.shape, ctx.dim, ctx.piece), None, None


class SelectBackward(Function):
    """select's backward: the gradient put into zeros of the input's shape (torch's select_backward). An op
    itself, so with create_graph=True it can be differentiated again: by selecting, as torch's."""

    node_name = "SelectBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, shape, dim, index):
        ctx.dim, ctx.index = dim, index
        result = grad._data.new_zeros(shape)
        result.select(dim, index).copy_(grad._data)
        return result

    @staticmethod
    def backward(ctx, g):
        return g.select(ctx.dim, ctx.index), None, None, None


class SliceBackward(Function):
    """slice's backward, as SelectBackward (torch's slice_backward): differentiated again by slicing."""

    node_name = "SliceBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, shape, dim, piece):
        ctx.dim, ctx.piece = dim, piece
        result = grad._data.new_zeros(shape)
        result[(slice(None),) * dim + (piece,)] = grad._data
        return result

    @staticmethod
    def backward(ctx, g):
        return Slice.apply(g, ctx.dim, ctx.piece), None, None, None


other_attributes(SelectBackward, dim=lambda node: node.dim, index=lambda node: node.index % 2 ** 64)
other_attributes(SliceBackward, dim=lambda node: node.dim, start=lambda node: _slice_bounds(node.piece)[0],
                 end=lambda node: _slice_bounds(node.piece)[1], step=lambda node: _slice_bounds(node.piece)[2])


def _slice_bounds(piece):
    """A slice's start, end and step as torch's nodes show them: None is 0, the largest int64, 1; a
    negative bound as the unsigned 64-bit number of its bits (torch's)."""
    return (0 if piece.start is None else piece.start % 2 ** 64,
            2 ** 63 - 1 if piece.stop is None else piece.stop % 2 ** 64, 1 if piece.step is None else piece.step)


class Gather(Function):
    """``a.gather(dim, index)``: GatherBackward0, which saves a and the index (boxed in a 1-tuple, like
    Where's condition: an argument but no input of the node). Backward scatters the gradient back,
    adding where an index repeats: torch's gather_backward, zeros of a's shape then ``scatter_add_``."""

    node_name = "GatherBackward0"
    saved_names = ("self", "index")

    @staticmethod
    def forward(ctx, a, dim, boxed_index):
        (index,) = boxed_index
        ctx.save_for_backward(a, index)
        ctx.dim = dim
        return a._data.gather(dim, index._data)

    @staticmethod
    def backward(ctx, grad):
        a, index = ctx.saved_tensors
        result = constant(grad._data.new_zeros(a.shape))
        return result._inplace(ScatterAdd, _scatter_add_, ctx.dim, (index,), grad), None, None


class ScatterAdd(Function):
    """``a.scatter_add(dim, index, src)``, src's entries added into a at index (ScatterAddBackward0):
    a's gradient is grad, src's is grad gathered at index. The index comes boxed, as in Gather."""

    node_name = "ScatterAddBackward0"
    saved_names = ("index",)

    @staticmethod
    def forward(ctx, a, dim, boxed_index, src):
        (index,) = boxed_index
        ctx.save_for_backward(index)
        ctx.dim = dim
        return a._data.scatter_add(dim, index._data, src._data)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        need_a, need_src = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
        return grad if need_a else None, None, None, Gather.apply(grad, ctx.dim, (index,)) if need_src else None


def _scatter_add_(data, dim, boxed_index, src):
    """scatter_add_'s kernel on storage, for ``Tensor._inplace``."""
    return data.scatter_add_(dim, boxed_index[0]._data, src)


class Index(Function):
    """``a[indices]`` where the key holds index tensors, lists or masks (``indices``: one per dim from
    the first, None for a dim taken whole): a copy, not a view. As torch's index.Tensor, it saves
    the indices and a's sizes, not a: editing a in place afterwards leaves its backward intact.
    Backward adds the gradient into zeros at the indices (``index_put_`` accumulating: an element
    picked twice gets both gradients), so its own graph is IndexPutImplBackward0."""

    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, a, indices):
        ctx.shape = a.shape
        ctx.save_for_backward(*indices)
        return torch.ops.aten.index.Tensor(a._data, storage_indices(indices))

    @staticmethod
    def backward(ctx, grad):
        zeros = constant(grad._data.new_zeros(ctx.shape))
        return IndexPutImpl.apply(zeros, ctx.saved_tensors, grad, True), None


class IndexPut(Function):
    """``a.index_put_(indices, values, accumulate)``, what ``a[index tensors] = values`` runs, computed
    out of place (``Tensor._inplace`` copies it into a). It saves the indices and accumulate, not
    values: a's gradient is the incoming one, zeroed where values went unless accumulating, and
    values' is the incoming one at the indices (the engine sums it down to a broadcast value's shape)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, a, indices, values, accumulate):
        ctx.accumulate, ctx.values = accumulate, (values.shape, values.dtype, values.device)
        ctx.save_for_backward(*indices)
        return torch.ops.aten.index_put(a._data, storage_indices(indices), values._data, accumulate)

    @staticmethod
    def backward(ctx, grad):
        indices, (shape, dtype, device) = ctx.saved_tensors, ctx.values
        grad_self = grad_values = None
        if ctx.needs_input_grad[0]:
            zeros = constant(torch.zeros(shape, dtype=dtype, device=device))
            grad_self = grad if ctx.accumulate else IndexPut.apply(grad, indices, zeros, False)
        if ctx.needs_input_grad[2]:
            grad_values = Index.apply(grad, indices)
        return grad_self, None, grad_values, None


class IndexPutImpl(IndexPut):
    """The accumulating index_put that Index's backward runs (torch's ``_index_put_impl_``)."""

    node_name = "IndexPutImplBackward0"


def storage_indices(indices):
    return [None if i is None else i._data for i in indices]


# torch keeps dims (permute's, gather's and scatter_add's) as unsigned 64-bit integers: a negative one reads back
# as 2**64 plus it.
other_attributes(Permute, dims=lambda node: tuple(dim % 2**64 for dim in node.dims))
for _function in (Gather, ScatterAdd):
    other_attributes(_function, dim=lambda node: node.dim % 2**64)
other_attributes(Gather, sparse_grad=lambda node: False)
other_attributes(Index, indices=lambda node: node.saved_tensors, self_sym_sizes=lambda node: tuple(node.shape))
for _function in (IndexPut, IndexPutImpl):
    other_attributes(_function, indices=lambda node: node.saved_tensors, accumulate=lambda node: node.accumulate)


class Diagonal(Function):
    """``a.diagonal(offset, dim1, dim2)``: a view. Backward places the gradient on the diagonal of
    zeros (torch's diagonal_backward, an op of its own)."""

    node_name = "DiagonalBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, offset, dim1, dim2):
        ctx.shape, ctx.dims = a.shape, (offset, dim1, dim2)
        return a._data.diagonal(offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        return DiagonalBackward.apply(grad, ctx.shape, *ctx.dims), None, None, None


class DiagonalBackward(Function):
    """A diagonal's gradient placed in zeros of the input's shape; its own gradient is the diagonal again."""

    node_name = "DiagonalBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, shape, offset, dim1, dim2):
        ctx.dims = (offset, dim1, dim2)
        result = grad._data.new_zeros(shape)
        result.diagonal(offset, dim1, dim2).copy_(grad._data)
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad.diagonal(*ctx.dims), None, None, None, None


class Repeat(Function):
    """``a.repeat(*repeats)``: a copy tiling a. Backward, as torch's repeat_backward: sum away the
    leading dims repeats added, then view each repeated dim as (repeat, size) and sum the repeats;
    zeros when a repeat is 0. Nothing saved but the repeats and a's shape."""

    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx, a, repeats):
        ctx.shape, ctx.repeats = a.shape, tuple(repeats)
        return a._data.repeat(repeats)

    @staticmethod
    def backward(ctx, grad):
        shape, repeats = ctx.shape, ctx.repeats
        if 0 in repeats:
            return grad.new_zeros(shape), None
        added = len(repeats) - len(shape)
        for _ in range(added):
            grad = grad.sum(0)
        sizes, summed = [], []
        for size, repeat in zip(shape, repeats[added:]):
            if repeat != 1:
                sizes.append(repeat)
                summed.append(len(sizes) - 1)
            sizes.append(size)
        if summed:
            grad = grad.reshape(sizes).sum(summed)
        return grad, None


class ReshapeAlias(Reshaping):
    """The view torch's reshape takes of a non-contiguous input whose elements it can view without copying."""

    node_name, method = "ReshapeAliasBackward0", "view"
