"""``minigrad.kernels``: an op fused into GPU kernels written in Triton, wrapped as a Function.

Built from minigrad's ops, log-sum-exp is five nodes (sub, exp, sum, log, add), each a torch
kernel that writes a full intermediate to memory and saves one for backward. ``LogSumExp`` reads
the input in one Triton kernel and writes only the result; its backward is one kernel too, and
its graph one node. Triton is the optional extra (``pip install '.[kernels]'``) and is imported on
first use of a kernel: ``import minigrad`` and ``import minigrad.kernels`` don't need it.
``triton_softmax`` is exercise 9's reference, written the same way: softmax, forward and backward.
"""
import importlib.metadata
import importlib.util
import os

import torch

from ..function import Function, constant
from ..tensor import Tensor

KERNEL_DTYPES = (torch.float32, torch.float64)


def logsumexp(x):
    """``torch.logsumexp(x, -1)``: log(sum(exp(x))) over the last dimension, stable for large values.

    Runs the Triton kernels (``LogSumExp``) where Triton runs them: on CUDA storage, and on CPU
    storage under Triton's interpreter (``TRITON_INTERPRET=1``, set before Triton is imported,
    which reads it then: how the tests run the kernels without a GPU). Elsewhere (plain CPU, dtypes other than float32 and
    float64, 0-d and empty tensors, which have no rows to fuse) it is ``logsumexp_ops``: the same
    maths, unfused, so the function works wherever minigrad does. Where the kernels should run but
    Triton is not installed, it raises instead of quietly running the slow version.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"logsumexp(): expected a minigrad Tensor, got {type(x).__name__}")
    data = x._data
    fusable = data.dtype in KERNEL_DTYPES and data.dim() and data.numel()
    if fusable and (data.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"):
        return LogSumExp.apply(x)
    return logsumexp_ops(x)


def logsumexp_ops(x):
    """Log-sum-exp from minigrad's ops: what the kernels compute, one op (and one node) at a time.

    The shift by each row's max keeps exp from overflowing; it is a constant, as in torch, since it
    cancels out of both the value and the gradient. An infinite max shifts by 0 (inf - inf would
    be nan), and an empty row, which has no max, by 0: its log-sum-exp is log(0) = -inf.
    """
    data = x._data
    shift = data.amax(-1, keepdim=True) if data.numel() else data.new_zeros(data.shape[:-1] + (1,))
    shift = constant(shift.masked_fill(shift.isinf(), 0))
    return (x - shift).exp().sum(-1).log() + shift.squeeze(-1)


INTERPRETER_TRITON = (3, 7, 1)
"""The oldest Triton whose interpreter runs these kernels: 3.6's (what torch 2.11's and 2.12's CUDA
builds bring) fails on them with "only 0-dimensional arrays can be converted to Python scalars"."""


def unavailable():
    """Why the Triton kernels cannot run here, in a sentence for a learner, or None: Triton and the
    numpy its interpreter needs must be installed, and without a GPU (where the interpreter runs
    them) Triton must be 3.7.1 or newer."""
    missing = [name for name in ("triton", "numpy") if importlib.util.find_spec(name) is None]
    if missing:
        return (f"Triton's kernels need {' and '.join(missing)}, which is not installed: minigrad's optional extra, "
                "pip install -e '.[kernels]' (or MINIGRAD_EXTRAS=kernels ./run lab), then restart the kernel.")
    version = importlib.metadata.version("triton")
    if not torch.cuda.is_available() and _release(version) < INTERPRETER_TRITON:
        return (f"Without a GPU, Triton's interpreter runs the kernels, and the one of Triton {version} (which torch "
                f"{torch.__version__} brought) cannot: pip install 'triton>=3.7.1,<3.10', then restart the kernel.")
    return None


def _release(version):
    return tuple(int(part) for part in version.split("+")[0].split(".")[:3] if part.isdigit())


def _triton():
    """The Triton kernels' module, imported on first use; without Triton (or the numpy its
    interpreter needs), an error that says how to install them."""
    try:
        from . import triton_logsumexp
    except ModuleNotFoundError as error:
        if error.name not in ("triton", "numpy"):
            raise
        raise ModuleNotFoundError(f"minigrad.kernels runs Triton kernels here and needs {error.name}, which is not "
                                  "installed: install minigrad's optional extra with pip install '.[kernels]'",
                                  name=error.name) from error
    return triton_logsumexp


class LogSumExp(Function):
    """Log-sum-exp over the last dimension in one Triton kernel; its node is ``LogSumExpBackward``,
    the name torch gives the node of a custom Function of this name.

    Saves the input and the result, as torch's LogsumexpBackward0 does: the gradient,
    grad * exp(x - result), recomputes the softmax from them instead of keeping it in memory.
    """

    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, x):
        result = _triton().logsumexp(x._data)
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return LogSumExpGrad.apply(grad, x, result)


class LogSumExpGrad(Function):
    """LogSumExp's backward, ``grad * exp(x - result)``, in one Triton kernel. An op itself, as
    ops.TanhBackward is, so that with create_graph=True the gradient can be differentiated again;
    its own backward is written with minigrad's ops."""

    saved_names = ("grad_output", "self", "result")

    @staticmethod
    def forward(ctx, grad, x, result):
        ctx.save_for_backward(grad, x, result)
        return _triton().logsumexp_backward(grad._data, x._data, result._data)

    @staticmethod
    def backward(ctx, g):
        grad, x, result = ctx.saved_tensors
        need_grad, need_x, need_result = ctx.needs_input_grad
        g_softmax = g * (x - result.unsqueeze(-1)).exp()
        g_x = g_softmax * grad.unsqueeze(-1)
        return (g_softmax.sum(-1) if need_grad else None, g_x if need_x else None,
                -g_x.sum(-1) if need_result else None)

