"""The Triton kernels behind ``minigrad.kernels.LogSumExp``, and the calls that launch them on storage.

Imported on first use only: Triton is the optional extra. Both kernels see the input as a matrix
of rows (its last dimension) and run one program per row; a program walks its row in blocks of at
most ``MAX_BLOCK`` elements, so a row of any length fits in the registers it has.
"""
import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024


@triton.jit
def _forward_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[row] = log(sum(exp(x[row] - shift))) + shift, the shift being the row's max: exp then
    never sees a positive number, so it cannot overflow (a row of 1000s gives 1000 + log n, not
    inf). An infinite max shifts by 0, as in torch, so that -inf - -inf makes no nan: a row of
    -inf gives -inf, a row holding inf gives inf."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n
    columns = tl.arange(0, BLOCK)
    top = tl.full([BLOCK], float("-inf"), x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))
        top = tl.maximum(top, x)
    shift = tl.max(top, 0)
    shift = tl.where(tl.abs(shift) == float("inf"), 0.0, shift)
    total = tl.zeros([BLOCK], x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))
        total += tl.exp(x - shift)
    tl.store(out_ptr + row, tl.log(tl.sum(total, 0)) + shift)


@triton.jit
def _backward_kernel(grad_ptr, x_ptr, result_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[row] = grad[row] * exp(x[row] - result[row]): the gradient of log-sum-exp is the row's
    softmax, and exp(x - logsumexp(x)) is that softmax without summing the row again."""
    row = tl.program_id(0).to(tl.int64)
    grad = tl.load(grad_ptr + row)
    result = tl.load(result_ptr + row)
    columns = tl.arange(0, BLOCK)
    for start in range(0, n, BLOCK):
        mask = start + columns < n
        x = tl.load(x_ptr + row * n + start + columns, mask=mask)
        tl.store(out_ptr + row * n + start + columns, grad * tl.exp(x - result), mask=mask)


def block_size(n):
    """The block a program walks a row of ``n`` elements in: a power of two (``tl.arange`` needs
    one), no longer than the row needs and at most ``MAX_BLOCK``."""
    return min(triton.next_power_of_2(n), MAX_BLOCK)


def logsumexp(data):
    """Log-sum-exp over the last dimension of ``data`` (float32 or float64 storage, not empty)."""
    rows = data.reshape(-1, data.shape[-1]).contiguous()
    out = torch.empty(rows.shape[0], dtype=data.dtype, device=data.device)
    _forward_kernel[(rows.shape[0],)](rows, out, rows.shape[1], BLOCK=block_size(rows.shape[1]))
    return out.reshape(data.shape[:-1])


def logsumexp_backward(grad, x, result):
    """``grad * exp(x - result)``, each row of ``x`` with its own ``grad`` and ``result``."""
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty_like(rows)
    _backward_kernel[(rows.shape[0],)](grad.contiguous(), rows, result.contiguous(), out, rows.shape[1],
                                       BLOCK=block_size(rows.shape[1]))
    return out.reshape(x.shape)
