"""The backward engine: which nodes run, how often, in which order, with which gradient, and the
errors of backward() and autograd.grad(); torch is the oracle for all of it."""
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import minigrad

from coursekit.testing import assert_same, both, graph_signature, outcome


def recorder(calls, name):
    """A tensor hook that notes its tensor's name and the gradient it was called with."""
    def hook(grad):
        calls.append((name, grad.clone()))
    return hook


def caught_warnings(fn):
    """Run ``fn``; its result and the warnings it raised as (category, message, line). Torch's C++
    warnings end with "(Triggered internally at <path in torch's build tree>)", which names a file of
    one torch binary, not part of the message; it is cut off."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = outcome(fn)
    return result, [(w.category.__name__, re.sub(r" \(Triggered internally at .*\)$", "", str(w.message)), w.lineno)
                    for w in caught]


# --- each node once, with the summed gradient -----------------------------------------------------

def shared_node(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    calls = []
    y.register_hook(recorder(calls, "y"))
    out = (y * 3).sum() + y.exp().sum()
    out.backward()
    return calls, x.grad


def test_node_shared_by_two_paths_runs_once_with_the_summed_gradient():
    """y feeds two paths; torch calls y's hook (so runs y's node) once, with both paths' grads summed."""
    expected, actual = both(shared_node)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert len(expected[0]) == 1


DIAMONDS = {
    "diamond": lambda x: (x * 2) * x.exp(),
    "diamond over a non-leaf": lambda x: (lambda h: h.tanh() * h.sigmoid())(x * 3),
    "leaf used thrice": lambda x: x * x * x,
    "two diamonds stacked": lambda x: (lambda h: (h * 2) + h.exp())((x + 1) * (x - 1)),
    "uneven path lengths": lambda x: (lambda h: h + h.exp().log().tanh().sigmoid())(x * 2),
}


def diamond(torch, build):
    x = torch.tensor([0.5, -1., 2.], requires_grad=True)
    out = DIAMONDS[build](x)
    out.sum().backward()
    return graph_signature(out), x.grad


@pytest.mark.parametrize("build", DIAMONDS)
def test_diamond_graphs(build):
    """Graphs where paths split and join: same nodes as torch, same gradients."""
    assert_same(diamond, build, close=True)


def accumulation_across_backwards(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    grads = []
    for make in (lambda: x * 2, lambda: x * x, lambda: x.exp()):
        make().sum().backward()
        grads.append(x.grad.clone())
    return grads


def test_gradients_accumulate_into_leaves_across_backward_calls():
    """Each backward adds into ``.grad``, as torch does."""
    assert_same(accumulation_across_backwards, close=True)


# --- no recursion --------------------------------------------------------------------------------

CHAIN = textwrap.dedent("""
    import sys
    import minigrad
    x = minigrad.zeros(2, requires_grad=True)
    y = x
    for _ in range(int(sys.argv[1])):
        y = y + 1
    y.sum().backward()
    print(x.grad.tolist())
    del y
    print("deleted")
""")


def test_million_node_chain_backprops_and_is_freed_without_recursion():
    """A 1,000,000-node chain: backward must not recurse, and dropping the chain must not overflow the
    C stack while deallocating. Run in a child process so a crash fails this test, not the run. The
    gradient of a chain of ``+ 1`` does not depend on its length: torch's on a short chain is the oracle."""
    done = subprocess.run([sys.executable, "-c", CHAIN, str(10**6)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    x = torch.zeros(2, requires_grad=True)
    (x + 1 + 1).sum().backward()
    assert done.stdout.split("\n")[:2] == [str(x.grad.tolist()), "deleted"]


# --- order of execution --------------------------------------------------------------------------

def freed_node_after_new_branch(torch, a_times_2_first):
    """``y = b.exp()`` is backpropagated (its saved result freed), then reused next to ``a * 2``."""
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2, requires_grad=True)
    if a_times_2_first:
        a2 = a * 2
    y = b.exp()
    y.sum().backward()
    if not a_times_2_first:
        a2 = a * 2
    z = a2.sum() + y.sum()
    return outcome(z.backward), a.grad, b.grad


@pytest.mark.parametrize("a_times_2_first", [False, True], ids=["a*2 built after y", "a*2 built before y"])
def test_execution_order_decides_what_a_failing_backward_leaves_behind(a_times_2_first):
    """torch runs ready nodes newest first (AccumulateGrad before anything): when ``a * 2`` is newer
    than ``exp``, a's gradient is delivered before exp's node fails, else not. Same failure, same
    ``a.grad``, in both."""
    expected, actual = both(freed_node_after_new_branch, a_times_2_first)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected[0][0] == "error"


def branched(torch, x):
    a = x * 2
    b = x.exp()
    c = a * b
    d = a + 1
    e = b.sigmoid()
    return {"a": a, "b": b, "c": c, "d": d, "e": e, "out": c.sum() + d.sum() + e.sum()}


def late_branch(torch, x):
    a = x.exp()
    b = a * 3
    c = x * 4
    d = b.tanh() + c
    e = a.sigmoid()
    return {"a": a, "b": b, "c": c, "d": d, "e": e, "out": d.sum() + e.sum() + c.sum()}


def ladder(torch, x):
    nodes = {}
    h = x
    for i in range(4):
        h = h * 2 + x.exp() if i % 2 else (h + 1).sigmoid()
        nodes[f"h{i}"] = h
    nodes["out"] = h.sum() + nodes["h1"].sum()
    return nodes


GRAPHS = {"branched": branched, "late branch": late_branch, "ladder": ladder}


def hook_order(torch, graph):
    x = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
    nodes = GRAPHS[graph](torch, x)
    order = []
    x.register_hook(lambda grad: order.append("x"))
    for name, tensor in nodes.items():
        tensor.register_hook(lambda grad, name=name: order.append(name))
    nodes["out"].backward()
    return order, x.grad


@pytest.mark.parametrize("graph", GRAPHS)
def test_hooks_on_non_leaves_fire_in_torchs_order(graph):
    """The order in which tensor hooks fire is the order torch's engine runs the nodes."""
    assert_same(hook_order, graph, close=True)


def sequence_numbers(torch):
    """``node._sequence_nr()``, the number the engine orders by. Each library counts its own nodes (torch
    per thread), so the numbers are compared by their differences; the nodes that run as soon as they
    are ready, AccumulateGrad and once_differentiable's Error, have UINT64_MAX."""
    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad):
            return grad * 2

    x = torch.ones(2, requires_grad=True)
    a = x * 2
    b = a.exp()
    c = Doubled.apply(x)
    (grad,) = torch.autograd.grad((c * c).sum(), x, create_graph=True)
    numbers = {"a": a.grad_fn._sequence_nr(), "b": b.grad_fn._sequence_nr(), "c": c.grad_fn._sequence_nr()}
    return {"b newer than a, c than b": [numbers["b"] - numbers["a"], numbers["c"] - numbers["b"]],
            "AccumulateGrad": a.grad_fn.next_functions[0][0]._sequence_nr(),
            "once_differentiable's Error": (grad.grad_fn.name(), grad.grad_fn._sequence_nr())}


def _gradient_of_another_dtype(lib, create_graph):
    """A float32 upstream gradient into float64 ops, and a custom backward that returns float32: the
    engine casts each gradient to its input's dtype (a recorded copy under create_graph)."""
    class Float32Backward(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return (grad * 2).float()

    a = lib.rand(3, 3, dtype=lib.float64, requires_grad=True)
    upstream = lib.tensor(0.5, requires_grad=True).expand(3)
    (diagonal,) = lib.autograd.grad(a.diagonal(), a, upstream, create_graph=create_graph)
    x = lib.ones(2, dtype=lib.float64, requires_grad=True)
    (custom,) = lib.autograd.grad(Float32Backward.apply(x).sum(), x, create_graph=create_graph)
    return [(g.dtype, g, graph_signature(g)) for g in (diagonal, custom)]


@pytest.mark.parametrize("create_graph", [False, True])
def test_gradients_are_cast_to_their_inputs_dtype(create_graph):
    assert_same(_gradient_of_another_dtype, create_graph)


def test_sequence_nr_is_a_method_with_torchs_numbers():
    expected, actual = both(sequence_numbers)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected["b newer than a, c than b"] == [1, 1] and expected["AccumulateGrad"] == 2**64 - 1


# --- hooks and retain_grad -----------------------------------------------------------------------

HOOK_CASES = {
    "non-leaf hook replaces the grad": lambda torch, x, y: [y.register_hook(lambda g: g * 10)],
    "hook returning None keeps it": lambda torch, x, y: [y.register_hook(lambda g: None)],
    "hooks chain in registration order": lambda torch, x, y: [y.register_hook(lambda g: g + 1),
                                                              y.register_hook(lambda g: g * 3)],
    "leaf hook changes what accumulates": lambda torch, x, y: [x.register_hook(lambda g: g * -1)],
    "removed hook does not run": lambda torch, x, y: [y.register_hook(lambda g: g * 10).remove()],
    "removing one of two": lambda torch, x, y: [y.register_hook(lambda g: g + 1),
                                                y.register_hook(lambda g: g * 3).remove()],
}


def hooked(torch, case):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x * x
    HOOK_CASES[case](torch, x, y)
    (y * torch.tensor([1., 10., 100.])).sum().backward()
    return x.grad


@pytest.mark.parametrize("case", HOOK_CASES)
def test_tensor_hooks(case):
    """A hook's return value replaces the gradient flowing on; ``handle.remove()`` unregisters it."""
    assert_same(hooked, case)


def hooked_without_gradient(torch, replace):
    """A custom Function whose backward returns None: the tensor before it gets no gradient, and its
    hooks (and retain_grad's) see None; a hook that makes one up is refused."""
    class Drop(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, grad):
            return None

    x = torch.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g) or (torch.ones(2) if replace else None))
    result = outcome(lambda: Drop.apply(y).sum().backward())
    return result, seen, y.grad, x.grad


@pytest.mark.parametrize("replace", [False, True], ids=["observes", "replaces"])
def test_a_tensor_without_gradient_has_its_hooks_called_with_none(replace):
    assert_same(hooked_without_gradient, replace)


def retained(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x * x
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    first = y.grad.clone()
    z.backward()
    return y.is_leaf, y.retains_grad, first, y.grad, x.grad


def test_retain_grad_populates_and_accumulates_a_non_leaf_grad():
    """``retain_grad()`` makes a non-leaf's ``.grad`` filled in, and summed over two backward calls."""
    assert_same(retained)


def retain_grad_sees_the_hooked_grad(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 5)
    y.sum().backward()
    return y.grad, x.grad


def test_retain_grad_sees_the_grad_after_tensor_hooks():
    """torch runs tensor hooks before retain_grad's, whatever the registration order."""
    assert_same(retain_grad_sees_the_hooked_grad)


def non_leaf_grad_access(torch):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    return caught_warnings(lambda: y.grad)


def test_non_leaf_grad_access_warns_like_torch():
    """Reading ``.grad`` of a non-leaf warns: same category, same message, blamed on the same line."""
    expected, actual = both(non_leaf_grad_access)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert len(expected[1]) == 1


# --- errors --------------------------------------------------------------------------------------

def _leaf(torch):
    return torch.tensor([1., 2.], requires_grad=True)


def _second_input_unused(torch):
    x = _leaf(torch)
    return torch.autograd.grad((x * 2).sum(), [x, _leaf(torch)])


def _grad_of_non_scalar(torch):
    x = _leaf(torch)
    return torch.autograd.grad(x * 2, x)


ERRORS = {
    "non-scalar backward without gradient": lambda torch: (_leaf(torch) * 2).backward(),
    "backward of a tensor without grad_fn": lambda torch: torch.ones(2).sum().backward(),
    "second of two roots without grad_fn":
        lambda torch: torch.autograd.backward([(_leaf(torch) * 2).sum(), torch.ones(2).sum()]),
    "gradient of the wrong shape": lambda torch: (_leaf(torch) * 2).backward(torch.ones(3)),
    "grad of an unused input": lambda torch: torch.autograd.grad((_leaf(torch) * 2).sum(), [_leaf(torch)]),
    "grad of the second input unused": _second_input_unused,
    "grad of an input that does not require grad":
        lambda torch: torch.autograd.grad((_leaf(torch) * 2).sum(), [torch.ones(2)]),
    "grad of a non-scalar without grad_outputs": _grad_of_non_scalar,
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_have_torchs_messages(case):
    """Misuses of backward() and autograd.grad() raise torch's exception with torch's exact message."""
    expected, actual = both(ERRORS[case])
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected[0] == "error"


def grad_allow_unused(torch):
    x, unused = _leaf(torch), _leaf(torch)
    return torch.autograd.grad((x * x).sum(), [x, unused], allow_unused=True)


def test_grad_allow_unused_gives_none_for_the_unused_input():
    """With ``allow_unused=True`` the unused input's gradient is None instead of an error."""
    assert_same(grad_allow_unused)


def backward_of_a_leaf(torch):
    x = torch.tensor(3., requires_grad=True)
    x.backward()
    return x.grad


def test_backward_of_a_scalar_leaf():
    """A leaf that requires grad has no grad_fn but is still a root: its grad is accumulated."""
    assert_same(backward_of_a_leaf)


# --- autograd.grad and autograd.backward ---------------------------------------------------------

def grad_values(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    w = torch.tensor([0.5, -1., 2.], requires_grad=True)
    out = (x * x * w).sum()
    gx, gw = torch.autograd.grad(out, [x, w])
    return gx, gw, gx.requires_grad, gx.grad_fn is None, x.grad, w.grad


def test_grad_returns_values_and_leaves_dot_grad_alone():
    """``autograd.grad`` returns the gradients, detached, and does not touch any ``.grad``."""
    assert_same(grad_values)


def grad_create_graph(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    (gx,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    first = (gx.requires_grad, gx.grad_fn is not None, gx)
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    return first, ggx, x.grad


def test_grad_with_create_graph_gives_a_differentiable_graph():
    """With ``create_graph=True`` the gradient has a graph of its own, and its gradient is torch's."""
    assert_same(grad_create_graph, close=True)


def grad_with_grad_outputs(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x * x
    return torch.autograd.grad(y, x, grad_outputs=torch.tensor([1., 0.5, -2.]))


def test_grad_with_grad_outputs():
    """``grad_outputs`` is the vector of the vector-Jacobian product, for a non-scalar output."""
    assert_same(grad_with_grad_outputs)


def grad_of_a_non_leaf(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    h = x.exp()
    out = (h * h).sum()
    return torch.autograd.grad(out, [h, x]), x.grad


def test_grad_with_respect_to_a_non_leaf():
    """Inputs to ``autograd.grad`` can be intermediate tensors, next to leaves."""
    assert_same(grad_of_a_non_leaf, close=True)


def backward_several_roots(torch, with_grads):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y1, y2 = x * 2, x.exp()
    if with_grads:
        torch.autograd.backward([y1, y2], [torch.tensor([1., 0., 1.]), torch.tensor([0.5, 0.5, 0.5])])
    else:
        torch.autograd.backward([y1.sum(), y2.sum()])
    return x.grad


@pytest.mark.parametrize("with_grads", [False, True], ids=["scalar roots", "roots with grad_tensors"])
def test_autograd_backward_with_several_roots(with_grads):
    """``autograd.backward`` of several roots sums their contributions into the leaves."""
    assert_same(backward_several_roots, with_grads, close=True)


# --- retain_graph / create_graph -----------------------------------------------------------------

def backward_twice(torch, first_backward):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    z = (x.exp() * x).sum()
    z.backward(**first_backward)
    first = x.grad.detach().clone()
    return first, outcome(z.backward), x.grad, x.grad.requires_grad


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("first_backward", [{}, {"retain_graph": True}, {"create_graph": True}],
                         ids=["plain", "retain_graph", "create_graph implies retain_graph"])
def test_retain_graph_lets_a_second_backward_run_and_accumulate(first_backward):
    """Without retain_graph the second backward fails; with it, or with create_graph (which implies
    it), the second one runs and x.grad doubles."""
    assert_same(backward_twice, first_backward, close=True)


def test_leaf_gradients_never_alias_memory_someone_else_holds():
    """AccumulateGrad keeps a gradient without copying only when nothing else holds it: two leaves fed
    by one AddBackward0 must not share memory, nor may a leaf's .grad share the caller's gradient."""
    def scenario(lib):
        a, b = lib.tensor(1.0, requires_grad=True), lib.tensor(2.0, requires_grad=True)
        (a + b).backward()
        (a + b).backward()
        a.grad.zero_()
        x = lib.ones(3, requires_grad=True)
        given = lib.ones(3)
        x.backward(given)
        x.grad.mul_(5)
        stash = []
        y = lib.ones(2, requires_grad=True)
        (y * 1).register_hook(lambda g: stash.append(g))
        z = y * 1
        z.register_hook(lambda g: stash.append(g))
        z.sum().backward()
        y.grad.add_(1)
        return [a.grad, b.grad, given, x.grad, stash, y.grad]
    assert_same(scenario)


def test_owned_gradients_are_kept_without_a_copy():
    """The fast path is real: a freshly computed gradient becomes .grad as is (bench/engine.py relies on it)."""
    layer = minigrad.nn.Linear(4, 3)
    loss = layer(minigrad.randn(2, 4)).relu().sum()
    seen = {}
    original = minigrad.Tensor.clone

    def counting_clone(self, *args):
        seen["clones"] = seen.get("clones", 0) + 1
        return original(self, *args)

    minigrad.Tensor.clone = counting_clone
    try:
        loss.backward()
    finally:
        minigrad.Tensor.clone = original
    assert seen.get("clones", 0) == 0


def first_gradient_under_create_graph(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x.exp()).sum().backward(create_graph=True)
    first = graph_signature(x.grad)
    (x * x).sum().backward(create_graph=True)
    return first, graph_signature(x.grad), x.grad


def test_the_first_gradient_under_create_graph_is_a_recorded_copy():
    """torch copies it into memory laid out like the leaf (CopyBackwards), then adds (AddBackward0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(first_gradient_under_create_graph, close=True)


# --- backward(inputs=...), roots given twice, which hooks run where (torch's exec_info) --------------

def backward_into_some_inputs(torch, inputs_of):
    """backward(inputs=...) accumulates into those tensors only: a non-leaf among them retains its
    grad (for good), one the graph does not reach keeps its .grad; only nodes leading to them run."""
    ran = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, -1.0], requires_grad=True)
    unused = torch.tensor([5.0], requires_grad=True)
    middle = x * y
    middle.register_hook(lambda g: ran.append("middle hook"))
    y.register_hook(lambda g: ran.append("y hook"))
    out = (middle * middle + y).sum()
    out.grad_fn.register_prehook(lambda g: ran.append("sum prehook"))
    inputs = inputs_of(x, y, middle, unused)
    out.backward(inputs=inputs, retain_graph=True)
    first = [x.grad, y.grad, middle.grad, unused.grad, middle.retains_grad, list(ran)]
    ran.clear()
    out.backward(inputs=inputs)  # accumulates
    return first, [x.grad, y.grad, middle.grad, unused.grad, ran]


INPUTS = {
    "a leaf": lambda x, y, middle, unused: [x],
    "a leaf, as a tensor": lambda x, y, middle, unused: y,
    "a non-leaf": lambda x, y, middle, unused: [middle],
    "leaf and non-leaf": lambda x, y, middle, unused: (x, middle),
    "one the graph does not reach": lambda x, y, middle, unused: [unused, y],
    "a dict": lambda x, y, middle, unused: {"x": x, "middle": middle},
}


@pytest.mark.parametrize("inputs", INPUTS)
def test_backward_into_some_inputs(inputs):
    assert_same(backward_into_some_inputs, INPUTS[inputs])


def bad_inputs(torch, call):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    return call(torch, x, (x * 2).sum())


BAD_INPUTS = {
    "backward, no inputs": lambda torch, x, out: out.backward(inputs=[]),
    "backward, an empty dict of inputs": lambda torch, x, out: out.backward(inputs={}),
    "backward, an input that needs no grad": lambda torch, x, out: out.backward(inputs=[torch.ones(2)]),
    # grad with no inputs: from torch 2.13 refused first; before, once the outputs and their gradients pass
    "grad, no inputs": lambda torch, x, out: torch.autograd.grad(out, []),
    "grad, an empty dict of inputs": lambda torch, x, out: torch.autograd.grad(out, {}),
    "grad, no inputs and a gradient of the wrong shape": lambda torch, x, out: torch.autograd.grad(
        x * 2, [], grad_outputs=torch.ones(3)),
    "grad, no inputs and a vector output with no gradient": lambda torch, x, out: torch.autograd.grad(x * 2, ()),
    "grad, no inputs and an output that needs no grad": lambda torch, x, out: torch.autograd.grad(torch.ones(2), []),
    "grad, materialize_grads without allow_unused": lambda torch, x, out: torch.autograd.grad(
        out, x, allow_unused=False, materialize_grads=True),
    "grad, unused inputs materialized": lambda torch, x, out: torch.autograd.grad(
        out, [x, torch.ones(3, requires_grad=True)], materialize_grads=True),
    "grad, unused inputs materialized with create_graph": lambda torch, x, out: [
        (g, g.requires_grad) for g in torch.autograd.grad(out, [x, torch.ones(3, requires_grad=True)],
                                                          materialize_grads=True, create_graph=True)],
    "backward, a number among the inputs": lambda torch, x, out: out.backward(inputs=[x, 1.0]),
    "grad, a string among the inputs": lambda torch, x, out: torch.autograd.grad(out, ["x"]),
    "grad, an input that needs no grad and a gradient of the wrong shape": lambda torch, x, out: torch.autograd.grad(
        x * 2, [torch.ones(2)], grad_outputs=torch.ones(3)),
    "grad, fewer gradients than outputs": lambda torch, x, out: torch.autograd.grad(
        [out, (x * 3).sum()], x, grad_outputs=[torch.ones(())]),
    "grad, more gradients than outputs": lambda torch, x, out: torch.autograd.grad(
        out, x, grad_outputs=[torch.ones(()), torch.ones(())]),
    "backward, fewer gradients than outputs": lambda torch, x, out: torch.autograd.backward(
        [out, (x * 3).sum()], [torch.ones(())]),
    "grad, is_grads_batched=False": lambda torch, x, out: torch.autograd.grad(out, x, is_grads_batched=False),
    "backward, a list of numbers as the gradient": lambda torch, x, out: (x * 2).backward([1.0, 1.0]),
    "grad, a number as the gradient of a gradient edge": lambda torch, x, out: torch.autograd.grad(
        torch.autograd.graph.get_gradient_edge(out), x, grad_outputs=1.0),
    "grad, an unused transposed input materialized": lambda torch, x, out: torch.autograd.grad(
        out, [x, torch.ones(2, 3, requires_grad=True).t()], materialize_grads=True)[1].stride(),
    "grad, unused inputs materialized with create_graph not a bool": lambda torch, x, out: torch.autograd.grad(
        out, [x, torch.ones(3, requires_grad=True)], materialize_grads=True, create_graph=1),
}


@pytest.mark.parametrize("call", BAD_INPUTS)
def test_what_backward_and_grad_take_as_inputs(call):
    assert_same(bad_inputs, BAD_INPUTS[call])


def same_root_twice(torch, roots_of):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    roots = roots_of(torch, a, b)
    torch.autograd.backward(roots, [torch.ones(2) * (i + 1) for i in range(len(roots))])
    return a.grad, b.grad


ROOTS = {
    "one tensor twice": lambda torch, a, b: [a * b, ] * 2,
    "one tensor thrice and another": lambda torch, a, b: (lambda p: [p, a + b, p, p])(a * b),
    "a leaf twice": lambda torch, a, b: [a, a],
    "two views of one node's output": lambda torch, a, b: (lambda p: [p[:], p[:]])(a * b),
    "two outputs of one node": lambda torch, a, b: list(_two_outputs(torch).apply(a, b)),
}


def _two_outputs(torch):
    class Both(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y, x + y

        @staticmethod
        def backward(ctx, g_product, g_sum):
            return g_product * 10 + g_sum, g_product * 100 + g_sum
    return Both


@pytest.mark.parametrize("roots", ROOTS)
def test_a_root_given_twice_gets_both_gradients(roots):
    """torch sums the gradients of a root given more than once (each root's node runs once)."""
    assert_same(same_root_twice, ROOTS[roots])


def hooks_by_where_they_run(torch, run):
    """Which hooks run, in order: a leaf's tensor hooks before its AccumulateGrad's own pre-hooks;
    autograd.grad calls a captured leaf's tensor hooks but not its node's hooks, and captures the
    gradient of a node it also runs as it arrived, before that node's hooks."""
    log = []
    a = torch.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 3
    a.register_hook(lambda g: log.append(("a hook", g.item())) or g * 10)
    acc = b.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: log.append(("acc prehook", g[0].item())))
    acc.register_hook(lambda gi, go: log.append(("acc posthook", go[0].item())))
    b.register_hook(lambda g: log.append(("b hook", g.item())) or g * 100)
    b.grad_fn.register_prehook(lambda g: log.append(("b prehook", g[0].item())))
    b.grad_fn.register_hook(lambda gi, go: log.append(("b posthook", go[0].item())))
    result = run(torch, a, b, c)
    return log, result, a.grad


RUNS = {
    "backward": lambda torch, a, b, c: c.backward(),
    "grad of the leaf": lambda torch, a, b, c: torch.autograd.grad(c, a),
    "grad of the middle": lambda torch, a, b, c: torch.autograd.grad(c, b),
    "grad of both": lambda torch, a, b, c: torch.autograd.grad(c, (a, b)),
    "backward into the middle": lambda torch, a, b, c: c.backward(inputs=[b]),
}


@pytest.mark.parametrize("run", RUNS)
def test_which_hooks_run_in_backward_and_grad(run):
    assert_same(hooks_by_where_they_run, RUNS[run])


def hook_removed_during_backward(torch):
    """A hook removed by another while the node runs still runs this time (the node goes through
    its hooks as they were when it started), and not the next."""
    calls = []
    a = torch.tensor([1.0], requires_grad=True)
    b = a * 2
    handles = []
    b.grad_fn.register_prehook(lambda g: [h.remove() for h in handles] and None)
    handles.append(b.grad_fn.register_prehook(lambda g: calls.append("second")))
    handles.append(b.register_hook(lambda g: calls.append("tensor")))
    b.sum().backward(retain_graph=True)
    b.sum().backward()
    return calls


def test_a_hook_removed_during_backward_still_runs_that_time():
    assert_same(hook_removed_during_backward)


def nested_backwards(torch, depth, fail_at):
    """A backward inside each node's backward, ``depth`` deep (issue 37): past 60 torch goes on in a
    fresh thread; minigrad does the same, so depth is not bounded by the stack. The grad mode each
    nested backward sees, and an error raised at the bottom, come out as torch's."""
    modes = []

    class Deeper(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with torch.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, grad):
            modes.append(torch.is_grad_enabled())
            if ctx.x < fail_at:
                raise RuntimeError(f"bottom reached at {ctx.x.item()}")
            if ctx.x >= 0:
                with torch.enable_grad():
                    Deeper.apply(ctx.x).sum().backward()
            return grad * 2

    x = torch.tensor(float(depth), requires_grad=True)
    result = outcome(lambda: Deeper.apply(x).sum().backward())
    return result, x.grad, len(modes), set(modes)


@pytest.mark.parametrize("depth, fail_at", [(150, -10), (150, 5)], ids=["to the bottom", "failing at the bottom"])
def test_nested_backwards_deeper_than_the_stack(depth, fail_at):
    """150 deep on one stack: some 1200 of minigrad's frames, past Python's limit of 1000."""
    assert_same(nested_backwards, depth, fail_at)


def only_inputs_false(torch):
    x = torch.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grads = torch.autograd.grad((x * 2).sum(), x, only_inputs=False)
    return grads, [(warning.category.__name__, str(warning.message)) for warning in caught]


def test_only_inputs_is_ignored_with_a_warning():
    assert_same(only_inputs_false)


def test_batched_gradients_are_refused_clearly():
    """torch runs them under vmap, which minigrad has not: a clear refusal, not a wrong answer."""
    x = minigrad.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="is_grads_batched=True is not supported"):
        minigrad.autograd.grad(x * 2, x, grad_outputs=minigrad.eye(2), is_grads_batched=True)
