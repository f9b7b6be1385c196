"""Issue 9, item 1: custom autograd Functions as torch's — both forms of forward, what ctx offers,
what backward must return, non-tensor arguments and outputs, dirty and non-differentiable outputs,
once_differentiable. Each scenario is written once against the torch API and run with both."""
import warnings
import weakref

import pytest

from coursekit.testing import assert_same, both, graph_signature, outcome


def stable_logsumexp(torch):
    """The tutorial's StableLogSumExp, word for word."""
    class StableLogSumExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, dim):
            ctx.dim = dim
            max_val = x.max(dim=dim, keepdim=True).values
            shifted = x - max_val
            exp_sum = shifted.exp().sum(dim=dim, keepdim=True)
            ctx.save_for_backward(x, max_val)
            return max_val.squeeze(dim) + exp_sum.log().squeeze(dim)

        @staticmethod
        def backward(ctx, grad_output):
            x, max_val = ctx.saved_tensors
            dim = ctx.dim
            shifted = (x - max_val).exp()
            softmax = shifted / shifted.sum(dim=dim, keepdim=True)
            return grad_output.unsqueeze(dim) * softmax, None
    return StableLogSumExp


def tutorial_logsumexp(torch):
    torch.manual_seed(0)
    x = torch.randn(3, 10, requires_grad=True)
    lse = stable_logsumexp(torch).apply(x, dim=1)
    loss = lse.sum()
    loss.backward()
    return lse, lse.grad_fn.name(), x.grad.shape, x.grad.sum(dim=1), x.grad


def test_the_tutorials_stable_logsumexp_runs_unchanged():
    assert_same(tutorial_logsumexp, close=True)


def logsumexp_of_large_values(torch):
    x = torch.tensor([[1000.0, 1000.0], [-1000.0, 0.0]], requires_grad=True)
    out = stable_logsumexp(torch).apply(x, 1)
    out.sum().backward()
    return out, x.grad


def test_stable_logsumexp_does_not_overflow():
    assert_same(logsumexp_of_large_values, close=True)


def forward_runs_with_grad_mode_off(torch):
    seen = {}

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=2.0):
            seen["grad enabled"] = torch.is_grad_enabled()
            seen["needs"] = ctx.needs_input_grad
            inner = x * scale
            seen["inner requires grad"] = inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, grad):
            seen["needs in backward"] = ctx.needs_input_grad
            return grad * 2, None

    x = torch.ones(3, requires_grad=True)
    y = Probe.apply(x, scale=3.0)
    y.sum().backward()
    return seen, y.grad_fn.name(), y, x.grad, Probe.apply(x).requires_grad


def test_forward_runs_with_grad_mode_off_and_kwargs_count_as_inputs():
    assert_same(forward_runs_with_grad_mode_off)


def setup_context_form(torch):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(x, power=3):
            return x ** power

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.power = power
            ctx.save_for_backward(x, output)
            ctx.seen = (len(inputs), ctx.needs_input_grad)

        @staticmethod
        def backward(ctx, grad):
            x, out = ctx.saved_tensors
            return grad * ctx.power * out / x, None

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = Cube.apply(x)
    y.sum().backward()
    return y, y.grad_fn.name(), y.grad_fn.seen, x.grad


def test_the_setup_context_form_binds_defaults_as_inputs():
    assert_same(setup_context_form, close=True)


def saved_tensors_are_freed(torch, retain):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    before = y.grad_fn.saved_tensors
    y.sum().backward(retain_graph=retain)
    results = [before]
    for attempt in (lambda: y.grad_fn.saved_tensors, lambda: y.sum().backward()):
        try:
            results.append(attempt())
        except RuntimeError as error:
            results.append(error)
    return results, x.grad


@pytest.mark.parametrize("retain", [False, True])
def test_saved_tensors_are_freed_after_backward_with_torchs_error(retain):
    assert_same(saved_tensors_are_freed, retain)


def ctx_attributes_and_node(torch):
    class Attr(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None

    x = torch.ones(2, requires_grad=True)
    y = Attr.apply(x, 5)
    node = y.grad_fn
    results = (node.k, node.name(), node.needs_input_grad, [n.name() for n, _ in node.next_functions],
               node.metadata, Attr.apply(torch.ones(2), 5).requires_grad)
    y.sum().backward()
    return results, x.grad


def test_ctx_keeps_attributes_and_is_the_node():
    assert_same(ctx_attributes_and_node)


def under_no_grad(torch):
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        y = Double.apply(x)
    return y.requires_grad, y.grad_fn, y


def test_under_no_grad_nothing_is_recorded():
    assert_same(under_no_grad)


def several_outputs(torch, use):
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.seen = (g1, g2)
            return g1 * 2 + g2 * 3

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    p, q = Two.apply(x)
    node = p.grad_fn
    loss = {"first": p.sum(), "second": (q * q).sum(), "both": p.sum() + q.sum()}[use]
    loss.backward()
    return p.grad_fn is q.grad_fn, p.output_nr, q.output_nr, node.seen, x.grad


@pytest.mark.parametrize("use", ["first", "second", "both"])
def test_several_outputs_and_materialized_zeros_for_the_unused_one(use):
    assert_same(several_outputs, use)


def unmaterialized(torch):
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.seen = (g1, g2)
            return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    p, _ = Two.apply(x)
    node = p.grad_fn
    p.sum().backward()
    return node.seen, x.grad


def test_set_materialize_grads_false_passes_none():
    assert_same(unmaterialized)


def non_tensor_and_non_differentiable_outputs(torch):
    class ArgMaxAndDouble(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            index = x.argmax()
            ctx.mark_non_differentiable(index)
            return x * 2, index, 5, "label"

        @staticmethod
        def backward(ctx, grad, grad_index, grad_five, grad_label):
            ctx.seen = (grad_index, grad_five, grad_label)
            return grad * 2

    x = torch.tensor([1.0, 3.0, 2.0], requires_grad=True)
    out, index, five, label = ArgMaxAndDouble.apply(x)
    node = out.grad_fn
    out.sum().backward()
    return (out, index, index.requires_grad, index.grad_fn, five, label, out.output_nr, node.seen, x.grad)


def test_non_tensor_and_non_differentiable_outputs():
    assert_same(non_tensor_and_non_differentiable_outputs)


def times_two_in_place(torch):
    """A Function that doubles its input in place and marks it dirty."""
    class TimesTwoInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return TimesTwoInPlace


def mark_dirty(torch, leaf):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a if leaf else a * 1
    out = times_two_in_place(torch).apply(b)
    out.sum().backward()
    return out is b, b.grad_fn.name(), b._version, a.grad


@pytest.mark.parametrize("leaf", [False, True], ids=["non-leaf", "leaf"])
def test_mark_dirty_moves_the_input_onto_the_node(leaf):
    assert_same(mark_dirty, leaf)


def input_returned_as_is(torch):
    class Identity(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    x = torch.ones(2, requires_grad=True)
    y = Identity.apply(x)
    y.sum().backward()
    return y is x, y._base is x, y.grad_fn.name(), x.grad


def test_an_input_returned_as_is_comes_back_as_a_view():
    assert_same(input_returned_as_is)


def input_returned_as_is_then_edited(torch, edited, outputs):
    class Identity(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            return tensors

        @staticmethod
        def backward(ctx, *grads):
            return grads

    x = torch.ones(2, requires_grad=True).clone()
    results = Identity.apply(x, *[torch.ones(1, requires_grad=True)] * (outputs - 1))
    (results[0] if edited == "output" else x).add_(1)
    return results[0].grad_fn


@pytest.mark.parametrize("outputs", [1, 2])
@pytest.mark.parametrize("edited", ["output", "its base"])
def test_an_input_returned_as_is_may_not_be_edited_in_place(edited, outputs):
    """Its in-place edit would bypass the Function's backward: torch refuses it, with its reason."""
    assert_same(input_returned_as_is_then_edited, edited, outputs)


def wrong_gradients(torch, kind):
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return {"too few": grad, "for a non-tensor": (grad, grad), "extra Nones": (grad, None, None),
                    "extra tensor": (grad, None, grad), "wrong shape": (grad.sum(), None)}[kind]

    x = torch.ones(3, requires_grad=True)
    Wrong.apply(x, 2).sum().backward()
    return x.grad


@pytest.mark.parametrize("kind", ["too few", "for a non-tensor", "extra Nones", "extra tensor", "wrong shape"])
def test_what_backward_returns_is_checked_as_torch_does(kind):
    assert_same(wrong_gradients, kind)


def once_differentiable_backward(torch):
    once_differentiable = torch.autograd.function.once_differentiable

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (first,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    results = [first, first.requires_grad, first.grad_fn]
    try:
        first.sum().backward()
    except RuntimeError as error:
        results.append(error)
    y = Square.apply(x)
    (gy,) = torch.autograd.grad(y, x, torch.ones(2, requires_grad=True), create_graph=True)
    results += [gy.requires_grad, gy.grad_fn.name()]
    try:
        gy.sum().backward()
    except RuntimeError as error:
        results.append(error)
    return results


def test_once_differentiable_refuses_a_second_derivative():
    assert_same(once_differentiable_backward)


def straight_through_estimator(torch):
    """The tutorial's StraightThroughEstimator, and its use on weights."""
    class StraightThroughEstimator(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, num_bits=8):
            scale = (2 ** num_bits - 1)
            return x.mul(scale).round().div(scale)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    torch.manual_seed(0)
    weights = torch.randn(4, 4, requires_grad=True)
    quantized = StraightThroughEstimator.apply(weights, 8)
    loss_q = quantized.sum()
    loss_q.backward()
    return quantized, weights.grad.shape, weights.grad.unique()


def test_the_tutorials_straight_through_estimator_runs_unchanged():
    expected, actual = both(straight_through_estimator)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"


# --- what torch's upstream autograd tests showed (tests/engine/upstream) -----------------------------------

def legacy_call(torch):
    class Old(torch.autograd.Function):
        def forward(self, x):
            return x

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch warns that Functions are not instantiated
        made = Old()
    return made(torch.ones(2))


def test_calling_a_function_instance_is_the_legacy_form():
    assert_same(legacy_call)


def twice_differentiated_once_differentiable(torch):
    """once_differentiable's results lead to an Error node whose edges go to the gradients,
    detached into leaves (None where backward gave None); backward through it fails."""
    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            ctx.save_for_backward(a, b)
            return a * b * k

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, None, grad * a

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    gx, gy = torch.autograd.grad(Product.apply(x, 2, y).sum(), (x, y), create_graph=True)
    node = gx.grad_fn
    shape = (type(node).__name__, node.name(), [(type(n).__name__ if n is not None else None, i)
                                                for n, i in node.next_functions])
    return shape, gx.requires_grad, gx.grad_fn is gy.grad_fn, gy.output_nr, gx.sum().backward()


def test_once_differentiable_leads_to_an_error_node():
    assert_same(twice_differentiated_once_differentiable)


def same_output_twice(torch):
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            return out, out

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a, b = Twice.apply(x)
    (a + b).sum().backward()
    return a is b, a.output_nr, x.grad


def test_a_tensor_returned_twice_is_one_output_in_its_last_place():
    assert_same(same_output_twice)


def view_returned_without_a_node(torch):
    """Applied with grad mode off, a Function returns a view made in forward as it is: a view made
    in no_grad mode, which requires grad as its base does and must not be edited in place."""
    class Alias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, g):
            return g

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        out = Alias.apply(x)
    return out.requires_grad, out.grad_fn, out.zero_()


def test_a_view_returned_by_a_function_applied_under_no_grad():
    assert_same(view_returned_without_a_node)


def view_made_in_forward(torch, edited, outputs):
    """A recorded Function returns a view made in forward as it is: a view of its base, with the
    Function's node as grad_fn. Editing it, or its base, in place would bypass that backward: torch
    refuses it, in the multi-output words when the Function has two differentiable outputs."""
    class FirstRow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, *others):
            row = x.select(0, 0)
            return (row, *(other * 2 for other in others)) if others else row

        @staticmethod
        def backward(ctx, grad, *grads):
            return (torch.stack([grad, grad * 0]), *(g * 2 for g in grads))

    leaf = torch.ones(2, 2, requires_grad=True)
    x = leaf.clone()
    results = FirstRow.apply(x, *[torch.ones(1, requires_grad=True)] * (outputs - 1))
    row = results[0] if outputs > 1 else results
    if edited == "nothing":
        row.sum().backward()
        return row._base is x, row.grad_fn.name(), leaf.grad
    (row if edited == "output" else x).add_(1)
    return row.grad_fn


@pytest.mark.parametrize("outputs", [1, 2])
@pytest.mark.parametrize("edited", ["nothing", "output", "its base"])
def test_a_view_made_in_forward_comes_back_as_a_view_not_to_edit(edited, outputs):
    assert_same(view_made_in_forward, edited, outputs)


def dirty_view(torch, make_view, outputs):
    """mark_dirty on a view: the Function's node is an in-place op on the view, so its base moves onto
    a CopySlices node and the view onto an AsStridedBackward0, as in torch; refused for a view of a
    leaf that requires grad and for a Function with more than one output."""
    class DoubleInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t, other):
            ctx.mark_dirty(t)
            t.mul_(2)
            return (t, other * 1) if outputs == 2 else t

        @staticmethod
        def backward(ctx, grad, *more):
            return grad * 2, (more[0] if more else None)

    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    base, view = make_view(a)
    out = DoubleInPlace.apply(view, b)
    out = out[0] if outputs == 2 else out
    (base * torch.tensor([1.0, 10.0, 100.0])).sum().backward(retain_graph=True)
    return out is view, graph_signature(base), graph_signature(out), base, a.grad, b.grad


DIRTY_VIEWS = {
    "a slice of a non-leaf": lambda a: (lambda base: (base, base[1:]))(a.clone()),
    "a view of a non-leaf": lambda a: (lambda base: (base, base.view(3)))(a * 1),
    "a view of a leaf": lambda a: (a, a[:2]),
}


@pytest.mark.parametrize("outputs", [1, 2])
@pytest.mark.parametrize("make_view", DIRTY_VIEWS)
def test_mark_dirty_on_a_view(make_view, outputs):
    assert_same(dirty_view, DIRTY_VIEWS[make_view], outputs)


def dirty_tensor_checked(torch, kind, grad_mode):
    """What torch checks of the tensors given to mark_dirty: each must be returned (an input changed
    in place but not returned is refused, even with nothing recorded); one that is not an input is
    only warned about when recorded, and refused when it is a view (of an intermediate made in
    forward); the versions of all of them move by one, besides forward's own edits."""
    class Dirty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            if kind == "input not returned":
                a.add_(1)
                ctx.mark_dirty(a)
                return a.clone()
            made = a * 3 if kind == "not an input" else a.clone().view(a.shape)
            made.add_(1)
            ctx.mark_dirty(made)
            return made

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    x = torch.ones(2, requires_grad=True).clone()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.set_grad_enabled(grad_mode):
            out = Dirty.apply(x)
    # torch's C++ warning ends with where it was triggered in torch's sources
    said = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return out.requires_grad, out._version, x._version, said


@pytest.mark.parametrize("grad_mode", [True, False], ids=["recorded", "no_grad"])
@pytest.mark.parametrize("kind", ["input not returned", "not an input", "a view not an input"])
def test_what_mark_dirty_accepts(kind, grad_mode):
    assert_same(dirty_tensor_checked, kind, grad_mode)


def dirty_inference_tensor(torch):
    """mark_dirty on an inference tensor, in inference mode: it has no version to bump."""
    with torch.inference_mode():
        x = torch.ones(2)
        out = times_two_in_place(torch).apply(x)
    return out is x, torch.is_inference(out), out


def test_mark_dirty_on_an_inference_tensor():
    assert_same(dirty_inference_tensor)


def dirty_input_returned_twice(torch):
    """An input marked dirty and returned twice is one output, the input itself (gradcheck agrees);
    its version moved twice: forward's mul_ and mark_dirty."""
    class DoubleInplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def twice(x):
        a, b = DoubleInplace.apply(x.clone())
        return a + b

    x = torch.tensor([1.0, -2.0, 3.0], dtype=torch.double, requires_grad=True)
    inner = x.clone()
    a, b = DoubleInplace.apply(inner)
    (a + b).sum().backward()
    checks = torch.autograd.gradcheck(twice, [x]), torch.autograd.gradgradcheck(twice, [x])
    return a is b, a is inner, a.grad_fn.name(), a._version, x.grad, checks


def test_a_dirty_input_returned_twice():
    assert_same(dirty_input_returned_twice)


def inplace_function_on_a_leaf(torch, what):
    """torch.autograd.function.InplaceFunction, kept for old code: a Function like any other (its
    subclass may mark dirty a leaf that does not require grad, which then gets the node); applied
    itself, it has no forward."""
    class Inplace(torch.autograd.function.InplaceFunction):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a, grad_a + grad_b

    x = torch.ones(2)
    y = torch.tensor([1.0, 2.0], requires_grad=True)
    if what == "the base itself":
        return torch.autograd.function.InplaceFunction.apply(y)
    q, p = Inplace.apply(x, y)
    q.sum().backward()
    return q is x, type(q.grad_fn) is Inplace._backward_cls, q.requires_grad, x, p, y.grad


@pytest.mark.parametrize("what", ["a subclass", "the base itself"])
def test_inplace_function(what):
    assert_same(inplace_function_on_a_leaf, what)


def saved_dirty_view_is_freed(torch):
    """A view marked dirty and saved for backward: nothing keeps it alive once its caller lets go
    (torch lets go of the tensors mark_dirty got once the outputs are made)."""
    class SaveDirty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    def scope():
        x = torch.tensor([1.0], requires_grad=True).clone()
        x = x.view(1)
        SaveDirty.apply(x)
        return weakref.ref(x)

    ref = scope()
    return ref() is None


def test_a_saved_dirty_view_does_not_leak():
    assert_same(saved_dirty_view_is_freed)


def backward_or_vjp(torch, defines):
    """A Function defines backward or vjp (torch's other name for it), not both, and forward: each
    missing or doubled one raises torch's error where torch raises it."""
    members = {"forward": staticmethod(lambda ctx, x: x * 2), "backward": staticmethod(lambda ctx, g: g * 2),
               "vjp": staticmethod(lambda ctx, g: g * 3)}
    cls = type("Fn", (torch.autograd.Function,), {name: members[name] for name in defines})
    x = torch.ones(2, requires_grad=True)
    cls.apply(x).sum().backward()
    return x.grad


@pytest.mark.parametrize("defines", [("forward", "vjp"), ("forward",), ("forward", "backward", "vjp"),
                                     ("backward",)], ids=["vjp", "neither", "both", "no forward"])
def test_backward_or_vjp(defines):
    assert_same(backward_or_vjp, defines)


def mixed_differentiable_outputs(torch):
    """One output marked non-differentiable, the other not: backward gets zeros for the first."""
    seen = []

    class Mixed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x + 1, x + 2
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            seen.extend([grad_a, grad_b])
            return grad_b

    x = torch.ones(2, 2, requires_grad=True)
    a, b = Mixed.apply(x)
    (b * 3).sum().backward()
    return a.requires_grad, b.requires_grad, seen, x.grad


def test_mark_non_differentiable_on_one_of_two_outputs():
    assert_same(mixed_differentiable_outputs)


def calling_a_node_by_hand(torch, count):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x ** 2
    return y.grad_fn(*[torch.ones(2)] * count)


@pytest.mark.parametrize("count", [0, 1, 2])
def test_a_node_called_by_hand_takes_one_gradient_per_output(count):
    assert_same(calling_a_node_by_hand, count)


def _node_attributes(fn):
    """What a kept ``grad_fn`` gives for each attribute a Function's node had: a value's kind, or the error."""
    seen = {}
    for name in ("saved_tensors", "_raw_saved_tensors", "next_functions", "_input_metadata", "metadata"):
        seen[name] = outcome(lambda: type(getattr(fn, name)).__name__)
    for name in ("name", "_sequence_nr"):
        seen[name] = outcome(lambda: type(getattr(fn, name)()).__name__)
    for name in ("register_hook", "register_prehook"):
        seen[name] = outcome(lambda: getattr(fn, name)(lambda *grads: None).remove())
    return seen


def a_kept_ctx_after_its_graph_goes(torch, keep):
    """A Function's ctx kept past its graph (stashed in backward, ``y.grad_fn`` kept after ``del y``):
    from torch 2.13 it owns its node; before, once nothing of the graph holds the node (its outputs,
    a node with an edge to it), its saved tensors, edges, name, hooks and metadata are refused."""
    stashed = []

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * 2

        @staticmethod
        def backward(ctx, grad):
            stashed.append(ctx)
            (t,) = ctx.saved_tensors
            return grad * 2

    p = torch.zeros(1, requires_grad=True)
    y = Double.apply(p)
    fn, seen = y.grad_fn, {}
    z = y * 3 if keep == "a node after it" else y.exp() if keep == "its output, saved by exp" else None
    seen["while y lives"] = _node_attributes(fn)
    y.sum().backward(retain_graph=True)
    assert stashed[0] is fn
    del y
    seen["after del y"] = _node_attributes(fn)
    kept_node = z.grad_fn if z is not None else None
    del z
    seen["after del z"] = _node_attributes(fn)
    del kept_node
    seen["after its node goes"] = _node_attributes(fn)
    return seen


@pytest.mark.parametrize("keep", ["nothing", "a node after it", "its output, saved by exp"])
def test_a_kept_ctx_after_its_graph_goes(keep):
    assert_same(a_kept_ctx_after_its_graph_goes, keep)
