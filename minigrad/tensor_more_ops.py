"""More of Tensor's op methods, beside ``tensor_ops.py`` (which holds the arithmetic, pointwise, shape and
indexing ones, and is at its size limit): the value-selecting reductions (max, min, median, nanmedian,
whole or along a dim with their (values, indices)), ops whose outputs are integers or bools and have no
gradient (argmax, argmin, signbit), two binary pointwise ops (atan2, nextafter), trace, and the unsafe
splits. Each builds its op with ``ops.<Op>.apply``, the op looked up on ``minigrad.ops`` when called."""
import torch

from . import ops

Tensor = None
"""``minigrad.tensor.Tensor``, which inherits MoreTensorOps: bound by minigrad.tensor once the class
exists, as for tensor_ops."""


class MoreTensorOps:
    """The methods of Tensor defined here; Tensor inherits them."""

    def max(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Max.apply(self)
        values, indices = self._data.max(dim, keepdim)
        return MaxResult(ops.MaxDim.apply(self, dim, keepdim, values, indices), Tensor(indices))

    def min(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Min.apply(self)
        values, indices = self._data.min(dim, keepdim)
        return MinResult(ops.MinDim.apply(self, dim, keepdim, values, indices), Tensor(indices))

    def median(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Median.apply(self)
        values, indices = self._data.median(dim, keepdim)
        return MedianResult(ops.MedianDim.apply(self, dim, keepdim, values, indices), Tensor(indices))

    def nanmedian(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Nanmedian.apply(self)
        values, indices = self._data.nanmedian(dim, keepdim)
        return NanmedianResult(ops.NanmedianDim.apply(self, dim, keepdim, values, indices), Tensor(indices))

    def argmax(self, dim=None, keepdim=False):
        return Tensor(self._data.argmax(dim, keepdim))

    def argmin(self, dim=None, keepdim=False):
        return Tensor(self._data.argmin(dim, keepdim))

    def signbit(self):
        """Whether each element's sign bit is set: a bool tensor, outside any graph."""
        return Tensor(self._data.signbit())

    def atan2(self, other):
        _other_tensor("atan2", other, 1)
        return ops.Atan2.apply(self, other)

    def nextafter(self, other):
        _other_tensor("nextafter", other, 1)
        return ops.Nextafter.apply(self, other)

    def trace(self):
        return ops.Trace.apply(self)

    def unsafe_split(self, split_size, dim=0):
        return ops.UnsafeSplit.apply(self, split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        return ops.UnsafeSplitWithSizes.apply(self, tuple(split_sizes), dim)

    def unsafe_chunk(self, chunks, dim=0):
        return ops.UnsafeChunk.apply(self, chunks, dim)


def _other_tensor(name, other, position):
    """torch's TypeError for an ``other`` that is not a tensor (position 1 for the method, 2 for the function)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position {position}) must be Tensor, not {type(other).__name__}")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """``torch.isin``: whether each element is among test_elements (either may be a number): a bool
    tensor, outside any graph."""
    def storage(value):
        return value._data if isinstance(value, Tensor) else value
    return Tensor(torch.isin(storage(elements), storage(test_elements), assume_unique=assume_unique, invert=invert))


class _ValuesIndices(tuple):
    """``torch.return_types.<name>``: a (values, indices) pair with names."""

    name = None

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])

    def __repr__(self):
        return f"torch.return_types.{self.name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


class MaxResult(_ValuesIndices):
    name = "max"


class MinResult(_ValuesIndices):
    name = "min"


class MedianResult(_ValuesIndices):
    name = "median"


class NanmedianResult(_ValuesIndices):
    name = "nanmedian"
