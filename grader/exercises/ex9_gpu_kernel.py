# %% requires triton numpy
# %% markdown
# # Exercise 9 (optional) — a fused softmax in Triton
#
# *Lesson: `course/09_gpu_kernel.ipynb`. This unit is optional: it needs Triton, minigrad's optional
# extra (`pip install -e '.[kernels]'`, or `MINIGRAD_EXTRAS=kernels ./run lab`). Without a GPU,
# Triton's interpreter runs your kernels on the CPU: the first cell sets `TRITON_INTERPRET=1` for
# you, before it imports Triton.*
#
# `softmax(x, -1)` written with minigrad's ops is four nodes (sub, exp, sum, div), and four kernels
# that each write a whole intermediate to memory. You write it the way the lesson's log-sum-exp is
# written: one Triton kernel forward, one backward, wrapped as a minigrad `Function`.
#
# ### The contract
#
# `Softmax.apply(x)` must give what `torch.softmax(x, -1)` gives, values and gradients, from one node
# that saves only the result, as torch's `SoftmaxBackward0` does. The graded tests use torch's softmax
# as the oracle, and the same maths from plain ops beside it:
#
# * **The forward kernel** (`test-softmax_kernel`), launched by hand on storage (`by_rows`, in the
#   setup cell): tensors of 3 rows of 5 and of 6 rows of 7. Hidden: rows longer than a block (1025),
#   rows of one element, values near ±1000 (`exp(1000)` overflows even float64), float32 in and out.
# * **The backward kernel** (`test-softmax_backward_kernel`), launched by hand on an upstream
#   gradient and the softmax: the same shapes; hidden: rows of 1025 and of one element.
# * **`Softmax`** (`test-Softmax`): the result, its dtype, what its node saved
#   (`y.grad_fn._saved_result`) and `x.grad` for a random upstream gradient, on the same shapes.
#   Hidden: rows of 1025, values in the thousands, the transpose `x.t()` (not contiguous), float32.
# * **One node** (`test-Softmax-graph`): the same values and gradients as the plain ops (to 1e-12),
#   from a graph of 2 nodes where the plain ops make 5 (the leaf's node counted in both). Hidden: a
#   second derivative (`create_graph=True`) and gradcheck.
#
# The kernels see the input as rows: its last dimension, of length `n`, stored one row after the
# other (**contiguous**), so that row `r` starts at `x_ptr + r * n`. They run one program per row. A
# program walks its row in blocks of `BLOCK` columns (`block_size(n)`, given: a power of two, at most
# 1024), and masks the columns past the row's end.
#
# ### What you write
#
# 1. `softmax_kernel(x_ptr, out_ptr, n, BLOCK)`: one program per row writes that row's softmax.
# 2. `softmax_backward_kernel(grad_ptr, result_ptr, out_ptr, n, BLOCK)`: one program per row writes
#    the gradient of softmax, from its result `y` alone: `y * (grad - sum(grad * y))`.
# 3. `Softmax`, the `Function`: `forward(ctx, x)` runs your forward kernel on `x`'s storage and saves
#    the result; `backward(ctx, grad)` returns `SoftmaxGrad.apply(grad, result)`. `SoftmaxGrad` is
#    given: an op that runs your backward kernel, with a backward of its own, so that
#    `create_graph=True` can differentiate it again.
#
# ### What is yours to decide
#
# Parts 1 and 2 are open: how many passes a program makes over its row, and how it accumulates the
# max and the sum (a vector per block reduced at the end, or a number per block): any kernel that
# gives the same numbers passes. Each part says what it must do; its hints open on demand: a nudge,
# then the idea, then the pseudocode.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math, a few
# standard modules (heapq, itertools, functools, collections, typing) and Triton as `import triton`
# and `import triton.language as tl` (the setup cell does both); of Triton it may use `@triton.jit`,
# `triton.cdiv`, `triton.next_power_of_2` and the language's functions and types (`tl.load`,
# `tl.exp`, `tl.constexpr`, ...), and it keeps the names `triton` and `tl` for Triton alone. A kernel
# calls only those, `.to(...)` and `range`, `float`, `int`, `bool`, `min`, `max`, `abs`, `len` (and
# the stub's `NotImplementedError`); it reads no name but its parameters, its own variables, `tl` and
# `triton`, and it writes only its own variables (and memory, through `tl.store`). Graded code may
# not use torch's own autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate
# names any such construct ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # no GPU: Triton's interpreter runs the kernels (set before the import)
try:
    import triton
    import triton.language as tl
except ModuleNotFoundError:
    raise ModuleNotFoundError("Exercise 9 needs Triton, minigrad's optional extra: pip install -e '.[kernels]' "
                              "(or MINIGRAD_EXTRAS=kernels ./run lab), then restart the kernel") from None

import minigrad
from minigrad.kernels import triton_softmax
from minigrad.kernels.triton_logsumexp import block_size
from minigrad.kernels.triton_softmax import SoftmaxGrad
from minigrad.function import Function
from coursekit.testing import check, graded

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # with a GPU, Triton compiles the kernels for it


def by_rows(kernel, out_shape, *tensors):
    """Launch ``kernel`` on storage by hand: one program per row of the last dimension, the tensors
    as contiguous rows, then the output (of ``tensors[-1]``'s dtype) and the row length."""
    n = out_shape[-1]
    flat = [t.reshape(-1, n).contiguous() for t in tensors]
    out = torch.empty(flat[-1].shape, dtype=flat[-1].dtype, device=flat[-1].device)
    kernel[(flat[-1].shape[0],)](*flat, out, n, BLOCK=block_size(n))
    return out.reshape(out_shape)

# %% markdown
# ## Part 1 — `softmax_kernel` (open)
#
# Program `r` writes `exp(x - shift) / sum(exp(x - shift))` for row `r`, where the **shift** is the
# row's max, so that exp never sees a positive number and cannot overflow. It stores only the row's
# own columns. A row longer than `BLOCK` takes several blocks, and the output of any column needs the
# whole row's max and sum. How many passes you make over the row, and how you carry the max and the
# sum from block to block, are up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Start from the lesson's `_forward_kernel` (log-sum-exp): its two passes, the max then the sum, are
# most of what you need. What is left to write?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Three passes over the row: its max, the sum of `exp(x - shift)`, then the output. Softmax needs no
# special case for infinite rows, unlike log-sum-exp: torch gives nan there, and so does
# `exp(x - shift)` without one. Read masked columns as `-inf` where they must not count
# (`tl.load(..., mask=..., other=float("-inf"))`: `exp(-inf)` is 0 and adds nothing), and store only
# the row's own columns (`tl.store(..., mask=...)`). (Two passes work too: keep a running max, and
# rescale the running sum each time the max grows.)
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. `row = tl.program_id(0).to(tl.int64)` (a large tensor's offsets can pass int32's range);
#    `columns = tl.arange(0, BLOCK)`; the row starts at `x_ptr + row * n`, its output at
#    `out_ptr + row * n`.
# 2. The max: `top = tl.full([BLOCK], float("-inf"), x_ptr.dtype.element_ty)`; for each `start` in
#    `range(0, n, BLOCK)`, load the block (mask `start + columns < n`, other `-inf`) and take
#    `tl.maximum(top, x)`; then `shift = tl.max(top, 0)`.
# 3. The sum: a block of zeros (`tl.zeros`, of the input's element type); for each block, add
#    `tl.exp(x - shift)` to it (masked columns read as `-inf`, so they add 0); then reduce it to one
#    number, the row's total, with `tl.sum(..., 0)`.
# 4. The output: for each block, load `x` again and store `tl.exp(x - shift)` divided by the total,
#    with the mask.
#
# </details>
# %% part softmax_kernel
# %% locked plug-softmax_kernel
graded(softmax_kernel.fn)
# %% code
# Try it: x = torch.randn(2, 5); by_rows(softmax_kernel, x.shape, x) - torch.softmax(x, -1)
# %% tests test-softmax_kernel 2+2 softmax_kernel
def forward_kernel(lib, shape, scale=3.0):
    """softmax over the last dimension: torch's, or your kernel launched on the storage."""
    lib.manual_seed(0)
    x = lib.randn(shape, dtype=lib.float64, device=DEVICE) * scale
    return torch.softmax(x, -1) if lib is torch else by_rows(softmax_kernel, shape, x._data)


def large_rows(lib):
    """exp(1000) overflows even float64: only the shift by each row's max keeps these finite."""
    rows = [[1000.0, 1000.0, 999.0], [-1000.0, -1000.0, -999.0], [1.0, 2.0, 3.0]]
    x = lib.tensor(rows, dtype=lib.float64, device=DEVICE)
    return torch.softmax(x, -1) if lib is torch else by_rows(softmax_kernel, x.shape, x._data)


check("a (3, 5) tensor: 3 rows of 5", forward_kernel, (3, 5))
check("a (2, 3, 7) tensor: 6 rows of 7", forward_kernel, (2, 3, 7))
check("rows longer than a block: (2, 1025)", forward_kernel, (2, 1025))
check("large values", large_rows)
### BEGIN HIDDEN TESTS
check("rows of one element: (4, 1)", forward_kernel, (4, 1))


def float32_rows(lib):
    """float32 in, float32 out, within float32's precision of the float64 softmax."""
    lib.manual_seed(0)
    x = lib.randn(3, 33, dtype=lib.float64, device=DEVICE) * 3
    if lib is torch:
        y32, y64 = torch.softmax(x.float(), -1), torch.softmax(x, -1)
    else:
        y32, y64 = by_rows(softmax_kernel, x.shape, x._data.float()), by_rows(softmax_kernel, x.shape, x._data)
    return str(y32.dtype), (y32.double() - y64).abs().max().item() < 1e-6


check("float32", float32_rows)
### END HIDDEN TESTS

# %% markdown
# ## Part 2 — `softmax_backward_kernel` (open)
#
# `grad_ptr` and `result_ptr` point at rows laid out alike. Program `r` writes, for row `r`,
# `result * (grad - sum(grad * result))`: the vector-Jacobian product of softmax, from the saved
# result alone. Every column's output needs the whole row's sum. How you accumulate it is up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# One number per row, `sum(grad * result)`, appears in every column's output. When can you write the
# first column?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Two passes: first the row's sum of `grad * result` (masked columns read as 0 add nothing), then
# `result * (grad - sum)` for each column. The sum needs *every* block of the row before any output
# is written.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. `row = tl.program_id(0).to(tl.int64)`; `columns = tl.arange(0, BLOCK)`.
# 2. The sum: a block of zeros (`tl.zeros`, of the result's element type). For each `start` in
#    `range(0, n, BLOCK)`, with the mask `start + columns < n`: load the gradient's and the result's
#    block at `row * n + start + columns` (masked columns read as 0), and add their product. Then
#    reduce it to one number with `tl.sum(..., 0)`.
# 3. For each block: load both again and store `result * (grad - sum)` at the same offsets of
#    `out_ptr`, with the mask.
#
# </details>
# %% part softmax_backward_kernel
# %% locked plug-softmax_backward_kernel
triton_softmax.softmax_backward_kernel = softmax_backward_kernel  # what the given SoftmaxGrad launches
graded(softmax_backward_kernel.fn)
# %% tests test-softmax_backward_kernel 2+1 softmax_backward_kernel
def backward_kernel(lib, shape, scale=3.0):
    """softmax's gradient for an upstream gradient: torch's autograd, or your kernel launched on the
    upstream gradient and the softmax (minigrad's op computes it)."""
    lib.manual_seed(0)
    x = lib.randn(shape, dtype=lib.float64, device=DEVICE) * scale
    grad = lib.randn(shape, dtype=lib.float64, device=DEVICE)
    if lib is torch:
        return torch.autograd.grad(torch.softmax(x.requires_grad_(), -1), x, grad)[0]
    return by_rows(softmax_backward_kernel, shape, grad._data, x.softmax(-1)._data)


check("a (3, 5) tensor", backward_kernel, (3, 5))
check("a (2, 3, 7) tensor", backward_kernel, (2, 3, 7))
check("rows longer than a block: (2, 1025)", backward_kernel, (2, 1025))
### BEGIN HIDDEN TESTS
check("rows of one element: (4, 1)", backward_kernel, (4, 1))
### END HIDDEN TESTS

# %% markdown
# ## Part 3 — `Softmax`
#
# `Softmax.apply(x)` is `torch.softmax(x, -1)`: the same shape, dtype and device as `x`, for any `x`
# with at least one element, contiguous or not (`x.t()`), in float32 or float64. Its node saves the
# result, and only it (`saved_names = ("result",)` names it `_saved_result`). Its backward is
# `SoftmaxGrad.apply(grad, result)`, so that a second derivative works.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Your kernel reads rows of `n` numbers one after the other in memory. Is that what `x.t()`'s storage
# looks like?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Forward works on storage: view `x._data` as rows (`reshape(-1, n)`), made **contiguous**, since the
# kernel assumes it and `x.t()` is not. Allocate the output like those rows, launch one program per
# row, and give the result `x`'s shape. Save it with `ctx.save_for_backward`.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# `forward(ctx, x)`:
#
# 1. The rows: `x._data` reshaped to `(-1, n)`, `n` being the last dimension's length, made
#    contiguous.
# 2. The output: an empty tensor like the rows (same shape, dtype and device: `torch.empty_like`).
# 3. Launch `softmax_kernel` with one program per row (a grid of `(number of rows,)`), on the rows,
#    the output, `n`, and `BLOCK=block_size(n)`.
# 4. The result: the output reshaped to `x`'s shape. Save it (`ctx.save_for_backward`) and return it.
#
# `backward(ctx, grad)`: take the result from `ctx.saved_tensors` and return
# `SoftmaxGrad.apply(grad, result)`.
#
# </details>
# %% part Softmax
# %% locked plug-Softmax
Softmax = graded(Softmax)
# %% code
# Try it: x = minigrad.randn(2, 5, requires_grad=True); y = Softmax.apply(x); y.sum().backward(); x.grad
# %% tests test-Softmax 2+2 softmax_kernel softmax_backward_kernel Softmax
def fused(lib, x):
    """torch's softmax, or yours."""
    return torch.softmax(x, -1) if lib is torch else Softmax.apply(x)


def forward_backward(lib, shape, scale=3.0, transpose=False):
    """The result, what its node saved, and x.grad for a random upstream gradient."""
    lib.manual_seed(0)
    x = lib.randn(shape, dtype=lib.float64, device=DEVICE).mul(scale).requires_grad_()
    y = fused(lib, x.t() if transpose else x)
    saved = y.grad_fn._saved_result  # read before backward, which frees it
    y.backward(lib.randn(tuple(y.shape), dtype=lib.float64, device=DEVICE))
    return {"y": y, "dtype": str(y.dtype), "saved result": saved, "x.grad": x.grad}


check("forward and backward, (3, 5)", forward_backward, (3, 5))
check("forward and backward, (2, 3, 7)", forward_backward, (2, 3, 7))
check("forward and backward of x.t() (not contiguous)", forward_backward, (5, 3), 3.0, True)
### BEGIN HIDDEN TESTS
check("forward and backward, (2, 1025)", forward_backward, (2, 1025))
check("forward and backward, large values", forward_backward, (4, 37), 1000.0)


def float32_softmax(lib):
    lib.manual_seed(0)
    x = lib.randn(3, 33, dtype=lib.float32, device=DEVICE, requires_grad=True)
    y = fused(lib, x)
    y.sum().backward()
    return str(y.dtype), str(x.grad.dtype), (y - lib.softmax(x.double(), -1)).abs().max().item() < 1e-6


check("float32", float32_softmax)
### END HIDDEN TESTS

# %% tests test-Softmax-graph 1+1 softmax_kernel softmax_backward_kernel Softmax
def nodes(tensor):
    """How many nodes the backward graph below ``tensor`` has."""
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in seen:
            seen.add(node)
            stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def versus_plain_ops(lib):
    """Softmax from plain ops (sub the row's max, a constant; exp; sum; div) against the fused one:
    the same numbers, from one node where the plain ops make four (leaf's node included: 2 and 5)."""
    lib.manual_seed(0)
    x = lib.randn(3, 6, dtype=lib.float64, device=DEVICE, requires_grad=True)
    grad = lib.randn(3, 6, dtype=lib.float64, device=DEVICE)
    e = (x - x.detach().max(-1, keepdim=True).values).exp()
    plain = e / e.sum(-1, keepdim=True)
    y = fused(lib, x)
    (plain_grad,) = lib.autograd.grad(plain, x, grad)
    (fused_grad,) = lib.autograd.grad(y, x, grad)
    return {"values agree": (y - plain).abs().max().item() < 1e-12,
            "gradients agree": (fused_grad - plain_grad).abs().max().item() < 1e-12,
            "nodes, plain ops": nodes(plain), "nodes, fused": nodes(y)}


def second_derivative(lib):
    """create_graph=True: the gradient is a graph too (SoftmaxGrad), differentiated again."""
    lib.manual_seed(0)
    x = lib.randn(3, 6, dtype=lib.float64, device=DEVICE, requires_grad=True)
    w = lib.randn(3, 6, dtype=lib.float64, device=DEVICE, requires_grad=True)
    (grad,) = lib.autograd.grad((fused(lib, x) * w).sum(), x, create_graph=True)
    (grad * lib.randn(3, 6, dtype=lib.float64, device=DEVICE)).sum().backward()
    return grad, x.grad, w.grad


check("the fused softmax against plain ops", versus_plain_ops)
check("second derivative", second_derivative)
### BEGIN HIDDEN TESTS


def finite_differences(lib):
    """gradcheck: the gradient agrees with finite differences of the forward."""
    x = lib.randn(2, 3, dtype=lib.float64, device=DEVICE, requires_grad=True)
    return lib.autograd.gradcheck(lambda t: fused(lib, t), (x,))


check("gradcheck", finite_differences)
### END HIDDEN TESTS
