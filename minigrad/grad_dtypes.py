"""``Tensor.grad_dtype``, the dtype a leaf's gradient gets (torch's ``AutogradMeta::grad_dtype``): by
default the leaf's own; set to another, or to None for any. As in torch, ``x.grad = g`` checks g
against it, and a gradient flowing into the leaf is cast to it. torch casts where its engine checks
what a node returned, to the metadata of the leaf's AccumulateGrad, which grad_dtype edits. minigrad
checks against what the producing node recorded of its inputs, so the cast is AccumulateGrad's, and
the engine leaves uncast a gradient going into a leaf whose grad_dtype was set (``Node._casts_own_input``):
ops pay nothing. (So ``autograd.grad`` gives such a leaf's gradient as it comes in, uncast.)"""
import torch

OWN = "the tensor's dtype"
"""``Tensor._grad_dtype`` until grad_dtype is set (then a dtype, or None)."""

_TYPE_META_NAMES = {torch.float32: "float", torch.float64: "double", torch.float16: "c10::Half",
                    torch.bfloat16: "c10::BFloat16", torch.int64: "long int", torch.int32: "int", torch.bool: "bool"}
_SCALAR_TYPE_NAMES = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
                      torch.bfloat16: "BFloat16", torch.int64: "Long", torch.int32: "Int", torch.bool: "Bool"}


def type_meta_name(dtype):
    """How torch's messages name a gradient's dtype (its C++ type name) ..."""
    return _TYPE_META_NAMES.get(dtype, dtype)


def scalar_type_name(dtype):
    """... and a tensor's, or a grad_dtype (its ScalarType)."""
    return _SCALAR_TYPE_NAMES.get(dtype, dtype)


def expected(tensor):
    """The dtype a gradient of ``tensor`` must have, or None for any."""
    dtype = tensor._grad_dtype
    return tensor._data.dtype if dtype is OWN else dtype


def grad_dtype_of(tensor):
    if tensor.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return expected(tensor)


def set_grad_dtype(tensor, dtype):
    """As torch's setter (python_variable.cpp, then AutogradMeta::set_grad_dtype), in its order of checks."""
    if not (dtype is None or isinstance(dtype, torch.dtype)):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(dtype).__name__}")
    grad = tensor.grad  # as torch's var.grad(): a non-leaf's warns
    if grad is not None and dtype is not None and grad._data.dtype != dtype:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{scalar_type_name(dtype)}' because there is already a gradient with dtype "
            f"'{type_meta_name(grad._data.dtype)}'. Please clear the gradient (.grad = None) before changing "
            "grad_dtype, or ensure the new grad_dtype matches the existing gradient's dtype.")
    if tensor.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    tensor._grad_dtype = dtype
