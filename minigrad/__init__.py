"""minigrad: PyTorch's autograd, rebuilt small. ``import minigrad as torch`` runs the course's snippets.

Numbers live in torch tensors (on CPU or CUDA) that never require grad; minigrad records the
backward graph, saves and frees tensors, checks versions and runs backward, as torch does.
"""
import numbers

import torch as _torch

from . import autocast_mode, autograd, cuda, grad_mode, legacy_types, nn, ops, optim, utils
from .utils import checkpoint as _checkpoint  # torch.utils.checkpoint is there after `import torch`
from .creation import (arange, empty, eye, full, linspace, manual_seed, ones, ones_like, rand, rand_like, randint,
                       randn, randn_like, randperm, tensor, zeros, zeros_like)
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .tensor import Tensor, matmul
from .tensor_more_ops import _VF, _unique, _unique2, bucketize, isin, searchsorted
from .tensor_ops import _as_tensor, _variance_args

# One flag for torch's warnings and minigrad's: minigrad's numbers are torch's, so torch's own
# warn-once warnings (from the kernels minigrad calls) and minigrad's (backward(create_graph=True))
# obey the same switch.
set_warn_always, is_warn_always_enabled = _torch.set_warn_always, _torch.is_warn_always_enabled

float32 = float = _torch.float32
float64 = double = _torch.float64
float16 = half = _torch.float16
bfloat16 = _torch.bfloat16
int64 = long = _torch.int64
int32 = int = _torch.int32
bool = _torch.bool
dtype, device, Size = _torch.dtype, _torch.device, _torch.Size
contiguous_format, channels_last = _torch.contiguous_format, _torch.channels_last
preserve_format = _torch.preserve_format
# torch.FloatTensor and the other legacy types of CPU tensors.
globals().update(legacy_types.types_of(_torch, __name__))


def _function(name):
    """``torch.<name>(input, ...)``: ``input.<name>(...)``, for a minigrad Tensor only, as torch checks
    (``Tensor.<name>`` itself, given any object as ``self``, would treat it as a tensor)."""
    method = getattr(Tensor, name)

    def function(input, *args, **kwargs):
        _tensors(name, input)
        return method(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = method.__doc__
    return function


def _tensors(name, *inputs):
    """torch's TypeError for an argument that is not a tensor (``input``, then ``other``)."""
    for position, (argument, input) in enumerate(zip(("input", "other"), inputs), 1):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, "
                            f"not {type(input).__name__}")


def _with_out(name):
    """``torch.<name>(input, ..., out=t)``: torch's kernel writes into t's storage (resizing and casting
    it, with torch's warnings and errors), an in-place edit of t that autograd does not record, so
    refused where autograd would have to (grad mode on and an argument that requires grad). Without
    ``out``, what ``_function(name)`` does, with no call more."""
    method = getattr(Tensor, name)

    def with_out(input, *args, out=None, **kwargs):
        _tensors(name, input)
        if out is None:
            return method(input, *args, **kwargs)
        if is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in (input, *args, out)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                               "but one of the arguments requires grad.")
        args = [a._data if isinstance(a, Tensor) else a for a in args]
        return out._mutate(lambda data: getattr(_torch, name)(input._data, *args, out=data, **kwargs))

    with_out.__name__ = with_out.__qualname__ = name
    with_out.__doc__ = method.__doc__
    return with_out


# torch.sum(x, ...) and friends: the same as x.sum(...).
globals().update((name, _function(name)) for name in """
    sum mean max relu clone t transpose reshape unsqueeze squeeze mm mv dot pow detach is_inference softmax
    log_softmax norm argmax all unique bmm masked_fill narrow select unbind chunk split split_with_sizes diagonal
    repeat var prod min median nanmedian argmin sgn signbit trace unsafe_split unsafe_split_with_sizes unsafe_chunk argsort
    count_nonzero unique_consecutive clamp clip clamp_min clamp_max permute flatten gather scatter_add square maximum
    minimum floor_divide""".split())
# ... and those that also write into a tensor given as out=.
globals().update((name, _with_out(name)) for name in """
    add sub mul div exp log sin cos tanh sigmoid abs neg reciprocal round sqrt""".split())


def stack(tensors, dim=0):
    """``torch.stack(tensors, dim)``: a copy, StackBackward0."""
    tensors = _sequence(tensors)
    if grad_mode._state.autocast_enabled:
        tensors = autocast_mode.cast("stack", *tensors)
    return ops.Stack.apply(dim, *tensors)


def cat(tensors, dim=0):
    """``torch.cat(tensors, dim)``: a copy, CatBackward0."""
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    tensors = _sequence(tensors)
    if grad_mode._state.autocast_enabled:
        tensors = autocast_mode.cast("cat", *tensors)
    return ops.Cat.apply(dim, *tensors)


def _sequence(tensors):
    """stack's and cat's tensors, each a Tensor (else torch's TypeError)."""
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"expected Tensor as element {position} in argument 0, but got {type(tensor).__name__}")
    return tensors


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``torch.var_mean``: the variance and the mean, two outputs of one node (VarMeanBackward0)."""
    _tensors("var_mean", input)
    dim, correction = _variance_args(dim, unbiased, correction)
    return ops.VarMean.apply(input, dim, correction, keepdim)


def where(condition, input, other):
    """``torch.where(condition, input, other)``: either of input and other may be a number (else torch's
    TypeError, its first line)."""
    values = (Tensor, numbers.Number)
    if not (isinstance(condition, Tensor) and isinstance(input, values) and isinstance(other, values)):
        got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in (condition, input, other))
        raise TypeError(f"where() received an invalid combination of arguments - got ({got}), but expected one of:")
    like = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else condition
    return _as_tensor(input, like).where(condition, other)


def atan2(input, other):
    """``torch.atan2(input, other)``: two tensors (else torch's TypeError), Atan2Backward0."""
    _tensors("atan2", input, other)
    return input.atan2(other)


def nextafter(input, other):
    """``torch.nextafter(input, other)``: two tensors (else torch's TypeError), NextafterBackward0."""
    _tensors("nextafter", input, other)
    return input.nextafter(other)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def equal(a, b):
    _tensors("equal", a, b)
    return _torch.equal(a._data, b._data)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    _tensors("allclose", a, b)
    return _torch.allclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan)
