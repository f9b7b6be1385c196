"""Softmax over the last dimension fused in Triton kernels, as a minigrad Function: exercise 9's
reference (the learner writes the two kernels and ``Softmax``; ``SoftmaxGrad`` is given).

From minigrad's ops, softmax is four nodes (sub, exp, sum, div) whose kernels each write a full
intermediate to memory. ``softmax_kernel`` reads each row and writes only the result;
``softmax_backward_kernel`` does the same for the gradient, result * (grad - sum(grad * result)).
Both run one program per row (the last dimension, of length ``n``), walking it in blocks of
``BLOCK`` elements (``triton_logsumexp.block_size``). Imported on first use, as Triton is the
optional extra: ``Softmax`` takes float32 or float64 storage with at least one element, on CUDA, or
on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``, set before Triton is imported).
"""
import torch
import triton
import triton.language as tl

from ..function import Function
from .triton_logsumexp import block_size


# BEGIN EXERCISE 9
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[row] = exp(x[row] - shift) / sum(exp(x[row] - shift)), the shift being the row's max, so
    that exp never sees a positive number and cannot overflow. One program per row, which walks its
    row in blocks of ``BLOCK`` columns; it writes only the row's own columns."""
    row = tl.program_id(0).to(tl.int64)
    x_row, out_row = x_ptr + row * n, out_ptr + row * n
    columns = tl.arange(0, BLOCK)
    top = tl.full([BLOCK], float("-inf"), x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        top = tl.maximum(top, tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf")))
    shift = tl.max(top, 0)
    total = tl.zeros([BLOCK], x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))
        total += tl.exp(x - shift)
    total = tl.sum(total, 0)
    for start in range(0, n, BLOCK):
        mask = start + columns < n
        x = tl.load(x_row + start + columns, mask=mask, other=float("-inf"))
        tl.store(out_row + start + columns, tl.exp(x - shift) / total, mask=mask)
# END EXERCISE 9


# BEGIN EXERCISE 9
@triton.jit
def softmax_backward_kernel(grad_ptr, result_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[row] = result[row] * (grad[row] - sum(grad[row] * result[row])): the vector-Jacobian
    product of softmax, from the saved result alone. One program per row, which walks its row in
    blocks of ``BLOCK`` columns; it writes only the row's own columns."""
    row = tl.program_id(0).to(tl.int64)
    columns = tl.arange(0, BLOCK)
    dot = tl.zeros([BLOCK], result_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        mask = start + columns < n
        g = tl.load(grad_ptr + row * n + start + columns, mask=mask, other=0.0)
        y = tl.load(result_ptr + row * n + start + columns, mask=mask, other=0.0)
        dot += g * y
    dot = tl.sum(dot, 0)
    for start in range(0, n, BLOCK):
        mask = start + columns < n
        g = tl.load(grad_ptr + row * n + start + columns, mask=mask)
        y = tl.load(result_ptr + row * n + start + columns, mask=mask)
        tl.store(out_ptr + row * n + start + columns, y * (g - dot), mask=mask)
# END EXERCISE 9


def softmax_backward(grad, result):
    """``softmax_backward_kernel`` on storage: ``grad`` and ``result`` as contiguous rows (an
    incoming gradient is often expanded: stride 0), one program per row."""
    rows = result.reshape(-1, result.shape[-1]).contiguous()
    grad_rows = grad.reshape(rows.shape).contiguous()
    out = torch.empty_like(rows)
    softmax_backward_kernel[(rows.shape[0],)](grad_rows, rows, out, rows.shape[1], BLOCK=block_size(rows.shape[1]))
    return out.reshape(result.shape)


# BEGIN EXERCISE 9
class Softmax(Function):
    """``torch.softmax(x, -1)`` in one Triton kernel. Its node, ``SoftmaxBackward``, saves the
    result, as torch's SoftmaxBackward0 does: the gradient needs nothing else. Its backward is the
    op ``SoftmaxGrad``, one kernel too."""

    saved_names = ("result",)

    @staticmethod
    def forward(ctx, x):
        data = x._data
        rows = data.reshape(-1, data.shape[-1]).contiguous()
        out = torch.empty_like(rows)
        softmax_kernel[(rows.shape[0],)](rows, out, rows.shape[1], BLOCK=block_size(rows.shape[1]))
        result = out.reshape(data.shape)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return SoftmaxGrad.apply(grad, result)
# END EXERCISE 9


class SoftmaxGrad(Function):
    """Softmax's backward, ``result * (grad - sum(grad * result))``, in one Triton kernel. An op
    itself, as ops.SoftmaxBackwardData is, so that with create_graph=True the gradient can be
    differentiated again; its own backward is written with minigrad's ops (the same formulas)."""

    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, result):
        ctx.save_for_backward(grad, result)
        return softmax_backward(grad._data, result._data)

    @staticmethod
    def backward(ctx, g):
        grad, result = ctx.saved_tensors
        need_grad, need_result = ctx.needs_input_grad
        g_result = None
        if need_result:
            g_result = (g * grad - (result * grad).sum(-1, keepdim=True) * g
                        - grad * (result * g).sum(-1, keepdim=True))
        return SoftmaxGrad.apply(g, result) if need_grad else None, g_result
