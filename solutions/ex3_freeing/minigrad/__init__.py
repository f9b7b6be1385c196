"""minigrad: PyTorch's autograd, rebuilt small. ``import minigrad as torch`` runs the course's snippets.

Numbers live in torch tensors (on CPU or CUDA) that never require grad; minigrad records the
backward graph, saves and frees tensors, checks versions and runs backward, as torch does.
"""
import torch as _torch

from . import autograd, cuda, nn
from .creation import (arange, empty, eye, full, manual_seed, ones, ones_like, rand, randn, randn_like,
                       tensor, zeros, zeros_like)
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .tensor import Tensor, matmul

float32 = float = _torch.float32
float64 = double = _torch.float64
float16 = half = _torch.float16
int64 = long = _torch.int64
int32 = int = _torch.int32
bool = _torch.bool
dtype, device, Size = _torch.dtype, _torch.device, _torch.Size


def _method(name):
    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    function.__name__ = name
    function.__doc__ = f"torch.{name}: the same as ``input.{name}(...)``."
    return function


for _name in ("sum", "mean", "max", "exp", "log", "relu", "tanh", "sigmoid", "abs", "clone", "t", "transpose",
              "reshape", "unsqueeze", "squeeze", "mm", "mv", "dot", "pow", "add", "sub", "mul", "div", "neg",
              "reciprocal", "detach"):
    globals()[_name] = _method(_name)
del _name


def is_tensor(obj):
    return isinstance(obj, Tensor)


def equal(a, b):
    return _torch.equal(a._data, b._data)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _torch.allclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan)
