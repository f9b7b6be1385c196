"""Indexing keys as torch's Python indexing takes them apart (``applySlicing`` in
torch/csrc/autograd/python_variable_indexing.cpp): ints, slices, None and ``...`` make views
(select, slice, unsqueeze); index tensors, lists and masks are left for ``index`` or ``index_put_``
(``ops.Index``, ``ops.IndexPut``), each at the dim it indexes. Tensor's ``x[key]`` and
``x[key] = value`` (tensor_ops.py) use it."""
import warnings

import torch

from . import ops

Tensor = None
"""``minigrad.tensor.Tensor``: minigrad.tensor binds it here once the class exists (it imports this
module through tensor_ops.py)."""


def take_apart(tensor, key):
    """``tensor[key]`` as torch's indexing takes it apart (``applySlicing``): the view its ints,
    slices, None and ... make, and the index tensors that pick from that view (lists become
    tensors), one per dim from the first, None for a dim taken whole; a mask takes as many dims
    as it has. A slice that takes a whole dim in order is no node (``x[0:2, 1]`` of a 2-row x is
    a select alone), so a key of such slices and ``...`` gives the tensor itself (what ``x[:] = v``
    edits)."""
    if not isinstance(key, tuple):
        if tensor.dim() == 0 and isinstance(key, (int, slice)) and not isinstance(key, bool):
            raise IndexError(_zero_dim_index_error(key))
        key = tuple(key) if type(key) is list and _sequence_as_tuple(key) else (key,)
    if all(type(k) in _BASIC_INDICES for k in key):
        specified = sum(k is not None and k is not Ellipsis for k in key)
    else:
        key = tuple([_index_of(k, tensor) for k in key])
        specified = sum(map(_dims_indexed, key))
    if specified > tensor.dim():
        raise IndexError(f"too many indices for tensor of dimension {tensor.dim()}")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (tensor.dim() - specified) + key[at + 1:]
    out, dim, indices, covered = tensor, 0, [], 0
    for k in key:
        if k is None:
            out = ops.Unsqueeze.apply(out, dim)
            dim += 1
        elif isinstance(k, slice):
            if not _whole(k, out.shape[dim]):
                out = ops.Slice.apply(out, dim, k)
            dim += 1
        elif isinstance(k, int):
            out = ops.Select.apply(out, dim, _check_index(out, dim, k))
        else:
            if k.dim() == 0 and k.dtype == torch.bool:  # a new dim of size 1, kept (True) or emptied
                out = ops.Unsqueeze.apply(out, dim)
                k = Tensor(torch.zeros(1 if k._data.item() else 0, dtype=torch.long, device=tensor.device))
            indices += [None] * (dim - covered)
            indices.append(k)
            dim = covered = dim + _dims_indexed(k)
    return out, tuple(indices)


def _whole(piece, size):
    """Whether a slice takes a whole dim of ``size``, in order (torch's indexing leaves that dim as it is)."""
    return piece.start in (None, 0) and (piece.stop is None or piece.stop >= size) and piece.step in (None, 1)


_BASIC_INDICES = (int, slice, type(None), type(Ellipsis))
"""The types of the key entries that make views only (a bool is not one: it indexes)."""


def _sequence_as_tuple(key):
    """Whether torch takes a list key as a tuple (numpy's old rule, deprecated): a list shorter than 32
    that holds a tensor, a sequence, a slice, ... or None."""
    if len(key) >= 32:
        return False
    if any(isinstance(k, (Tensor, list, tuple, slice)) or k is None or k is Ellipsis for k in key):
        warnings.warn(WARN_SEQUENCE_INDEX, UserWarning, stacklevel=4)
        return True
    return False


WARN_SEQUENCE_INDEX = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use "
    "x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], "
    "which will result either in an error or a different result")


def _index_of(k, tensor):
    """One entry of a key as ``take_apart`` takes it: a list becomes a tensor on ``tensor``'s device
    (of bools if it holds bools, else of longs, as torch's ``indexing_tensor_from_data``), a Python
    bool a 0-dim bool tensor, a 0-dim integer tensor its int (a select); anything else torch refuses."""
    if isinstance(k, bool):
        return Tensor(torch.tensor(k))
    if k is None or k is Ellipsis or isinstance(k, (int, slice)):
        return k
    if isinstance(k, Tensor):
        integral = not (k._data.is_floating_point() or k.dtype in (torch.bool, torch.uint8))
        return int(k._data.item()) if k.dim() == 0 and integral else k
    if isinstance(k, (list, tuple, str)):  # a str is a sequence too: torch.tensor refuses it
        data = torch.tensor(k, device=tensor.device)
        return Tensor(data if data.dtype in (torch.bool, torch.uint8) else data.long())
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                     f"indices (got {type(k).__name__})")


def _dims_indexed(k):
    """How many of the indexed tensor's dims a key entry takes (torch's ``count_specified_dimensions``)."""
    if k is None or k is Ellipsis:
        return 0
    if isinstance(k, Tensor) and k.dtype in (torch.bool, torch.uint8):
        return k.dim()
    return 1


def storage_key(key):
    """The key for storage's own setitem: minigrad tensors in it as their storage."""
    if isinstance(key, tuple):
        return tuple([k._data if isinstance(k, Tensor) else k for k in key])
    return key._data if isinstance(key, Tensor) else key


def index_put_(data, indices, values, accumulate):
    """The storage op of ``index_put_`` with minigrad's indices."""
    return data.index_put_(ops.shapes.storage_indices(indices), values, accumulate)


def _zero_dim_index_error(key):
    """torch's message for a lone int or slice indexing a 0-dim tensor (its indexing's fast paths
    check these before counting indices)."""
    if isinstance(key, slice):
        return "slice() cannot be applied to a 0-dim tensor."
    if key == 0:
        return ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
                "convert a 0-dim tensor to a number")
    return f"index {key} is out of bounds for dimension 0 with size 0"


def _check_index(tensor, dim, index):
    size = tensor.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
    return index % size
