"""More of Tensor's op methods, beside ``tensor_ops.py`` (which holds the arithmetic, pointwise, shape and
indexing ones, and is at its size limit): the value-selecting reductions (max, min, median, nanmedian,
whole or along a dim with their (values, indices)), ops whose outputs are integers or bools and have no
gradient (argmax, argmin, argsort, count_nonzero, signbit, isin, searchsorted, bucketize), the unique ops
(whose values have a node that no backward runs through), two binary pointwise ops (atan2, nextafter), trace,
the unsafe splits, the in-place view ops (t_, squeeze_, unsqueeze_, swapdims_, as_strided_; transpose_'s
work too), and what forum code reaches for beside them (clamp and its forms, permute, flatten, gather,
scatter_add, maximum, minimum, ``//``, new_tensor, square, abs_, masked_fill_). Each builds its op with
``ops.<Op>.apply``, the op looked up on ``minigrad.ops`` when called."""
import types

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
        if isinstance(dim, Tensor):  # max(other): torch's maximum
            return self.maximum(dim)
        values, indices = self._data.max(dim, keepdim)
        return MaxResult(ops.MaxDim.apply(self, dim, keepdim, values, indices), Tensor(indices))

    def min(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Min.apply(self)
        if isinstance(dim, Tensor):  # min(other): torch's minimum
            return self.minimum(dim)
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

    def argsort(self, dim=-1, descending=False, *, stable=False):
        return Tensor(self._data.argsort(dim=dim, descending=descending, stable=stable))

    def count_nonzero(self, dim=None):
        return Tensor(self._data.count_nonzero(dim))

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """As torch.unique: ``_unique2``, or ``unique_dim`` along a dim; the values, then the inverse
        indices and the counts that were asked for."""
        if dim is None:
            outputs = ops.Unique2.apply(self, sorted, return_inverse, return_counts)
        else:
            outputs = ops.UniqueDim.apply(self, dim, sorted, return_inverse, return_counts)
        return _asked_for(outputs, return_inverse, return_counts)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        outputs = ops.UniqueConsecutive.apply(self, return_inverse, return_counts, dim)
        return _asked_for(outputs, return_inverse, return_counts)

    def sgn(self):
        """The sign of each element (-1, 0 or 1): SgnBackward0, torch's factor in abs's and norms' gradients."""
        return ops.Sgn.apply(self)

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

    def clamp(self, min=None, max=None):
        """Bounds as numbers (ClampBackward1; torch's error when both are None)."""
        _number_bounds(min, max)
        return ops.Clamp.apply(self, min, max)

    clip = clamp

    def clamp_min(self, min):
        _number_bounds(min)
        return ops.ClampMin.apply(self, min)

    def clamp_max(self, max):
        _number_bounds(max)
        return ops.ClampMax.apply(self, max)

    def clamp_(self, min=None, max=None):
        """In place, as torch's: ClampBackward1 saves self before the edit (a copy of it)."""
        _number_bounds(min, max)
        return self._inplace(ops.Clamp, torch.Tensor.clamp_, min, max)

    def permute(self, *dims):
        """The dims in a new order, given one by one or as a sequence: a view (PermuteBackward0), with
        torch's errors for a wrong count, a repeated dim or one out of range."""
        dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
        self._data.permute(dims)
        return ops.Permute.apply(self, dims)

    def flatten(self, start_dim=0, end_dim=-1):
        """Dims ``start_dim`` to ``end_dim`` as one, by ``reshape`` (a view where the memory allows),
        as torch's; a 0-dim tensor becomes 1-dim, and where there is nothing to merge the tensor itself
        comes back (torch's storage op says which: it returns its input then)."""
        flat = self._data.flatten(start_dim, end_dim)  # torch's errors, and the shape
        return self if flat is self._data else self.reshape(flat.shape)

    def gather(self, dim, index, *, sparse_grad=False):
        """The entries at ``index`` along ``dim`` (GatherBackward0), with torch's errors for an index of the
        wrong dtype, shape or range. A sparse gradient is outside minigrad's subset."""
        if sparse_grad:
            raise NotImplementedError("minigrad's gather has no sparse gradient (sparse tensors are outside its "
                                      "subset)")
        self._data.gather(dim, index._data)
        return ops.Gather.apply(self, dim, (index,))

    def scatter_add(self, dim, index, src):
        """src's entries added into a copy of self at ``index`` along ``dim`` (ScatterAddBackward0)."""
        return ops.ScatterAdd.apply(self, dim, (index,), src)

    def maximum(self, other):
        return ops.Maximum.apply(self, other)

    def minimum(self, other):
        return ops.Minimum.apply(self, other)

    def __floordiv__(self, other):
        return ops.FloorDivide.apply(self, other)

    def __rfloordiv__(self, other):
        return ops.FloorDivide.apply(other, self)

    def __ifloordiv__(self, other):
        """``x //= y`` in place, as torch's (a version more; recorded as its NotImplemented node)."""
        return self._inplace(ops.FloorDivide, torch.Tensor.floor_divide_, other)

    floor_divide, floor_divide_ = __floordiv__, __ifloordiv__

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new leaf holding a copy of ``data``, with this tensor's dtype and device unless given (torch's
        warning when data is a tensor comes from torch)."""
        data = data._data if isinstance(data, Tensor) else data
        return Tensor(self._data.new_tensor(data, dtype=dtype, device=device)).requires_grad_(requires_grad)

    def square(self):
        """``self ** 2``, as torch computes it (PowBackward0 with exponent 2)."""
        return self.pow(2)

    def abs_(self):
        """In place, as torch's: AbsBackward0 saves self before the edit (a copy of it)."""
        return self._inplace(ops.Abs, torch.Tensor.abs_)

    def masked_fill_(self, mask, value):
        """In place, as torch's: MaskedFillBackward0 saves the mask."""
        return self._inplace(ops.MaskedFill, torch.Tensor.masked_fill_, mask._data, value)

    def _inplace_view(self, op, method, *args):
        """An in-place view op (``transpose_``, ``t_``, ``squeeze_``, ...): this tensor takes new sizes and
        strides on the same memory (its storage becomes the storage's ``method`` view, so that its
        ``detach()`` and ``.data`` keep theirs, as in torch). An in-place op otherwise (``_inplace``): a
        version more, recorded as ``op``'s node after the in-place checks; recorded on a view, that node
        stays its grad_fn (the memory did not change: nothing to rebuild) and its base keeps its own. An
        inference tensor is changed and then, outside inference mode, refused before any of autograd's
        checks, as torch does for these ops."""
        def storage_op(data, *args):
            self._data = getattr(data, method)(*args)
        if self._is_inference:
            return self._mutate(storage_op, *args)
        before = self._node
        self._inplace(op, storage_op, *args)
        if self._view is not None and self._node is not before:  # recorded: the view's grad_fn, up to date
            self._view.version = self._version_counter.version
        return self

    def t_(self):
        if self.dim() > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return self._inplace_view(ops.TInplace, "t")

    def squeeze_(self, dim=None):
        if dim is None:
            return self._inplace_view(ops.SqueezeInplace, "squeeze")
        if isinstance(dim, int):
            return self._inplace_view(ops.SqueezeDimInplace, "squeeze", dim)
        return self._inplace_view(ops.SqueezeDimsInplace, "squeeze", tuple(dim))

    def unsqueeze_(self, dim):
        return self._inplace_view(ops.UnsqueezeInplace, "unsqueeze", dim)

    def swapdims_(self, dim0, dim1):
        """``transpose_``, as torch computes it (TransposeBackward1); ``swapaxes_`` is its other name."""
        return self.transpose_(dim0, dim1)

    swapaxes_ = swapdims_

    def as_strided_(self, size, stride, storage_offset=None):
        return self._inplace_view(ops.AsStridedInplace, "as_strided", tuple(size), tuple(stride), storage_offset)

    def unsafe_split(self, split_size, dim=0):
        return ops.UnsafeSplit.apply(self, split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        return ops.UnsafeSplitWithSizes.apply(self, tuple(split_sizes), dim)

    def unsafe_chunk(self, chunks, dim=0):
        return ops.UnsafeChunk.apply(self, chunks, dim)


def _number_bounds(*bounds):
    """Refuse a tensor as a bound of clamp: torch's ClampBackward0 (tensor bounds, which get gradients
    too) is outside minigrad's subset."""
    if any(isinstance(bound, Tensor) for bound in bounds):
        raise NotImplementedError("minigrad's clamp takes numbers as bounds, not tensors")


def _asked_for(outputs, return_inverse, return_counts):
    """torch.unique's result: the values alone, or a tuple with the inverse and the counts asked for."""
    values, inverse, counts = outputs
    extra = (inverse,) * return_inverse + (counts,) * return_counts
    return (values, *extra) if extra else values


def _other_tensor(name, other, position):
    """torch's TypeError for an ``other`` that is not a tensor (position 1 for the method, 2 for the function)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position {position}) must be Tensor, not {type(other).__name__}")


def _storage(value):
    return value._data if isinstance(value, Tensor) else value


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """``torch.isin``: whether each element is among test_elements (either may be a number): a bool
    tensor, outside any graph."""
    return Tensor(torch.isin(_storage(elements), _storage(test_elements), assume_unique=assume_unique, invert=invert))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """``torch.searchsorted``: where each value would go in the sorted sequence: integers, outside any graph."""
    return Tensor(torch.searchsorted(_storage(sorted_sequence), _storage(input), out_int32=out_int32, right=right,
                                     side=side, sorter=_storage(sorter)))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """``torch.bucketize``: the bucket of each value: integers, outside any graph."""
    return Tensor(torch.bucketize(_storage(input), _storage(boundaries), out_int32=out_int32, right=right))


def _unique(input, sorted=True, return_inverse=False):
    """``torch._unique``: the values and the inverse indices (empty unless asked for), UniqueBackward0."""
    return ops.Unique.apply(input, sorted, return_inverse)


def _unique2(input, sorted=True, return_inverse=False, return_counts=False):
    """``torch._unique2``: the values, inverse indices and counts (empty unless asked for), Unique2Backward0."""
    return ops.Unique2.apply(input, sorted, return_inverse, return_counts)


def _unique_dim(input, dim, sorted=True, return_inverse=False, return_counts=False):
    return ops.UniqueDim.apply(input, dim, sorted, return_inverse, return_counts)


_VF = types.SimpleNamespace(unique_dim=_unique_dim)
"""``torch._VF``, where torch keeps the ops its Python functions wrap: the one upstream's tests call."""


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
