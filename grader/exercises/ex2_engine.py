# %% markdown
# # Exercise 2 — the backward engine
#
# *Lesson: `course/02_the_engine.ipynb`.*
#
# `loss.backward()` hands the engine the edges to start from (`roots`) and the gradients to send
# into them. You write the two functions that do the rest.
#
# **The contract.** Reproduce torch's engine, in two functions (each stub keeps its signature and
# docstring):
#
# 1. `compute_dependencies(root_nodes)` returns a dict: for every node that an edge below the roots
#    points at, how many edges point at it. It must work on a chain of 20,000 nodes, far past
#    Python's recursion limit (1,000 frames; graded code cannot raise it).
# 2. `backprop(roots, root_grads, call)` sends `root_grads` into the edges `roots` and runs every
#    node they reach exactly once, in torch's order:
#    - a node runs only once the gradients from all edges pointing at it have arrived, **summed**
#      (a node shared by two paths runs once, with the sum); an edge that delivers `None` still
#      counts as delivered;
#    - among ready nodes the newest runs first (highest `node._sequence_nr()`). Nodes with equal
#      numbers (leaves' `AccumulateGrad` nodes ready together) run in the order torch's ready queue
#      gives them: that queue is a binary heap ordered by `minigrad.engine.runs_first` (which is
#      how nodes compare, `Node.__lt__`), and with four or more ties its order is neither the order
#      they became ready in nor its reverse. The hooks on those leaves fire in that order;
#    - what a node returns goes on along `node.next_functions`, one gradient per edge.
#
# `call(node, grads)` is given: it runs hooks, calls the node, frees what it saved (that part is
# exercise 3; here nothing is freed yet) and returns one gradient (or `None`) per edge. `grads` is
# a list of the gradients of the node's outputs, one slot per `input_nr` (`None` where none
# arrived). `call` may take a gradient out of that list: give it a list your engine keeps no
# reference to (an `AccumulateGrad` that holds the last reference to a gradient keeps that very
# tensor as `.grad`, as torch does). Edges look like `(node, input_nr)`; `node` is `None` for inputs
# that need no gradient, and `input_nr` says which of the next node's outputs the gradient belongs
# to (always 0 in this course's ops).
#
# The graded checks run whole scenarios through `backward()` with your engine and compare with
# PyTorch: the edge counts of a small graph and of a 20,000-node chain; the tutorial's first example
# (seed 004); seed 001's graph reused with `retain_graph=True`; a node shared by two paths (its hook
# fires once), a diamond, two backward passes that accumulate, `autograd.backward` with two roots
# (one of them reached from the other), a node that gets `None` on one edge and a gradient on the
# other; the order in which tensor hooks fire (independent branches, two leaves ready at once, many
# leaves ready at the same moments); and a chain of 2,500 nodes.
#
# **Open:** how you walk the graph in `compute_dependencies`; in `backprop`, how you keep the
# gradients that arrive for each node, how you tell that a node is ready, and what holds the ready
# nodes. The order in which ready nodes run is torch's, not a choice. Each part has three hints,
# folded: open them one at a time, only when you need them.
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
from coursekit.testing import check, graded

# %% markdown
# ## Part 1 — `compute_dependencies`
# Return `{node: number of edges pointing at it}` for the nodes below `root_nodes`. A node that no
# edge points at (a root that nothing else reaches) is not in the dict: `backprop` adds the roots'
# own edges itself. Edges whose node is `None` point at nothing. It must work on a chain far deeper
# than Python's recursion limit.
#
# **Open:** the order of your walk, and what you use to walk.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Every edge must be counted once, but every node must be walked once: a node below two paths is
# reached twice. What must you remember so that you don't walk below it twice?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Keep the nodes still to visit in a list you push and pop (a stack), not in Python's call stack;
# keep a set of the nodes already pushed. For each node you take out, count each of its edges;
# push the next node only the first time you see it. (A queue, `collections.deque`, walks as well;
# so do two passes: first every node, then their edges.)
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Start with an empty dict of counts, a stack (a list) holding the root nodes, and a set of seen
#   nodes holding them too.
# - While the stack is not empty: pop a node. For each `(next_node, input_nr)` of its
#   `next_functions` whose node is not `None`: add one to its count (from 0); if it is not in the
#   seen set, add it there and push it on the stack.
# - Return the counts.
#
# </details>
# %% part compute_dependencies
# %% locked plug-compute_dependencies
compute_dependencies = graded(compute_dependencies)
minigrad.engine.compute_dependencies = compute_dependencies
# %% tests test-dependencies 1+1 compute_dependencies
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
# Send `root_grads` into the edges `roots`, then run each reachable node once, when all of its
# gradients have arrived and been summed, in torch's order: newest first, ties as torch's ready
# queue orders them (see the contract above). Pass what `call(node, grads)` returns on along
# `node.next_functions`.
#
# **Open:** how you keep the gradients that arrive for a node (one slot per `input_nr`), how you
# know that a node has all of them, and what holds the nodes that are ready.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Start from `compute_dependencies`: a node is ready when its count drops to zero. The roots are
# edges too: does a root's count include them? And among several ready nodes, which structure
# hands you the newest each time?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Add one to the count of each root's node (a root may also be reached from another root, so add
# to what is there). Keep a buffer per node, a list with one slot per `input_nr`, where arriving
# gradients are summed. One helper delivers gradients along edges: skip an edge whose node is
# `None`; sum a gradient that is not `None` into its slot; count the edge as delivered even when its
# gradient is `None`; when a count reaches zero, the node is ready. Keep the ready nodes in a heap:
# Python's `heapq` holding the nodes themselves (they compare by `runs_first`) pops them in torch's
# order, ties included, since it is the same kind of heap as torch's; so does a heap of
# `(-node._sequence_nr(), node)` pairs (equal numbers fall back to comparing the nodes). A tie-break of
# your own, by `id(node)` or by arrival, gives another order. Deliver the root gradients into the
# roots, then, while the heap is not empty, pop a node, hand its buffer to `call`, and deliver what
# `call` returns along `node.next_functions`. Hand the buffer over and keep no reference to it (pop
# it out of your dict).
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Counts: `compute_dependencies` of the roots' nodes, then one more for each root's node
#   (starting from 0 where it has no count yet).
# - An empty dict of buffers, and an empty list `ready`: the heap.
# - A helper `deliver(edges, grads)`. For each edge `(node, input_nr)` and its gradient, side by
#   side: skip the edge if `node` is `None`. Make sure `node` has a buffer with a slot at
#   `input_nr` (new slots hold `None`). If the gradient is not `None`, put it in its slot, or add
#   it to what is there. Take one from the node's count; when the count reaches 0, push the node
#   on `ready` with `heapq.heappush`.
# - Deliver `root_grads` along `roots`.
# - While `ready` is not empty: pop the newest node with `heapq.heappop`; take its buffer out of
#   the dict (`pop`); call `call` with the node and that buffer; deliver what it returns along
#   `node.next_functions`.
#
# </details>
# %% part backprop
# %% locked plug-backprop
backprop = graded(backprop)
minigrad.engine.backprop = backprop
# %% code
# Try it: x = minigrad.ones(2, requires_grad=True); (x * x).sum().backward(); x.grad
# %% tests test-seed-004 2+1 compute_dependencies backprop
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

# %% tests test-shared-node 2+1 compute_dependencies backprop
def shared_node(lib):
    """y feeds two paths; its node must run once, with the sum of both paths' gradients."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda grad: seen.append(grad.tolist()))
    (y.exp().sum() + (y * y).sum()).backward()
    return {"x.grad": x.grad, "hook calls": seen}


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


check("a node shared by two paths", shared_node)
check("a root that the other root reaches: autograd.backward([(y * y).sum(), a])", a_root_below_another_root)
check("a node whose one input gets None (a custom Function blocks it), the other a gradient", a_none_gradient)
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


def several_roots(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * 2
    lib.autograd.backward([y.sum(), (y * y).sum()])
    return a.grad


check("a diamond graph", diamond)
check("two backward passes accumulate", accumulate_twice)
check("autograd.backward with two roots sharing a node", several_roots)
### END HIDDEN TESTS

# %% tests test-order 1+1 compute_dependencies backprop
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


def branches_order(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    fired = []
    parts = [x * k for k in (1.0, 2.0, 3.0)]
    for i, part in enumerate(parts):
        part.register_hook(lambda grad, i=i: fired.append(i))
    (parts[2].sum() + parts[0].sum() + parts[1].sum()).backward()
    return fired


def five_leaves_at_once(lib):
    """Five leaves feeding one node: their AccumulateGrad nodes become ready together, five ties
    that torch's heap pops in an order of its own (not the order they arrived in)."""
    class Sum5(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c, d, e):
            return a + b + c + d + e

        @staticmethod
        def backward(ctx, grad):
            return grad, grad, grad, grad, grad

    fired = []
    leaves = [lib.full((2,), float(k + 1), requires_grad=True) for k in range(5)]
    for k, leaf in enumerate(leaves):
        leaf.register_hook(lambda grad, k=k: fired.append(k))
    Sum5.apply(*leaves).sum().backward()
    return fired


check("the order in which nodes run", hook_order)
check("two leaves ready at once: (t @ a).sum()", leaves_ready_together)
check("the order of three independent branches", branches_order)
check("five leaves ready together", five_leaves_at_once)
### BEGIN HIDDEN TESTS


def many_ties(lib):
    """Many leaves ready at the same moments, in a graph with shared nodes: their hooks' order."""
    fired = []
    leaves = [lib.full((2,), float(k + 1), requires_grad=True) for k in range(8)]
    for k, leaf in enumerate(reversed(leaves)):
        leaf.register_hook(lambda grad, k=len(leaves) - 1 - k: fired.append(k))
    pairs = [leaves[k] * leaves[k + 1] for k in range(0, 8, 2)]
    (pairs[0] @ pairs[1] + pairs[2] @ pairs[3] + (leaves[0] * leaves[7]).sum()).backward()
    return fired


check("many leaves ready at once", many_ties)
### END HIDDEN TESTS

# %% tests test-long-chain 2 compute_dependencies backprop
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
