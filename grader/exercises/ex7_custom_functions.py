# %% markdown
# # Exercise 7 — gradcheck, and two custom Functions
#
# *Lessons: `course/07a_custom_functions_and_gradcheck.ipynb` and `course/07b_straight_through_and_second_derivatives.ipynb`.*
#
# A custom `Function` brings its own backward, and nothing checks it but you. `gradcheck` does:
# it computes the **Jacobian** of the function (the table of every output element's derivative
# with respect to every input element: row r, column c holds d output[c] / d input[r]) twice —
# once from the forward alone, by moving each input element a little (finite differences), once
# from the backward — and compares them. You write its core, then the tutorial's two Functions, and
# your gradcheck judges them.
#
# ### The contract
#
# `minigrad.autograd.gradcheck`, with your core, must give `torch.autograd.gradcheck`'s verdict on
# the same function: `True`, or `GradcheckError` with torch's message, word for word. Your Functions
# must compute what torch computes for the same thing: `torch.logsumexp`, and the straight-through
# idiom `x + (q - x).detach()`. The graded tests run each scenario through torch and through
# minigrad, and compare:
#
# * **Finite differences** (`test-numerical`). `x * x` with `eps=1e-3` (central differences pass,
#   one-sided ones would not), and the input after gradcheck: the same values, and a version counter
#   that never moved. Hidden: a transposed (non-contiguous) input, an integer mask and a weight before
#   the input that requires grad, an output that is a view of the input, `eps=1e-6`.
# * **Backward's Jacobians** (`test-analytical`). `a @ b` (Jacobians that are not square) and
#   `(x * y).tanh()`. Hidden: an input the function ignores, `x @ m` with `m` not symmetric, several
#   outputs, one of them `max`'s integer indices.
# * **Verdicts on wrong backwards** (`test-wrong-backwards`). Custom Functions whose backward is right,
#   has the wrong sign, forgets a factor, or is off by just under or just over the tolerance. Hidden:
#   two inputs with one gradient wrong, a second output wrong, on the GPU when there is one.
# * **The error message** (`test-mismatch-message`), word for word, naming the output and the input,
#   each counted among those that require grad.
# * **`StableLogSumExp`** (`test-lse`, `test-lse-gradcheck`). Values and gradients: the tutorial's
#   `randn(3, 10)`, values near 1000, a fully masked row (all `-inf`); torch's gradcheck of
#   `torch.logsumexp` against your gradcheck of your Function. Hidden: over dim 0, a row holding
#   `inf`, float32, 3-D tensors over dims 1, -1 and -3, on the GPU, and `gradgradcheck` (the
#   backward's own backward).
# * **`StraightThroughEstimator`** (`test-ste`). Values and gradients with 8 and 2 bits, and
#   gradcheck rejects it. Hidden: `num_bits` left at its default, 3 bits on [0, 1].
#
# ### What you write
#
# 1. **gradcheck's core**, three functions of `minigrad.autograd.gradcheck` (the rest — checking the
#    inputs, the float32 warning, backward fed zeros, `raise_exception` — is given):
#    `_numerical_jacobians(func, inputs, func_out, positions, eps)`,
#    `_jacobians_from_backward(inputs, output)` and
#    `_check_jacobians(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol)`.
# 2. **`StableLogSumExp`**, a `Function`: `apply(x, dim)` is log(sum(exp(x))) over `dim`, without
#    overflow, as `torch.logsumexp` — including the rows where the tutorial's version gives nan.
# 3. **`StraightThroughEstimator`**, a `Function`: `apply(x, num_bits=8)`, the tutorial's quantizer,
#    whose backward passes the gradient through unchanged. gradcheck rejects it — by design — and yours
#    must too.
#
# ### What is yours to decide
#
# Parts 1a, 1b, 1c and 2 are open: how you visit the input's elements, how you make the one-hot
# gradients, the order of the loops and when each Jacobian is computed, and what `StableLogSumExp`
# saves for its backward: any way that meets the contract passes. Each part says what it must do;
# its hints open on demand: a nudge, then the idea, then the pseudocode.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import importlib
import itertools
import math

import torch

import minigrad
from minigrad.autograd import api
from minigrad.autograd.function import Function
from minigrad.autograd.gradcheck import (GradcheckError, _analytical_jacobians, _central_difference, _output_values,
                                         _requiring_grad)
from minigrad.function import constant
from coursekit.testing import check, graded

GRADCHECK = importlib.import_module("minigrad.autograd.gradcheck")  # the module (the package holds the function)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # tests marked for the GPU run there when there is one

# %% markdown
# ## Part 1a — `_numerical_jacobians`: the Jacobian from the forward alone (open)
#
# Return, for each input that requires grad (`_requiring_grad(inputs)`, in order), a list holding one
# Jacobian per output at `positions` (indices into `func_out`, what `func(*inputs)` returned). Each
# Jacobian is a storage tensor (a plain torch tensor) of shape `(input elements, output elements)`,
# made like its output (`out._data.new_zeros(...)`). Row r is the **central** difference
# `(f(x + eps) - f(x - eps)) / (2 * eps)`, with the input's element r moved by `eps`, the elements
# counted in the order `reshape(-1)` lists them. Afterwards every input holds what it held, and its
# version counter never moved. It must work for an input that is not contiguous, and for an output
# that shares memory with the input.
#
# Given: `_output_values(func, inputs)` calls `func` and copies its outputs' storage;
# `_central_difference(before, after, eps, index)` gives one row (and torch's error if `func` changed
# shape or dtype). How you visit the elements is up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# How does torch move an element without the move being recorded, or counted as an in-place edit?
# And which index of an element comes r-th in `reshape(-1)`'s order, when the input is not
# contiguous?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Move the element **in the input's storage** (`inp._data`), in place, as torch moves `input.data`:
# `func` sees the change through the very tensor it was given, and the input's version counter does
# not move. A central difference errs like eps², where the one-sided `(f(x + eps) - f(x)) / eps`
# errs by about eps times the second derivative. Copy the outputs before the next move: an output may
# share memory with the input you are moving (`_output_values` does that).
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# For each input that requires grad, and its storage `inp._data`:
#
# 1. One Jacobian of zeros per position k, of shape (the input's element count, output k's element
#    count), made by `new_zeros` on output k's storage.
# 2. For each row r and its index tuple, in `reshape(-1)`'s order:
#    `itertools.product(*map(range, inp._data.shape))` lists every element's index tuple in that order, and
#    `enumerate` numbers them. The storage indexed by that tuple is the element: a view you can
#    `copy_` into (also when the input is not contiguous, where a `reshape(-1)` would be a copy).
#    - Keep a copy of the element's value. Set the element to the value minus `eps` and call
#      `_output_values(func, inputs)`: the outputs before. Set it to the value plus `eps` and call it
#      again: the outputs after. Put the value back.
#    - For each position k, row r of its Jacobian is `_central_difference` of output k's before and
#      after, with `eps` and the index.
# 3. Return one list of Jacobians per input.
#
# </details>
# %% part _numerical_jacobians
# %% locked plug-numerical
_numerical_jacobians = graded(_numerical_jacobians)
GRADCHECK._numerical_jacobians = _numerical_jacobians
# %% markdown
# ## Part 1b — `_jacobians_from_backward`: the Jacobian from the backward (open)
#
# Return `output`'s Jacobian with respect to each tensor in `inputs` (those that require grad): for
# each input, a storage tensor of shape `(input elements, output elements)`, made like the input
# (`inp._data.new_zeros(...)`). An input that backward does not reach has a Jacobian of zeros.
#
# Backward never builds a Jacobian: it computes a **vector-Jacobian product**. Given the gradient of
# the loss with respect to the output, `v` (grad_output), it returns the gradient with respect to each
# input: `J @ v`, with `J` laid out as above (a row per input element). How you make the `v`s and
# collect the columns is up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Which `v` makes `J @ v` give you one column of `J`?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Feed backward a one-hot `v` — 1 at output element j, 0 elsewhere — and it returns column j of every
# input's Jacobian. One backward per output element, through the same graph. (The rows of an
# identity matrix are those one-hot vectors, in order; the columns can be filled in one by one or
# stacked at the end.)
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. One Jacobian of zeros per input, of shape (the input's element count, the output's), made by
#    `new_zeros` on the input's storage.
# 2. For each output element j:
#    - a one-hot storage tensor shaped like the output (zeros made from the output's storage, 1 at
#      element j, viewed in the output's shape), wrapped by `constant(storage)` (a minigrad tensor
#      that needs no grad);
#    - `api.grad([output], inputs, [grad_output], retain_graph=True, allow_unused=True)` (that is
#      `minigrad.autograd.grad`): `retain_graph`, since you run backward through the same graph once
#      per output element; `allow_unused`, since an input backward does not reach gets `None` (its
#      column stays zeros);
#    - column j of each input's Jacobian is its gradient's storage, `grad._data.reshape(-1)`.
# 3. Return the Jacobians.
#
# </details>
# %% part _jacobians_from_backward
# %% locked plug-backward
_jacobians_from_backward = graded(_jacobians_from_backward)
GRADCHECK._jacobians_from_backward = _jacobians_from_backward
# %% markdown
# ## Part 1c — `_check_jacobians`: the verdict (open)
#
# `outputs` are the outputs of `func_out` that require grad, in order (an integer output — `max`'s
# indices — has no gradient and is skipped). For each output i and each input j (both counted among those that require grad), compare the
# numerical Jacobian (your Part 1a) with the analytical one
# (`_analytical_jacobians(inputs, output, nondet_tol)`, given: your Part 1b, run twice, as torch does,
# to catch a backward that gives different numbers each time). Return nothing when every pair is
# close. When a pair differs, raise torch's error, word for word:
#
#     GradcheckError(f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
#                    f"numerical:{n}\nanalytical:{a}\n")
#
# Torch looks at the outputs in order and, for each, at the inputs in order, and raises at the first
# pair that differs. The order of your loops, and when you compute each Jacobian, are up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Close means **every** entry of the analytical Jacobian within `atol + rtol * |numerical|` of the
# numerical one. Which of the two does `rtol` scale? And what if the two Jacobians have different
# dtypes?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `torch.allclose(analytical, numerical, rtol, atol)` is the test: its `rtol` scales its *second*
# argument. An output of another dtype than its input (`x.float()`) gives Jacobians of two dtypes:
# compare in `torch.promote_types(a.dtype, n.dtype)`. One pass of finite differences serves every
# output (each move of an input moves every output): compute the numerical Jacobians once.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. The positions: the indices k of `func_out` whose output requires grad.
# 2. The numerical Jacobians, once, for all those positions (your Part 1a).
# 3. For each output i: its analytical Jacobians (`_analytical_jacobians`). For each input j, `a` is
#    its analytical Jacobian and `n` the numerical one of input j and output i:
#    - the dtype to compare in is `torch.promote_types` of their two dtypes;
#    - convert both to it (`n` to `a`'s device too), and if `torch.allclose(a, n, rtol, atol)` is
#      false, raise the `GradcheckError` above.
#
# </details>
# %% part _check_jacobians
# %% locked plug-check
_check_jacobians = graded(_check_jacobians)
GRADCHECK._check_jacobians = _check_jacobians
# %% code
# Try it: x = minigrad.randn(3, dtype=minigrad.float64, requires_grad=True)
# minigrad.autograd.gradcheck(lambda x: x.exp(), (x,))
# %% tests test-numerical 2+1 _numerical_jacobians _jacobians_from_backward _check_jacobians
def square(lib, eps):
    """x * x with eps = 1e-3: central differences are exact for a square (up to rounding); one-sided
    ones are off by eps, far more than atol."""
    x = lib.tensor([0.1, -0.3, 0.2], dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda x: x * x, (x,), eps=eps)


def inputs_afterwards(lib):
    """gradcheck moves each element and puts it back, in storage: the input holds what it held and
    its version counter never moved."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    before = x.detach().clone()
    passed = lib.autograd.gradcheck(lambda x: (x * x).exp(), (x,), eps=1e-3, atol=1e-3)
    return passed, lib.equal(x.detach(), before), x._version


def not_contiguous(lib):
    """A transposed leaf: its elements do not lie in reshape(-1)'s order."""
    lib.manual_seed(0)
    x = lib.randn(3, 2, dtype=lib.float64).t().requires_grad_()
    return lib.autograd.gradcheck(lambda x: (x @ x.t()).tanh(), (x,))


check("x * x, eps=1e-3", square, 1e-3)
check("the input after gradcheck", inputs_afterwards)
check("a transposed (non-contiguous) input", not_contiguous)
### BEGIN HIDDEN TESTS


def mask_and_weight_first(lib):
    """Only inputs that require grad get Jacobians: an integer mask and a float weight that doesn't
    come before x."""
    lib.manual_seed(0)
    mask = lib.tensor([1, 0, 1])
    w = lib.randn(3, dtype=lib.float64)
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda mask, w, x: (x * w * mask).exp(), (mask, w, x))


def view_of_the_input(lib):
    """An output that is a view of the input moves with it: copy the outputs before the next move."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda x: x.t()[1], (x,))


check("an integer mask and a weight before x", mask_and_weight_first)
check("an output that is a view of the input", view_of_the_input)
check("x * x, eps=1e-6", square, 1e-6)
### END HIDDEN TESTS

# %% tests test-analytical 2+1 _numerical_jacobians _jacobians_from_backward _check_jacobians
def matmul(lib):
    """a @ b, (2, 3) @ (3, 4): Jacobians of 6 x 8 and 12 x 8, neither square."""
    lib.manual_seed(0)
    a = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    b = lib.randn(3, 4, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda a, b: a @ b, (a, b))


def tanh_of_product(lib):
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    y = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda x, y: (x * y).tanh(), (x, y))


def unused_input(lib):
    """y requires grad but func ignores it: backward gives it no gradient, its Jacobian is zeros."""
    lib.manual_seed(0)
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    y = lib.randn(2, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda x, y: x.exp(), (x, y))


check("a @ b", matmul)
check("(x * y).tanh()", tanh_of_product)
check("x.exp(), with y unused", unused_input)
### BEGIN HIDDEN TESTS


def fixed_matrix(lib):
    """x @ m with m fixed and not symmetric: a square Jacobian, which must not come out transposed."""
    lib.manual_seed(0)
    x = lib.randn(1, 3, dtype=lib.float64, requires_grad=True)
    m = lib.randn(3, 3, dtype=lib.float64)
    return lib.autograd.gradcheck(lambda x: (x @ m).exp(), (x,))


def several_outputs(lib):
    """Three outputs, one of them max's integer indices (no gradient)."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    y = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda x, y: (x * y, (x + y).sum(1), *x.max(dim=1)), (x, y))


check("(x @ m).exp()", fixed_matrix)
check("several outputs", several_outputs)
### END HIDDEN TESTS

# %% tests test-wrong-backwards 2+2 _numerical_jacobians _jacobians_from_backward _check_jacobians
def square_with(lib, formula):
    """x * x as a custom Function whose backward is ``formula(x, grad_output)``."""
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return formula(x, grad_output)
    return Square


def checked_square(lib, formula):
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(square_with(lib, formula).apply, (x,))


def scaled(lib, factor):
    """100 * x whose backward is off by ``factor``: the tolerance is atol + rtol * |numerical|
    (rtol = 0.1% of the numerical 100, atol = 1e-5)."""
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 100

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * (100 * factor)

    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(Scale.apply, (x,))


check("x * x with backward 2 * x * grad", checked_square, lambda x, g: 2 * x * g)
check("x * x with backward -2 * x * grad (wrong sign)", checked_square, lambda x, g: -2 * x * g)
check("x * x with backward x * grad (forgotten factor)", checked_square, lambda x, g: x * g)
check("100 * x, backward 0.09995% too small: within rtol", scaled, 1 - 0.9995e-3)
### BEGIN HIDDEN TESTS


def product_with(lib, grad_of_y):
    """x * y as a custom Function: x's gradient right, y's ``grad_of_y(x, grad_output)``."""
    class Product(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * y, grad_of_y(x, grad_output)

    lib.manual_seed(0)
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    y = lib.randn(3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(Product.apply, (x, y))


def wrong_second_output(lib):
    """The first output is right; the second's backward forgot a factor."""
    lib.manual_seed(0)
    x = lib.randn(3, dtype=lib.float64, requires_grad=True)
    wrong = square_with(lib, lambda x, g: x * g)
    return lib.autograd.gradcheck(lambda x: (x.exp(), wrong.apply(x)), (x,))


check("x * y, y's gradient right", product_with, lambda x, g: g * x)
check("x * y, y's gradient wrong", product_with, lambda x, g: g * x * 2)
check("(x.exp(), wrong square): the second output wrong", wrong_second_output)
check("100 * x, backward 0.10005% too large", scaled, 1 + 1.0005e-3)
check("100 * x, backward 0.09995% too large", scaled, 1 + 0.9995e-3)


def on_device(lib):
    """Marked for the GPU: storage on DEVICE (CUDA when the grader has it); the Jacobians are made there."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, device=DEVICE, requires_grad=True)
    wrong = square_with(lib, lambda x, g: x * g)
    return (lib.autograd.gradcheck(lambda x: (x @ x.t()).tanh(), (x,)),
            lib.autograd.gradcheck(lambda x: wrong.apply(x) + x, (x,), raise_exception=False))


check("on DEVICE: a right backward and a wrong one", on_device)
### END HIDDEN TESTS

# %% tests test-mismatch-message 1 _numerical_jacobians _jacobians_from_backward _check_jacobians
def mismatch_named(lib):
    """w needs no grad and max's indices have none: the wrong pair is output 1, input 1, counted among
    those that require grad."""
    lib.manual_seed(0)
    w = lib.randn(2, dtype=lib.float64)
    x = lib.randn(2, dtype=lib.float64, requires_grad=True)
    y = lib.randn(2, dtype=lib.float64, requires_grad=True)
    wrong = square_with(lib, lambda x, g: -2 * x * g)
    return lib.autograd.gradcheck(lambda w, x, y: (x * y * w, wrong.apply(y) + x, *x.max(dim=0)), (w, x, y))


check("the error of x * x with a wrong sign, word for word", checked_square, lambda x, g: -2 * x * g, message=True)
check("the error naming output 1 and input 1, word for word", mismatch_named, message=True)

# %% markdown
# ## Part 2 — `StableLogSumExp` (open)
#
# `StableLogSumExp.apply(x, dim)` must give what `torch.logsumexp(x, dim)` gives, and the same
# gradient: a row of n values of 1000 gives 1000 + log n (not `inf`), a row of `-inf` (a fully
# masked row) gives `-inf`, a row holding `inf` gives `inf`; and gradcheck and gradgradcheck must pass. The
# tutorial's Function (the lesson's first section) shifts each row by its max; it gives nan on those
# last two rows. What you save for backward, and how backward computes the gradient, are up to you.
#
# Remember what forward gets and backward returns: forward runs on minigrad tensors with grad mode
# off; save what backward needs with `ctx.save_for_backward(...)`, keep `dim` (not a tensor) as an
# attribute of `ctx`; `grad_output` has one dimension fewer than x (`unsqueeze` it back to
# broadcast); return one gradient per forward argument — `None` for `dim`. For gradgradcheck,
# write backward with minigrad's ops on what forward saved. The inputs, and the very tensor forward
# returns, carry their graph into the backward's own backward; a tensor made along the way inside
# forward is a constant there. That is right only where the gradient does not depend on it: for the
# shift by the max, yes (the softmax does not change when the shift moves); for the result before
# its last `squeeze`, no.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Work out the tutorial's forward by hand on a row of `-inf`: which operation gives nan? What would
# `torch.logsumexp` want there instead?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# The shift by the row's max m keeps exp from overflowing. A row whose max is infinite must be
# shifted by 0 instead: exp(-inf) is 0, and log(0) is -inf. The gradient of log-sum-exp is the
# softmax of x over `dim`, times grad_output.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# Forward:
#
# 1. `ctx.dim = dim`; `m = x.max(dim=dim, keepdim=True).values`, then
#    `m = m.masked_fill(m.abs() == math.inf, 0)`.
# 2. Save `x` and `m`; return `m + log(sum(exp(x - m)))` over `dim` (`keepdim=True`, then
#    `squeeze(dim)`).
#
# Backward:
#
# 1. From the saved `x` and `m`: the softmax of x over `ctx.dim`, `exp(x - m)` divided by its sum
#    over `ctx.dim` (`keepdim=True`).
# 2. Return `grad_output`, unsqueezed at `ctx.dim`, times that softmax; and `None` for `dim`.
#
# </details>
# %% answer StableLogSumExp
class StableLogSumExp(Function):
    """``log(sum(exp(x)))`` over ``dim``, as ``torch.logsumexp(x, dim)``.

    Computed shifted by each row's max m: ``m + log(sum(exp(x - m)))``, so exp never sees a positive
    number and cannot overflow (a row of 1000s gives 1000 + log n, not inf). A row whose max is
    infinite is shifted by 0 instead, since ``-inf - -inf`` is nan: a row of -inf (fully masked)
    gives -inf, a row holding inf gives inf, as torch.logsumexp does.

    Its gradient is the softmax of x over ``dim``, times grad_output (which has no ``dim``: put it
    back to broadcast), computed with the same shift; ``dim`` is not a tensor: its gradient is None.
    """

    @staticmethod
    def forward(ctx, x, dim):
        ### BEGIN SOLUTION
        ctx.dim = dim
        shift = x.max(dim=dim, keepdim=True).values
        shift = shift.masked_fill(shift.abs() == math.inf, 0)
        ctx.save_for_backward(x, shift)
        return (x - shift).exp().sum(dim=dim, keepdim=True).log().squeeze(dim) + shift.squeeze(dim)
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad_output):
        ### BEGIN SOLUTION
        x, shift = ctx.saved_tensors
        shifted = (x - shift).exp()
        softmax = shifted / shifted.sum(dim=ctx.dim, keepdim=True)
        return grad_output.unsqueeze(ctx.dim) * softmax, None
        ### END SOLUTION
# %% locked plug-lse
StableLogSumExp = graded(StableLogSumExp)
# %% code
# Try it: x = minigrad.tensor([[1000.0, 1000.0], [float("-inf"), float("-inf")]], requires_grad=True)
# StableLogSumExp.apply(x, 1)
# %% tests test-lse 2+2 StableLogSumExp
def logsumexp(lib, x, dim):
    """Yours with minigrad; torch.logsumexp with torch."""
    return StableLogSumExp.apply(x, dim) if lib is minigrad else torch.logsumexp(x, dim)


def counting_grad(lib, like):
    """1, 2, 3, ... shaped like ``like``: a grad_output that differs from element to element."""
    return lib.tensor([float(k + 1) for k in range(like.numel())], dtype=like.dtype).reshape(tuple(like.shape))


def lse_of(lib, rows, dim):
    x = lib.tensor(rows, dtype=lib.float64, requires_grad=True)
    y = logsumexp(lib, x, dim)
    y.backward(counting_grad(lib, y))
    return {"y": y, "x.grad": x.grad}


def lse_float32(lib, rows):
    """Values only: torch's gradient, exp(x - result), carries the rounding of a float32 result near
    1000 (1e-5), which the softmax does not."""
    return logsumexp(lib, lib.tensor(rows), 1)


def tutorials_example(lib):
    """The tutorial's use: randn(3, 10) over dim 1, lse.sum().backward(); each row's gradient sums to 1."""
    lib.manual_seed(0)
    x = lib.randn(3, 10, requires_grad=True)
    lse = logsumexp(lib, x, 1)
    lse.sum().backward()
    return {"lse": lse, "x.grad": x.grad, "row sums": x.grad.sum(dim=1)}


check("the tutorial's randn(3, 10) over dim 1", tutorials_example)
check("large values: [[1000, 1000], [-1000, 0]] (exp(1000) is inf even in float64)", lse_of,
      [[1000.0, 1000.0], [-1000.0, 0.0]], 1)
check("a fully masked row (all -inf)", lse_of, [[-math.inf, -math.inf, -math.inf], [-math.inf, 0.0, 1.0]], 1)
check("a row holding inf", lse_of, [[math.inf, 0.0, 1.0], [1.0, 2.0, 3.0]], 1)
### BEGIN HIDDEN TESTS
check("over dim 0", lse_of, [[0.5, -1.0, 2.0], [1.5, 0.0, -2.0]], 0)
check("a column holding inf and -inf, over dim 0", lse_of, [[math.inf, 0.0], [-math.inf, 1.0]], 0)
check("float32: [[88, 88, 88], [89, 0, 0], [1000, 1000, 0]]", lse_float32,
      [[88.0, 88.0, 88.0], [89.0, 0.0, 0.0], [1000.0, 1000.0, 0.0]])


def three_dims(lib, dim):
    lib.manual_seed(1)
    x = lib.randn(2, 3, 4, dtype=lib.float64, requires_grad=True)
    y = logsumexp(lib, x, dim)
    y.backward(counting_grad(lib, y))
    return {"y": y, "x.grad": x.grad}


check("a (2, 3, 4) tensor over dim 1", three_dims, 1)
check("a (2, 3, 4) tensor over dim -1", three_dims, -1)
check("a (2, 3, 4) tensor over dim -3", three_dims, -3)


def lse_on_device(lib):
    """Marked for the GPU: on DEVICE (CUDA when the grader has it)."""
    x = lib.tensor([[1000.0, 999.0, 0.0], [-math.inf, -math.inf, -math.inf]], dtype=lib.float64, device=DEVICE,
                   requires_grad=True)
    y = logsumexp(lib, x, 1)
    y[0].backward()
    return y, str(y.device), x.grad[0]


check("on DEVICE", lse_on_device)
### END HIDDEN TESTS

# %% tests test-lse-gradcheck 1+1 _numerical_jacobians _jacobians_from_backward _check_jacobians StableLogSumExp
def lse_checked(lib, shape, dim, check_twice=False):
    """torch.autograd.gradcheck of torch.logsumexp, and your gradcheck of your StableLogSumExp."""
    lib.manual_seed(0)
    x = lib.randn(shape, dtype=lib.float64, requires_grad=True)
    verify = lib.autograd.gradgradcheck if check_twice else lib.autograd.gradcheck
    return verify(lambda x: logsumexp(lib, x, dim), (x,), eps=1e-6, atol=1e-4)


check("gradcheck, as the tutorial runs it: randn(4, 8) over dim 1", lse_checked, (4, 8), 1)
### BEGIN HIDDEN TESTS
check("gradcheck over dim 0", lse_checked, (3, 4), 0)
check("gradgradcheck: the backward's own backward", lse_checked, (2, 3), 1, True)
### END HIDDEN TESTS

# %% markdown
# ## Part 3 — `StraightThroughEstimator`
#
# `StraightThroughEstimator.apply(x, num_bits=8)` must give the values and gradients of torch's
# straight-through idiom `x + (q - x).detach()`, where `q` is x rounded to steps of
# `1 / (2 ** num_bits - 1)`; and gradcheck (yours, as torch's) must reject it.
#
# Its backward is not the derivative of its forward: gradcheck must reject it. The test does not
# ask whether your Function passes gradcheck, but whether your gradcheck says what torch's says of
# the same estimator.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Rounding is flat between its jumps. What is its derivative, wherever it has one, and what would that
# do to every gradient behind it?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# The straight-through estimator's backward pretends forward was the identity and returns
# `grad_output` unchanged.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. Forward: with the scale `2 ** num_bits - 1`, multiply x by it, round, divide by it
#    (`mul`, `round`, `div`).
# 2. Backward: return `grad_output` as it is, and `None` for `num_bits`.
#
# </details>
# %% answer StraightThroughEstimator
class StraightThroughEstimator(Function):
    """Rounds x to a grid of ``2 ** num_bits - 1`` steps per unit (``round(x * scale) / scale``), and
    passes the gradient back unchanged, as if forward were the identity: rounding's own derivative
    is 0 wherever it exists, which would stop every gradient. ``num_bits`` is not a tensor: its
    gradient is None."""

    @staticmethod
    def forward(ctx, x, num_bits=8):
        ### BEGIN SOLUTION
        scale = 2 ** num_bits - 1
        return x.mul(scale).round().div(scale)
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad_output):
        ### BEGIN SOLUTION
        return grad_output, None
        ### END SOLUTION
# %% locked plug-ste
StraightThroughEstimator = graded(StraightThroughEstimator)
# %% tests test-ste 2+1 _numerical_jacobians _jacobians_from_backward _check_jacobians StraightThroughEstimator
def quantized(lib, x, num_bits):
    """Yours with minigrad; with torch, the same estimator without a Function: forward q, gradient
    of x (``x + (q - x).detach()``). ``num_bits=None`` leaves it at its default."""
    if lib is minigrad:
        return StraightThroughEstimator.apply(x) if num_bits is None else StraightThroughEstimator.apply(x, num_bits)
    steps = 2 ** (8 if num_bits is None else num_bits) - 1
    return x + (torch.round(x * steps) / steps - x).detach()


def weights_quantized(lib, num_bits):
    """The tutorial's weights, and a grad_output that differs from element to element."""
    lib.manual_seed(0)
    weights = lib.randn(4, 4, requires_grad=True)
    q = quantized(lib, weights, num_bits)
    q.backward(lib.randn(4, 4))
    return {"quantized": q, "weights.grad": weights.grad}


def ste_checked(lib):
    """gradcheck of the straight-through estimator: numerically (almost) zero, analytically the identity."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(lambda x: quantized(lib, x, 8), (x,))


check("8 bits on the tutorial's weights", weights_quantized, 8)
check("2 bits", weights_quantized, 2)
check("gradcheck rejects it", ste_checked)
### BEGIN HIDDEN TESTS


def levels(lib):
    """x in [0, 1] gets 2 ** num_bits levels; the gradient of a loss after it."""
    x = lib.tensor([k / 20 for k in range(21)], dtype=lib.float64, requires_grad=True)
    q = quantized(lib, x, 3)
    (q * q).sum().backward()
    return {"q": q, "levels": q.detach().unique(), "x.grad": x.grad}


check("num_bits left at its default", weights_quantized, None)
check("3 bits on [0, 1]", levels)
### END HIDDEN TESTS
