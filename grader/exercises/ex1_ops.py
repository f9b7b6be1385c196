# %% markdown
# # Exercise 1 — ops: forward, backward, and what each one saves
#
# *Lesson: `course/01_the_graph.ipynb`.*
#
# Every op in minigrad is a `Function` (like `torch.autograd.Function`): `forward(ctx, ...)` computes
# the result on storage (plain torch tensors, `a._data`) and saves what the backward will need with
# `ctx.save_for_backward(...)`; `backward(ctx, grad)` turns the gradient of the output into one
# gradient per input, written with minigrad ops. The `ctx` *is* the node you see as `y.grad_fn`.
#
# **The contract.** You write six parts, in this order: `SumDim`, `sum_to`, `save_factors`, `Mul`,
# `Exp` and `Mm`. Four are ops (classes with a `forward` and a `backward`); `sum_to(grad, shape)` and
# `save_factors(ctx, a, b)` are functions.
# Each stub keeps its signature and docstring. For every op, torch's node is the reference: the
# same values, the same gradients, and the same saved tensors. torch saves only what the backward
# needs: match it exactly. The graded checks build small graphs with PyTorch and with your
# minigrad, **call the nodes by hand** (`y.grad_fn(grad)`) and compare:
#
# - `a.sum(dim, keepdim)` over one dim, a negative dim, a tuple of dims, with and without
#   `keepdim`: the sum and the gradient (and `a.mean(dim)`, given, which runs your `SumDim`);
# - `sum_to(grad, shape)` against torch's `grad.sum_to_size(shape)`: shapes that broadcasting
#   extended with leading dims, stretched from size 1, both, or left as they were (down to `()`);
# - `save_factors`, through the products given to you that run it, `a.dot(b)`, `m.mv(v)` and
#   `a.bmm(b)`, with one or both factors requiring grad: what each node saved;
# - `a * b` with `a`, `b` or both requiring grad, with broadcast shapes, with a Python number
#   (`a * 2`) and on the GPU when the grader has one: values, gradients, and what the node saved
#   (`_saved_self`, `_saved_other`); called with a gradient that itself requires grad, the
#   gradients it returns must have a graph of their own (minigrad ops, not storage);
# - `a.exp()`: the gradient and `_saved_result`, which must share `y`'s memory;
# - `a @ b` with `a`, `b` or both requiring grad: values, gradients and their strides,
#   `_saved_self` and `_saved_mat2`; `x @ weight.t()` as `nn.Linear` computes it, whose weight
#   gradient must come out laid out like `weight.t()`, and `x.t() @ b`, whose gradient for `x.t()`
#   must come out laid out like `x.t()`.
#
# **Open:** `SumDim` and `sum_to`. What `SumDim` keeps on `ctx` (plain attributes, named as you
# like) and which minigrad ops rebuild its gradient, and how `sum_to` finds the dimensions to sum,
# are yours: the checks compare only values and shapes. For the products (`save_factors`) and `Exp`
# the decision is which tensors the node keeps; torch's choice is the one graded, and working it out
# is the point.
#
# Useful: `ctx.needs_input_grad` (one bool per forward argument), `a._data` (the storage of a
# minigrad tensor), `ctx.saved_tensors`. Each part has three hints, folded: open them one at a
# time, only when you need them. Check your work with **Validate**.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import torch

import minigrad
from minigrad.function import Function
from minigrad.ops import _keep_dims, _normalize_dims, mat1_grad, mat2_grad
from coursekit.testing import check, graded

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # tests marked for the GPU run there when there is one

# %% markdown
# ## Part 1 — `SumDim`
# `y = a.sum(dim, keepdim)`, torch's `SumBackward1`. Every element that went into a sum gets that
# sum's gradient. The node saves no tensor: it needs only shapes, so a second backward through it
# works. `backward` returns one gradient per forward argument: `None` for `dim` and `keepdim`.
# `a.mean(dim, keepdim)`, given (torch's `MeanBackward1`), runs your `SumDim` too: its gradient is
# yours divided by how many elements each mean took.
#
# **Open:** what you keep on `ctx`, and with which minigrad ops you turn `grad` (shaped like `y`)
# into a gradient shaped like `a`.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# `grad` has the shape of `y`; what you return must have the shape of `a`. Take `a` of shape
# `(2, 3)` and `y = a.sum(1)`: `grad` has shape `(2,)`. Which element of `grad` belongs to
# `a[i, j]`?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Put the summed dimensions back, as size 1, then broadcast to `a`'s shape with `expand`. Only
# shapes are needed: keep `a.shape`, the summed dims and `keepdim` as plain attributes of `ctx`.
# The setup gives two helpers: `_normalize_dims(dim, a.dim())` turns `dim` (an int, a negative int
# or a tuple) into a tuple of non-negative ints, and `_keep_dims(grad, dims, keepdim)` puts the
# summed dims back as size 1 (it does nothing when `keepdim` was true: they are there already).
# (Or keep `a`'s shape with 1 in the summed dims, and `reshape` `grad` to it before the `expand`.)
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - `forward`: sum the storage `a._data` over `dim`, with `keepdim`. On `ctx`, keep three things:
#   `a.shape`, the summed dims as `_normalize_dims` gives them (for `a.dim()` dimensions), and
#   `keepdim`. Return the sum.
# - `backward`: hand `grad`, the kept dims and `keepdim` to `_keep_dims`; `expand` what it gives to
#   the kept shape of `a`. Return that, then `None` and `None`.
#
# </details>
# %% part SumDim
# %% locked plug-SumDim
SumDim = graded(SumDim)
minigrad.ops.SumDim = SumDim
# MeanDim (given) runs SumDim's forward and backward, looked up in its module, minigrad/ops/reductions.py,
# each time it runs: assigning yours there makes a.mean(dim) run it.
minigrad.ops.reductions.SumDim = SumDim
# %% tests test-SumDim 1+1 SumDim
def sum_graph(lib, shape, dim, keepdim):
    lib.manual_seed(2)
    a = lib.randn(shape, dtype=lib.float64, requires_grad=True)
    y = a.sum(dim, keepdim=keepdim)
    grad = lib.arange(float(y.numel()), dtype=lib.float64).reshape(tuple(y.shape))
    return {"y": y, "node": y.grad_fn, "grad": y.grad_fn(grad)}


check("a.sum(0)", sum_graph, (2, 3), 0, False)
check("a.sum(1, keepdim=True)", sum_graph, (2, 3), 1, True)
check("a.sum((0, 2))", sum_graph, (2, 3, 4), (0, 2), False)
check("a.sum((-2, -1)): negative dims, counted from the end", sum_graph, (2, 3, 4), (-2, -1), False)
### BEGIN HIDDEN TESTS
check("a.sum(-1)", sum_graph, (2, 3, 4), -1, False)
check("a.sum((0, 2), keepdim=True)", sum_graph, (2, 3, 4), (0, 2), True)
check("a.sum((-3, 1), keepdim=True)", sum_graph, (2, 3, 4), (-3, 1), True)


def mean_graph(lib, shape, dim, keepdim):
    lib.manual_seed(2)
    a = lib.randn(shape, dtype=lib.float64, requires_grad=True)
    y = a.mean(dim, keepdim=keepdim)
    grad = lib.arange(float(y.numel()), dtype=lib.float64).reshape(tuple(y.shape))
    return {"y": y, "node": y.grad_fn, "grad": y.grad_fn(grad)}


check("a.mean((0, 2)) (given: it runs your SumDim)", mean_graph, (2, 3, 4), (0, 2), False)
check("a.mean(-1, keepdim=True) (given: it runs your SumDim)", mean_graph, (2, 3, 4), -1, True)
### END HIDDEN TESTS

# %% markdown
# ## Part 2 — `sum_to`
# Broadcasting makes a `(3,)` tensor act as `(2, 3)`. Its gradient must come back as `(3,)`.
# `sum_to(grad, shape)` does that reduction, as torch's `grad.sum_to_size(shape)`: the engine calls
# it on each gradient a node returns shaped like a broadcast of its input. Keep the result
# differentiable: compute it with minigrad ops on `grad`, not on its storage (a gradient may itself
# require grad).
#
# **Open:** how you find the dimensions to sum, and in how many sums you do it.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Line the two shapes up from the right, as broadcasting does. Which dims of `grad` have no
# partner in `shape`? Which have a partner of size 1?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Two kinds of dims were made by broadcasting: leading dims it added (`grad` has more dims than
# `shape`), and dims where `shape` has 1 and `grad` does not. Sum both kinds at once, with
# `keepdim=True` (every dim stays, the summed ones as size 1), then `view` the result as `shape`,
# which drops the added ones. When the shapes are already equal, return `grad` as it is.
# `grad.sum(dims, keepdim=...)` is a minigrad op (your `SumDim`). This is torch's own `at::sum_to`;
# two sums (the added dims first, without `keepdim`) pass as well.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - If the two shapes are equal, return `grad` unchanged; if `shape` has no dims, return `grad.sum()`.
# - `lead`: how many more dims `grad` has than `shape`. The dims to sum: `0` to `lead - 1`, then each
#   `lead + i` where `shape[i]` is 1 and `grad.shape[lead + i]` is not.
# - Sum `grad` over all of them at once, with `keepdim=True`.
# - If `lead` is not 0, return that viewed as `shape` (`.view(shape)`); else return it.
#
# </details>
# %% part sum_to
# %% locked plug-sum_to
sum_to = graded(sum_to)
minigrad.broadcast.sum_to = sum_to
# %% tests test-sum_to 1+1 SumDim sum_to
def reduce_to(lib, grad_shape, shape):
    grad = lib.arange(float(torch.Size(grad_shape).numel()), dtype=lib.float64).reshape(grad_shape)
    return sum_to(grad, torch.Size(shape)) if lib is minigrad else grad.sum_to_size(shape)


for grad_shape, shape in [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 3)), ((2, 4, 3), (3,))]:
    check(f"sum_to {grad_shape} -> {shape}", reduce_to, grad_shape, shape)
### BEGIN HIDDEN TESTS
check("sum_to (4, 2, 3) -> (2, 1)", reduce_to, (4, 2, 3), (2, 1))
check("sum_to (2, 3, 4) -> (3, 1)", reduce_to, (2, 3, 4), (3, 1))
check("sum_to (5,) -> ()", reduce_to, (5,), ())
check("sum_to (2, 1, 3) -> (1, 1, 1)", reduce_to, (2, 1, 3), (1, 1, 1))
### END HIDDEN TESTS

# %% markdown
# ## Part 3 — `save_factors`
# `save_factors(ctx, a, b)` decides what the node of a product keeps of its two factors `a` and `b`.
# Five ops run it: `Mul` and `Mm`, which you write next, and, given to you, `a.dot(b)`, `m.mv(v)` and
# `a.bmm(b)` (`DotBackward0`, `MvBackward0`, `BmmBackward0`). It calls `ctx.save_for_backward` once,
# with two places, `a`'s then `b`'s, each holding its factor or `None` as torch's node does: they are
# the node's `_saved_self` and its second saved tensor (`_saved_other`, `_saved_mat2`,
# `_saved_tensor` or `_saved_vec`), compared with torch's. It returns nothing. Which factors must the
# node keep? That is the puzzle of the forum thread "Which is freed, which is not?".
#
# <details><summary>Hint 1 — a nudge</summary>
#
# The gradient of `a * b` for `a` is `grad * b`, and for `b` it is `grad * a` (for `a @ b`:
# `grad @ b.T` and `a.T @ grad`). Suppose only `a` requires grad. Which gradient will backward
# compute, and which factor does it read? Does the node need the other one at all?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Each gradient needs the *other* factor. Keep `b` only if `a` needs a gradient, and `a` only if `b`
# does: `ctx.needs_input_grad` holds one bool per input of the product. Put `None` in the place of a
# factor you don't keep, so that the places stay (`a`'s, `b`'s).
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Read the two flags of `ctx.needs_input_grad`.
# - Call `ctx.save_for_backward` with two places: `a` if `b` needs a gradient, else `None`; `b` if
#   `a` needs one, else `None`.
#
# </details>
# %% part save_factors
# %% locked plug-save_factors
save_factors = graded(save_factors)
# Mv, Dot and Bmm (given) look save_factors up in their module, minigrad/ops/linalg.py, each time they
# run: assigning yours there makes them save with it.
minigrad.ops.linalg.save_factors = save_factors
# %% tests test-save_factors 1+1 save_factors
def product_saved(lib, op, other, a_shape, b_shape, a_grad, b_grad):
    """The node of ``a.op(b)``, a product given to you that runs your save_factors, and what it saved:
    ``_saved_self`` and the other factor's place, named as torch names it (``_saved_<other>``)."""
    lib.manual_seed(5)
    a = lib.randn(a_shape, dtype=lib.float64, requires_grad=a_grad)
    b = lib.randn(b_shape, dtype=lib.float64, requires_grad=b_grad)
    node = getattr(a, op)(b).grad_fn
    return {"node": node, "saved self": node._saved_self, f"saved {other}": getattr(node, f"_saved_{other}")}


check("a.dot(b), only a requires grad", product_saved, "dot", "tensor", (3,), (3,), True, False)
check("m.mv(v), only v requires grad", product_saved, "mv", "vec", (2, 3), (3,), False, True)
### BEGIN HIDDEN TESTS
check("a.dot(b), both require grad", product_saved, "dot", "tensor", (3,), (3,), True, True)
check("a.bmm(b), only a requires grad", product_saved, "bmm", "mat2", (2, 2, 3), (2, 3, 2), True, False)
check("a.bmm(b), both require grad", product_saved, "bmm", "mat2", (2, 2, 3), (2, 3, 2), True, True)
### END HIDDEN TESTS

# %% markdown
# ## Part 4 — `Mul`
# `y = a * b`, torch's `MulBackward0`. The gradient for `a` is `grad * b` and the gradient for `b`
# is `grad * a`. The node keeps of `a` and `b` what every product keeps (Part 3): its `_saved_self`
# and `_saved_other` are compared with torch's. With broadcasting, leave each gradient shaped like
# the product: the engine sums it down to its input's shape with your `sum_to` (as torch's engine
# does), so `backward` needs no shapes.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# `backward` gets `grad`, shaped like `y`, and returns one gradient per input. Which tensor does
# each gradient read, and where does `backward` find it? What is there to return for an input whose
# gradient is not needed?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Save with your `save_factors(ctx, a, b)`; a Python number (`a * 2`) reaches `forward` already
# wrapped as a tensor. In `backward`, read the two places back with `ctx.saved_tensors`: minigrad
# tensors, so the gradients you compute from them with minigrad ops get a graph when `grad`
# requires grad. A place that holds `None` means its partner needs no gradient: return `None` for
# that input.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - `forward`: `save_factors(ctx, a, b)`; return the product of the two storages.
# - `backward`: unpack the two places from `ctx.saved_tensors`. The gradient for `a` is `grad * b`
#   if `b` was saved, else `None`; the gradient for `b` is `grad * a` if `a` was saved, else
#   `None`. Return both.
#
# </details>
# %% part Mul
# %% locked plug-Mul
Mul = graded(Mul)
minigrad.ops.Mul = Mul
# %% code
# Try it: compare with torch by hand, e.g.
# a = minigrad.ones(2, requires_grad=True); y = a * 3; y.grad_fn._saved_other
# %% tests test-Mul-saved 2+1 save_factors Mul
def mul_graph(lib, a_shape, b_shape, a_grad, b_grad):
    """The product's values, its node, what the node saved, and the node called by hand."""
    lib.manual_seed(0)
    a = lib.randn(a_shape, dtype=lib.float64, requires_grad=a_grad)
    b = lib.randn(b_shape, dtype=lib.float64, requires_grad=b_grad)
    y = a * b
    grad = lib.full(tuple(y.shape), 0.5, dtype=lib.float64)
    return {"y": y, "node": y.grad_fn, "saved self": y.grad_fn._saved_self,
            "saved other": y.grad_fn._saved_other, "grads": y.grad_fn(grad)}


def mul_gradients_are_differentiable(lib):
    """Called with a gradient that requires grad, the node's gradients have a graph of their own
    (double backward): backward must compute them with minigrad ops on tensors, not on storage."""
    a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([3.0, -1.0], dtype=lib.float64, requires_grad=True)
    grads = (a * b).grad_fn(lib.ones(2, dtype=lib.float64, requires_grad=True))
    return grads, [grad.grad_fn for grad in grads]


check("a * b, only a requires grad", mul_graph, (3,), (3,), True, False)
check("a * b, only b requires grad", mul_graph, (3,), (3,), False, True)
check("a * b, both require grad", mul_graph, (2, 3), (2, 3), True, True)
check("a * b called with a gradient that requires grad: are its gradients minigrad ops?",
      mul_gradients_are_differentiable)
### BEGIN HIDDEN TESTS
check("a * b, only b requires grad, 2-D", mul_graph, (2, 2), (2, 2), False, True)


def times_two(lib):
    """``a * 2``: torch wraps the 2 in a tensor and saves it; ``self`` is not needed."""
    y = lib.ones(2, requires_grad=True) * 2
    return y.grad_fn._saved_other, y.grad_fn._saved_self


check("a * 2 (a Python number is saved as a tensor)", times_two)
### END HIDDEN TESTS

# %% tests test-Mul-broadcast 2+1 save_factors Mul
check("a * b broadcast (2, 3) * (3,)", mul_graph, (2, 3), (3,), True, True)
check("a * b broadcast (2, 1) * (1, 3)", mul_graph, (2, 1), (1, 3), True, True)
### BEGIN HIDDEN TESTS
check("a * b broadcast (4, 1, 3) * (2, 1)", mul_graph, (4, 1, 3), (2, 1), True, True)
check("a * b broadcast () * (2, 3)", mul_graph, (), (2, 3), True, True)
check("a * b broadcast (3,) * (2, 3), only a", mul_graph, (3,), (2, 3), True, False)


def mul_on_device(lib):
    """Marked for the GPU: on DEVICE (CUDA when the grader has it)."""
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, device=DEVICE, requires_grad=True)
    b = lib.tensor([0.5, -1.0], dtype=lib.float64, device=DEVICE)
    y = a * b
    return y, str(y.device), y.grad_fn(lib.ones(2, 2, dtype=lib.float64, device=DEVICE))


check("a * b on DEVICE", mul_on_device)
### END HIDDEN TESTS

# %% markdown
# ## Part 5 — `Exp`
# `y = a.exp()`, torch's `ExpBackward0`. The node saves one tensor, read as `_saved_result`, and it
# must share `y`'s memory: it is the output itself, not a copy.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# What is the derivative of `exp`? Which tensor already holds it once `forward` has run?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# The derivative of `exp(a)` is `exp(a)` itself, so torch saves the **result** rather than the
# input. Save the very storage you return (not a second `exp`, not a copy): minigrad recognises it
# as the node's own output and gives it back in `backward` as a tensor whose `grad_fn` is this very
# node.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - `forward`: compute `exp` of the storage once; pass that very result to
#   `ctx.save_for_backward`; return it.
# - `backward`: unpack the one saved tensor (the result, as a minigrad tensor) and return `grad`
#   times it.
#
# </details>
# %% part Exp
# %% locked plug-Exp
Exp = graded(Exp)
minigrad.ops.Exp = Exp
# %% tests test-Exp 1+1 save_factors Mul Exp
def exp_graph(lib, shape):
    lib.manual_seed(1)
    a = lib.randn(shape, dtype=lib.float64, requires_grad=True)
    y = a.exp()
    grad = lib.full(tuple(y.shape), 2.0, dtype=lib.float64)
    return {"y": y, "node": y.grad_fn, "saved result": y.grad_fn._saved_result, "grad": y.grad_fn(grad)}


check("a.exp()", exp_graph, (3,))
### BEGIN HIDDEN TESTS
check("a.exp(), 2-D", exp_graph, (2, 2))


def exp_result_shared(lib):
    """The saved result is the output itself, not a copy: it shares y's memory, so an edit of y
    made after reading it shows through it (reading it after the edit is exercise 4's error)."""
    a = lib.ones(3, dtype=lib.float64, requires_grad=True)
    y = a.exp()
    saved = y.grad_fn._saved_result
    with lib.no_grad():
        y.add_(1)
    return saved, saved.grad_fn


check("a.exp()'s saved result shares y's memory", exp_result_shared)
### END HIDDEN TESTS

# %% markdown
# ## Part 6 — `Mm`
# `y = a @ b` for two matrices, torch's `MmBackward0`. The node keeps of `a` and `b` what every
# product keeps (Part 3): its `_saved_self` and `_saved_mat2` are compared with torch's.
# Each gradient must come out laid out like its input (their strides are compared): for
# `x @ weight.t()`, as `nn.Linear` computes it, `weight.grad` then comes out contiguous, as in torch,
# and so does `x.grad` for `x.t() @ b`.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Write both gradients as matrix products. Which input does each one read? Then compare with
# Part 3.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `grad_a = grad @ b.T` needs `b`; `grad_b = a.T @ grad` needs `a`: save with `save_factors`, as
# `Mul` does. Keep both inputs' strides from `forward` (`a._data.stride()`, `b._data.stride()`) as
# `ctx` attributes, and compute the gradients with the two helpers given in the setup, torch's
# `mm_mat1_backward` and `mm_mat2_backward`: `mat1_grad(grad, b, a_strides)` is `grad @ b.T` laid
# out like `a`, `mat2_grad(grad, a, b_strides)` is `a.T @ grad` laid out like `b` (for a transposed
# `b`, as `(grad.T @ a).T`). For `nn.Linear`, `b` is `weight.t()`, and this keeps `weight.grad`
# contiguous, as torch does.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - `forward`: `save_factors(ctx, a, b)`, as in `Mul`. Keep `a._data.stride()` and
#   `b._data.stride()` on `ctx`, under names of your choice. Return the matrix product of the
#   storages (`mm`).
# - `backward`: unpack the two places. The gradient for `a` is `mat1_grad(grad, b, a_strides)` if `b`
#   was saved, else `None`. The gradient for `b` is `mat2_grad(grad, a, b_strides)` if `a` was
#   saved, else `None`, with the strides you kept. Return both.
#
# </details>
# %% part Mm
# %% locked plug-Mm
Mm = graded(Mm)
minigrad.ops.Mm = Mm
# %% tests test-Mm 2+1 save_factors Mm
def mm_graph(lib, a_shape, b_shape, a_grad, b_grad):
    lib.manual_seed(3)
    a = lib.randn(a_shape, dtype=lib.float64, requires_grad=a_grad)
    b = lib.randn(b_shape, dtype=lib.float64, requires_grad=b_grad)
    y = a @ b
    grad = lib.full(tuple(y.shape), 1.5, dtype=lib.float64)
    grads = y.grad_fn(grad)
    return {"y": y, "node": y.grad_fn, "saved self": y.grad_fn._saved_self, "saved mat2": y.grad_fn._saved_mat2,
            "grads": grads, "grad strides": [None if g is None else g.stride() for g in grads]}


def linear_weight_grad(lib):
    """x @ weight.t(), as nn.Linear computes: the weight's gradient must come out laid out like
    weight.t() (strides compared, not only values), so that weight.grad is contiguous."""
    lib.manual_seed(4)
    weight = lib.randn(3, 2, dtype=lib.float64, requires_grad=True)
    x = lib.randn(5, 2, dtype=lib.float64)
    y = x @ weight.t()
    (grad_weight_t,) = [g for g in y.grad_fn(lib.ones(5, 3, dtype=lib.float64)) if g is not None]
    return grad_weight_t, grad_weight_t.stride(), grad_weight_t.t().is_contiguous()


def transposed_input_grad(lib):
    """x.t() @ b: the gradient for x.t() must come out laid out like x.t(), so that x's is contiguous."""
    lib.manual_seed(5)
    x = lib.randn(3, 2, dtype=lib.float64, requires_grad=True)
    b = lib.randn(3, 4, dtype=lib.float64)
    y = x.t() @ b
    (grad_x_t,) = [g for g in y.grad_fn(lib.ones(2, 4, dtype=lib.float64)) if g is not None]
    return grad_x_t, grad_x_t.stride(), grad_x_t.t().is_contiguous()


check("a @ b, both require grad", mm_graph, (2, 3), (3, 4), True, True)
check("a @ b, only b requires grad", mm_graph, (2, 3), (3, 2), False, True)
check("x @ weight.t()", linear_weight_grad)
check("x.t() @ b", transposed_input_grad)
### BEGIN HIDDEN TESTS
check("a @ b, only a requires grad", mm_graph, (4, 2), (2, 3), True, False)
### END HIDDEN TESTS
