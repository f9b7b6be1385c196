"""Version counters and in-place ops, against torch: who shares a version counter, what bumps it,
which in-place ops autograd refuses, how it rebases a non-leaf's grad_fn, and the exact message
when a saved tensor was modified."""
import contextlib
import operator
import warnings

import pytest

from coursekit.testing import assert_same, both, graph_signature, outcome

# Each op edits ``t`` in place; ``w`` is a tensor of t's shape (its argument where it takes one).
INPLACE = {
    "add_": lambda t, w: t.add_(w),
    "sub_": lambda t, w: t.sub_(w),
    "add_(alpha)": lambda t, w: t.add_(w, alpha=3),
    "sub_(alpha)": lambda t, w: t.sub_(w, alpha=3),  # once computed t + 3w, with w's gradient +3
    "mul_": lambda t, w: t.mul_(w),
    "div_": lambda t, w: t.div_(w),
    "zero_": lambda t, w: t.zero_(),
    "fill_": lambda t, w: t.fill_(2.5),
    "copy_": lambda t, w: t.copy_(w),
    "+=": lambda t, w: operator.iadd(t, w),
    "-=": lambda t, w: operator.isub(t, w),
    "*=": lambda t, w: operator.imul(t, w),
    "/=": lambda t, w: operator.itruediv(t, w),
    "x[i]=v": lambda t, w: operator.setitem(t, 0, w[0]),
    "relu_": lambda t, w: t.relu_(),
}

# Tensors that share x's version counter (x is 2 x 3).
SHARING = {
    "x": lambda x: x,
    "x[0]": lambda x: x[0],
    "x.view(6)": lambda x: x.view(6),
    "x.t()": lambda x: x.t(),
    "x.detach()": lambda x: x.detach(),
}



def versions(torch, op, edited, leaf_under_no_grad):
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=leaf_under_no_grad)
    sharing = {name: make(x) for name, make in SHARING.items()}
    data = x.data
    target = sharing[edited]
    w = torch.full(target.shape, 2.0)
    with torch.no_grad() if leaf_under_no_grad else contextlib.nullcontext():
        result = INPLACE[op](target, w)
    return result is target, {name: t._version for name, t in sharing.items()}, data._version, x


@pytest.mark.parametrize("leaf_under_no_grad", [False, True], ids=["plain tensor", "leaf under no_grad"])
@pytest.mark.parametrize("edited", SHARING)
@pytest.mark.parametrize("op", INPLACE)
def test_in_place_op_bumps_the_version_shared_by_views_and_detach(op, edited, leaf_under_no_grad):
    """Every in-place op, through x or any view or detach() of it, bumps the one counter they share
    (also under no_grad), returns its target and edits x's memory; ``x.data`` has a counter of its own."""
    assert_same(versions, op, edited, leaf_under_no_grad)


def data_has_its_own_counter(torch):
    x = torch.ones(3, requires_grad=True)
    data = x.data
    data.add_(1)
    after_data_edit = (x._version, data._version)
    with torch.no_grad():
        x.mul_(3)
    return after_data_edit, (x._version, data._version), x, data


def test_x_data_does_not_share_the_version_counter():
    """Edits through ``x.data`` go unseen by x's counter and the other way round, though memory is shared."""
    assert_same(data_has_its_own_counter)


def in_place_on_leaf(torch, op, edited):
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    target = SHARING[edited](x)
    w = torch.full(target.shape, 2.0)
    return outcome(INPLACE[op], target, w), x._version, x


@pytest.mark.parametrize("edited", ["x", "x[0]", "x.view(6)", "x.t()"])
@pytest.mark.parametrize("op", INPLACE)
def test_in_place_on_a_leaf_that_requires_grad_or_a_view_of_it(op, edited):
    """On a leaf that requires grad every in-place op raises torch's leaf message (``x[i] = v`` and ops
    on views raise the view message) and nothing changes."""
    expected, actual = both(in_place_on_leaf, op, edited)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected[0][0] == "error"


def view_asks_its_base(torch, op, made):
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]])
    if made == "before x required grad":
        v = x[0]
        x.requires_grad_()
    else:
        x.requires_grad_()
        with torch.no_grad():
            v = x[0]
    seen = [v.requires_grad, v.is_leaf, v.grad_fn, repr(v)]
    y = v * 2
    y.sum().backward()
    seen += [y.requires_grad, x.grad, outcome(INPLACE[op], v, torch.full((3,), 2.0))]
    x.requires_grad_(False)
    return seen + [v.requires_grad, x._version]


@pytest.mark.parametrize("made", ["before x required grad", "under no_grad"])
@pytest.mark.parametrize("op", INPLACE)
def test_a_view_requires_grad_as_its_base_does_now(op, made):
    """A view asks its base whether it requires grad each time (torch's DifferentiableViewMeta): made
    before the base required grad, it requires grad, records ops that pass no gradient on, and an
    in-place op on it is refused as on a view of a leaf."""
    assert_same(view_asks_its_base, op, made)


def view_of_a_base_made_to_require_grad(torch, edited):
    """An in-place op that makes a base require grad: its earlier view requires grad too and, if its
    memory was edited, backward runs from it (through AsStridedBackward0); if not, it has no node and
    backward refuses it, as in torch (issue 37)."""
    r = torch.tensor([2.0], requires_grad=True)
    x = torch.ones(5, dtype=torch.double).float()
    v = x.select(0, 1) if edited else x[3:]
    x.add_(r) if edited else x[:2].add_(r)
    seen = [v.requires_grad]
    seen.append(outcome(lambda: torch.autograd.grad(v.sum(), r)))
    seen.append(outcome(lambda: v.sum().backward()))
    return seen + [r.grad, v.grad_fn]


@pytest.mark.parametrize("edited", [True, False], ids=["view edited", "view not edited"])
def test_backward_from_a_view_of_a_base_made_to_require_grad(edited):
    assert_same(view_of_a_base_made_to_require_grad, edited)


def detach_in_place(torch, what):
    """detach_() takes a tensor out of the graph, but not a view (its grad_fn is its base's business:
    minigrad would rebuild it); detaching a base leaves its views in the graph."""
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    if what == "view":
        return outcome(lambda: y.narrow(0, 0, 1).detach_()), y.requires_grad
    view = y[0]
    y.detach_()
    return y.requires_grad, y.grad_fn, view.requires_grad, view.grad_fn, view._base is y


@pytest.mark.parametrize("what", ["view", "base"])
def test_detach_in_place(what):
    assert_same(detach_in_place, what)


def in_place_on_non_leaf(torch, op):
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    w = torch.tensor([[0.5, -1., 2.], [3., 0.25, -2.]], requires_grad=True)
    y = x * x
    INPLACE[op](y, w)
    out = (y * torch.tensor([[1., 2., 3.], [4., 5., 6.]])).sum()
    out.backward()
    return y.grad_fn.name(), graph_signature(out), y, x.grad, w.grad


@pytest.mark.parametrize("op", INPLACE)
def test_in_place_on_a_non_leaf_rebases_its_grad_fn(op):
    """An in-place op on a non-leaf makes it the output of a new node (torch's names), and gradients
    flow through that node to both the old value and the op's argument as in torch."""
    assert_same(in_place_on_non_leaf, op, close=True)


def in_place_through_a_view_of_a_non_leaf(torch):
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    y = x * x
    y[0].mul_(2)
    out = (y * torch.tensor([[1., 2., 3.], [4., 5., 6.]])).sum()
    out.backward()
    return y.grad_fn.name(), graph_signature(out), y, x.grad


def test_in_place_through_a_view_of_a_non_leaf_rebases_the_base():
    """``y[0].mul_(2)`` on a non-leaf y: torch records it on y as CopySlices and backpropagates through it."""
    assert_same(in_place_through_a_view_of_a_non_leaf, close=True)


TRANSPOSED = {
    "non-leaf": lambda torch, x: x.clone(),
    "leaf requiring grad": lambda torch, x: x,
    "view of a non-leaf": lambda torch, x: x.clone()[:],
    "view of a leaf": lambda torch, x: x[:],
    "view made under no_grad": lambda torch, x: _view_under_no_grad(torch, x.clone()),
    "plain tensor": lambda torch, x: x.detach().clone(),
}


def _view_under_no_grad(torch, base):
    with torch.no_grad():
        return base[:]


def transposed_in_place(torch, target, then):
    """``t.transpose_(0, 1)``, then an edit of its base or of t itself, then backward through t."""
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    t = TRANSPOSED[target](torch, x)
    detached, base = t.detach(), t._base
    seen = [outcome(lambda: t.transpose_(0, 1) is t), t.shape, detached.shape, t._version, outcome(lambda: t.grad_fn)]
    if then == "base edited" and base is not None:
        seen.append(outcome(lambda: base.add_(1)))
    elif then == "edited":
        seen.append(outcome(lambda: t.mul_(2)))
    seen += [outcome(lambda: t.grad_fn), outcome(lambda: graph_signature(base if base is not None else t))]
    if t.requires_grad:
        seen.append(outcome(lambda: (t * torch.arange(6.).view(t.shape)).sum().backward()))
    return seen, x.grad, t


@pytest.mark.parametrize("then", ["nothing", "base edited", "edited"])
@pytest.mark.parametrize("target", TRANSPOSED)
def test_transpose_in_place(target, then):
    """transpose_ changes the tensor's sizes, not its memory (nor its detach()'s sizes): a version more,
    TransposeBackward1 on its history after the in-place checks, a view's base keeping its node."""
    assert_same(transposed_in_place, target, then)


RESIZED = {
    "plain tensor": lambda torch: torch.arange(6.).view(2, 3).clone(),
    "leaf requiring grad": lambda torch: torch.arange(6.).view(2, 3).requires_grad_(),
    "non-leaf": lambda torch: torch.arange(6.).view(2, 3).requires_grad_().clone(),
    "view of a non-leaf": lambda torch: torch.arange(6.).view(2, 3).requires_grad_().clone()[:],
    "inference tensor": lambda torch: _in_inference_mode(torch, lambda: torch.arange(6.).view(2, 3).clone()),
}
RESIZES = {
    "resize_(6)": lambda t: t.resize_(6),
    "resize_(2, 3)": lambda t: t.resize_(2, 3),
    "resize_as_": lambda t: t.resize_as_(t.new_ones((2, 2))),
}
MODES = {
    "grad mode": contextlib.nullcontext,  # nullcontext(torch): no mode
    "no_grad": lambda torch: torch.no_grad(),
    "inference_mode": lambda torch: torch.inference_mode(),
}


def _in_inference_mode(torch, make):
    with torch.inference_mode():
        return make()


def resized(torch, target, resize, mode):
    t = RESIZED[target](torch)
    detached = t.detach()
    with MODES[mode](torch):
        result = outcome(lambda: RESIZES[resize](t) is t)
    return result, t.shape, detached.shape, outcome(lambda: t._version), t


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("resize", RESIZES)
@pytest.mark.parametrize("target", RESIZED)
def test_resize(target, resize, mode):
    """resize_ and resize_as_: refused for a tensor that requires grad but in inference mode; a version
    more only when the size changes (an inference tensor refused outside inference mode only then)."""
    assert_same(resized, target, resize, mode)


BINARY = ["add", "sub", "mul", "div"]

OUT = {
    "same shape": lambda torch: torch.zeros(2),
    "another shape": lambda torch: torch.zeros(3),
    "another dtype": lambda torch: torch.zeros(2, dtype=torch.long),
    "requiring grad": lambda torch: torch.zeros(2, requires_grad=True),
    "inference tensor": lambda torch: _in_inference_mode(torch, lambda: torch.zeros(2)),
}


def written_out(torch, name, out, mode, input_requires_grad):
    x = torch.tensor([1., 2.], requires_grad=input_requires_grad)
    others = [torch.tensor([3., 4.])] if name in BINARY else []
    target = OUT[out](torch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with MODES[mode](torch):
            result = outcome(lambda: getattr(torch, name)(x, *others, out=target) is target)
    return result, target, outcome(lambda: target._version), flags_of(target), [str(w.message) for w in caught]


def flags_of(t):
    return t.requires_grad, t.grad_fn, t.is_leaf


@pytest.mark.parametrize("input_requires_grad", [False, True])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("out", OUT)
@pytest.mark.parametrize("name", [*BINARY, *"exp log sin cos tanh sigmoid abs neg reciprocal round sqrt".split()])
def test_out_argument(name, out, mode, input_requires_grad):
    """``torch.mul(a, b, out=t)`` and ``torch.sin(a, out=t)`` write into t as torch's kernel does (resizing
    with its warning, its dtype error), a version more; refused with grad mode on when an argument
    requires grad, and for an inference tensor outside inference mode."""
    assert_same(written_out, name, out, mode, input_requires_grad)


# --- "modified by an inplace operation" ----------------------------------------------------------

def _exp_output_edited(torch, times):
    x = torch.tensor([0., 1., 2.], requires_grad=True)
    y = x.exp()
    for _ in range(times):
        y.add_(1)
    return y.sum()


def _exp_output_setitem(torch):
    x = torch.tensor([0., 1., 2.], requires_grad=True)
    y = x.exp()
    y[0] = 0.
    return y.sum()


def _leaf_input_edited_under_no_grad(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = x.log()
    with torch.no_grad():
        x.mul_(2)
    return y.sum()


def _non_leaf_input_rebased(torch):
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    a = x * 2
    b = a.log()
    a.add_(1)
    return b.sum()


def _buffer_edited(torch):
    buffer = torch.tensor([[1., 2.], [3., 4.], [5., 6.]])
    x = torch.ones(2, 3, requires_grad=True)
    q = x @ buffer
    buffer.mul_(0.5)
    return q.sum()


def _double_edited_through_a_view(torch):
    x = torch.tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)
    other = torch.tensor([4., 5., 6.], dtype=torch.float64)
    y = x * other
    other[1:].zero_()
    return y.sum()


def _relu_output_edited(torch):
    """relu_ saves its result, the edited tensor itself: an edit after it fails its backward."""
    x = torch.tensor([-1., 1., 2.], requires_grad=True)
    y = torch.nn.functional.relu(x * 2, inplace=True)
    y.mul_(3)
    return y.sum()


def _relu_edits_a_saved_output(torch):
    x = torch.tensor([-1., 1., 2.], requires_grad=True)
    y = x.exp() - 2
    z = y * y
    y.relu_()
    return z.sum()


MODIFIED = {
    "output of Relu, edited after relu_": _relu_output_edited,
    "output of Sub, edited by relu_": _relu_edits_a_saved_output,
    "output of Exp": lambda torch: _exp_output_edited(torch, 1),
    "output of Exp, edited 3 times": lambda torch: _exp_output_edited(torch, 3),
    "output of Exp, edited by setitem": _exp_output_setitem,
    "leaf input edited under no_grad": _leaf_input_edited_under_no_grad,
    "non-leaf input rebased by the edit": _non_leaf_input_rebased,
    "buffer not requiring grad, 2-D": _buffer_edited,
    "double tensor edited through a view": _double_edited_through_a_view,
}


def modified_message(torch, case):
    loss = MODIFIED[case](torch)
    return outcome(loss.backward)


@pytest.mark.parametrize("case", MODIFIED)
def test_modified_by_an_inplace_operation_message(case):
    """Backward through a saved tensor edited since it was saved fails with torch's exact message:
    dtype and shape, "which is output N of <node>," where torch names one, both versions, the hint."""
    expected, actual = both(modified_message, case)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert "modified by an inplace operation" in expected[2]


# --- inference tensors ---------------------------------------------------------------------------

def _in_place_inside_inference_mode(torch, t, w):
    with torch.inference_mode():
        return t.add_(1)


INFERENCE_USES = {
    "_version": lambda torch, t, w: t._version,
    "_version of a view": lambda torch, t, w: t[1:]._version,
    "_version of detach()": lambda torch, t, w: t.detach()._version,
    "saved by mul": lambda torch, t, w: w * t,
    "saved by matmul": lambda torch, t, w: t @ w,
    "not saved by add": lambda torch, t, w: (w + t).sum().backward(),
    "in-place outside inference_mode": lambda torch, t, w: t.add_(1),
    "in-place inside inference_mode": _in_place_inside_inference_mode,
}


def inference_tensor(torch, use):
    with torch.inference_mode():
        t = torch.tensor([1., 2., 3.])
    w = torch.tensor([0.5, 1., 2.], requires_grad=True)
    return t.is_inference(), outcome(INFERENCE_USES[use], torch, t, w), w.grad, t


@pytest.mark.parametrize("use", INFERENCE_USES)
def test_inference_tensors(use):
    """Tensors made under inference_mode have no version counter and cannot be saved for backward
    (torch's exact messages); ops that save nothing may use them, and in-place edits are only
    allowed inside inference_mode."""
    assert_same(inference_tensor, use)


def retained_across_in_place_edits(torch, edit):
    """retain_grad follows the tensor to the node an in-place edit moves it onto (the gradient of
    its newest version is retained); hooks stay with the version they were registered on."""
    log = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    a.retain_grad()
    a.register_hook(lambda g: log.append(("old version", g.tolist())))
    edit(a)
    a.register_hook(lambda g: log.append(("new version", g.tolist())))
    (a * torch.tensor([3.0, 5.0])).sum().backward()
    return a.grad, x.grad, log, a.grad_fn


RETAINED_EDITS = {
    "mul_": lambda a: a.mul_(2),
    "twice": lambda a: a.mul_(2).add_(1),
    "through a view": lambda a: a[:1].mul_(2),
    "setitem": lambda a: a.__setitem__(1, 7.0),
}


@pytest.mark.parametrize("edit", RETAINED_EDITS)
def test_retain_grad_follows_in_place_edits(edit):
    assert_same(retained_across_in_place_edits, RETAINED_EDITS[edit])


def retained_view_edited(torch):
    """A view that retains its grad, edited in place, and another view of the same base: both
    retain the gradient of their newest version."""
    base = torch.tensor([1.0, 2.0], requires_grad=True).clone()
    first, second = base[:], base[:]
    first.retain_grad()
    second.retain_grad()
    first.mul_(2)
    (first * 3 + second).sum().backward()
    return first.grad, second.grad


def test_a_retained_view_edited_in_place():
    assert_same(retained_view_edited)


# --- relu_, F.relu(inplace=True), nn.ReLU(inplace=True) -------------------------------------------

def relu_in_place(torch, where):
    x = torch.tensor([[-1., 2., -3.], [4., -5., 6.]], requires_grad=True)
    y = x * 2
    target = {"y": y, "y[0]": y[0], "y.view(6)": y.view(6)}[where]
    result = torch.nn.functional.relu(target, inplace=True)
    out = (y * y).sum()
    out.backward()
    return result is target, target._version, y.grad_fn.name(), graph_signature(out), y, x.grad


@pytest.mark.parametrize("where", ["y", "y[0]", "y.view(6)"])
def test_functional_relu_in_place(where):
    """F.relu(inplace=True) is relu_: it returns its input, bumps the version, and on a view rebases
    the base onto CopySlices; gradients go through ReluBackward0 as in torch."""
    assert_same(relu_in_place, where, close=True)


def test_relu_in_place_on_a_view_frees_the_graph():
    """Upstream's test_inplace_on_view_saved_output: relu_ on a view saves its output, which once made a
    reference cycle; the clone's node (and a hook object on it) goes with the function's locals."""
    def scenario(torch):
        freed = []

        class Freed:
            def __del__(self):
                freed.append(True)

        def run():
            copy = torch.randn(3, 3, requires_grad=True).clone()
            copy.grad_fn.register_hook(Freed())
            torch.nn.functional.relu(copy.view(9), inplace=True)

        run()
        return freed
    expected, actual = both(scenario)
    assert actual == expected == [True]


def test_relu_module_in_place():
    def scenario(torch):
        module = torch.nn.ReLU(inplace=True)
        x = torch.tensor([-1., 2.], requires_grad=True)
        y = x * 1
        return repr(module), repr(torch.nn.ReLU()), module(y) is y, y, outcome(module, x)
    assert_same(scenario)


def copy_slices_under_create_graph(torch):
    """Gradients through a base whose views were edited in place, with create_graph: CopySlices runs
    torch's steps as ops (the gradient copied into the base's layout, the view's part cloned, run
    through the edit's node and written back), so the graph of the gradient is torch's, and so is
    the second derivative."""
    torch.manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = x * 1
    y[1].mul_(w)
    y[:3, 2].add_(w * 2)
    grad_x, grad_w = torch.autograd.grad((y * y).sum(), (x, w), create_graph=True)
    return (graph_signature(grad_x), grad_x, grad_w,
            torch.autograd.grad((grad_x * grad_x).sum() + grad_w.sum(), (x, w)))


def test_copy_slices_under_create_graph():
    assert_same(copy_slices_under_create_graph, close=True)


def view_edit_without_a_gradient_for_the_view(torch):
    """A custom Function that edits a view in place (mark_dirty) and gives the view no gradient: the
    base then gets none at all from its CopySlices, not even where the view does not lie (torch's)."""
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, w):
            ctx.mark_dirty(a)
            return a.mul_(w)

        @staticmethod
        def backward(ctx, grad):
            return None, grad * 1

    x = torch.ones(4, 3, requires_grad=True)
    w = torch.full((3,), 2.0, requires_grad=True)
    y = x * 1
    Scale.apply(y[1], w)
    (y * 2).sum().backward()
    return y.grad_fn.name(), x.grad, w.grad


def test_a_view_edit_that_gives_the_view_no_gradient_gives_the_base_none():
    assert_same(view_edit_without_a_gradient_for_the_view)
