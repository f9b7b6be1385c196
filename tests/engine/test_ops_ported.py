"""Issue 37: the ops added so that upstream tests could be restated (atan2, trace, isin, signbit, nextafter,
min, median, nanmedian, argmin, argsort, count_nonzero, searchsorted, bucketize, linspace, the unique ops, the
unsafe splits, the in-place view ops), each scenario run with torch and with minigrad: values, gradients,
grad_fn names, what is saved, and errors."""
import pytest

from coursekit.testing import assert_same, graph_signature

TIED = [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
ALL_NAN = [float("nan")] * 3
SOME_NAN = [[1.0, float("nan"), 3.0], [float("nan"), float("nan"), 2.0]]
REDUCTIONS = ["min", "max", "median", "nanmedian"]


def _errors(call):
    """What ``call`` returned, or the type and text of what it raised."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - the error is the result being compared
        return type(error).__name__, str(error).split("\n")[0]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("data", [TIED, ALL_NAN, SOME_NAN, [[4.0, 2.0, 3.0], [5.0, 1.0, 6.0]], 7.0],
                         ids=["ties", "all_nan", "some_nan", "no_ties", "0_dim"])
def test_whole_tensor_reductions_share_the_gradient_over_ties(name, data, device):
    """Every element equal to the result (NaN ones where it is NaN) gets an even share of the gradient."""
    def scenario(lib, device):
        x = lib.tensor(data, dtype=lib.float64, device=device, requires_grad=True)
        y = getattr(lib, name)(x)
        y.backward(lib.tensor(6.0, dtype=lib.float64, device=device))
        node = y.grad_fn
        return y, x.grad, node.name(), node._saved_self is x, node._saved_result is y
    assert_same(scenario, device, close=True)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, False), (-1, False), (1, True), (-2, True)],
                         ids=["dim0", "dim1", "dim-1", "dim1_keepdim", "dim-2_keepdim"])
@pytest.mark.parametrize("data", [TIED, SOME_NAN], ids=["ties", "some_nan"])
def test_reductions_along_a_dim_route_the_gradient_to_the_index(name, dim, keepdim, data, device):
    """(values, indices), named as torch's return type; the gradient goes to each chosen index only, and
    the indices are integers outside any graph."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.tensor(data, dtype=lib.float64, device=device, requires_grad=True)
        values, indices = getattr(x, name)(dim, keepdim=keepdim)
        named = getattr(lib, name)(x, dim, keepdim)
        values.backward(lib.randn_like(values))
        return (values, indices, named.values, named.indices, x.grad, values.grad_fn.name(), indices.requires_grad,
                indices.grad_fn, repr(named).split("(")[0])
    assert_same(scenario, device, close=True)


@pytest.mark.parametrize("name", REDUCTIONS + ["argmin", "argmax"])
def test_reductions_of_integers_have_no_gradient(name):
    def scenario(lib):
        x = lib.tensor([[3, 1, 2], [1, 5, 1]])
        whole = getattr(x, name)()
        along = getattr(x, name)(1)
        return whole, along, whole.requires_grad, whole.grad_fn
    assert_same(scenario)


@pytest.mark.parametrize("call", [
    lambda lib: lib.min(lib.ones(0)),
    lambda lib: lib.ones(0).max(),
    lambda lib: lib.median(lib.ones(0)),
    lambda lib: lib.median(lib.ones(0), 0),
    lambda lib: lib.nanmedian(lib.ones(2, 3), 2),
    lambda lib: lib.ones(2, 3).min(-3),
    lambda lib: lib.ones(0, 2).argmin(),
], ids=["min_of_nothing", "max_of_nothing", "median_of_nothing_is_nan", "median_along_an_empty_dim",
        "nanmedian_dim_out_of_range", "min_dim_out_of_range", "argmin_of_nothing"])
def test_reductions_refuse_what_torch_refuses(call):
    assert_same(lambda lib: _errors(lambda: call(lib)), close=True)


def test_argmin_and_argmax_with_dims():
    def scenario(lib):
        x = lib.tensor([[1.0, 0.0, 1.0], [0.0, -1.0, -1.0]], requires_grad=True)
        return x.argmin(), x.argmin(1), lib.argmin(x, -1, keepdim=True), x.argmax(0, True), x.argmin(1).requires_grad
    assert_same(scenario)


# --- atan2 and nextafter ----------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ([0.0, 1.0, -2.0, 0.0], [0.0, 3.0, 0.5, -1.0]),
    ([[0.0], [2.0]], [0.0, -1.0, 4.0]),
    ([1.5, -0.5], 0.0),
], ids=["with_the_origin", "broadcast", "0_dim_other"])
def test_atan2_values_gradients_and_saved_inputs(a, b, device):
    """At the origin the gradient is 0 (torch takes 1 / (a² + b²) as 0 there), not NaN."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.tensor(a, dtype=lib.float64, device=device, requires_grad=True)
        y = lib.tensor(b, dtype=lib.float64, device=device, requires_grad=True)
        z = lib.atan2(x, y)
        z.backward(lib.randn_like(z))
        node = z.grad_fn
        return z, x.grad, y.grad, node.name(), node._saved_self is x, node._saved_other is y, x.atan2(y)
    assert_same(scenario, device, close=True)


def test_atan2_second_order():
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(3, dtype=lib.float64, requires_grad=True)
        y = lib.randn(3, dtype=lib.float64, requires_grad=True)
        gx, gy = lib.autograd.grad(lib.atan2(x, y).sum(), (x, y), create_graph=True)
        return gx, gy, lib.autograd.grad((gx * gy).sum(), (x, y))
    assert_same(scenario, close=True)


def test_atan2_of_one_input_requiring_grad_and_of_integers():
    def scenario(lib):
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        z = lib.atan2(lib.tensor([2.0, 0.0]), x)
        z.sum().backward()
        ints = lib.atan2(lib.tensor([1, 2]), lib.tensor([3, 4]))
        return z, x.grad, ints, ints.dtype, ints.requires_grad
    assert_same(scenario, close=True)


@pytest.mark.parametrize("call", [
    lambda lib: lib.atan2(lib.ones(2), 2),
    lambda lib: lib.atan2(2, lib.ones(2)),
    lambda lib: lib.ones(2).atan2(2.0),
    lambda lib: lib.nextafter(lib.ones(2), 1),
    lambda lib: lib.atan2(lib.ones(2), lib.ones(3)),
], ids=["atan2_other_a_number", "atan2_input_a_number", "atan2_method_number", "nextafter_other_a_number",
        "atan2_shapes"])
def test_binary_ops_refuse_what_torch_refuses(call):
    assert_same(lambda lib: _errors(lambda: call(lib)))


def test_nextafter_as_the_installed_torch():
    """Its values, its node and what it saves (nothing on torch 2.11, both inputs on 2.13); backward fails
    (2.11), or gives grad where the inputs differ and zeros for the other (2.13)."""
    def scenario(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = lib.tensor([1.0, 3.0, 2.0], requires_grad=True)
        z = lib.nextafter(x, y)
        node = z.grad_fn
        saved = [getattr(node, name, None) for name in ("_saved_self", "_saved_other")]
        seen = z, node.name(), saved[0] is x, saved[1] is y
        return seen, _errors(lambda: lib.autograd.grad(z, (x, y), lib.tensor([2.0, 3.0, 4.0])))
    assert_same(scenario)


# --- trace ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 3), (5, 2), (2, 5), (1, 4), (4, 1), (0, 3)])
def test_trace(shape, device):
    """The diagonal's sum; the gradient laid out by the installed torch's trace_backward (torch 2.11's
    writes past the diagonal of a tall matrix)."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.randn(shape, dtype=lib.float64, device=device, requires_grad=True)
        t = lib.trace(x)
        t.backward(lib.tensor(-2.0, dtype=lib.float64, device=device))
        return t, x.grad, t.grad_fn.name(), x.trace()
    assert_same(scenario, device, close=True)


def test_trace_second_order_and_integers():
    def scenario(lib):
        x = lib.randn(3, 3, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(lib.trace(x * x), x, create_graph=True)
        return lib.autograd.grad(g.sum(), x), lib.tensor([[1, 2], [3, 4]]).trace()
    assert_same(scenario, close=True)


@pytest.mark.parametrize("shape", [(3,), (2, 2, 2), ()], ids=["1d", "3d", "0_dim"])
def test_trace_refuses_what_is_not_a_matrix(shape):
    assert_same(lambda lib: _errors(lambda: lib.ones(shape).trace()))


# --- isin, signbit: bool outputs --------------------------------------------------------------

def test_isin_and_signbit_give_bools_outside_the_graph():
    def scenario(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, -0.0]], requires_grad=True)
        found = lib.isin(x, lib.tensor([2.0, 3.0]))
        return (found, found.requires_grad, found.grad_fn, lib.isin(x, 3.0), lib.isin(x, lib.tensor([2.0]), invert=True),
                lib.isin(lib.tensor([1, 5]), lib.tensor([5])), lib.signbit(x), x.signbit().requires_grad,
                lib.signbit(lib.tensor([-1, 0, 2])))
    assert_same(scenario)


# --- unsafe splits: pieces that are not views for autograd -------------------------------------

UNSAFE = {
    "unsafe_split": lambda t: t.unsafe_split(1),
    "unsafe_split_dim": lambda t: t.unsafe_split(2, -1),
    "unsafe_split_with_sizes": lambda t: t.unsafe_split_with_sizes((1, 2), 1),
    "unsafe_chunk": lambda t: t.unsafe_chunk(3),
    "unsafe_chunk_uneven_fn": lambda t: t.unsafe_chunk(2, 1),
}


@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_splits_may_be_edited_in_place(name):
    """Their pieces share the input's memory but not its version counter, may be edited in place, and
    backward concatenates their gradients."""
    def scenario(lib):
        lib.manual_seed(0)
        a = lib.randn(3, 3, dtype=lib.float64, requires_grad=True)
        b = a * 2
        pieces = UNSAFE[name](b)
        first = pieces[0]
        first.mul_(3)
        (first.sum() + pieces[-1].sum() * 2).backward()
        return (pieces, a.grad, graph_signature(first), [p._version for p in pieces], b._version, first._is_view(),
                first._base is None, b[0, 0].item())
    assert_same(scenario, close=True)


def test_unsafe_splits_refuse_what_torch_refuses():
    def scenario(lib):
        x = lib.ones(3, 2)
        return (_errors(lambda: x.unsafe_split(0)), _errors(lambda: x.unsafe_chunk(0)),
                _errors(lambda: x.unsafe_split_with_sizes([1, 1])), _errors(lambda: x.unsafe_split(1, 2)))
    assert_same(scenario)


# --- integer outputs: sorting, searching, counting, unique ---------------------------------------

def test_integer_outputs_have_no_gradient():
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.tensor([[0.5, 0.1, 0.9], [0.3, 0.3, 0.2]], requires_grad=True)
        bins = lib.linspace(0, 1.0, steps=5, requires_grad=True)
        outs = [x.argsort(), x.argsort(0, descending=True), lib.argsort(x, dim=-1, stable=True),
                lib.searchsorted(bins, x), lib.searchsorted(bins, lib.tensor(0.6, requires_grad=True), right=True),
                lib.searchsorted(bins, 0.25, side="right"), lib.bucketize(x, bins), lib.bucketize(x, bins, right=True),
                lib.bucketize(0.3, bins, out_int32=True), x.count_nonzero(), lib.count_nonzero(x - 0.3, 1)]
        return [(t, t.dtype, t.requires_grad, t.grad_fn) for t in outs] + [(bins, bins.requires_grad, bins.is_leaf)]
    assert_same(scenario)


UNIQUE = {
    "unique": lambda lib, x: lib.unique(x),
    "unique_all": lambda lib, x: lib.unique(x, sorted=True, return_inverse=True, return_counts=True),
    "unique_counts": lambda lib, x: x.unique(return_counts=True),
    "unique_dim": lambda lib, x: lib.unique(x, dim=0),
    "unique_dim_all": lambda lib, x: lib.unique(x, return_inverse=True, return_counts=True, dim=1),
    "unique_consecutive": lambda lib, x: lib.unique_consecutive(x),
    "unique_consecutive_inverse": lambda lib, x: x.unique_consecutive(return_inverse=True),
    "unique_consecutive_dim": lambda lib, x: lib.unique_consecutive(x, return_counts=True, dim=0),
    "_unique": lambda lib, x: lib._unique(x, sorted=True, return_inverse=True),
    "_unique_no_inverse": lambda lib, x: lib._unique(x),
    "_unique2": lambda lib, x: lib._unique2(x, return_counts=True),
    "_VF.unique_dim": lambda lib, x: lib._VF.unique_dim(x, 0, return_inverse=True),
}


@pytest.mark.parametrize("name", UNIQUE)
def test_unique_ops_record_a_node_no_backward_runs_through(name):
    """The values require grad (their node has torch's name), the inverse and counts don't; backward
    through the values fails with torch's error."""
    def scenario(lib):
        x = lib.tensor([[1.0, 1.0, 2.0], [1.0, 1.0, 2.0], [0.0, 3.0, 3.0]], requires_grad=True)
        result = UNIQUE[name](lib, x)
        outputs = result if isinstance(result, tuple) else (result,)
        seen = [(t, t.requires_grad, t.grad_fn.name() if t.grad_fn is not None else None) for t in outputs]
        return seen, _errors(lambda: outputs[0].sum().backward())
    assert_same(scenario)


def test_unique_ops_refuse_what_torch_refuses():
    def scenario(lib):
        x = lib.ones(2, 3)
        return (_errors(lambda: lib.unique(x, dim=2)), _errors(lambda: lib.unique_consecutive(x, dim=-3)),
                _errors(lambda: lib.searchsorted(lib.ones(2, 2), lib.ones(3))), _errors(lambda: x.argsort(2)))
    assert_same(scenario)


# --- in-place view ops: the tensor takes new sizes and strides ----------------------------------

IN_PLACE_VIEWS = {
    "t_": lambda t: t.t_(),
    "transpose_": lambda t: t.transpose_(0, -1),
    "swapdims_": lambda t: t.swapdims_(1, 0),
    "swapaxes_": lambda t: t.swapaxes_(-1, -2),
    "squeeze_": lambda t: t.unsqueeze_(1).squeeze_(),
    "squeeze_dim": lambda t: t.unsqueeze_(-1).squeeze_(-1),
    "squeeze_dims": lambda t: t.unsqueeze_(0).squeeze_((0, 1)),
    "unsqueeze_": lambda t: t.unsqueeze_(0),
    "unsqueeze_negative_dim": lambda t: t.unsqueeze_(-2),
    "as_strided_": lambda t: t.as_strided_((2, 2), (1, 2), 1),
    "as_strided_no_offset": lambda t: t.as_strided_((3,), (2,)),
}


@pytest.mark.parametrize("name", IN_PLACE_VIEWS)
@pytest.mark.parametrize("on", ["non_view", "view", "slice_then_edit"])
def test_in_place_view_ops(name, on):
    """The tensor itself changes shape (a version more); its grad_fn is the op's node, a view's base keeps
    its own; gradients through it, and through an in-place edit after it."""
    def scenario(lib):
        lib.manual_seed(0)
        a = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
        b = a * 2
        t = b.view_as(b) if on == "view" else b[1:] if on == "slice_then_edit" else b
        r = IN_PLACE_VIEWS[name](t)
        if on == "slice_then_edit":
            t.mul_(3)
        (t * lib.randn(t.shape, dtype=lib.float64)).sum().backward(retain_graph=True)
        (b.sum() * 2).backward()
        return (r is t, t, t.shape, t.stride(), t._version, b._version, graph_signature(t), graph_signature(b),
                t._is_view(), a.grad)
    assert_same(scenario, close=True)


@pytest.mark.parametrize("call", [
    lambda lib: lib.ones(2, 2, 2).t_(),
    lambda lib: lib.ones(2, 3, requires_grad=True).t_(),
    lambda lib: lib.ones(2, 3, requires_grad=True).clone().squeeze_(2),
    lambda lib: lib.ones(2, 3).unsqueeze_(3),
    lambda lib: lib.ones(2, 3).swapdims_(0, 2),
    lambda lib: lib.ones(2, 3).as_strided_((7,), (1,)),
    lambda lib: lib.ones(2, 3, requires_grad=True)[0].unsqueeze_(0),
    lambda lib: _no_grad_view(lib).squeeze_(),
], ids=["t_3d", "leaf", "squeeze_dim_out_of_range", "unsqueeze_dim_out_of_range", "swapdims_out_of_range",
        "as_strided_out_of_bounds", "view_of_a_leaf", "view_made_under_no_grad"])
def test_in_place_view_ops_refuse_what_torch_refuses(call):
    assert_same(lambda lib: _errors(lambda: call(lib)))


def _no_grad_view(lib):
    base = lib.ones(2, 3, requires_grad=True).clone()
    with lib.no_grad():
        return base[:1]


def test_matmul_of_a_vector_on_the_left_is_no_view():
    """torch squeezes mm's result in place (SqueezeBackward4): the result is no view."""
    def scenario(lib):
        y = lib.ones(3, requires_grad=True) @ lib.ones(3, 4)
        return y._is_view(), y._base is None, graph_signature(y)
    assert_same(scenario)
