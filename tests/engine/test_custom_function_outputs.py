"""Issue 37, item 1 (custom Functions): what ``Function.apply`` makes of each kind of output, as
torch's ``_process_backward_mode_ad`` does, over every mix of: what forward returns (an input as it
is, a view of it, a new tensor, the input changed in place, a view or not), marked
non-differentiable or not, ctx filled in forward or in setup_context, what is saved (nothing, the
output, the input), grad mode, and whether the input requires grad; and what backward gets back of
what was saved. Each case is written once and run with both libraries."""
import pytest

from coursekit.testing import assert_same

RETURNS = {
    "the input as it is": lambda t: t,
    "a view of it": lambda t: t.view(-1),
    "a new tensor": lambda t: t * 2,
    "the input changed in place": lambda t: t.mul_(2),
    "the input, a view, changed in place": lambda t: t.mul_(2),
}


def function(torch, returns, non_differentiable, setup_context, saves, seen):
    compute = RETURNS[returns]

    def backward_of_both_forms(ctx, grad):
        if saves != "nothing":
            seen["saved in backward"], = ctx.saved_tensors
        return grad * 3

    def fill(ctx, inputs, out):
        if returns.endswith("changed in place"):
            ctx.mark_dirty(inputs[0])
        if non_differentiable:
            ctx.mark_non_differentiable(out)
        if saves != "nothing":
            ctx.save_for_backward(out if saves == "the output" else inputs[0])

    if setup_context:
        class Forward(torch.autograd.Function):
            @staticmethod
            def forward(t):
                return compute(t)

            @staticmethod
            def setup_context(ctx, inputs, out):
                fill(ctx, inputs, out)

            backward = staticmethod(backward_of_both_forms)
        return Forward

    class Forward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            out = compute(t)
            fill(ctx, (t,), out)
            return out

        backward = staticmethod(backward_of_both_forms)
    return Forward


def applied(torch, returns, non_differentiable, setup_context, saves, grad_mode, requires_grad):
    leaf = torch.ones(2, requires_grad=requires_grad)
    x = {"the input changed in place": leaf.clone(),
         "the input, a view, changed in place": leaf.clone()[:]}.get(returns, leaf)
    seen = {}
    with torch.set_grad_enabled(grad_mode):
        y = function(torch, returns, non_differentiable, setup_context, saves, seen).apply(x)
    seen.update({"requires_grad": y.requires_grad, "is a view": y._is_view(), "is the input": y is x,
                 "grad_fn": y.grad_fn and y.grad_fn.name()})
    if y.requires_grad:
        y.sum().backward()
        seen["gradient"] = leaf.grad
    if "saved in backward" in seen:
        saved = seen.pop("saved in backward")
        seen["saved"] = ("the input" if saved is x else "the output" if saved is y else
                         ("another tensor", saved.grad_fn and saved.grad_fn.name(), saved._version))
    return seen


@pytest.mark.parametrize("requires_grad", [False, True], ids=["input needs no grad", "input requires grad"])
@pytest.mark.parametrize("grad_mode", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("saves", ["nothing", "the output", "the input"])
@pytest.mark.parametrize("setup_context", [False, True], ids=["ctx in forward", "setup_context"])
@pytest.mark.parametrize("non_differentiable", [False, True], ids=["", "non-differentiable"])
@pytest.mark.parametrize("returns", RETURNS)
def test_each_kind_of_output(returns, non_differentiable, setup_context, saves, grad_mode, requires_grad):
    """An input comes back as an alias (or detached, where it gets no gradient), saved as the input;
    a view made in forward stays a view; setup_context may not save an input returned as it is."""
    assert_same(applied, returns, non_differentiable, setup_context, saves, grad_mode, requires_grad)


def saved_non_differentiable_output(torch):
    class TwoOutputs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            kept, marked = x * 2, x * 3
            ctx.mark_non_differentiable(marked)
            ctx.save_for_backward(kept, marked)
            return kept, marked

        @staticmethod
        def backward(ctx, grad_kept, grad_marked):
            return grad_kept * 2

    x = torch.ones(2, requires_grad=True)
    kept, marked = TwoOutputs.apply(x)
    saved_kept, saved_marked = kept.grad_fn.saved_tensors
    marked.add_(1)
    try:
        kept.sum().backward()
    except RuntimeError as error:
        return saved_kept is kept, saved_marked is marked, error


def test_a_saved_non_differentiable_output_is_saved_as_any_tensor():
    """It has no grad_fn, so torch saves it as a tensor of its own, not as an output of the node: the
    version error does not call it "output 0 of TwoOutputs"."""
    assert_same(saved_non_differentiable_output)



def input_returned_twice(torch):
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x, x

        @staticmethod
        def backward(ctx, grad_first, grad_second):
            seen.append((grad_first is None, grad_second is None))
            return grad_first if grad_second is None else grad_second

    seen = []
    x = torch.ones(2, requires_grad=True)
    first, second = Twice.apply(x)
    first.sum().backward()
    return first is second, first.output_nr, second.output_nr, seen, x.grad


def test_an_input_returned_twice_comes_back_as_two_aliases():
    """Unlike any other tensor returned twice (one output, in its last place): each place gets its own
    view of the input, and so its own gradient."""
    assert_same(input_returned_twice)


def applied_in_a_mode(torch, returns, non_differentiable, source, mode):
    if source == "an inference tensor":
        with torch.inference_mode():
            x = torch.ones(2)
    else:
        x = torch.ones(2, requires_grad=source == "a tensor that requires grad")
        x = x.clone() if returns.endswith("changed in place") else x
    forward = function(torch, returns, non_differentiable, False, "the input", {})
    with {"inference_mode": torch.inference_mode, "no_grad": torch.no_grad, "grad": torch.enable_grad}[mode]():
        y = forward.apply(x)
    seen = [y.requires_grad, y._is_view(), y is x, y.is_inference(), y.grad_fn and y.grad_fn.name(),
            x.is_inference() or x._version]
    try:
        y.add_(1)  # outside the mode: refused for an inference tensor
    except RuntimeError as error:
        seen.append(error)
    return seen


@pytest.mark.parametrize("mode", ["inference_mode", "no_grad", "grad"])
@pytest.mark.parametrize("source", ["an inference tensor", "a tensor that requires grad", "a tensor"])
@pytest.mark.parametrize("non_differentiable", [False, True], ids=["", "non-differentiable"])
@pytest.mark.parametrize("returns", RETURNS)
def test_each_kind_of_output_in_each_mode(returns, non_differentiable, source, mode):
    """Only what forward made in inference mode is an inference tensor: an input changed in place
    there stays a normal tensor, an input returned as it is comes back a normal tensor (detached, or a
    view), and an inference tensor's alias is an inference tensor, not a view."""
    assert_same(applied_in_a_mode, returns, non_differentiable, source, mode)
