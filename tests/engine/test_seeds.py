"""The course's seed material (shared/seeds/) as parity tests: each forum or tutorial puzzle runs
once with torch and once with minigrad, and whatever torch does — values, grad_fn names, the exact
error — is what minigrad must do. Where a snippet lost a line on the forum, the missing line is
restored and says so.
"""
import contextlib
import io
import weakref

import pytest

from coursekit.testing import assert_same, both, graph_signature, outcome


def first_failure(step, times):
    """Run ``step()`` up to ``times`` times: (iteration, error) of the first failure, or (times, None)."""
    for i in range(times):
        result = outcome(step)
        if result is not None:
            return i, result
    return times, None


def printed(torch, snippet):
    """What ``snippet(torch)`` prints, and returns: the forum's printed output is compared too."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = snippet(torch)
    return out.getvalue(), result


# --- seed 000: chat answer on a VQ-VAE with an EMA codebook -------------------------------------

def ema_update_before_backward(torch, under_no_grad):
    """A stand-in for the VQ-VAE: the ``emb`` buffer is saved by ``x @ emb`` and updated before backward."""
    torch.manual_seed(0)
    emb = torch.randn(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    loss = (x @ emb).sum()
    with torch.no_grad() if under_no_grad else contextlib.nullcontext():
        emb.copy_(emb * 0.9 + 0.1)
    return outcome(loss.backward), x.grad


@pytest.mark.parametrize("under_no_grad", [True, False], ids=["under no_grad", "without no_grad"])
def test_000_ema_buffer_update_under_no_grad_still_breaks_backward(under_no_grad):
    """Seed 000: the chat answer claims the error is "backward a second time" and that wrapping the
    EMA update in no_grad fixes it. In torch the version counter sees the in-place copy_ either way
    and backward fails with the inplace message; minigrad must fail the same way."""
    expected, actual = both(ema_update_before_backward, under_no_grad)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    error = expected[0]
    assert error[0] == "error" and "modified by an inplace operation" in error[2]
    assert "second time" not in error[2]


def ema_update_after_backward(torch):
    torch.manual_seed(0)
    emb = torch.randn(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    loss = (x @ emb).sum()
    loss.backward()
    with torch.no_grad():
        emb.copy_(emb * 0.9 + 0.1)
    return x.grad, emb, emb._version


def test_000_ema_buffer_update_after_backward_works():
    """Seed 000: what does fix the VQ-VAE is updating the buffer once backward has used it."""
    assert_same(ema_update_after_backward, close=True)


def vq_ema_training(torch, update, codebook="buffer", steps=3):
    """Seed 000's setting, runnable: an encoder, a VectorQuantizerEMA whose codebook buffers follow
    an exponential moving average (the chat's update code), straight-through quantization into a
    decoder, and a commitment loss written as the distance to the nearest code — so a loss term
    goes through ``flat @ embedding``, which saves the codebook. ``update`` says where the EMA
    update runs: "forward" (in forward, grad on), "forward, no_grad" (the chat's fix), "after
    backward" (grad on) or "after backward, no_grad"; with ``codebook="clone"`` forward reads a clone
    of the buffer. Returns the first failing step and its error (or the number of steps and None)."""
    F = torch.nn.functional

    class VectorQuantizerEMA(torch.nn.Module):
        def __init__(self, dim, codes, decay=0.9, eps=1e-5):
            super().__init__()
            self.decay, self.eps = decay, eps
            self.register_buffer("embedding", torch.randn(dim, codes))
            self.register_buffer("cluster_size", torch.zeros(codes))
            self.register_buffer("embed_avg", self.embedding.clone())

        def forward(self, flat):
            embedding = self.embedding.clone() if codebook == "clone" else self.embedding
            distances = (flat ** 2).sum(1, keepdim=True) - 2 * flat @ embedding + (embedding ** 2).sum(0, keepdim=True)
            nearest = (-distances).max(dim=1, keepdim=True).values
            encodings = (-distances == nearest).float()
            quantized = encodings @ embedding.t()
            if update.startswith("forward"):
                with torch.no_grad() if update.endswith("no_grad") else contextlib.nullcontext():
                    self.ema_update(flat, encodings)
            commitment = -nearest.mean()
            return flat + (quantized - flat).detach(), 0.25 * commitment, encodings

        def ema_update(self, flat, encodings):
            n = encodings.sum(0).detach()
            self.cluster_size.mul_(self.decay).add_(n, alpha=1 - self.decay)
            embed_sum = flat.t() @ encodings
            self.embed_avg.mul_(self.decay).add_(embed_sum, alpha=1 - self.decay)
            self.embedding.copy_(self.embed_avg / (self.cluster_size + self.eps).unsqueeze(0))

    torch.manual_seed(0)
    encoder, decoder = torch.nn.Linear(5, 3), torch.nn.Linear(3, 5)
    model = VectorQuantizerEMA(3, 4)
    x = torch.randn(8, 5)

    def step():
        encoder.zero_grad()
        flat = encoder(x)
        quantized, vq_loss, encodings = model(flat)
        loss = F.l1_loss(decoder(quantized), x) + vq_loss
        loss.backward()
        if update.startswith("after backward"):
            with torch.no_grad() if update.endswith("no_grad") else contextlib.nullcontext():
                model.ema_update(flat, encodings)

    return first_failure(step, steps), encoder.weight.grad


@pytest.mark.parametrize("update, codebook", [
    ("after backward", "buffer"), ("forward", "buffer"), ("forward, no_grad", "buffer"),
    ("after backward, no_grad", "buffer"), ("forward, no_grad", "clone"),
])
def test_000_vq_ema_training_loop(update, codebook):
    """Seed 000 in all its forms. With the EMA update under grad mode after backward, the codebook
    takes a history that chains into the step's graph, freed by the next backward ("backward a
    second time", at the second step); updating in forward edits a buffer that the distance's
    matmul saved, so backward fails on its version counter, under no_grad too ("no_grad fixes it"
    is wrong); updating under no_grad after backward, or reading a clone in forward, works."""
    expected, actual = both(vq_ema_training, update, codebook)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"


# --- seed 001: "Graph is reused while it shouldn't" ---------------------------------------------

def forum_001_loop(torch, recompute_y, retain_graph):
    """The forum's loop; the lost ``loss.backward()`` line is restored at the end of each iteration."""
    measure = torch.nn.MSELoss()
    x = torch.tensor([1, 0], dtype=torch.float64)
    t = torch.eye(2, dtype=torch.float64, requires_grad=True)
    a = torch.ones(2, dtype=torch.float64, requires_grad=True)
    y = t @ a
    steps = []
    for __ in range(2):
        x_out = t @ (x + t @ a) if recompute_y else t @ (x + y)
        loss = measure(x_out, x)
        steps.append((outcome(lambda: loss.backward(retain_graph=retain_graph)), t.grad.clone(), a.grad.clone()))
    return steps


def test_001_reused_y_fails_at_second_backward():
    """Seed 001: ``y = t @ a`` is computed once; the first backward frees its saved tensors, so the
    second iteration's backward fails with torch's message (and the grads it leaves are torch's)."""
    expected, actual = both(forum_001_loop, False, None)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected[1][0][0] == "error"


def test_001_recomputing_t_at_a_inside_the_loop_works():
    """Seed 001: with ``t @ (x + t @ a)`` each iteration builds its whole graph and both backwards work."""
    assert_same(forum_001_loop, True, None)


def test_001_retain_graph_works_and_accumulates():
    """Seed 001: ``retain_graph=True`` keeps the shared ``t @ a`` part; grads accumulate over iterations."""
    assert_same(forum_001_loop, False, True)


def del_y_after_the_loop(torch):
    """Who keeps ``t @ a``'s saved tensors alive: ``a`` is only reachable through the graph here."""
    measure = torch.nn.MSELoss()
    x = torch.tensor([1, 0], dtype=torch.float64)
    t = torch.eye(2, dtype=torch.float64, requires_grad=True)
    a = torch.ones(2, dtype=torch.float64, requires_grad=True)
    y = t @ a
    a_alive = weakref.ref(a)
    del a
    for __ in range(2):
        x_out = t @ (x + y)
        loss = measure(x_out, x)
        loss.backward(retain_graph=True)
    alive = [a_alive() is not None]
    del y
    alive.append(a_alive() is not None)
    del x_out, loss
    alive.append(a_alive() is not None)
    return alive


def test_001_del_y_frees_the_shared_graph_once_nothing_references_it():
    """Seed 001: "to free the upper part, delete everything that references it": after ``del y`` the
    last ``loss`` still references ``t @ a``'s node; only deleting it too lets the graph go."""
    assert_same(del_y_after_the_loop)


def shared_subgraph(torch):
    """The ``y = a * 2`` example; the forum's one-argument ``measure(x_out)`` gets a zero target."""
    torch.manual_seed(0)
    measure = torch.nn.MSELoss()
    a = torch.rand(10, requires_grad=True)
    y = a * 2
    x_out0 = 2 * y
    loss0 = measure(x_out0, torch.zeros(10))
    x_out1 = 2 * y
    loss1 = measure(x_out1, torch.zeros(10))
    y_node0 = loss0.grad_fn.next_functions[0][0].next_functions[0][0]
    y_node1 = loss1.grad_fn.next_functions[0][0].next_functions[0][0]
    return (y_node0 is y.grad_fn and y_node1 is y.grad_fn, graph_signature(loss1),
            outcome(loss0.backward), outcome(lambda: a.grad.clone()), outcome(loss1.backward), a.grad)


def test_001_two_losses_share_the_y_node_and_the_second_backward_fails():
    """Seed 001: loss0 -> x_out0 -> y -> a and loss1 -> x_out1 -> y -> a share the y -> a node, so
    loss1's backward fails after loss0's freed it."""
    assert_same(shared_subgraph, close=True)


def int_leaf_as_posted(torch):
    a = torch.tensor(1, requires_grad=True)
    return a * torch.tensor(2)


def test_001_posted_int_leaf_cannot_require_grad():
    """Seed 001: ``torch.tensor(1, requires_grad=True)`` as posted is an integer tensor: torch refuses it."""
    assert_same(int_leaf_as_posted)


def use_after_backward(torch):
    """The posted snippet with ``1.`` and its lost ``c.backward()`` restored."""
    a = torch.tensor(1., requires_grad=True)
    b = a * torch.tensor(2)
    c = b * torch.tensor(3)
    c.backward()
    d = b * torch.tensor(4)
    e = c * torch.tensor(5)
    print('d = ', d)
    print('e = ', e)
    return a.grad, outcome(d.backward), outcome(e.backward)


def test_001_b_and_c_still_compute_d_and_e_after_backward():
    """Seed 001: backward frees the graph's buffers, not the tensors: d and e compute and print as in
    torch; backpropagating through the freed b and c nodes fails."""
    assert_same(printed, use_after_backward)


def retain_graph_in_a_loop_then_del_b(torch):
    a = torch.tensor(1., requires_grad=True)
    b = torch.tensor(2., requires_grad=True)
    c = a * b
    for _ in range(5):
        print(c.backward(retain_graph=True))
        print(a.grad, b.grad)
    del b
    for _ in range(3):
        c.backward(retain_graph=True)
        print(a.grad)


def test_001_retain_graph_loop_prints_none_and_del_b_keeps_the_saved_copy():
    """Seed 001: ``backward()`` returns None, grads accumulate 2, 4, 6...; after ``del b`` backward
    still works because the Mul node holds its own reference to b."""
    assert_same(printed, retain_graph_in_a_loop_then_del_b)


# --- seed 002: "Which is freed, which is not?" --------------------------------------------------

def linear_setup(torch):
    """The forum lost the definition of ``a``; it is restored as ``torch.rand(3)``, seeded."""
    torch.manual_seed(0)
    x = torch.nn.Linear(3, 3)
    a = torch.rand(3)
    return x, a


def forward_inside_the_loop(torch):
    x, a = linear_setup(torch)
    for i in range(100):
        y = torch.sum(x(a))
        y.backward()
    return x.weight.grad, x.bias.grad


def test_002_forward_inside_the_loop_works_100_times():
    """Seed 002, example 1: each iteration builds a fresh graph, so 100 backwards work and accumulate."""
    assert_same(forward_inside_the_loop, close=True)


def forward_outside_the_loop(torch):
    x, a = linear_setup(torch)
    y = torch.sum(x(a))
    return first_failure(y.backward, 100), x.weight.grad


def test_002_forward_outside_the_loop_fails_at_the_second_backward():
    """Seed 002, example 2: one graph, backpropagated 100 times: the second backward fails."""
    expected, actual = both(forward_outside_the_loop)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected[0][0] == 1


def x_out_outside_the_loop(torch):
    x, a = linear_setup(torch)
    x_out = x(a)

    def step():
        y = torch.sum(x_out)
        y.backward()
    return first_failure(step, 100), x.weight.grad


def test_002_x_out_outside_the_loop_fails_at_the_second_backward():
    """Seed 002: a new ``torch.sum`` each iteration does not rebuild the Linear's (freed) part of the graph."""
    assert_same(x_out_outside_the_loop)


def backward_twice_in_the_loop(torch):
    x, a = linear_setup(torch)

    def step():
        x_out = x(a)
        y = torch.sum(x_out)
        y.backward()
        y.backward()
    return first_failure(step, 100), x.bias.grad


def test_002_backward_twice_in_the_loop_fails():
    """Seed 002: a fresh graph per iteration can still be backpropagated only once."""
    assert_same(backward_twice_in_the_loop)


def mul_by_five_twice(torch):
    a = torch.tensor(2.0, requires_grad=True)
    c = a * 5
    c.backward()
    return a.grad.clone(), outcome(c.backward), a.grad


def test_002_c_equals_a_times_5_backward_twice_fails():
    """Seed 002: ``c = a * 5`` saves the 5 for backward; the second ``c.backward()`` finds it freed."""
    assert_same(mul_by_five_twice)


def which_is_saved(torch, edited):
    """The forum's experiment; its lost first line is restored as a clone of a random leaf."""
    torch.manual_seed(0)
    leaf = torch.rand(10, requires_grad=True)
    self = leaf.clone()  # "We do a clone to be allowed to do inplace ops on it later"
    other = torch.rand(10)  # This one does NOT requires gradients
    output = self * other
    output.backward(torch.ones_like(output))
    output = self * other
    if edited == "self":
        self += 1
    else:
        other += 1
    return outcome(lambda: output.backward(torch.ones_like(output))), leaf.grad, self.grad_fn.name()


@pytest.mark.parametrize("edited", ["self", "other"])
def test_002_mul_saves_only_what_its_backward_needs(edited):
    """Seed 002: ``output = self * other`` with only ``self`` requiring grad saves ``other`` alone:
    editing ``self`` in place leaves backward working, editing ``other`` fails with torch's message."""
    assert_same(which_is_saved, edited)


# --- seed 003: "What does freeing the graph mean?" ----------------------------------------------

def forum_003(torch, detach):
    """The forum's loop; afterwards, whether the graph still keeps the leaf ``x`` alive."""
    m = torch.tensor([0.0], requires_grad=True)
    for i in range(1):
        x = torch.tensor([3.0], requires_grad=True)
        k = x*2
        k.backward()
        m = k.detach() if detach else k
    x_alive = weakref.ref(x)
    del x, k
    return m, x_alive() is not None


def m_is_k(torch):
    m, x_alive = forum_003(torch, detach=False)
    return (m.requires_grad, repr(m), m.grad_fn.name(), x_alive, outcome(lambda: m.grad_fn._saved_self),
            outcome(lambda: m.grad_fn._saved_other), outcome(m.backward))


def test_003_after_backward_the_grad_fn_chain_remains_but_saved_tensors_are_gone():
    """Seed 003: ``m = k`` still prints ``grad_fn=<MulBackward0>`` and keeps the graph (and leaf x)
    alive, but the saved tensors were freed: reading them, or a second backward, gives torch's result
    (None for ``_saved_self``, which mul never saved; the "second time" error for ``_saved_other``)."""
    assert_same(m_is_k)


def m_is_k_detached(torch):
    m, x_alive = forum_003(torch, detach=True)
    return m.requires_grad, repr(m), m.grad_fn, x_alive


def test_003_detach_drops_the_graph():
    """Seed 003: ``m = k.detach()`` has requires_grad False, no grad_fn, and lets the graph (and x) go."""
    assert_same(m_is_k_detached)


def saved_before_backward(torch):
    x = torch.tensor([3.0], requires_grad=True)
    k = x*2
    return outcome(lambda: k.grad_fn._saved_self), outcome(lambda: k.grad_fn._saved_other)


def test_003_saved_tensors_are_readable_before_backward():
    """Seed 003: before backward the MulBackward0 node holds ``other`` (the 2) and not ``self``."""
    assert_same(saved_before_backward)


# --- seed 004: tutorial "Autograd and Backpropagation in PyTorch" (graph lifecycle) -------------

def first_example(torch):
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    names = [None if t.grad_fn is None else t.grad_fn.name() for t in (x, y, z, out)]
    value = out.item()
    out.backward()
    return x.requires_grad, names, value, x.grad


def test_004_first_example_values_and_grad_fn_names():
    """Seed 004: AddBackward0, MulBackward0, MeanBackward0, out = 27 and x.grad all 4.5, as torch gives."""
    assert_same(first_example)


def next_functions_chain(torch):
    torch.manual_seed(0)
    x = torch.randn(3, 3, requires_grad=True)
    y = x * 2
    z = y.sum()
    first = [(None if n is None else n.name(), i) for n, i in z.grad_fn.next_functions]
    second = [(None if n is None else n.name(), i) for n, i in z.grad_fn.next_functions[0][0].next_functions]
    return first, second, graph_signature(z)


def test_004_next_functions_chain():
    """Seed 004: SumBackward0 -> MulBackward0 -> AccumulateGrad. The tutorial's printed output drops
    the ``(None, 0)`` edge of the constant 2; torch has it, and so must minigrad."""
    assert_same(next_functions_chain)


def second_backward_as_written(torch):
    torch.manual_seed(0)
    x = torch.randn(3, 3, requires_grad=True)
    z = (x * 2).sum()
    z.backward()
    try:
        z.backward()
    except RuntimeError as e:
        print(f"Expected error: {e[:80]}...")


def second_backward_fixed(torch):
    torch.manual_seed(0)
    x = torch.randn(3, 3, requires_grad=True)
    z = (x * 2).sum()
    z.backward()
    try:
        z.backward()
    except RuntimeError as e:
        return f"Expected error: {str(e)[:80]}..."


@pytest.mark.parametrize("snippet", [second_backward_as_written, second_backward_fixed],
                         ids=["as written: e[:80] is a TypeError", "str(e)[:80]"])
def test_004_second_backward_error(snippet):
    """Seed 004: the second backward raises torch's RuntimeError. The tutorial slices it with
    ``e[:80]``, which itself raises TypeError (exceptions are not subscriptable) — in both libraries."""
    assert_same(snippet)


def retain_graph_accumulation(torch):
    torch.manual_seed(0)
    x = torch.randn(3, 3, requires_grad=True)
    (x * 2).sum().backward()
    x.grad = None
    y2 = x * 3
    z2 = y2.sum()
    z2.backward(retain_graph=True)
    first_grad = x.grad.clone()
    z2.backward()
    return first_grad, x.grad


def test_004_retain_graph_second_backward_accumulates():
    """Seed 004: with retain_graph the second backward works and x.grad goes from 3 to 6."""
    assert_same(retain_graph_accumulation)


def training_steps(torch, zero_grad):
    """The tutorial's loop in small: nn.Linear + MSELoss, manual SGD under no_grad instead of optim."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    criterion = torch.nn.MSELoss()
    inputs, targets = torch.randn(8, 3), torch.randn(8, 1)
    history = []
    for step in range(4):
        if zero_grad:
            model.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        history.append((loss.item(), [p.grad.clone() for p in model.parameters()]))
    return history


@pytest.mark.parametrize("zero_grad", [True, False], ids=["with zero_grad", "missing zero_grad"])
def test_004_missing_zero_grad_accumulates_over_steps(zero_grad):
    """Seed 004: without zero_grad every step's gradient is added to the previous ones, and the
    updates (and losses) follow; minigrad's must be torch's, step by step."""
    assert_same(training_steps, zero_grad, close=True)


IN_PLACE_ON_LEAF = {
    "x += 1": lambda x: x.__iadd__(1),
    "x.mul_(2)": lambda x: x.mul_(2),
    "x[0] = 5.": lambda x: x.__setitem__(0, 5.),
}


def in_place_on_leaf(torch, edit):
    x = torch.ones(3, requires_grad=True)
    return outcome(IN_PLACE_ON_LEAF[edit], x), x._version, x


@pytest.mark.parametrize("edit", IN_PLACE_ON_LEAF)
def test_004_in_place_on_a_leaf_that_requires_grad_fails(edit):
    """Seed 004: in-place edits of a leaf that requires grad raise torch's error and leave it unchanged."""
    assert_same(in_place_on_leaf, edit)


def out_of_place_fixes(torch):
    x = torch.ones(3, requires_grad=True)
    y = x + 1
    z = x.clone()
    z[0] = 5.
    (y * z).sum().backward()
    return y.grad_fn.name(), z.grad_fn.name(), x.grad


def test_004_out_of_place_and_clone_fixes_work():
    """Seed 004's fix: ``x = x + 1`` and ``x = x.clone(); x[0] = value`` keep the graph and the grads."""
    assert_same(out_of_place_fixes)


def training_under_no_grad(torch):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    inputs, targets = torch.randn(8, 3), torch.randn(8, 1)
    with torch.no_grad():
        loss = torch.nn.MSELoss()(model(inputs), targets)
    return loss.requires_grad, loss.grad_fn is None, outcome(loss.backward), [p.grad for p in model.parameters()]


def test_004_training_under_no_grad_has_no_graph():
    """Seed 004: a loss computed under no_grad has no grad_fn; backward fails and no grad appears."""
    assert_same(training_under_no_grad)


NON_SCALAR_FIXES = {
    "no gradient": lambda torch, y: y.backward(),
    "gradient=ones_like": lambda torch, y: y.backward(gradient=torch.ones_like(y)),
    ".sum()": lambda torch, y: y.sum().backward(),
    ".mean()": lambda torch, y: y.mean().backward(),
}


def non_scalar_backward(torch, how):
    torch.manual_seed(0)
    x = torch.randn(2, 3, requires_grad=True)
    y = x * x
    return outcome(NON_SCALAR_FIXES[how], torch, y), x.grad


@pytest.mark.parametrize("how", NON_SCALAR_FIXES)
def test_004_non_scalar_backward_and_its_fixes(how):
    """Seed 004: backward() of a non-scalar needs a gradient; ``gradient=``, ``.sum()`` and ``.mean()`` fix it."""
    assert_same(non_scalar_backward, how, close=True)


def three_ways_out_of_the_graph(torch):
    w = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        under_no_grad = w * 2
    with torch.inference_mode():
        under_inference_mode = w * 2
    detached = (w * 2).detach()
    results = {}
    for name, t in [("no_grad", under_no_grad), ("inference_mode", under_inference_mode), ("detach", detached)]:
        results[name] = (t.requires_grad, t.grad_fn is None, t.is_inference(),
                         outcome(lambda: (w * t).sum().backward()), outcome(lambda: w.grad.clone()),
                         outcome(lambda: t.sum().backward()))
    return results


def test_004_no_grad_vs_inference_mode_vs_detach():
    """Seed 004: all three give tensors without grad; only the inference-mode one cannot be saved for
    backward later (torch's exact message), and none can be backpropagated itself."""
    assert_same(three_ways_out_of_the_graph)
