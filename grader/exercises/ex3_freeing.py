# %% markdown
# # Exercise 3 — freeing saved tensors, and `retain_graph`
#
# *Lessons: `course/03a_what_backward_frees.ipynb`, then `course/03b_retain_graph_and_lifetimes.ipynb`.*
#
# Until now minigrad kept every saved tensor forever: the engine ran each node and moved on. You
# write the three pieces that give minigrad torch's behaviour.
#
# **The contract.** In torch, a backward without `retain_graph=True` lets each node drop what it
# saved right after the node ran. The graph stays (`y.grad_fn` and its `next_functions`), but a
# second backward through a node that saved something, or reading `grad_fn._saved_self` and the
# like, raises `RuntimeError` with torch's message, "Trying to backward through the graph a second
# time ..." (`ERR_BACKWARD_TWICE`). With `retain_graph=True` (and with `create_graph=True`, which
# implies it) the saved tensors stay, for the next backward; that one frees them, unless it
# retains too. A place where nothing was saved reads as `None`, before and after. Nodes that save
# nothing (add, sum) can run any number of times. You write, keeping each stub's signature and
# docstring:
#
# 1. `BackwardFunction._release_saved(self)` (the class of every op's node): free what the node
#    saved. `self._saved` is a tuple with one entry per tensor given to `save_for_backward`: `None`
#    (nothing was saved there) or a `SavedTensor`.
# 2. `run_node(node, grads, retain_graph)`, in the engine: run the node (`node.apply(grads)`), and
#    return its gradients, one per edge, checked as torch's engine checks them (a gradient shaped
#    like a broadcast of its input comes back summed to the input's shape: `validate_outputs(node,
#    gradients)`, given, does that and returns them); unless `retain_graph`, the node's saved
#    tensors are freed once it has run.
# 3. `BackwardFunction._unpack(self, saved)`: turn one entry of `_saved` back into a tensor, for
#    `ctx.saved_tensors` and `grad_fn._saved_*`: `None` for `None`, torch's error for a freed entry,
#    and for a `SavedTensor` what `saved.unpack(self)` gives (exercise 4 puts the version check
#    there, so `_unpack` must go through it).
#
# The graded checks re-run the forum threads' scenarios with PyTorch and with your minigrad: a
# second backward, and `retain_graph=True` making it work (gradients add up), then a third one
# (seed 004); seed 001's `t @ a` reused in a loop with and without `retain_graph`, recomputed in
# the loop, `del b` (the node still holds `b`'s memory) and what `print(c.backward(...))` prints;
# seed 002's `nn.Linear` forward outside and inside the loop, and with a batch (the bias gradient
# summed over it); seed 003's graph after backward (the chain stays, its saved tensors are gone); a
# graph without saved tensors run twice; a backward that fails part-way (the leaves reached before
# the failure keep their gradient); what each node still holds after a backward with and without
# `retain_graph`; and `autograd.grad`, which frees as `backward` does unless `retain_graph` or
# `create_graph`. An error must be of torch's type everywhere; its wording is graded once, in
# `test-error-message`.
#
# **Open:** how a freed entry looks (anything your `_unpack` tells apart from `None` and from a
# `SavedTensor`), and the order of the checks in `_unpack`. What is fixed: `_release_saved` lets go
# of every `SavedTensor` (that is the memory freed), keeps `None` entries `None`, and keeps one entry
# per place (`_saved_self` reads its entry by position). Of a node's private attributes, the grader
# lets your code set `_saved` only. Each part has three hints, folded: open them one at a time, only
# when you need them.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import torch

import minigrad
from minigrad.engine import validate_outputs
from minigrad.function import ERR_BACKWARD_TWICE, _FREED
from coursekit.testing import check, graded, outcome

# %% markdown
# ## Part 1 — `_release_saved`
# Free what the node saved: after it, no entry of `self._saved` holds a `SavedTensor`, an entry
# that was `None` is still `None`, and the tuple keeps its length.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Freeing here means letting go of references: once nothing holds a `SavedTensor`, its memory can
# go. But `_unpack` must still be able to tell "freed" from "never saved".
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Build a new tuple, entry by entry: `None` stays `None`; a `SavedTensor` becomes a marker. The
# setup gives `_FREED`, an object made for that; one of your own works as well (a class of your
# own, say, defined in the same cell), as long as `_unpack` knows it. Assign the tuple to
# `self._saved`. A node that saved nothing has an empty tuple: nothing to do.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - If `self._saved` is empty, there is nothing to do.
# - Otherwise build a tuple with one entry per entry of `self._saved`: `None` where it was `None`,
#   the marker (`_FREED`, or your own) where it was a `SavedTensor`. Assign it to `self._saved`.
#
# </details>
# %% part BackwardFunction._release_saved
# %% locked plug-release
_release_saved = graded(_release_saved)
minigrad.function.BackwardFunction._release_saved = _release_saved
# %% markdown
# ## Part 2 — `run_node`
# Run the node on `grads`, check what it returned, free what it saved unless `retain_graph`, and
# return the checked gradients, one per edge. Free right after the node ran, not at the end of the
# backward pass: that is when torch frees, and it is what a backward that fails half-way shows.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Three steps: run, check, free. Which of them depends on `retain_graph`?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `node.apply(grads)` runs the node. `validate_outputs(node, gradients)` checks what it returned
# (how many, their shapes, their devices) and returns the gradients to pass on: one shaped like a
# broadcast of its input comes back summed down with `sum_to`. Then, unless `retain_graph`, call
# `node._release_saved()`: the memory goes as early as possible, and a backward that fails later
# has already freed what ran before.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Run the node: `node.apply` on `grads`.
# - Pass the node and what it returned to `validate_outputs`; keep what that gives back.
# - If `retain_graph` is false, call the node's `_release_saved()`.
# - Return the checked gradients.
#
# </details>
# %% part run_node
# %% locked plug-run_node
run_node = graded(run_node)
minigrad.engine.run_node = run_node
# %% markdown
# ## Part 3 — `_unpack`
# One entry of `_saved` as a tensor: `None` gives `None`; a freed entry raises
# `RuntimeError(ERR_BACKWARD_TWICE)`; a `SavedTensor` gives `saved.unpack(self)`.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# An entry is one of three things. How do you tell each one, whatever marker your
# `_release_saved` used?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Compare by identity (`is`): `saved is None`, `saved is _FREED` (or your own marker), in either
# order. Anything else is a `SavedTensor`: hand it the node, `saved.unpack(self)`, which gives the
# tensor back (and, from exercise 4 on, checks its version first).
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - An entry that is `None`: return `None`.
# - An entry that is the marker: raise `RuntimeError` with `ERR_BACKWARD_TWICE`.
# - Anything else is a `SavedTensor`: return what its `unpack` gives for this node (`self`).
#
# </details>
# %% part BackwardFunction._unpack
# %% locked plug-unpack
_unpack = graded(_unpack)
minigrad.function.BackwardFunction._unpack = _unpack
# %% code
# Try it: a = minigrad.ones(2, requires_grad=True); y = a * 2; y.sum().backward(); y.sum().backward()
# %% tests test-second-backward 2+1 BackwardFunction._release_saved run_node BackwardFunction._unpack
def second_backward(lib):
    """Seed 004 (tutorial): a second backward through a graph whose buffers were freed fails."""
    x = lib.ones(3, 3, requires_grad=True)
    z = (x * 2).sum()
    z.backward()
    return {"second": outcome(z.backward), "x.grad": x.grad}


def retain_graph_accumulates(lib):
    """Seed 004 (tutorial): with retain_graph=True the second backward works, and gradients add up."""
    x = lib.ones(3, 3, requires_grad=True)
    z2 = (x * 3).sum()
    z2.backward(retain_graph=True)
    first = x.grad.clone()
    z2.backward()
    return first, x.grad


check("seed 004: a second backward", second_backward)
check("seed 004: retain_graph=True accumulates", retain_graph_accumulates)
### BEGIN HIDDEN TESTS


def third_backward_after_retain(lib):
    """retain_graph keeps the buffers for one more backward only: the one after frees them."""
    x = lib.ones(2, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return outcome(y.backward), x.grad


check("retain_graph=True, then a plain backward, then a third", third_backward_after_retain)
### END HIDDEN TESTS

# %% tests test-error-message 1 BackwardFunction._release_saved run_node BackwardFunction._unpack
check("the error of a second backward, word for word", second_backward, message=True)

# %% tests test-seed-001 2+1 BackwardFunction._release_saved run_node BackwardFunction._unpack
def reused_in_a_loop(lib, retain):
    """Seed 001: y = t @ a computed once, reused by a loss in each iteration."""
    measure = lib.nn.MSELoss()
    x = lib.tensor([1, 0], dtype=lib.float64)
    t = lib.eye(2, dtype=lib.float64, requires_grad=True)
    a = lib.ones(2, dtype=lib.float64, requires_grad=True)
    y = t @ a
    results = []
    for _ in range(2):
        loss = measure(t @ (x + y), x)
        results.append(outcome(lambda: loss.backward(retain_graph=retain)))
    return results, t.grad, a.grad


def del_b_keeps_the_saved_tensor(lib):
    """Seed 001: del b does not free what c's node saved (a reference to b's memory); backward still works."""
    a = lib.tensor(1.0, requires_grad=True)
    b = lib.tensor(2.0, requires_grad=True)
    c = a * b
    del b
    grads = []
    for _ in range(3):
        c.backward(retain_graph=True)
        grads.append(a.grad.item())
    return grads, c.grad_fn._saved_other


def what_backward_returns(lib):
    """Seed 001: "Why does print(c.backward(retain_graph=True)) gives the None??" backward() fills
    the leaves' .grad and returns nothing; what it prints is None, each time."""
    a = lib.tensor(1.0, requires_grad=True)
    c = a * 2
    printed = [str(c.backward(retain_graph=True)) for _ in range(2)]
    return printed, a.grad


check("seed 001: the 2nd backward through the shared t @ a fails", reused_in_a_loop, False)
check("seed 001: retain_graph=True fixes it (and accumulates)", reused_in_a_loop, True)
check("seed 001: del b", del_b_keeps_the_saved_tensor)
check("seed 001: print(c.backward(retain_graph=True))", what_backward_returns)
### BEGIN HIDDEN TESTS


def recomputed_in_the_loop(lib):
    """Seed 001's working variant: t @ a computed inside the loop builds a fresh graph each time."""
    measure = lib.nn.MSELoss()
    x = lib.tensor([1, 0], dtype=lib.float64)
    t = lib.eye(2, dtype=lib.float64, requires_grad=True)
    a = lib.ones(2, dtype=lib.float64, requires_grad=True)
    for _ in range(2):
        measure(t @ (x + t @ a), x).backward()
    return t.grad, a.grad


check("seed 001: t @ a inside the loop", recomputed_in_the_loop)
### END HIDDEN TESTS

# %% tests test-seed-002 2+1 BackwardFunction._release_saved run_node BackwardFunction._unpack
def linear_forward(lib, inside_loop):
    """Seed 002: nn.Linear's forward inside the loop works; outside, the 2nd backward fails."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 3)
    a = lib.rand(3)
    y = lib.sum(layer(a))
    results = []
    for _ in range(3):
        if inside_loop:
            y = lib.sum(layer(a))
        results.append(outcome(y.backward))
    return results, layer.weight.grad


def a_batch_through_linear(lib):
    """Seed 002 with a batch: the bias is broadcast over 4 rows, so the engine must sum its gradient
    back to the bias's shape (validate_outputs does, with sum_to)."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 2)
    lib.sum(layer(lib.rand(4, 3))).backward()
    return layer.bias.grad, layer.weight.grad


check("seed 002: forward outside the loop", linear_forward, False)
check("seed 002: forward inside the loop", linear_forward, True)
check("seed 002 with a batch of 4 inputs: the bias gradient is summed over the batch", a_batch_through_linear)
### BEGIN HIDDEN TESTS


def backward_twice_in_loop(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 3)
    y = lib.sum(layer(lib.rand(3)))
    return outcome(y.backward), outcome(y.backward)


check("seed 002: backward twice in the loop body", backward_twice_in_loop)


### END HIDDEN TESTS

# %% tests test-seed-003 2+1 BackwardFunction._release_saved run_node BackwardFunction._unpack
def graph_remains(lib):
    """Seed 003: after backward the grad_fn chain remains, but its saved tensors are gone."""
    x = lib.tensor([3.0], requires_grad=True)
    k = x * 2
    k.backward()
    m = k
    return {"repr": repr(m), "saved other": outcome(lambda: m.grad_fn._saved_other),
            "saved self": outcome(lambda: m.grad_fn._saved_self), "again": outcome(m.backward)}


def graphs_without_buffers(lib):
    """Add and sum save nothing: backward through them twice works, and accumulates."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    s = (a + 1).sum()
    s.backward()
    s.backward()
    return a.grad


check("seed 003: m = k after backward", graph_remains)
check("a graph without buffers, backward twice", graphs_without_buffers)
### BEGIN HIDDEN TESTS


def fails_part_way(lib, exp_first):
    """When a backward fails part-way, the leaves reached before the failure keep their gradient
    (torch runs the newest ready node first)."""
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    if exp_first:
        y = b.exp()
        y.sum().backward()
        doubled = a * 2
    else:
        doubled = a * 2
        y = b.exp()
        y.sum().backward()
    error = outcome((doubled.sum() + y.sum()).backward)
    return error, a.grad


check("failing part-way, y built first", fails_part_way, True)
check("failing part-way, a * 2 built first", fails_part_way, False)
### END HIDDEN TESTS

# %% tests test-retain-graph 2+1 BackwardFunction._release_saved run_node BackwardFunction._unpack
def buffers_after(lib, retain):
    """What each node still holds after one backward, with and without retain_graph."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    z = y.exp()
    z.sum().backward(retain_graph=retain)
    return {"y saved self": outcome(lambda: y.grad_fn._saved_self),
            "z saved result": outcome(lambda: z.grad_fn._saved_result), "a.grad": a.grad}


check("after backward(retain_graph=True) the buffers are kept", buffers_after, True)
check("after backward() they are freed", buffers_after, False)
### BEGIN HIDDEN TESTS


def grad_then_backward(lib, retain):
    """autograd.grad frees like backward does; create_graph=True implies retain_graph."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (a * a).sum()
    first = lib.autograd.grad(y, a, retain_graph=retain)
    return first, outcome(y.backward), a.grad


def create_graph_keeps(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (a * a * a).sum()
    (g,) = lib.autograd.grad(y, a, create_graph=True)
    y.backward()
    return g, a.grad


check("autograd.grad(retain_graph=True), then backward", grad_then_backward, True)
check("autograd.grad(), then backward", grad_then_backward, False)
check("create_graph=True keeps the buffers", create_graph_keeps)
### END HIDDEN TESTS
