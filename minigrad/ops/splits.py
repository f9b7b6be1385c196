"""Several views at once and their inverses: unbind, split and chunk (and the unsafe splits, whose
pieces are no views for autograd), then the copies that join tensors, stack and cat."""
import torch

from ..function import Function
from .shapes import Slice


def multi_output_views(function, a, *args):
    """Apply ``function``, an op whose outputs are views of ``a`` (unbind, chunk), and make each a
    view of ``a``. Their one node can't be rebased for one of them, so torch refuses an in-place edit
    of any (creation mode "multi_output", set wherever grad mode is on, as torch's MULTI_OUTPUT_NODE,
    even when nothing was recorded); a view made with grad mode off keeps that mode's refusal."""
    outputs = function.apply(a, *args)
    for output in outputs:
        output._become_view_of(a)
        if output._view.creation_mode is None:
            output._view.creation_mode = "multi_output"
    return outputs


class Unbind(Function):
    """``a.unbind(dim)``: every slice along dim, as views. Backward stacks their gradients (zeros for
    those that got none, which ``materialize_grads`` supplies), so its own graph is StackBackward0."""

    node_name = "UnbindBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        outputs = a._data.unbind(dim)
        ctx.dim = dim
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        return Stack.apply(ctx.dim, *grads), None


class Split(Function):
    """``a.split(split_size, dim)``: pieces of split_size along dim (the last one smaller), as views.
    Backward concatenates their gradients (zeros for those that got none): CatBackward0."""

    node_name = "SplitBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, split_size, dim):
        outputs = a._data.split(split_size, dim)
        ctx.dim = dim
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        return Cat.apply(ctx.dim, *grads), None, None


class SplitWithSizes(Split):
    """``a.split(sizes, dim)`` or ``a.split_with_sizes(sizes, dim)``: pieces of the sizes listed."""

    node_name = "SplitWithSizesBackward0"


class Chunk(Split):
    """``a.chunk(n, dim)``, which torch computes as ``split`` into pieces of ``ceil(size / n)``: its
    node is SplitBackward0."""

    node_name = "SplitBackward0"

    @staticmethod
    def forward(ctx, a, chunks, dim):
        outputs = a._data.chunk(chunks, dim)
        if a.shape[dim] == 0:  # torch's chunk takes split_with_sizes here
            raise NotImplementedError("minigrad's chunk takes a dim of size 1 or more")
        ctx.dim = dim
        return outputs


class UnsafeSplit(Split):
    """``a.unsafe_split(split_size, dim)``: split's pieces, on a's memory, but not views for autograd
    (torch's unsafe_split): each has a version counter of its own and may be edited in place, the
    caller promising no edit meets a saved tensor. Backward as split's."""

    node_name = "UnsafeSplitBackward0"
    is_view = False


class UnsafeSplitWithSizes(UnsafeSplit):
    """``a.unsafe_split_with_sizes(sizes, dim)``: pieces of the sizes listed, as unsafe_split's."""

    node_name = "UnsafeSplitWithSizesBackward0"


class UnsafeChunk(UnsafeSplit):
    """``a.unsafe_chunk(n, dim)``, which torch computes as ``unsafe_split``: its node is UnsafeSplitBackward0."""

    node_name = "UnsafeSplitBackward0"
    forward = Chunk.forward


class Stack(Function):
    """``torch.stack(tensors, dim)``: a copy. Backward hands each input its slice of the gradient
    (``select``, as torch's stack_tensors_backward), so its own graph is SelectBackward0. Nothing saved
    but dim."""

    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        result = torch.stack([t._data for t in tensors], dim)
        ctx.dim = dim % result.dim()
        return result

    @staticmethod
    def backward(ctx, grad):
        return (None, *(grad.select(ctx.dim, i) for i in range(grad.shape[ctx.dim])))


class Cat(Function):
    """``torch.cat(tensors, dim)`` (and split's backward): a copy. Its own backward
    narrows the gradient to each input's part (SliceBackward0, as torch's cat_tensors_backward)."""

    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        result = torch.cat([t._data for t in tensors], dim)
        ctx.dim = dim % result.dim()
        ctx.sizes = [t.shape[ctx.dim] for t in tensors]
        return result

    @staticmethod
    def backward(ctx, grad):
        grads, start = [None], 0
        for size in ctx.sizes:
            grads.append(Slice.apply(grad, ctx.dim, slice(start, start + size)))
            start += size
        return tuple(grads)
