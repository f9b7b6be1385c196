# %% markdown
# # Exercise 2 — the backward engine
#
# *Lesson: `course/02_the_engine.ipynb`.*
#
# `loss.backward()` hands the engine the edges to start from (`roots`) and the gradients to send
# into them. You write the two functions that do the rest:
#
# 1. `compute_dependencies(root_nodes)`: for every node reachable from the roots, how many edges
#    point at it. Walk with an explicit stack — a recursive walk dies on a long chain.
# 2. `backprop(roots, root_grads, call)`: send the gradients in, run every reachable node once,
#    when all gradients for it have arrived and been **summed** into its buffer, newest node first
#    (highest `node._sequence_nr`), passing what each node returns on along `node.next_functions`.
#    For the order, keep the ready nodes in a heap of nodes: `heapq.heappush(ready, node)` and
#    `heapq.heappop(ready)`. Nodes compare by `Node.__lt__`: the newer one first; two leaves'
#    `AccumulateGrad` nodes have the same number and are a tie, which the heap breaks the way torch's
#    queue does. (Breaking ties yourself, by `id(node)` say, gives an order that changes from run to
#    run, and torch's hooks would fire in a different order than yours.)
#
# `call(node, grads)` is given: it runs hooks, calls the node, frees what it saved (that part is
# exercise 3; here nothing is freed yet) and returns one gradient per edge. Edges look like
# `(node, input_nr)`; `node` is `None` for inputs that need no gradient, and `input_nr` says which
# of the next node's outputs the gradient belongs to (always 0 in this course's ops).
#
# The graded tests run whole scenarios — forum threads, shared subgraphs, chains deeper than
# Python's recursion limit — through `backward()` with your engine and compare with PyTorch.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import heapq

import torch

import minigrad
from minigrad.testing import check, graded

# %% markdown
# ## Part 1 — `compute_dependencies`
# %% part compute_dependencies
# %% locked plug-compute_dependencies
compute_dependencies = graded(compute_dependencies)
minigrad.engine.compute_dependencies = compute_dependencies
# %% tests test-dependencies 1+1
def edge_counts(lib, root):
    """How many edges point at each node below ``root``, by node name: torch's counted by walking its
    graph, minigrad's by your compute_dependencies."""
    if lib is minigrad:
        counts = compute_dependencies([root])
    else:
        counts, stack, seen = {}, [root], {root}
        while stack:
            for child, _ in stack.pop().next_functions:
                if child is not None:
                    counts[child] = counts.get(child, 0) + 1
                    if child not in seen:
                        seen.add(child)
                        stack.append(child)
    return sorted((node.name(), count) for node, count in counts.items())


def dependency_counts(lib):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    return edge_counts(lib, (a * b + a.exp()).sum().grad_fn)


check("dependencies of (a*b + a.exp()).sum()", dependency_counts)
### BEGIN HIDDEN TESTS


def long_chain_dependencies(lib):
    x = lib.ones(1, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y + 1
    counts = edge_counts(lib, y.grad_fn)
    return len(counts), max(count for _, count in counts)


check("dependencies of a 20,000-node chain", long_chain_dependencies)
### END HIDDEN TESTS

# %% markdown
# ## Part 2 — `backprop`
# %% part backprop
# %% locked plug-backprop
backprop = graded(backprop)
minigrad.engine.backprop = backprop
# %% code
# Try it: x = minigrad.ones(2, requires_grad=True); (x * x).sum().backward(); x.grad
# %% tests test-seed-004 2+1
def tutorial_first_example(lib):
    """Seed 004 (tutorial): y = x + 2, z = y * y * 3, out = z.mean(); every gradient is 4.5."""
    x = lib.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    out.backward()
    return {"out": out, "x.grad": x.grad, "names": [out.grad_fn.name(), z.grad_fn.name(), y.grad_fn.name()]}


check("seed 004: y = x + 2; z = y * y * 3; out = z.mean()", tutorial_first_example)
### BEGIN HIDDEN TESTS


def reused_product(lib):
    """Seed 001 with retain_graph: the graph of y = t @ a is shared by two losses."""
    measure = lib.nn.MSELoss()
    x = lib.tensor([1, 0], dtype=lib.float64)
    t = lib.eye(2, dtype=lib.float64, requires_grad=True)
    a = lib.ones(2, dtype=lib.float64, requires_grad=True)
    y = t @ a
    for _ in range(2):
        loss = measure(t @ (x + y), x)
        loss.backward(retain_graph=True)
    return t.grad, a.grad


check("seed 001: y = t @ a reused in a loop, retain_graph=True", reused_product)
### END HIDDEN TESTS

# %% tests test-shared-node 2+1
def shared_node(lib):
    """y feeds two paths; its node must run once, with the sum of both paths' gradients."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda grad: seen.append(grad.tolist()))
    (y.exp().sum() + (y * y).sum()).backward()
    return {"x.grad": x.grad, "hook calls": seen}


check("a node shared by two paths", shared_node)
### BEGIN HIDDEN TESTS


def diamond(lib):
    """a -> b, c -> d: both middle nodes feed d; a gets both contributions, once."""
    a = lib.tensor([0.5, -1.0], requires_grad=True)
    b = a.exp()
    c = a * a
    d = (b * c).sum() + b.sum()
    d.backward()
    return a.grad


def accumulate_twice(lib):
    """Two backward passes add their gradients into .grad (the tutorial's missing zero_grad)."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(2):
        (w * w).sum().backward()
    return w.grad


def a_root_below_another_root(lib):
    """a is a root and is also reached from the other root: its node waits for both gradients."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * 3
    lib.autograd.backward([(y * y).sum(), a], [None, lib.ones(2)])
    return a.grad


def a_none_gradient(lib):
    """A node may return None for an input that requires grad (here a custom Function that blocks
    its gradient): that edge still counts as delivered, so y's node runs when its other gradient arrives."""
    class Blocked(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return None

    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * 3
    (Blocked.apply(y) + y * y).sum().backward()
    return a.grad


def several_roots(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * 2
    lib.autograd.backward([y.sum(), (y * y).sum()])
    return a.grad


check("a diamond graph", diamond)
check("two backward passes accumulate", accumulate_twice)
check("autograd.backward with two roots sharing a node", several_roots)
check("a root that the other root reaches: autograd.backward([(y * y).sum(), a])", a_root_below_another_root)
check("a node whose one input gets None (a custom Function blocks it), the other a gradient", a_none_gradient)
### END HIDDEN TESTS

# %% tests test-order 1+1
def hook_order(lib):
    """Ready nodes run newest first: the order in which tensor hooks fire is torch's."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    fired = []
    p = x * 2
    q = x.exp()
    r = p * q
    for name, tensor in (("p", p), ("q", q), ("r", r)):
        tensor.register_hook(lambda grad, name=name: fired.append(name))
    (r.sum() + p.sum()).backward()
    return fired


def leaves_ready_together(lib):
    """(t @ a).sum(): MmBackward0 makes both leaves' AccumulateGrad ready at once. Their hooks fire in
    torch's order; tried 20 times, with the leaves' nodes made in either order."""
    fired = []
    for i in range(20):
        t = lib.ones(2, 2, requires_grad=True)
        a = lib.ones(2, requires_grad=True)
        first, second = (a, t) if i % 2 else (t, a)
        keep = [first * 1, second * 1]  # makes (and keeps) first's AccumulateGrad before second's
        t.register_hook(lambda grad, i=i: fired.append(f"{i}: t"))
        a.register_hook(lambda grad, i=i: fired.append(f"{i}: a"))
        (t @ a).sum().backward()
        del keep
    return fired


check("the order in which nodes run", hook_order)
check("two leaves ready at once: (t @ a).sum()", leaves_ready_together)
### BEGIN HIDDEN TESTS


def branches_order(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    fired = []
    parts = [x * k for k in (1.0, 2.0, 3.0)]
    for i, part in enumerate(parts):
        part.register_hook(lambda grad, i=i: fired.append(i))
    (parts[2].sum() + parts[0].sum() + parts[1].sum()).backward()
    return fired


def many_ties(lib):
    """Many leaves ready at the same moments, in a graph with shared nodes: their hooks' order."""
    fired = []
    leaves = [lib.full((2,), float(k + 1), requires_grad=True) for k in range(8)]
    for k, leaf in enumerate(reversed(leaves)):
        leaf.register_hook(lambda grad, k=len(leaves) - 1 - k: fired.append(k))
    pairs = [leaves[k] * leaves[k + 1] for k in range(0, 8, 2)]
    (pairs[0] @ pairs[1] + pairs[2] @ pairs[3] + (leaves[0] * leaves[7]).sum()).backward()
    return fired


check("the order of three independent branches", branches_order)
check("many leaves ready at once", many_ties)
### END HIDDEN TESTS

# %% tests test-long-chain 2
def long_chain(lib, length):
    """A chain of ``length`` nodes: a recursive engine hits Python's recursion limit (1,000 frames; graded
    code cannot raise it)."""
    x = lib.ones(1, requires_grad=True)
    y = x
    for _ in range(length):
        y = y + 1.0
    y.backward()
    return x.grad


check("a chain of 2,500 nodes", long_chain, 2_500)
