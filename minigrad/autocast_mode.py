"""``minigrad.autocast``: torch's automatic mixed precision, for the ops of minigrad's subset.

Inside ``autocast(device_type)``, torch casts the floating inputs of some ops before they run: the
ops of its lists (aten/src/ATen/autocast_mode.cpp), per device type, each with a policy. Those
minigrad has are in ``POLICIES``; each op's entry point (``Tensor.mm``, ``matmul``, ``F.linear``,
``torch.cat``, ...) asks ``cast`` for its inputs when, and only when, autocast is on for some device
type (``grad_mode._state.autocast_enabled``, empty otherwise: one test per op). As in torch, only
tensors on the op's device type are cast, never float64 ones, and a cast is an op of the graph
(``Tensor.to``: ToCopyBackward0, so gradients come back in the input's dtype). The casts of float32
leaves that require grad (model weights) are kept while any autocast block is open, and reused.

The state is thread-local (torch's is), kept in ``grad_mode._state``: which device types are on, the
dtype of each, whether casts are kept, how deep blocks nest. Checkpoint recomputes under the state its
forward ran in (``preserved``).

Not here: torch's ``fp32_set_opt_dtype`` ops on CUDA (sum, prod, softmax, log_softmax, norm: torch
computes them in float32 through their ``dtype`` argument, which minigrad's ops do not take), and
``index_put``'s promotion on CUDA.
"""
import functools
import warnings
import weakref

import torch

from . import grad_mode, releases

LOWER, FP32, PROMOTE = "lower_precision_fp", "fp32", "promote"
"""torch's cast policies: to the autocast dtype; to float32; to the widest floating dtype of the inputs."""

POLICIES = {
    "cpu": {"mm": LOWER, "bmm": LOWER, "matmul": LOWER, "linear": LOWER,
            "prod": FP32, "mse_loss": FP32, "nll_loss": FP32, "cross_entropy_loss": FP32,
            "stack": PROMOTE, "cat": PROMOTE},
    "cuda": {"mm": LOWER, "bmm": LOWER, "matmul": LOWER, "mv": LOWER, "linear": LOWER,
             "exp": FP32, "log": FP32, "reciprocal": FP32, "pow": FP32, "layer_norm": FP32, "mse_loss": FP32,
             "nll_loss": FP32,
             "dot": PROMOTE},
}
"""The ops of torch's lists (torch 2.11 to 2.13) that minigrad has, by the name of the aten op they are."""

_cache = {}
"""id(leaf) -> (weak reference to the leaf, its cast): torch's cache of casts of float32 leaves."""


def is_autocast_available(device_type):
    return torch.amp.is_autocast_available(device_type)


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (CUDA when left out, as torch)."""
    device_type = "cuda" if device_type is None else device_type
    if device_type not in ("cpu", "cuda"):
        return torch.is_autocast_enabled(device_type)  # torch's answer, or its error for that device type
    return device_type in grad_mode._state.autocast_enabled


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on ``device_type``: the last block's, else torch's default (bfloat16
    on CPU, float16 on CUDA), or torch's error for a device type without one."""
    dtypes = grad_mode._state.autocast_dtypes
    return dtypes[device_type] if device_type in dtypes else torch.get_autocast_dtype(device_type)


def is_autocast_cache_enabled():
    return grad_mode._state.autocast_cache_enabled


class autocast:
    """``with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):``, or a decorator:
    torch's checks, warnings and errors; blocks nest, each putting back what it found."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            name = device_type.upper()
            if device_type == "cuda":
                if not torch.cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                    enabled = False
                elif self.fast_dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
            elif self.fast_dtype not in (torch.bfloat16, torch.float16):
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        state = grad_mode._state
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        self.prev_cache_enabled = state.autocast_cache_enabled
        _set(self.device, self._enabled, self.fast_dtype)
        state.autocast_nesting += 1
        state.autocast_cache_enabled = self._cache_enabled
        return self

    def __exit__(self, *exc):
        state = grad_mode._state
        state.autocast_nesting -= 1
        if state.autocast_nesting == 0:  # out of every block: the kept casts go
            _cache.clear()
        _set(self.device, self.prev, self.prev_fastdtype)
        state.autocast_cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        if releases.AUTOCAST_DECORATES_ONLY_CALLABLES and not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            "Did you mean to use autocast as a context manager? For example:\n"
                            "    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _set(device_type, enabled, dtype):
    """Autocast on or off for ``device_type``, casting to ``dtype``: new objects, so that a thread that
    copied the state (the engine's) keeps its own."""
    state = grad_mode._state
    on = state.autocast_enabled
    state.autocast_enabled = on | {device_type} if enabled else on - {device_type}
    state.autocast_dtypes = {**state.autocast_dtypes, device_type: dtype}


def cast(op, *tensors):
    """``tensors`` (minigrad Tensors, or None where an optional one is missing) as the aten op ``op``
    takes them under autocast: cast by op's policy on the device type of the first, if autocast is on
    there; as they are otherwise."""
    first = next((t for t in tensors if t is not None), None)
    device = first is not None and first._data.device.type
    policy = POLICIES.get(device, {}).get(op) if device in grad_mode._state.autocast_enabled else None
    if policy is None:
        return tensors
    lower = get_autocast_dtype(device)
    eligible = [t is not None and t._data.device.type == device and t._data.is_floating_point()
                and t.dtype != torch.float64 for t in tensors]
    if policy == LOWER:
        to = lower
    elif policy == FP32:
        to = torch.float32
    else:
        to = _widest(lower, [t.dtype for t, ok in zip(tensors, eligible) if ok])
    return tuple(_cached_cast(t, to, lower) if ok else t for t, ok in zip(tensors, eligible))


def _widest(lower, dtypes):
    """torch's ``prioritize``: float32 if any input is, else the autocast dtype."""
    widest = lower
    for dtype in dtypes:
        if widest == torch.float32 or dtype == torch.float32:
            widest = torch.float32
        elif not (widest == lower and dtype == lower):
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return widest


def _cached_cast(tensor, to, lower):
    """``tensor.to(to)``; a float32 leaf that requires grad, cast to the autocast dtype, is cast once
    while autocast blocks are open (the cast found is given whatever dtype it has, as torch's)."""
    if tensor.dtype == to:
        return tensor
    if not (to == lower and tensor.dtype == torch.float32 and tensor.requires_grad and tensor.is_leaf
            and not tensor._is_view() and grad_mode._state.autocast_cache_enabled):
        return tensor.to(to)
    found = _cache.get(id(tensor))
    if found is not None and found[0]() is tensor:
        return found[1]
    result = _cache[id(tensor)] = (weakref.ref(tensor), tensor.to(to))
    return result[1]


def preserved(function):
    """``function``, each call run under the autocast state in force now, for CUDA and CPU: what
    torch's checkpoint (both forms) saves in its forward and restores when it runs the body again."""
    saved = [(device, is_autocast_enabled(device), get_autocast_dtype(device)) for device in ("cuda", "cpu")]
    cache_enabled = is_autocast_cache_enabled()

    @functools.wraps(function)
    def run(*args, **kwargs):
        (cuda_type, cuda_on, cuda_dtype), (cpu_type, cpu_on, cpu_dtype) = saved
        with autocast(cuda_type, cuda_dtype, cuda_on, cache_enabled), autocast(cpu_type, cpu_dtype, cpu_on,
                                                                               cache_enabled):
            return function(*args, **kwargs)
    return run
