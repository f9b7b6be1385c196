"""The backward graph as torch builds it: node names and edges, what each node saves, when it frees it.

Every scenario runs with torch and with minigrad and the two outcomes must be equal, errors included:
the graph's shape, whether a second backward works, and which in-place edits break backward all
follow from what each op saves, so those outcomes pin down exactly what minigrad saves.
"""
import itertools
import operator

import pytest

from coursekit.testing import assert_same, graph_signature, outcome

A, B, V = (2, 3), (3, 4), (3,)


def linear(lib, *tensors):
    """F.linear(input, weight[, bias]): addmm on rows, as nn.Linear runs it."""
    return lib.nn.functional.linear(*tensors)


# id -> (op, {input name: shape}); inputs are named as torch names the arguments (``grad_fn._saved_self``).
OPS = {
    "add": (lambda lib, a, b: a + b, {"self": A, "other": A}),
    "add_broadcast": (lambda lib, a, b: a + b, {"self": A, "other": V}),
    "x_plus_2": (lambda lib, a: a + 2, {"self": A}),
    "1_plus_x": (lambda lib, a: 1 + a, {"self": A}),
    "sub": (lambda lib, a, b: a - b, {"self": A, "other": A}),
    "x_minus_2": (lambda lib, a: a - 2, {"self": A}),
    "2_minus_x": (lambda lib, a: 2 - a, {"self": A}),
    "mul": (lambda lib, a, b: a * b, {"self": A, "other": A}),
    "mul_broadcast": (lambda lib, a, b: a * b, {"self": A, "other": V}),
    "x_times_2": (lambda lib, a: a * 2, {"self": A}),
    "2_times_x": (lambda lib, a: 2 * a, {"self": A}),
    "div": (lambda lib, a, b: a / b, {"self": A, "other": A}),
    "x_over_2": (lambda lib, a: a / 2, {"self": A}),
    "2_over_x": (lambda lib, a: 2 / a, {"self": A}),
    "neg": (lambda lib, a: -a, {"self": A}),
    "x_pow_2": (lambda lib, a: a ** 2, {"self": A}),
    "pow_fn": (lambda lib, a: lib.pow(a, 3), {"self": A}),
    "pow_tensor": (lambda lib, a, b: a ** b, {"self": A, "exponent": A}),
    "2_pow_x": (lambda lib, a: 2 ** a, {"exponent": A}),
    "exp": (lambda lib, a: a.exp(), {"self": A}),
    "log": (lambda lib, a: a.log(), {"self": A}),
    "relu": (lambda lib, a: a.relu(), {"self": A}),
    "tanh": (lambda lib, a: a.tanh(), {"self": A}),
    "sigmoid": (lambda lib, a: a.sigmoid(), {"self": A}),
    "abs": (lambda lib, a: a.abs(), {"self": A}),
    "sgn": (lambda lib, a: a.sgn(), {"self": A}),
    "sgn_fn": (lambda lib, a: lib.sgn(a), {"self": A}),
    "clone": (lambda lib, a: a.clone(), {"self": A}),
    "sum": (lambda lib, a: a.sum(), {"self": A}),
    "sum_dim": (lambda lib, a: a.sum(1), {"self": A}),
    "sum_negative_dim": (lambda lib, a: a.sum(-1), {"self": A}),
    "sum_tuple_keepdim": (lambda lib, a: a.sum((0, 1), keepdim=True), {"self": A}),
    "mean": (lambda lib, a: a.mean(), {"self": A}),
    "mean_dim": (lambda lib, a: a.mean(0), {"self": A}),
    "mean_tuple_keepdim": (lambda lib, a: a.mean((0, -1), keepdim=True), {"self": A}),
    "dot": (lambda lib, a, b: a @ b, {"self": V, "tensor": V}),
    "mv": (lambda lib, a, b: a @ b, {"self": A, "vec": V}),
    "mm": (lambda lib, a, b: a @ b, {"self": A, "mat2": B}),
    "vector_at_matrix": (lambda lib, a, b: a @ b, {"self": V, "other": B}),
    "t": (lambda lib, a: a.t(), {"self": A}),
    "transpose": (lambda lib, a: a.transpose(0, 1), {"self": A}),
    "reshape": (lambda lib, a: a.reshape(3, 2), {"self": A}),
    "reshape_non_contiguous": (lambda lib, a: a.t().reshape(6), {"self": A}),
    "view": (lambda lib, a: a.view(6), {"self": A}),
    "unsqueeze": (lambda lib, a: a.unsqueeze(-1), {"self": A}),
    "squeeze": (lambda lib, a: a.squeeze(), {"self": (1, 3, 1)}),
    "squeeze_dim": (lambda lib, a: a.squeeze(0), {"self": (1, 3, 1)}),
    "squeeze_tuple_dim": (lambda lib, a: a.squeeze((0, 2)), {"self": (1, 3, 1)}),
    "expand": (lambda lib, a: a.expand(2, 3), {"self": (1, 3)}),
    "index_int": (lambda lib, a: a[1], {"self": A}),
    "index_negative_int": (lambda lib, a: a[-1], {"self": A}),
    "index_slice": (lambda lib, a: a[0:1], {"self": A}),
    "index_full_slice": (lambda lib, a: a[:], {"self": A}),
    "index_tuple": (lambda lib, a: a[1, 1:], {"self": A}),
    "index_none": (lambda lib, a: a[None], {"self": A}),
    "index_ellipsis": (lambda lib, a: a[..., 0], {"self": A}),
    "index_ellipsis_alone": (lambda lib, a: a[...], {"self": A}),
    "index_mixed": (lambda lib, a: a[-1, None, ::2], {"self": (2, 3, 4)}),
    "max": (lambda lib, a: a.max(), {"self": A}),
    "max_dim": (lambda lib, a: a.max(1)[0], {"self": A}),
    "max_dim_keepdim": (lambda lib, a: a.max(-1, keepdim=True).values, {"self": A}),
    "mse_loss": (lambda lib, a, b: lib.nn.functional.mse_loss(a, b), {"self": A, "target": A}),
    "mse_loss_sum": (lambda lib, a, b: lib.nn.functional.mse_loss(a, b, reduction="sum"), {"self": A, "target": A}),
    "l1_loss": (lambda lib, a, b: lib.nn.functional.l1_loss(a, b), {"self": A, "target": A}),
    "linear_1d": (linear, {"input": (3,), "weight": (2, 3), "bias": (2,)}),
    "linear_2d": (linear, {"input": (4, 3), "weight": (2, 3), "bias": (2,)}),
    "linear_3d": (linear, {"input": (2, 4, 3), "weight": (2, 3), "bias": (2,)}),
    "linear_no_bias": (linear, {"input": (4, 3), "weight": (2, 3)}),
}


def assign(out, key, value):
    """``out[key] = value`` as an expression."""
    out[key] = value
    return out


# In-place ops run on a non-leaf: a clone of the input named "self".
INPLACE = {
    "add_": (lambda lib, a, b: a.clone().add_(b), {"self": A, "other": A}),
    "add_scalar_": (lambda lib, a: a.clone().add_(2), {"self": A}),
    "sub_": (lambda lib, a, b: a.clone().sub_(b), {"self": A, "other": V}),
    "mul_": (lambda lib, a, b: a.clone().mul_(b), {"self": A, "other": A}),
    "mul_scalar_": (lambda lib, a: a.clone().mul_(2), {"self": A}),
    "div_": (lambda lib, a, b: a.clone().div_(b), {"self": A, "other": A}),
    "div_scalar_": (lambda lib, a: a.clone().div_(2), {"self": A}),
    "zero_": (lambda lib, a: a.clone().zero_(), {"self": A}),
    "fill_": (lambda lib, a: a.clone().fill_(2), {"self": A}),
    "copy_": (lambda lib, a, b: a.clone().copy_(b), {"self": A, "src": A}),
    "copy_broadcast": (lambda lib, a, b: a.clone().copy_(b), {"self": A, "src": V}),
    "iadd": (lambda lib, a, b: operator.iadd(a.clone(), b), {"self": A, "other": A}),
    "isub": (lambda lib, a, b: operator.isub(a.clone(), b), {"self": A, "other": A}),
    "imul": (lambda lib, a, b: operator.imul(a.clone(), b), {"self": A, "other": A}),
    "idiv": (lambda lib, a, b: operator.itruediv(a.clone(), b), {"self": A, "other": A}),
    "setitem_row": (lambda lib, a, v: assign(a.clone(), 0, v), {"self": A, "value": V}),
    "setitem_scalar": (lambda lib, a: assign(a.clone(), 0, 5.0), {"self": A}),
    "setitem_negative": (lambda lib, a, v: assign(a.clone(), -1, v), {"self": A, "value": V}),
    "setitem_slice_broadcast": (lambda lib, a, v: assign(a.clone(), (slice(None), slice(1, None)), v),
                                {"self": A, "value": (1,)}),
    "mul_then_mul_": (lambda lib, a, b: a.clone().mul_(b).mul_(b), {"self": A, "other": A}),
    "exp_then_mul_": (lambda lib, a: a.exp().mul_(2), {"self": A}),
    "add_then_exp": (lambda lib, a, b: a.clone().add_(b).exp(), {"self": A, "other": A}),
}


def leaves(lib, device, shapes, grads):
    """Seeded positive float64 leaves (log, pow and division stay finite), with the given requires_grad."""
    lib.manual_seed(0)
    return [(lib.rand(shape, dtype=lib.float64, device=device) + 0.5).requires_grad_(flag)
            for shape, flag in zip(shapes, grads)]


def build(lib, device, table, id, grads):
    """The op's inputs by name and its output."""
    op, shapes = table[id]
    inputs = dict(zip(shapes, leaves(lib, device, shapes.values(), grads)))
    return inputs, op(lib, *inputs.values())


def with_grad_flags(table, ids=None, targets=False):
    """Parameters (id, grads[, target]) for every non-empty set of inputs that require grad.

    ``targets`` adds, for each, every tensor an edit could hit: each input and the output ("result").
    """
    params = []
    for id in ids or table:
        names = list(table[id][1])
        for grads in itertools.product([True, False], repeat=len(names)):
            if not any(grads):
                continue
            label = f"{id}-grad_" + "_".join(n for n, g in zip(names, grads) if g)
            if not targets:
                params.append(pytest.param(id, grads, id=label))
                continue
            for target in names + ["result"]:
                params.append(pytest.param(id, grads, target, id=f"{label}-edit_{target}"))
    return params


# --- graph_signature ------------------------------------------------------------------------

def signature(lib, device, table, id, grads):
    _, out = build(lib, device, table, id, grads)
    return graph_signature(out)


@pytest.mark.parametrize("id, grads", with_grad_flags(OPS))
def test_graph_of_op(id, grads, device):
    """Node names and edges, with ``None`` edges for the inputs that don't require grad."""
    assert_same(signature, device, OPS, id, grads)


@pytest.mark.parametrize("id, grads", with_grad_flags(INPLACE))
def test_graph_of_inplace_op(id, grads, device):
    """An in-place op on a non-leaf rebases it onto a new node (CopySlices for ``x[i] = v``)."""
    assert_same(signature, device, INPLACE, id, grads)


def no_grad(edit):
    """``edit`` run under no_grad: autograd doesn't record it, but the version counter still moves."""
    def edited(lib, *tensors):
        with lib.no_grad():
            edit(lib, *tensors)
    return edited


BASE_EDITS = {
    "add_": lambda lib, base, a: base.add_(1),
    "mul_": lambda lib, base, a: base.mul_(a),
    "setitem_other_row": lambda lib, base, a: assign(base, 1, a[0] * 3),
    "mul_under_no_grad": no_grad(lambda lib, base, a: base.mul_(2)),
}


def view_of_edited_base(lib, device, edit):
    """A view taken before an in-place edit of its base: its graph and gradient must see the edit."""
    (a,) = leaves(lib, device, [A], [True])
    base = a * 1
    view = base[0]
    BASE_EDITS[edit](lib, base, a)
    graph = graph_signature(view)
    return graph, outcome(lambda: view.backward(lib.ones_like(view))), a.grad


@pytest.mark.parametrize("edit", BASE_EDITS)
def test_view_of_base_edited_in_place(edit, device):
    assert_same(view_of_edited_base, device, edit, close=True)


# --- freeing: a second backward without retain_graph ---------------------------------------

def backward_twice(lib, device, table, id, grads):
    """Two backwards without retain_graph: ok (gradients accumulate) only if no node saved a tensor."""
    inputs, out = build(lib, device, table, id, grads)
    first = outcome(lambda: out.backward(lib.ones_like(out)))
    second = outcome(lambda: out.backward(lib.ones_like(out)))
    return first, second, [x.grad for x in inputs.values()]


@pytest.mark.parametrize("id, grads", with_grad_flags(OPS))
def test_second_backward_of_op(id, grads, device):
    assert_same(backward_twice, device, OPS, id, grads, close=True)


@pytest.mark.parametrize("id, grads", with_grad_flags(INPLACE))
def test_second_backward_of_inplace_op(id, grads, device):
    assert_same(backward_twice, device, INPLACE, id, grads, close=True)


# The tensors each node exposes as ``grad_fn._saved_<name>``.
SAVED = {
    "mul": ("self", "other"), "mul_broadcast": ("self", "other"), "x_times_2": ("self", "other"),
    "div": ("self", "other"), "x_over_2": ("self", "other"), "2_over_x": ("self", "other"),
    "x_pow_2": ("self",), "pow_tensor": ("self", "exponent", "result"), "2_pow_x": ("exponent", "result"),
    "exp": ("result",), "log": ("self",), "relu": ("result",), "tanh": ("result",), "sigmoid": ("result",),
    "abs": ("self",), "dot": ("self", "tensor"), "mv": ("self", "vec"), "mm": ("self", "mat2"),
    "max": ("self", "result"), "max_dim": ("indices",), "mse_loss": ("self", "target"),
    "linear_2d": ("mat1", "mat2"),
}


def saved_attributes(lib, device, id, grads):
    """``grad_fn._saved_*`` before backward (the values, or None if not needed) and after it (freed)."""
    _, out = build(lib, device, OPS, id, grads)
    names = [f"_saved_{name}" for name in SAVED[id]]
    before = [outcome(getattr, out.grad_fn, name) for name in names]
    out.backward(lib.ones_like(out))
    return before, [outcome(getattr, out.grad_fn, name) for name in names]


@pytest.mark.parametrize("id, grads", with_grad_flags(OPS, SAVED))
def test_saved_attributes(id, grads, device):
    assert_same(saved_attributes, device, id, grads)


# --- exactly what is saved: edit a tensor in place, then backward --------------------------

def edit_then_backward(lib, device, table, id, grads, target):
    """Bump ``target``'s version behind autograd's back: backward fails exactly if a node saved it."""
    inputs, out = build(lib, device, table, id, grads)
    with lib.no_grad():
        (out if target == "result" else inputs[target]).mul_(2)
    return outcome(lambda: out.backward(lib.ones_like(out))), [x.grad for x in inputs.values()]


@pytest.mark.parametrize("id, grads, target", with_grad_flags(OPS, targets=True))
def test_edit_of_op_input_or_output(id, grads, target, device):
    assert_same(edit_then_backward, device, OPS, id, grads, target, close=True)


@pytest.mark.parametrize("id, grads, target", with_grad_flags(INPLACE, targets=True))
def test_edit_of_inplace_op_input_or_output(id, grads, target, device):
    assert_same(edit_then_backward, device, INPLACE, id, grads, target, close=True)


def test_only_the_tensor_needed_for_the_gradient_is_saved(device):
    """``output = self * other`` with only self requiring grad saves other, not self (seed 002)."""
    def scenario(lib, device, edited):
        self = lib.tensor([1.0, 2.0], dtype=lib.float64, device=device, requires_grad=True)
        other = lib.tensor([3.0, 4.0], dtype=lib.float64, device=device)
        output = self * other
        with lib.no_grad():
            if edited == "self":
                self += 1
            else:
                other += 1
        return outcome(lambda: output.sum().backward()), self.grad
    assert_same(scenario, device, "self")
    assert_same(scenario, device, "other")


def edit_saved_non_leaf(lib, device, producer, consumer):
    """``consumer`` saves a tensor that ``producer`` made; the error message names the producing node."""
    op, shapes = OPS[consumer]
    first, *others = leaves(lib, device, shapes.values(), (True,) * len(shapes))
    made = PRODUCERS[producer](first)
    out = op(lib, made, *others)
    with lib.no_grad():
        made.add_(1)
    return outcome(lambda: out.backward(lib.ones_like(out)))


PRODUCERS = {
    "exp": lambda a: a.exp(),
    "clone": lambda a: a.clone(),
    "sum_dim": lambda a: a.sum(1, keepdim=True),
    "max": lambda a: a.max(),
    "max_dim": lambda a: a.max(1, keepdim=True)[0],
    "pow_tensor": lambda a: a ** a,
    "2_pow_x": lambda a: 2 ** a,
    "view": lambda a: a.view(2, 3),
    "index": lambda a: a[:],
}


@pytest.mark.parametrize("producer", PRODUCERS)
def test_edit_of_saved_non_leaf_names_its_producer(producer, device):
    assert_same(edit_saved_non_leaf, device, producer, "mul")


@pytest.mark.parametrize("consumer", ["mul", "div", "log", "x_pow_2", "mm", "mse_loss", "max", "linear_2d"])
def test_edit_of_saved_non_leaf_input(consumer, device):
    assert_same(edit_saved_non_leaf, device, "exp", consumer)


# --- version counters ------------------------------------------------------------------------

def versions(lib, device, steps):
    """``_version`` of a leaf, a non-leaf, a view, a detached alias and ``.data`` after each step."""
    x = lib.ones(2, 3, dtype=lib.float64, device=device, requires_grad=True)
    y = x * 1
    view, alias = y[0], y.detach()
    seen = []
    for step in steps:
        step(lib, x, y, view, alias)
        seen.append([x._version, y._version, view._version, alias._version, y.data._version])
    return seen


VERSION_STEPS = {
    "add_": lambda lib, x, y, view, alias: y.add_(1),
    "sub_": lambda lib, x, y, view, alias: y.sub_(x),
    "mul_": lambda lib, x, y, view, alias: y.mul_(2),
    "div_": lambda lib, x, y, view, alias: y.div_(x),
    "zero_": lambda lib, x, y, view, alias: y.zero_(),
    "fill_": lambda lib, x, y, view, alias: y.fill_(3),
    "copy_": lambda lib, x, y, view, alias: y.copy_(x),
    "iadd": lambda lib, x, y, view, alias: operator.iadd(y, 1),
    "setitem_tensor": lambda lib, x, y, view, alias: assign(y, 1, x[0] * 3),
    "setitem_scalar": lambda lib, x, y, view, alias: assign(y, (0, 1), 7.0),
    "leaf_edit_under_no_grad": no_grad(lambda lib, x, y, view, alias: x.add_(1)),
    "view_edit_under_no_grad": no_grad(lambda lib, x, y, view, alias: view.mul_(2)),
    "detached_edit": lambda lib, x, y, view, alias: alias.add_(1),
    "data_edit": lambda lib, x, y, view, alias: y.data.add_(1),
    "out_of_place": lambda lib, x, y, view, alias: (y + 1, y.exp(), y[0], y.t()),
}


def test_version_after_each_inplace_op(device):
    """One long sequence: every in-place op bumps the counter shared by views and detach(), once."""
    assert_same(versions, device, list(VERSION_STEPS.values()))


@pytest.mark.parametrize("step", VERSION_STEPS)
def test_version_after_one_inplace_op(step, device):
    assert_same(versions, device, [VERSION_STEPS[step]] * 2)
