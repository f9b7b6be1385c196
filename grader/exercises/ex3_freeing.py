# %% markdown
# # Exercise 3 — freeing saved tensors, and `retain_graph`
#
# *Lesson: `course/03_freeing_and_retain_graph.ipynb`.*
#
# After the engine runs a node it calls `node._release_saved()`, unless `retain_graph=True`. Until
# now that did nothing, so minigrad kept every saved tensor forever. You write the two methods of
# `BackwardFunction` (the class of every op's node) that give minigrad torch's behaviour:
#
# 1. `_release_saved(self)`: free what the node saved. `self._saved` is a tuple with one entry per
#    tensor given to `save_for_backward`: `None` (nothing was saved there) or a `SavedTensor`. Replace
#    each `SavedTensor` by the marker `_FREED`; `None` entries stay `None`.
# 2. `_unpack(self, saved)`: turn one entry back into a tensor, for `ctx.saved_tensors` and
#    `grad_fn._saved_self`: `None` gives `None`; `_FREED` raises
#    `RuntimeError(ERR_BACKWARD_TWICE)` — torch's "Trying to backward through the graph a second
#    time ..." message; a `SavedTensor` gives `saved.unpack(self)` (which also checks its version).
#
# The graded tests re-run the forum threads' scenarios with PyTorch and with your minigrad.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells.
# %% locked setup
import torch

import minigrad
from minigrad.function import ERR_BACKWARD_TWICE, _FREED
from minigrad.testing import check, outcome

# %% markdown
# ## Part 1 — `_release_saved`
# %% part BackwardFunction._release_saved
# %% locked plug-release
minigrad.function.BackwardFunction._release_saved = _release_saved
# %% markdown
# ## Part 2 — `_unpack`
# %% part BackwardFunction._unpack
# %% locked plug-unpack
minigrad.function.BackwardFunction._unpack = _unpack
# %% code
# Try it: a = minigrad.ones(2, requires_grad=True); y = a * 2; y.sum().backward(); y.sum().backward()
# %% tests test-second-backward 3
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

# %% tests test-seed-001 3
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


check("seed 001: the 2nd backward through the shared t @ a fails", reused_in_a_loop, False)
check("seed 001: retain_graph=True fixes it (and accumulates)", reused_in_a_loop, True)
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


def del_b_keeps_the_saved_copy(lib):
    """Seed 001: del b does not free what c's node saved; backward still works."""
    a = lib.tensor(1.0, requires_grad=True)
    b = lib.tensor(2.0, requires_grad=True)
    c = a * b
    del b
    grads = []
    for _ in range(3):
        c.backward(retain_graph=True)
        grads.append(a.grad.item())
    return grads, c.grad_fn._saved_other


check("seed 001: t @ a inside the loop", recomputed_in_the_loop)
check("seed 001: del b", del_b_keeps_the_saved_copy)
### END HIDDEN TESTS

# %% tests test-seed-002 3
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


check("seed 002: forward outside the loop", linear_forward, False)
check("seed 002: forward inside the loop", linear_forward, True)
### BEGIN HIDDEN TESTS


def backward_twice_in_loop(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 3)
    y = lib.sum(layer(lib.rand(3)))
    return outcome(y.backward), outcome(y.backward)


check("seed 002: backward twice in the loop body", backward_twice_in_loop)
### END HIDDEN TESTS

# %% tests test-seed-003 3
def graph_remains(lib):
    """Seed 003: after backward the grad_fn chain remains, but its saved tensors are gone."""
    x = lib.tensor([3.0], requires_grad=True)
    k = x * 2
    k.backward()
    m = k
    return {"repr": repr(m), "saved other": outcome(lambda: m.grad_fn._saved_other),
            "saved self": outcome(lambda: m.grad_fn._saved_self), "again": outcome(m.backward)}


check("seed 003: m = k after backward", graph_remains)
### BEGIN HIDDEN TESTS


def graphs_without_buffers(lib):
    """Add and sum save nothing: backward through them twice works, and accumulates."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    s = (a + 1).sum()
    s.backward()
    s.backward()
    return a.grad


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


check("add and sum twice", graphs_without_buffers)
check("failing part-way, y built first", fails_part_way, True)
check("failing part-way, a * 2 built first", fails_part_way, False)
### END HIDDEN TESTS
