"""Issue 9, item 3: non-reentrant gradient checkpointing, as torch's — same gradients, the body run
again in each backward that needs it, the forward's random numbers, retain_graph, no_grad; each
scenario run with torch and with minigrad."""
import contextlib
import gc
import sys
import warnings
import weakref

import pytest

from coursekit.testing import assert_same, blamed, both, nearly_equal, outcome


def block(torch, runs, after=None):
    """A small body with saved tensors, that counts its runs (a side effect, as a print would be)."""
    def body(x, w):
        runs.append("start")
        h = (x @ w).tanh()
        out = (h * h.exp()).sum(dim=1)
        if after is not None:
            after.append("end")
        return out
    return body


def with_and_without(torch, checkpointed):
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    runs, ends = [], []
    body = block(torch, runs, ends)
    if checkpointed:
        out = torch.utils.checkpoint.checkpoint(body, x, w, use_reentrant=False)
    else:
        out = body(x, w)
    after_forward = len(runs)
    out.sum().backward()
    return out, x.grad, w.grad, after_forward, len(runs), len(ends)


def test_same_gradients_and_the_body_runs_again_in_backward():
    expected, actual = both(with_and_without, True)
    plain = both(with_and_without, False)[0]
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected[:3] == plain[:3], "checkpointing changes no value or gradient"
    assert expected[3:] == (1, 2, 1), "one run in forward, one in backward, stopped once all is recomputed"


def retained(torch):
    torch.manual_seed(0)
    x = torch.randn(2, 4, requires_grad=True)
    w = torch.randn(4, 3, requires_grad=True)
    runs = []
    out = torch.utils.checkpoint.checkpoint(block(torch, runs), x, w, use_reentrant=False).sum()
    out.backward(retain_graph=True)
    out.backward()
    return x.grad, w.grad, len(runs)


def test_each_backward_recomputes_with_retain_graph():
    assert_same(retained, close=True)


def outputs_one_at_a_time(torch):
    """A body with two outputs, backpropagated one backward at a time: torch recomputes once for each
    backward call (its graph task), the first filling holders the second does not take; the third
    backward recomputes over a holder the first one freed (exp's)."""
    runs = []
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    first, second = torch.utils.checkpoint.checkpoint(
        lambda x: (runs.append(1), x.exp(), (x * x).tanh())[1:], x, use_reentrant=False)
    first.sum().backward()
    after_first = len(runs)
    second.sum().backward(retain_graph=True)
    after_second = len(runs)
    second.sum().backward()
    return {"runs after each backward": [after_first, after_second, len(runs)], "x.grad": x.grad}


def test_each_backward_call_recomputes_for_itself():
    assert_same(outputs_one_at_a_time)


def random_body(torch):
    """Random numbers drawn in the body: the recomputation must draw the same ones."""
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)

    def body(x):
        noise = torch.rand(3, 4)
        return (x * noise).exp().sum()

    out = torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False)
    after = torch.rand(1)  # the generator moved on as if the body had run once
    out.backward()
    return out, x.grad, after


def test_the_forwards_random_state_is_replayed():
    assert_same(random_body, close=True)


def not_preserved(torch):
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    out = torch.utils.checkpoint.checkpoint(lambda x: (x * torch.rand(3)).exp().sum(), x, use_reentrant=False,
                                            preserve_rng_state=False)
    torch.manual_seed(0)
    torch.randn(3)
    reference = torch.rand(3)
    out.backward()
    return out, x.grad, reference


def test_without_preserve_rng_state_the_recomputation_draws_anew():
    assert_same(not_preserved, close=True)


def under_no_grad(torch):
    runs = []
    x = torch.ones(2, 4, requires_grad=True)
    w = torch.ones(4, 3)
    with torch.no_grad():
        out = torch.utils.checkpoint.checkpoint(block(torch, runs), x, w, use_reentrant=False)
    return out, out.requires_grad, len(runs)


def test_under_no_grad_the_body_just_runs():
    assert_same(under_no_grad, close=True)


def input_edited_in_place(torch):
    x = torch.ones(2, 4, requires_grad=True)
    a = x * 2
    w = torch.ones(4, 3)
    out = torch.utils.checkpoint.checkpoint(block(torch, []), a, w, use_reentrant=False).sum()
    with torch.no_grad():
        a.add_(1)
    out.backward()


def test_an_input_edited_after_the_forward_is_caught_by_its_version():
    assert_same(input_edited_in_place)


def through_autograd_grad(torch):
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    out = torch.utils.checkpoint.checkpoint(block(torch, []), x, w, use_reentrant=False).sum()
    return torch.autograd.grad(out, (x, w))


def test_autograd_grad_through_a_checkpoint():
    assert_same(through_autograd_grad, close=True)


def keyword_arguments(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out = torch.utils.checkpoint.checkpoint(lambda x, scale: (x.exp() * scale).sum(), x, scale=3.0,
                                            use_reentrant=False)
    out.backward()
    return out, x.grad


def test_keyword_arguments_reach_the_body():
    assert_same(keyword_arguments, close=True)


def without_use_reentrant(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.utils.checkpoint.checkpoint(lambda x: x.exp().sum(), x)
    out.backward()
    return [str(w.message) for w in caught], x.grad


def test_leaving_out_use_reentrant_gives_torchs_warning():
    assert_same(without_use_reentrant, close=True)


def backward_validity(torch):
    """torch's check, called by hand: a warning, at the caller's line, only where no tensor requires grad."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.utils.checkpoint.check_backward_validity([torch.ones(2), 3, torch.ones(1, requires_grad=True)])
        torch.utils.checkpoint.check_backward_validity([torch.ones(2), "not a tensor"])
    return [(str(w.message), w.filename == __file__) for w in caught]


def test_check_backward_validity_warns_as_torchs():
    expected, actual = both(backward_validity)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected == [("None of the inputs have requires_grad=True. Gradients will be None", True)]


def reentrant(torch, case):
    """The old form, use_reentrant=True: what it does differently, as torch does it."""
    torch.manual_seed(0)
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    runs = []

    def cube(x, scale=1.0):
        runs.append(1)
        return (x ** 3).sum() * scale

    def run(*args, **kwargs):
        return torch.utils.checkpoint.checkpoint(cube, *args, use_reentrant=True, **kwargs)

    if case == "gradients, the node, the body's runs":
        y = run(x)
        name = y.grad_fn.name()
        y.backward()
        return y, name, x.grad, len(runs)
    if case == "a layer on data that requires no grad":
        first, second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hidden = torch.utils.checkpoint.checkpoint(first, torch.randn(2, 4), use_reentrant=True)
        second(hidden).sum().backward()
        module = sys.modules[torch.utils.checkpoint.checkpoint.__module__]  # torch's warning: its forward's line
        return ([(str(w.message), blamed(w, __file__, module)) for w in caught], hidden.requires_grad,
                first.weight.grad, second.weight.grad)
    if case == "a None among the arguments":
        y = torch.utils.checkpoint.checkpoint(lambda x, nothing, scale: (x ** 3).sum() * scale, x, None, 2.0,
                                              use_reentrant=True)
        y.backward()
        return y, x.grad
    if case == "autograd.grad":
        return outcome(lambda: torch.autograd.grad(run(x), x))
    if case == "backward(inputs=)":
        return outcome(lambda: run(x).backward(inputs=[x]))
    if case == "a keyword argument":
        return outcome(lambda: run(x, scale=2.0))
    if case == "an output that needs no grad":
        def detached(x):
            with torch.no_grad():
                return x * 2
        out = torch.utils.checkpoint.checkpoint(detached, x, use_reentrant=True) + x
        return outcome(lambda: out.sum().backward())
    if case == "two outputs, dropout, a non-tensor argument":
        def body(x, w, p):
            h = torch.nn.functional.dropout(x @ w, p)
            return h.tanh(), (h * h).sum()
        w = torch.randn(2, 3, requires_grad=True)
        a, b = torch.utils.checkpoint.checkpoint(body, x.expand(4, 2), w, 0.5, use_reentrant=True)
        (a.sum() + b).backward()
        return a, b, x.grad, w.grad


@pytest.mark.parametrize("case", ["gradients, the node, the body's runs", "a layer on data that requires no grad",
                                  "a None among the arguments",
                                  "autograd.grad", "backward(inputs=)", "a keyword argument",
                                  "an output that needs no grad", "two outputs, dropout, a non-tensor argument"])
def test_the_reentrant_form_as_torchs(case):
    """use_reentrant=True is torch's CheckpointFunction: a parameter used inside, on data that requires
    no grad, gets none; autograd.grad, backward(inputs=) and keyword arguments are refused with
    torch's errors; the forward's random state is replayed in the backward."""
    assert_same(reentrant, case, close=True)


def different_recomputation(torch):
    """A body whose recomputation saves fewer tensors than its forward did."""
    calls = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def body(x):
        calls.append(1)
        return x.exp().exp().sum() if len(calls) == 1 else x.sum() * 1.0

    out = torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False)
    out.backward()


def test_a_recomputation_that_saves_less_is_an_error():
    expected, actual = both(different_recomputation)
    assert expected[:2] == ("error", "CheckpointError")
    assert actual == expected


def early_stop(torch, switch, options):
    """How many times the body's last line (a clone, which saves nothing) runs, with
    set_checkpoint_early_stop(s) in force in the forward (not in the backward) and checkpoint's own
    early_stop: without early stop the recomputation runs to the end."""
    clones = []

    def body(x):
        h = x.sin().cos()
        clones.append(1)
        return h.clone()

    x = torch.tensor(1.0, requires_grad=True)
    with contextlib.ExitStack() as stack:
        for enable in switch:
            stack.enter_context(torch.utils.checkpoint.set_checkpoint_early_stop(enable))
        out = torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False, **options)
    out.backward()
    return len(clones), x.grad


@pytest.mark.parametrize("switch, options", [((), {}), ((), {"early_stop": False}), ((False,), {}),
                                             ((False,), {"early_stop": True}), ((False, True), {"early_stop": False})])
def test_early_stop_and_its_switch(switch, options):
    """On by default; the switch in force in the forward wins over the argument; the innermost wins."""
    assert_same(early_stop, switch, options)


def nondeterministic(torch, forward, recomputation, switches, options):
    """A body that saves differently when it runs again: what backward raises, in torch's words."""
    bodies = {"three saved": lambda x: x.sin().exp().sin(), "two saved": lambda x: x.sin().exp(),
              "two saved, another shape": lambda x: x.sin() * torch.tensor([1.0, 2.0])}
    runs = []

    def body(x):
        runs.append(1)
        return bodies[forward if len(runs) == 1 else recomputation](x)

    x = torch.tensor([0.5], requires_grad=True)
    with contextlib.ExitStack() as stack:
        for switch, enable in switches:
            stack.enter_context(getattr(torch.utils.checkpoint, switch)(enable))
        torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False, **options).backward()
    return x.grad


@pytest.mark.parametrize("forward, recomputation, switches, options", [
    ("three saved", "two saved", (), {}),
    ("two saved", "three saved", (), {}),  # early stop: the third is never reached, no error
    ("two saved", "three saved", (), {"early_stop": False}),
    ("two saved", "three saved", (("set_checkpoint_early_stop", False),), {}),
    ("two saved", "two saved, another shape", (), {}),
    ("two saved", "two saved, another shape", (("set_checkpoint_debug_enabled", False),), {"debug": True}),
])
def test_a_recomputation_that_saves_otherwise_is_an_error(forward, recomputation, switches, options):
    """More tensors (without early stop), fewer, or one of another shape: torch's CheckpointError,
    word for word (the positions and metadata of what differs, the tip that ends it)."""
    assert_same(nondeterministic, forward, recomputation, switches, options)


def debug_headings(torch):
    """The headings of the error debug mode gives (debug=True, or the switch over debug=False)."""
    headings = []
    for switches, options in (((), {"debug": True}), ((("set_checkpoint_debug_enabled", True),), {"debug": False})):
        try:
            nondeterministic(torch, "two saved", "two saved, another shape", switches, options)
        except torch.utils.checkpoint.CheckpointError as error:
            headings.append([line for line in str(error).split("\n") if line.startswith(("|", "+", " ERROR", "Op"))])
    return headings


def test_debug_mode_says_so_and_logs_what_ran():
    """In debug mode the error is torch's debug message; its logs are minigrad's own (the tensors
    saved, and where, where torch logs its operators), so it is compared by its headings. (One test
    for both ways to ask: in a later pytest test than the first that used it, torch's debug mode
    fails in its own logging, "not all arguments converted during string formatting".)"""
    expected, actual = both(debug_headings)
    assert len(expected) == 2 and actual == expected


def bad_options(torch, use_reentrant, options):
    x = torch.ones(2, requires_grad=True)
    return torch.utils.checkpoint.checkpoint(torch.exp, x, use_reentrant=use_reentrant, **options)


@pytest.mark.parametrize("use_reentrant, options", [(False, {"determinism_check": "shapes"}),
                                                    (True, {"debug": True})])
def test_options_refused_as_torch_refuses_them(use_reentrant, options):
    assert_same(bad_options, use_reentrant, options)


def nested(torch, early_stop):
    """Second derivatives through nested checkpoints (one inside autograd.grad inside another), with
    and without early stop; and whether any node of the graph outlives the output (a reference cycle
    through the recomputation would keep it)."""
    def c(fn):
        return lambda x: torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)

    def grad(fn):
        return lambda x: torch.autograd.grad(fn(x), x, create_graph=True)[0]

    def f(x):
        return x.sin().exp().sin()

    class Tag:
        pass

    x = torch.tensor(0.3, requires_grad=True)
    enabled = gc.isenabled()
    gc.disable()
    try:
        with torch.utils.checkpoint.set_checkpoint_early_stop(early_stop):
            values = [fn(x) for fn in (grad(grad(f)), grad(c(grad(c(f)))), c(grad(grad(c(f)))))]
            out, tag = grad(c(grad(c(f))))(x), Tag()
            out.grad_fn.next_functions[0][0].metadata["tag"] = tag
            alive = weakref.ref(tag)
            del out, tag
        return values, alive() is not None
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoints_and_double_backward(early_stop):
    assert_same(nested, early_stop, close=True)


def checkpointed_transformer(torch, n_layers=12, d_model=512, vocab=50000, nhead=8, checkpointed=True):
    """The tutorial's CheckpointedTransformer, as the tutorial builds it (its sizes are the defaults),
    and what the tutorial prints after one backward, plus the loss and two gradient norms."""
    nn = torch.nn
    checkpoint = torch.utils.checkpoint.checkpoint

    class TransformerBlock(nn.Module):
        def __init__(self, d_model=512, nhead=8):
            super().__init__()
            self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
            self.ffn = nn.Sequential(nn.Linear(d_model, d_model * 4), nn.GELU(), nn.Linear(d_model * 4, d_model))
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)

        def forward(self, x):
            attn_out, _ = self.attn(x, x, x)
            x = self.norm1(x + attn_out)
            ffn_out = self.ffn(x)
            x = self.norm2(x + ffn_out)
            return x

    class CheckpointedTransformer(nn.Module):
        def __init__(self, n_layers=12, d_model=512):
            super().__init__()
            self.embedding = nn.Embedding(vocab, d_model)
            self.layers = nn.ModuleList([TransformerBlock(d_model, nhead) for _ in range(n_layers)])
            self.output_proj = nn.Linear(d_model, vocab)

        def forward(self, x):
            x = self.embedding(x)
            for layer in self.layers:
                x = checkpoint(layer, x, use_reentrant=False) if checkpointed else layer(x)
            return self.output_proj(x)

    torch.manual_seed(0)
    model = CheckpointedTransformer(n_layers=n_layers, d_model=d_model)
    batch = torch.randint(0, vocab, (4, 64))
    out = model(batch)
    loss = out.sum()
    loss.backward()
    printed = [f"Output shape: {out.shape}",
               f"Embedding gradient exists: {model.embedding.weight.grad is not None}",
               f"Layer 0 attention gradient exists: {model.layers[0].attn.in_proj_weight.grad is not None}",
               f"All parameters received gradients: {all(p.grad is not None for p in model.parameters())}"]
    return printed, loss.item(), model.layers[0].attn.in_proj_weight.grad.norm().item(), \
        model.embedding.weight.grad.norm().item()


def test_the_tutorials_checkpointed_transformer_runs_unchanged():
    """At the tutorial's own sizes: the same printout as torch, the same loss and gradients (to float
    rounding: minigrad's attention is torch's ops one by one, torch's is fused)."""
    expected, actual = both(checkpointed_transformer)
    assert actual[0] == expected[0]
    assert nearly_equal(actual[1:], expected[1:], rel=1e-3, abs_=1e-3), f"\ntorch:    {expected}\nminigrad: {actual}"


def small_transformer_gradients(torch, checkpointed):
    checkpointed_transformer(torch, n_layers=2, d_model=16, vocab=50, nhead=2, checkpointed=checkpointed)
    torch.manual_seed(0)
    return checkpointed_transformer(torch, n_layers=2, d_model=16, vocab=50, nhead=2, checkpointed=checkpointed)[1:]


@pytest.mark.parametrize("checkpointed", [True, False], ids=["checkpointed", "plain"])
def test_checkpointing_a_transformer_changes_no_gradient(checkpointed):
    assert_same(small_transformer_gradients, checkpointed, close=True)


# --- recomputation once in each backward, what comes back, what is kept ---------------------------------

def saved_tensors_read_twice(torch):
    """Recomputed tensors are handed out once in each backward: reading a node's saved tensors twice
    there is an error (the next backward recomputes them again)."""
    runs, seen = [], []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            try:
                ctx.saved_tensors
            except RuntimeError as error:
                seen.append(str(error))
            return grad * w, grad * x

    def body(x, w):
        runs.append(len(runs))
        return Scale.apply(x.exp(), w)

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    out = torch.utils.checkpoint.checkpoint(body, x, w, use_reentrant=False)
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    return seen, len(runs), x.grad, w.grad


def test_recomputed_tensors_are_handed_out_once_in_each_backward():
    assert_same(saved_tensors_read_twice)


def saved_tensor_that_needs_no_grad(torch):
    """A saved tensor that needs no grad comes back as the very object saved, checkpointed or not."""
    unpacked = []

    class SaveSecond(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            unpacked.append(ctx.saved_tensors[0])
            return grad, None

    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0)
    SaveSecond.apply(a, b).backward()
    torch.utils.checkpoint.checkpoint(SaveSecond.apply, a, b, use_reentrant=False).backward()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        out = SaveSecond.apply(a, b)
    out.backward()
    return [t is b for t in unpacked]


def test_a_saved_tensor_that_needs_no_grad_comes_back_as_itself():
    assert_same(saved_tensor_that_needs_no_grad)


def nothing_recomputed_outlives_backward(torch):
    """With early stop, the recomputation ends inside the pack hook; neither the forward's tensors
    nor the recomputed ones outlive the backward, even without the cycle collector."""
    import gc
    import weakref
    refs = []

    class SaveClone(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            y = t.clone()
            ctx.save_for_backward(y)
            refs.append(weakref.ref(y))
            return y

        @staticmethod
        def backward(ctx, grad):
            ctx.saved_tensors
            return grad

    x = torch.ones(2, 2, requires_grad=True)
    enabled = gc.isenabled()
    gc.disable()
    try:
        torch.utils.checkpoint.checkpoint(SaveClone.apply, x, use_reentrant=False).sum().backward()
        return len(refs), [ref() is None for ref in refs]
    finally:
        if enabled:
            gc.enable()


def test_nothing_recomputed_outlives_backward():
    assert_same(nothing_recomputed_outlives_backward)


def selective(torch, body, kept, second_backward, options):
    """Selective checkpointing: the outputs of the aten ops in ``kept`` are kept in the forward and
    handed to the recomputation; what backward gives (or raises, in torch's words)."""
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    ops = [getattr(torch.ops.aten, name).default for name in kept]
    out = torch.utils.checkpoint.checkpoint(
        body, x, use_reentrant=False,
        context_fn=lambda: torch.utils.checkpoint.create_selective_checkpoint_contexts(ops, **options))
    out.sum().backward(retain_graph=True)
    if second_backward:
        out.sum().backward()
    return out, x.grad


@pytest.mark.parametrize("case", ["sin and exp kept", "nothing kept", "a kept output edited in place",
                                  "the same, allowed", "a second backward"])
def test_selective_checkpointing(case):
    """Gradients as without it; a kept output edited in place after the forward, and a second
    backward through the region, refused as torch refuses them."""
    # ``once`` keeps one sin: where a kept op also ends the region, torch 2.11 lets a second backward
    # through (its recomputation stops before that op's kernel, leaving its kept output for the next).
    chain, edited, once = ((lambda x: x.sin().cos().exp().sin()), (lambda x: x.sin().mul_(2).cos().exp()),
                           (lambda x: x.sin().cos().exp()))
    allowed = {"allow_cache_entry_mutation": True}
    body, kept, second, options = {"sin and exp kept": (chain, ["sin", "exp"], False, {}),
                                   "nothing kept": (chain, [], False, {}),
                                   "a kept output edited in place": (edited, ["sin"], False, {}),
                                   "the same, allowed": (edited, ["sin"], False, allowed),
                                   "a second backward": (once, ["sin"], True, {})}[case]
    assert_same(selective, body, kept, second, options, close=True)


def bad_policy(torch, policy):
    torch.utils.checkpoint.create_selective_checkpoint_contexts(policy(torch))


@pytest.mark.parametrize("policy", [lambda torch: [2], lambda torch: [torch.ops.aten.sin], lambda torch: 2])
def test_selective_checkpointing_refuses_what_is_not_a_policy(policy):
    assert_same(bad_policy, policy)
