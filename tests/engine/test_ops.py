"""Values and gradients of every op, in float64, on each device: torch computes the expected numbers.

Each scenario takes the library as an argument (``import minigrad as torch`` must behave the same),
draws its inputs from the seeded generator that both libraries share, and returns the op's output
with the gradients that a random upstream gradient gives every input.
"""
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coursekit.testing import assert_same, graph_signature

A, B, V = (2, 3), (3, 4), (3,)


def make(lib, device, shape, positive=False):
    """A float64 leaf that requires grad; ``positive`` keeps it in [0.5, 1.5) for log, pow and division."""
    if positive:
        x = lib.rand(shape, dtype=lib.float64, device=device) + 0.5
    else:
        x = lib.randn(shape, dtype=lib.float64, device=device)
    return x.requires_grad_()


def values_and_grads(lib, device, op, shapes, positive=False):
    """The op's output and each input's .grad after backward of a random (not all-ones) upstream gradient."""
    lib.manual_seed(0)
    inputs = [make(lib, device, shape, positive) for shape in shapes]
    out = op(lib, *inputs)
    out.backward(lib.randn_like(out))
    return out, [x.grad for x in inputs]


def case(id, op, *shapes, positive=False):
    return pytest.param(op, shapes, positive, id=id)


ARITHMETIC = [
    case("add", lambda lib, x, y: x + y, A, A),
    case("sub", lambda lib, x, y: x - y, A, A),
    case("mul", lambda lib, x, y: x * y, A, A),
    case("div", lambda lib, x, y: x / y, A, A, positive=True),
    case("pow_tensor", lambda lib, x, y: x ** y, A, A, positive=True),
    case("pow_method", lambda lib, x, y: x.pow(y), A, A, positive=True),
    case("neg", lambda lib, x: -x, A),
    case("x_plus_2", lambda lib, x: x + 2, A),
    case("1_plus_x", lambda lib, x: 1 + x, A),
    case("x_minus_2", lambda lib, x: x - 2, A),
    case("2_minus_x", lambda lib, x: 2 - x, A),
    case("x_times_2", lambda lib, x: x * 2, A),
    case("2_times_x", lambda lib, x: 2 * x, A),
    case("x_over_2", lambda lib, x: x / 2, A),
    case("2_over_x", lambda lib, x: 2 / x, A, positive=True),
    case("x_pow_2", lambda lib, x: x ** 2, A),
    case("x_pow_3_fn", lambda lib, x: lib.pow(x, 3), A),
    case("x_pow_half", lambda lib, x: x ** 0.5, A, positive=True),
    case("x_pow_neg", lambda lib, x: x ** -1.5, A, positive=True),
    case("x_pow_0", lambda lib, x: x ** 0, A),
    case("2_pow_x", lambda lib, x: 2 ** x, A),
    case("half_pow_x", lambda lib, x: 0.5 ** x, A),
]

UNARY = [
    case("exp", lambda lib, x: x.exp(), A),
    case("exp_fn", lambda lib, x: lib.exp(x), A),
    case("log", lambda lib, x: x.log(), A, positive=True),
    case("relu", lambda lib, x: x.relu(), A),
    case("sin", lambda lib, x: x.sin(), A),
    case("cos_fn", lambda lib, x: lib.cos(x), A),
    case("relu_functional", lambda lib, x: lib.nn.functional.relu(x), A),
    case("tanh", lambda lib, x: x.tanh(), A),
    case("sigmoid", lambda lib, x: x.sigmoid(), A),
    case("abs", lambda lib, x: x.abs(), A),
    case("sgn", lambda lib, x: x.sgn(), A),
    case("clone", lambda lib, x: x.clone(), A),
]

REDUCTIONS = [
    case("sum", lambda lib, x: x.sum(), (2, 3, 4)),
    case("sum_dim", lambda lib, x: x.sum(1), (2, 3, 4)),
    case("sum_negative_dim", lambda lib, x: x.sum(-1), (2, 3, 4)),
    case("sum_tuple_dim", lambda lib, x: x.sum((0, 2)), (2, 3, 4)),
    case("sum_keepdim", lambda lib, x: x.sum(1, keepdim=True), (2, 3, 4)),
    case("sum_tuple_keepdim", lambda lib, x: x.sum((0, -1), keepdim=True), (2, 3, 4)),
    case("sum_fn", lambda lib, x: lib.sum(x, 0), (2, 3, 4)),
    case("mean", lambda lib, x: x.mean(), (2, 3, 4)),
    case("mean_dim", lambda lib, x: x.mean(1), (2, 3, 4)),
    case("mean_negative_dim", lambda lib, x: x.mean(-1), (2, 3, 4)),
    case("mean_tuple_dim", lambda lib, x: x.mean((0, 2)), (2, 3, 4)),
    case("mean_keepdim", lambda lib, x: x.mean(1, keepdim=True), (2, 3, 4)),
    case("mean_tuple_keepdim", lambda lib, x: x.mean((0, -1), keepdim=True), (2, 3, 4)),
    case("max", lambda lib, x: x.max(), A),
]

MATMUL = [
    case("dot", lambda lib, x, y: x @ y, V, V),
    case("mv", lambda lib, x, y: x @ y, A, V),
    case("mm", lambda lib, x, y: x @ y, A, B),
    case("vector_at_matrix", lambda lib, x, y: x @ y, V, B),
    case("matmul_fn", lambda lib, x, y: lib.matmul(x, y), A, B),
    case("mm_method", lambda lib, x, y: x.mm(y), A, B),
    case("mv_method", lambda lib, x, y: x.mv(y), A, V),
    case("dot_method", lambda lib, x, y: x.dot(y), V, V),
]

VIEWS = [
    case("t", lambda lib, x: x.t(), A),
    case("t_of_vector", lambda lib, x: x.t(), V),
    case("transpose", lambda lib, x: x.transpose(0, 2), (2, 3, 4)),
    case("transpose_negative", lambda lib, x: x.transpose(-1, 0), A),
    case("reshape", lambda lib, x: x.reshape(3, 2), A),
    case("reshape_minus_one", lambda lib, x: x.reshape(-1), A),
    case("reshape_non_contiguous", lambda lib, x: x.t().reshape(6), A),
    case("reshape_non_contiguous_3d", lambda lib, x: x.transpose(0, 1).reshape(3, -1), (2, 3, 4)),
    case("view", lambda lib, x: x.view(3, 2), A),
    case("view_tuple", lambda lib, x: x.view((6,)), A),
    case("view_as", lambda lib, x: x.view_as(lib.ones(3, 2)), A),
    case("unsqueeze", lambda lib, x: x.unsqueeze(0), A),
    case("unsqueeze_middle", lambda lib, x: x.unsqueeze(1), A),
    case("unsqueeze_negative", lambda lib, x: x.unsqueeze(-1), A),
    case("squeeze", lambda lib, x: x.squeeze(), (1, 3, 1)),
    case("squeeze_dim", lambda lib, x: x.squeeze(0), (1, 3, 1)),
    case("squeeze_negative_dim", lambda lib, x: x.squeeze(-1), (1, 3, 1)),
    case("squeeze_dim_not_one", lambda lib, x: x.squeeze(1), (1, 3, 1)),
    case("expand", lambda lib, x: x.expand(2, 3), (1, 3)),
    case("expand_new_dims", lambda lib, x: x.expand(4, -1, 3), (2, 1)),
]

INDEXING = [
    case("int", lambda lib, x: x[1], A),
    case("negative_int", lambda lib, x: x[-1], A),
    case("two_ints", lambda lib, x: x[1, 2], A),
    case("slice", lambda lib, x: x[0:1], A),
    case("step_slice", lambda lib, x: x[::2], (3, 2)),
    case("negative_slice", lambda lib, x: x[-2:, ::2], (3, 4)),
    case("full_slice", lambda lib, x: x[:], A),
    case("column", lambda lib, x: x[:, 1], A),
    case("int_and_slice", lambda lib, x: x[1, 1:], A),
    case("none", lambda lib, x: x[None], A),
    case("none_inside", lambda lib, x: x[:, None], A),
    case("ellipsis", lambda lib, x: x[..., 0], (2, 3, 4)),
    case("ellipsis_none", lambda lib, x: x[0, ..., None], (2, 3, 4)),
    case("ellipsis_alone", lambda lib, x: x[...], A),
    case("mixed", lambda lib, x: x[-1, None, ::2], (2, 3, 4)),
    case("narrow", lambda lib, x: x.narrow(1, 1, 2), A),
    case("narrow_negative", lambda lib, x: lib.narrow(x, -1, -3, 2), (2, 3, 4)),
    case("select", lambda lib, x: x.select(1, -1), A),
    case("select_fn", lambda lib, x: lib.select(x, 0, 1), (2, 3, 4)),
]

LOSSES = [
    case("mse_loss", lambda lib, x, y: lib.nn.functional.mse_loss(x, y), A, A),
    case("mse_loss_sum", lambda lib, x, y: lib.nn.functional.mse_loss(x, y, reduction="sum"), A, A),
    case("mse_loss_none", lambda lib, x, y: lib.nn.functional.mse_loss(x, y, reduction="none"), A, A),
    case("mse_loss_module", lambda lib, x, y: lib.nn.MSELoss()(x, y), A, A),
    case("l1_loss", lambda lib, x, y: lib.nn.functional.l1_loss(x, y), A, A),
    case("l1_loss_sum", lambda lib, x, y: lib.nn.functional.l1_loss(x, y, reduction="sum"), A, A),
    case("l1_loss_module", lambda lib, x, y: lib.nn.L1Loss()(x, y), A, A),
]


@pytest.mark.parametrize("op, shapes, positive", ARITHMETIC)
def test_arithmetic(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


@pytest.mark.parametrize("op, shapes, positive", UNARY)
def test_unary(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


@pytest.mark.parametrize("op, shapes, positive", REDUCTIONS)
def test_reduction(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


@pytest.mark.parametrize("op, shapes, positive", MATMUL)
def test_matmul(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


@pytest.mark.parametrize("op, shapes, positive", VIEWS)
def test_view_and_shape(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


@pytest.mark.parametrize("op, shapes, positive", INDEXING)
def test_indexing(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


@pytest.mark.parametrize("call", [lambda x: x.narrow(0, 3, 2), lambda x: x.narrow(2, 0, 1),
                                  lambda x: x.select(0, 4), lambda x: x.select(-3, 0)],
                         ids=["narrow_past_the_end", "narrow_dim", "select_index", "select_dim"])
def test_narrow_and_select_refuse_what_torch_refuses(call):
    assert_same(lambda lib: call(lib.zeros(4, 3)))


@pytest.mark.parametrize("op, shapes, positive", LOSSES)
def test_loss(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


def test_reshape_of_non_contiguous_input_copies(device):
    """reshape can't view a transposed tensor: the result must not share memory with the input."""
    def scenario(lib, device):
        x = lib.zeros(2, 3, dtype=lib.float64, device=device)
        y = x.t().reshape(6)
        x.add_(1)
        return y
    assert_same(scenario, device)


# --- max: values, indices and where the gradient goes, ties included ------------------------

TIED = [[1.0, 3.0, 3.0], [0.0, 3.0, 2.0]]


@pytest.mark.parametrize("data", [TIED, [[1.0, 5.0, 3.0], [0.0, 4.0, 2.0]]], ids=["ties", "no_ties"])
def test_max_of_all_elements(data, device):
    """max() splits the gradient evenly between all the elements that equal the maximum."""
    def scenario(lib, device):
        x = lib.tensor(data, dtype=lib.float64, device=device, requires_grad=True)
        y = x.max()
        y.backward(lib.tensor(6.0, dtype=lib.float64, device=device))
        return y, x.grad
    assert_same(scenario, device, close=True)


@pytest.mark.parametrize("data", [TIED, [[1.0, 5.0, 3.0], [0.0, 4.0, 2.0]]], ids=["ties", "no_ties"])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, False), (-1, False), (1, True), (-2, True)],
                         ids=["dim0", "dim1", "dim-1", "dim1_keepdim", "dim-2_keepdim"])
def test_max_along_dim(data, dim, keepdim, device):
    """max(dim) returns values and indices; the gradient goes to the chosen index only."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.tensor(data, dtype=lib.float64, device=device, requires_grad=True)
        values, indices = x.max(dim, keepdim=keepdim)
        named = x.max(dim, keepdim)
        values.backward(lib.randn_like(values))
        return values, indices, named.values, named.indices, x.grad
    assert_same(scenario, device, close=True)


# --- nn.Linear ------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 4, 3)], ids=["1d", "2d", "3d"])
def test_linear(shape, bias, device):
    """Same seed, same initial weights; then the output and the gradients of input, weight and bias."""
    def scenario(lib, device):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2, bias=bias, dtype=lib.float64, device=device)
        x = make(lib, device, shape)
        y = layer(x)
        y.backward(lib.randn_like(y))
        return layer.weight, layer.bias, y, x.grad, layer.weight.grad, layer.bias.grad if bias else None
    assert_same(scenario, device, close=True)


# --- broadcasting, on shapes hypothesis draws -----------------------------------------------

@st.composite
def broadcastable_shapes(draw):
    """Two shapes of 0 to 3 dims, sizes 1-3, that broadcast: each takes trailing dims of a common shape, some as 1."""
    common = draw(st.lists(st.integers(1, 3), max_size=3))

    def operand():
        ndim = draw(st.integers(0, len(common)))
        return tuple(draw(st.sampled_from([1, size])) for size in common[len(common) - ndim:])

    return operand(), operand()


BROADCASTING = {
    "add": lambda lib, x, y: x + y,
    "sub": lambda lib, x, y: x - y,
    "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / y,
    "pow": lambda lib, x, y: lib.pow(x, y),
}


@pytest.mark.parametrize("name", BROADCASTING)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=broadcastable_shapes())
def test_broadcasting(name, shapes, device):
    """The gradient of a broadcast input is summed back to that input's shape."""
    assert_same(values_and_grads, device, BROADCASTING[name], shapes, True, close=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=broadcastable_shapes())
def test_broadcast_gradients_graph_as_torch(shapes, device):
    """Under create_graph, a broadcast input's gradient has torch's graph: the engine's ``sum_to`` is
    torch's ``at::sum_to`` (one SumBackward1 keeping the dims, then ViewBackward0 where broadcasting
    added dims; SumBackward0 down to 0 dims)."""
    def scenario(lib):
        lib.manual_seed(0)
        x, y = (make(lib, device, shape, False) for shape in shapes)
        out = x * y
        firsts = lib.autograd.grad(out, (x, y), lib.ones_like(out), create_graph=True)
        return [(g, graph_signature(g)) for g in firsts]
    assert_same(scenario)


# --- second-order gradients -----------------------------------------------------------------

def second_order(lib, device, op, shapes, positive):
    """Gradients with create_graph=True, then the gradient of a random combination of them."""
    lib.manual_seed(0)
    inputs = [make(lib, device, shape, positive) for shape in shapes]
    out = op(lib, *inputs)
    firsts = lib.autograd.grad(out, inputs, lib.randn_like(out), create_graph=True)
    combined = sum((g * lib.randn_like(g)).sum() for g in firsts)
    return firsts, lib.autograd.grad(combined, inputs)


SECOND_ORDER = [
    case("mul", lambda lib, x, y: x * y, A, A),
    case("div", lambda lib, x, y: x / y, A, A, positive=True),
    case("exp", lambda lib, x: x.exp(), A),
    case("log", lambda lib, x: x.log(), A, positive=True),
    case("tanh", lambda lib, x: x.tanh(), A),
    case("sigmoid", lambda lib, x: x.sigmoid(), A),
    case("pow_scalar", lambda lib, x: x ** 3, A),
    case("pow_tensor", lambda lib, x, y: x ** y, A, A, positive=True),
    case("2_pow_x", lambda lib, x: 2 ** x, A),
    case("mm", lambda lib, x, y: x @ y, A, B),
    case("mv", lambda lib, x, y: x @ y, A, V),
    case("dot", lambda lib, x, y: x @ y, V, V),
    case("mul_broadcast_sum", lambda lib, x, y: (x * y).sum(0), A, V),
    case("mul_broadcast_mean", lambda lib, x, y: (x * y).mean(), A, (2, 1)),
    case("mse_loss", lambda lib, x, y: lib.nn.functional.mse_loss(x, y), A, A),
]


@pytest.mark.parametrize("op, shapes, positive", SECOND_ORDER)
def test_second_order(op, shapes, positive, device):
    assert_same(second_order, device, op, shapes, positive, close=True)


# --- issue 9: the ops the tutorials need ----------------------------------------------------

def _classes(lib, x):
    """Class indices for the rows of x (one per row, or one for a single row), drawn from the shared generator."""
    return lib.randint(0, x.shape[-1], x.shape[:-1], device=x.device)


NEW_OPS = [
    case("round", lambda lib, x: (x * 3).round(), A),
    case("sqrt", lambda lib, x: x.sqrt(), A, positive=True),
    case("sqrt_fn", lambda lib, x: lib.sqrt(x), A, positive=True),
    case("softmax", lambda lib, x: x.softmax(-1), (2, 3, 4)),
    case("softmax_dim0", lambda lib, x: lib.nn.functional.softmax(x, dim=0), (2, 3, 4)),
    case("log_softmax", lambda lib, x: x.log_softmax(1), (2, 3, 4)),
    case("log_softmax_functional", lambda lib, x: lib.nn.functional.log_softmax(x, dim=-1), A),
    case("gelu", lambda lib, x: lib.nn.functional.gelu(x), A),
    case("gelu_tanh", lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"), A),
    case("norm", lambda lib, x: x.norm(), (2, 3, 4)),
    case("norm_dim", lambda lib, x: x.norm(dim=1), (2, 3, 4)),
    case("norm_dims_keepdim", lambda lib, x: x.norm(dim=(0, 2), keepdim=True), (2, 3, 4)),
    case("norm_p1", lambda lib, x: x.norm(p=1, dim=-1), A),
    case("norm_p3", lambda lib, x: x.norm(3), A),
    case("norm_p1_5", lambda lib, x: x.norm(1.5, dim=0), A),
    case("norm_p0_5", lambda lib, x: x.norm(0.5), A),
    case("norm_inf", lambda lib, x: x.norm(float("inf"), dim=1), A),
    case("norm_fn", lambda lib, x: lib.norm(x, dim=0), A),
    case("masked_fill", lambda lib, x: x.masked_fill(x > 0, -1.0), A),
    case("bmm", lambda lib, x, y: x.bmm(y), (2, 2, 3), (2, 3, 4)),
    case("bmm_fn", lambda lib, x, y: lib.bmm(x, y), (2, 2, 3), (2, 3, 4)),
    case("batch_at_batch", lambda lib, x, y: x @ y, (2, 2, 3), (2, 3, 4)),
    case("batch_at_broadcast_batch", lambda lib, x, y: x @ y, (2, 1, 2, 3), (3, 3, 4)),
    case("batch_at_transposed", lambda lib, x, y: x @ y.transpose(-1, -2), (2, 2, 3), (2, 4, 3)),
    case("layer_norm", lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), w, b), (2, 3, 4), (4,), (4,)),
    case("layer_norm_2d_shape", lambda lib, x, w: lib.nn.functional.layer_norm(x, (3, 4), w), (2, 3, 4), (3, 4)),
    case("layer_norm_no_affine", lambda lib, x: lib.nn.functional.layer_norm(x, (4,)), (2, 3, 4)),
    case("embedding", lambda lib, w: lib.nn.functional.embedding(lib.tensor([[0, 2], [2, 1]], device=w.device), w),
         (3, 4)),
    case("embedding_padding", lambda lib, w: lib.nn.functional.embedding(
        lib.tensor([[0, 2], [2, 1]], device=w.device), w, padding_idx=2), (3, 4)),
    case("cross_entropy", lambda lib, x: lib.nn.functional.cross_entropy(x, _classes(lib, x)), (5, 4)),
    case("cross_entropy_sum", lambda lib, x: lib.nn.functional.cross_entropy(x, _classes(lib, x), reduction="sum"),
         (5, 4)),
    case("cross_entropy_none", lambda lib, x: lib.nn.functional.cross_entropy(x, _classes(lib, x), reduction="none"),
         (5, 4)),
    case("cross_entropy_one_row", lambda lib, x: lib.nn.functional.cross_entropy(x, _classes(lib, x)), (4,)),
    case("cross_entropy_weight_ignore", lambda lib, x: lib.nn.functional.cross_entropy(
        x, lib.tensor([0, 3, -100, 1, 3], device=x.device), weight=lib.rand(4, dtype=lib.float64, device=x.device)),
        (5, 4)),
    case("nll_loss", lambda lib, x: lib.nn.functional.nll_loss(x.log_softmax(-1), _classes(lib, x)), (5, 4)),
    case("cross_entropy_module", lambda lib, x: lib.nn.CrossEntropyLoss()(x, _classes(lib, x)), (5, 4)),
]


@pytest.mark.parametrize("op, shapes, positive", NEW_OPS)
def test_new_ops(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


def graphs(lib, device, op, shapes, positive):
    """The graph torch records for the op, and what its node saves under torch's names."""
    lib.manual_seed(0)
    out = op(lib, *[make(lib, device, shape, positive) for shape in shapes])
    node = out.grad_fn
    names = {"SqrtBackward0": ["result"], "SoftmaxBackward0": ["result"], "LogSoftmaxBackward0": ["result"],
             "GeluBackward0": ["self"], "LinalgVectorNormBackward0": ["self", "result"],
             "BmmBackward0": ["self", "mat2"], "MaskedFillBackward0": ["mask"], "EmbeddingBackward0": ["indices"],
             "NativeLayerNormBackward0": ["input", "result1", "result2"],
             "NllLossBackward0": ["self", "target", "total_weight"]}.get(node.name(), [])
    return graph_signature(out), {name: getattr(node, "_saved_" + name) for name in names}


@pytest.mark.parametrize("op, shapes, positive", NEW_OPS)
def test_new_ops_graphs_and_saved_tensors(op, shapes, positive, device):
    assert_same(graphs, device, op, shapes, positive, close=True)


NEW_SECOND_ORDER = [
    case("sin", lambda lib, x: x.sin(), A),
    case("cos", lambda lib, x: x.cos(), A),
    case("sqrt", lambda lib, x: x.sqrt(), A, positive=True),
    case("softmax", lambda lib, x: x.softmax(-1), A),
    case("log_softmax", lambda lib, x: x.log_softmax(0), A),
    case("gelu", lambda lib, x: lib.nn.functional.gelu(x), A),
    case("gelu_tanh", lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"), A),
    case("norm", lambda lib, x: x.norm(dim=1), A),
    case("norm_p3", lambda lib, x: x.norm(3), A),
    case("bmm", lambda lib, x, y: x.bmm(y), (2, 2, 3), (2, 3, 4)),
    case("layer_norm", lambda lib, x, w: lib.nn.functional.layer_norm(x, (4,), w), (2, 3, 4), (4,)),
    case("cross_entropy", lambda lib, x: lib.nn.functional.cross_entropy(x, _classes(lib, x)) * 1.0, (5, 4)),
    case("embedding", lambda lib, w: lib.nn.functional.embedding(lib.tensor([[0, 2], [2, 2]], device=w.device), w)
         ** 2, (3, 4)),
]


@pytest.mark.parametrize("op, shapes, positive", NEW_SECOND_ORDER)
def test_new_ops_second_order(op, shapes, positive, device):
    assert_same(second_order, device, op, shapes, positive, close=True)


def test_round_has_a_zero_gradient_and_unique_none(device):
    def scenario(lib, device):
        x = lib.tensor([0.4, 1.6, 1.4, -0.6], device=device, requires_grad=True)
        r = x.round()
        u = r.unique()
        values, inverse, counts = lib.unique(r, return_inverse=True, return_counts=True)
        r.sum().backward()
        try:
            u.sum().backward()
            error = None
        except NotImplementedError as e:
            error = e
        return [r, x.grad, graph_signature(r), u, graph_signature(u), inverse, counts, inverse.requires_grad, error]
    assert_same(scenario, device)


def test_argmax_and_max_with_keywords(device):
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.randn(3, 4, device=device, requires_grad=True)
        best = x.max(dim=1, keepdim=True)
        values = lib.max(x, dim=0).values
        values.sum().backward()
        return [x.argmax(), x.argmax(dim=1), lib.argmax(x, 0, keepdim=True), best.values, best.indices,
                graph_signature(best.values), x.grad]
    assert_same(scenario, device)


def test_reshape_of_a_viewable_non_contiguous_tensor_is_reshape_alias():
    def scenario(lib):
        x = lib.ones(3, 4, requires_grad=True)
        return [graph_signature(x.t().reshape(4, 3, 1)), graph_signature(x.reshape(12)),
                graph_signature(x.t().reshape(12)), graph_signature(x.t().contiguous()), x.contiguous() is x,
                graph_signature(x.unflatten(1, (2, 2)))]
    assert_same(scenario)


def test_randint_and_randperm_draw_torchs_numbers():
    def scenario(lib):
        lib.manual_seed(0)
        return [lib.randint(0, 100, (4, 6)), lib.randint(5, (3,)), lib.randperm(7), lib.rand(2)]
    assert_same(scenario)


def test_dropout_drops_what_torch_drops(device):
    """Same seed, same mask: torch's kernel runs on the storage."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.randn(4, 5, dtype=lib.float64, device=device, requires_grad=True)
        y = lib.nn.functional.dropout(x, p=0.3)
        z = lib.nn.functional.dropout(x, p=1.0)
        y.backward(lib.ones_like(y))
        off = lib.nn.functional.dropout(x, p=0.3, training=False)
        return [y, z, x.grad, graph_signature(y), graph_signature(z), off is x]
    assert_same(scenario, device)


POW_AT_ZERO = {
    "tensor ** tensor": lambda lib, base, exponent: base ** exponent,
    "number 0 ** tensor": lambda lib, base, exponent: 0 ** exponent,
    "number 2 ** tensor": lambda lib, base, exponent: 2 ** exponent,
    "tensor ** 0": lambda lib, base, exponent: base ** 0,
}


@pytest.mark.parametrize("op", POW_AT_ZERO)
def test_pow_gradients_where_the_base_or_exponent_is_zero(op):
    """torch's pow backward is 0 where the exponent is 0 (for the base) and where the base is 0 and
    the exponent is not negative (for the exponent), the limits; elsewhere the formula (inf, -inf)."""
    def scenario(lib):
        base = lib.tensor([0.0, 0.0, 0.0, 2.0], requires_grad=True)
        exponent = lib.tensor([-1.0, 0.0, 1.0, 0.0], requires_grad=True)
        out = POW_AT_ZERO[op](lib, base, exponent)
        return out, lib.autograd.grad(out.sum(), (base, exponent), allow_unused=True)
    assert_same(scenario, close=True)


# --- issue 37: ops that return several views, join tensors, tile, pick a diagonal, choose ------

MORE_OPS = [
    case("unbind", lambda lib, x: x.unbind(1)[2], A),
    case("unbind_fn_two_used", lambda lib, x: lib.unbind(x, -1)[0] * 2 + x.unbind(-1)[1], (2, 3, 4)),
    case("chunk_uneven", lambda lib, x: x.chunk(2, 1)[1], A),
    case("chunk_fn", lambda lib, x: lib.chunk(x, 3)[0] * 3 + lib.chunk(x, 3)[2], (5, 2)),
    case("stack", lambda lib, x, y: lib.stack([x, y], 1), A, A),
    case("stack_negative_dim", lambda lib, x, y: lib.stack((x, y * 2, x), -1), A, A),
    case("diagonal", lambda lib, x: x.diagonal(), (3, 3)),
    case("diagonal_offset", lambda lib, x: x.diagonal(1), A),
    case("diagonal_fn_dims", lambda lib, x: lib.diagonal(x, -1, 1, 2), (2, 3, 4)),
    case("repeat", lambda lib, x: x.repeat(2, 1), A),
    case("repeat_new_dims", lambda lib, x: x.repeat(3, 1, 2), A),
    case("repeat_list", lambda lib, x: x.repeat([2, 2]), V),
    case("repeat_zero", lambda lib, x: x.repeat(1, 0) * 2, A),
    case("where", lambda lib, x, y: lib.where(x > 0, x, y), A, A),
    case("where_broadcast_method", lambda lib, x, y: x.where(x < 0, y), A, V),
    case("where_scalar_other", lambda lib, x: lib.where(x > 0, x, 0.0), A),
    case("where_scalar_input", lambda lib, x: lib.where(x > 0, 1.0, x), A),
    case("exp_", lambda lib, x: (x * 1).exp_(), A),
    case("var", lambda lib, x: x.var(), (2, 3, 4)),
    case("var_dims_keepdim", lambda lib, x: x.var((0, -1), keepdim=True), (2, 3, 4)),
    case("var_biased_fn", lambda lib, x: lib.var(x, 1, False), A),
    case("var_correction", lambda lib, x: x.var(0, correction=0.5), V),
    case("var_mean", lambda lib, x: lib.var_mean(x, 1)[0] * lib.var_mean(x, 1)[1], (2, 3, 4)),
    case("var_mean_all", lambda lib, x: lib.var_mean(x)[0] + 3 * lib.var_mean(x)[1], A),
    case("var_mean_mean_only", lambda lib, x: lib.var_mean(x, 0, keepdim=True)[1], A),
    case("prod", lambda lib, x: x.prod(), A),
    case("prod_dim", lambda lib, x: lib.prod(x, -1), (2, 3, 4)),
    case("prod_keepdim", lambda lib, x: x.prod(0, keepdim=True), A),
    case("split", lambda lib, x: x.split(2, 1)[1], (2, 5)),
    case("split_sizes", lambda lib, x: lib.split(x, [1, 3], -1)[1] * 2, (2, 4)),
    case("split_with_sizes", lambda lib, x: x.split_with_sizes((2, 0, 1))[0], (3, 2)),
    case("cat", lambda lib, x, y: lib.cat([x, y]), A, (4, 3)),
    case("cat_dim", lambda lib, x, y: lib.cat((x, y * 2, x), -1), A, A),
]


@pytest.mark.parametrize("op, shapes, positive", MORE_OPS)
def test_more_ops(op, shapes, positive, device):
    assert_same(values_and_grads, device, op, shapes, positive, close=True)


def more_graphs(lib, device, op, shapes, positive):
    """The graph, and what its node saves: the condition of where, the result of exp_ (the tensor itself),
    the input of var and var_mean, the input and result of prod."""
    lib.manual_seed(0)
    out = op(lib, *[make(lib, device, shape, positive) for shape in shapes])
    node = out.grad_fn
    names = {"WhereBackward0": ["condition"], "ExpBackward0": ["result"], "VarBackward0": ["self"],
             "VarMeanBackward0": ["self"], "ProdBackward0": ["self", "result"],
             "ProdBackward1": ["self", "result"]}.get(node.name(), [])
    saved = {name: getattr(node, "_saved_" + name) for name in names}
    return graph_signature(out), saved, [s is out for s in saved.values()], out._is_view(), out._base is not None


@pytest.mark.parametrize("op, shapes, positive", MORE_OPS)
def test_more_ops_graphs_and_saved_tensors(op, shapes, positive, device):
    assert_same(more_graphs, device, op, shapes, positive, close=True)


MORE_SECOND_ORDER = [
    case("unbind", lambda lib, x: x.unbind(0)[1] ** 2, A),
    case("chunk", lambda lib, x: x.chunk(2, 1)[0] ** 2, A),
    case("stack", lambda lib, x, y: lib.stack([x * y, y], 0) ** 2, A, A),
    case("diagonal", lambda lib, x: x.diagonal(-1) ** 2, (3, 3)),
    case("repeat", lambda lib, x: x.repeat(2, 1, 3) ** 2, A),
    case("where", lambda lib, x, y: lib.where(x > 0, x * y, y ** 2), A, A),
    case("var", lambda lib, x: x.var(1) ** 2, A),
    case("var_mean", lambda lib, x: lib.var_mean(x, 0)[0] * lib.var_mean(x, 0)[1], A),
    case("prod", lambda lib, x: x.prod(), A),
    case("prod_dim", lambda lib, x: x.prod(1) ** 2, A),
    case("split", lambda lib, x: x.split([2, 1], 1)[0] ** 2, A),
    case("cat", lambda lib, x, y: lib.cat([x * y, y], 1) ** 2, A, A),
]


@pytest.mark.parametrize("op, shapes, positive", MORE_SECOND_ORDER)
def test_more_ops_second_order(op, shapes, positive, device):
    assert_same(second_order, device, op, shapes, positive, close=True)


# --- the graph of a gradient, under create_graph ---------------------------------------------

FUSED_DOUBLE_BACKWARD = {"layer_norm", "layer_norm_2d_shape", "layer_norm_no_affine"}
"""Ops whose gradient torch computes in one node with a double backward of its own (layer norm's
NativeLayerNormBackwardBackward0), which minigrad writes out in ops: the values of their higher-order
gradients are compared (second_order), not their graph."""

SECOND_GRAPH_DIFFERS = FUSED_DOUBLE_BACKWARD | {
    # which of two gradients meeting at a node comes first (an AddBackward0's order): torch's follows the
    # order its C++ formulas create their nodes in, which a formula's text does not fix
    "div", "pow_tensor", "pow_method", "stack", "cat",
    # torch's norm_backward raises |x| to a power in place (pow_, which clones it); embedding's double backward
    # is index_select; gelu's tanh form uses cosh: ops minigrad does not have
    "norm_p3", "norm_p1_5", "norm_p0_5", "embedding", "gelu_tanh"}
"""Known differences in the graph of a second-order gradient (their values are compared, by second_order)."""

ALL_OPS = [case for cases in (ARITHMETIC, UNARY, REDUCTIONS, MATMUL, VIEWS, INDEXING, LOSSES, SECOND_ORDER, NEW_OPS,
                              NEW_SECOND_ORDER, MORE_OPS, MORE_SECOND_ORDER)
           for case in cases if case.id not in FUSED_DOUBLE_BACKWARD]


def gradients(lib, device, op, shapes, positive):
    """The inputs, and each one's gradient under create_graph=True (of the op's first output that
    requires grad, where it has several: var_mean)."""
    lib.manual_seed(0)
    inputs = [make(lib, device, shape, positive) for shape in shapes]
    out = op(lib, *inputs)
    if isinstance(out, (tuple, list)):
        out = next(o for o in out if o.requires_grad)
    return inputs, lib.autograd.grad(out, inputs, lib.ones_like(out) * 1.5, create_graph=True, allow_unused=True)


def with_graphs(grads):
    return [None if g is None else (g, graph_signature(g)) for g in grads]


def second_gradients(lib, device, op, shapes, positive):
    """The gradients of the sum of the gradients' squares, under create_graph=True (None where no gradient
    has a graph)."""
    inputs, firsts = gradients(lib, device, op, shapes, positive)
    used = [g for g in firsts if g is not None and g.requires_grad]
    if not used:
        return None
    return lib.autograd.grad(sum((g * g).sum() for g in used), inputs, create_graph=True, allow_unused=True)


@pytest.mark.parametrize("op, shapes, positive", ALL_OPS)
def test_gradient_graph_as_torch(op, shapes, positive, device):
    """A gradient's own graph is torch's, node for node: the formulas are torch's, op for op (a number
    times a tensor is MulBackward1, abs's factor is an op, SgnBackward0), so under create_graph the
    gradient requires grad where torch's does."""
    assert_same(lambda lib: with_graphs(gradients(lib, device, op, shapes, positive)[1]), close=True)


@pytest.mark.parametrize("op, shapes, positive", [case for case in ALL_OPS if case.id not in SECOND_GRAPH_DIFFERS])
def test_second_order_gradient_graph_as_torch(op, shapes, positive, device):
    """The same, one order up: the graph each second-order gradient has."""
    def scenario(lib):
        seconds = second_gradients(lib, device, op, shapes, positive)
        return None if seconds is None else with_graphs(seconds)
    assert_same(scenario, close=True)


@pytest.mark.parametrize("shapes", [((3, 2), (4, 3)), ((1, 2), (4, 1))], ids=["transposed", "one_row"])
def test_mm_gradients_laid_out_like_their_inputs(shapes):
    """torch's mm_mat1_backward and mm_mat2_backward: each gradient laid out as its input is (a transposed
    input's column-major, by torch's test of the strides), seen on the inputs' retained gradients."""
    def scenario(lib):
        lib.manual_seed(0)
        x, w = (lib.randn(shape, dtype=lib.float64, requires_grad=True) for shape in shapes)
        a, b = x.t(), w.t()
        a.retain_grad()
        b.retain_grad()
        (a @ b).sum().backward()
        return a.grad, a.grad.stride(), b.grad.stride(), x.grad.stride(), w.grad.stride()
    assert_same(scenario)


def test_retained_gradient_is_a_contiguous_copy_recorded_under_create_graph():
    """torch's retain_grad hook: a contiguous clone of the first gradient, then sums; under create_graph
    both are recorded (CloneBackward0, AddBackward0), so the retained gradient has a graph of its own."""
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 2, dtype=lib.float64, requires_grad=True)
        y = x.t() * 2
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # backward(create_graph=True)'s warning about a reference cycle
            for _ in range(2):
                (y * y).sum().backward(create_graph=True)
        return y.grad, y.grad.stride(), graph_signature(y.grad)
    assert_same(scenario)


def _edit(make_views, edit):
    """A scenario: views made from a clone of a leaf, then an edit; what the edit raised, and grad_fn's names."""
    def scenario(lib):
        base = lib.ones(4, 3, requires_grad=True).clone()
        views = make_views(lib, base)
        edit(lib, base, views)
        return [v.grad_fn.name() if v.grad_fn is not None else None for v in views]
    return scenario


MULTI_OUTPUT_EDITS = {
    "unbind_output": _edit(lambda lib, b: b.unbind(), lambda lib, b, v: v[1].add_(1)),
    "chunk_output": _edit(lambda lib, b: b.chunk(3), lambda lib, b, v: v[1].mul_(2)),
    "split_output": _edit(lambda lib, b: b.split(3, 1), lambda lib, b, v: v[0].mul_(2)),
    "split_with_sizes_output": _edit(lambda lib, b: b.split([1, 3]), lambda lib, b, v: v[1].add_(1)),
    "view_of_an_output": _edit(lambda lib, b: [b.unbind(1)[0].view(2, 2)], lambda lib, b, v: v[0].add_(1)),
    "slice_of_an_output": _edit(lambda lib, b: [b.chunk(2)[1][1:]], lambda lib, b, v: v[0].zero_()),
    "base_edited_then_grad_fn": _edit(lambda lib, b: b.unbind(), lambda lib, b, v: b.mul_(2)),
    "no_grad_needed_then_one": _edit(lambda lib, b: b.detach().unbind(),
                                     lambda lib, b, v: v[0].add_(lib.ones(3, requires_grad=True))),
    "made_under_no_grad": _edit(lambda lib, b: _no_grad(lib, lambda: b.chunk(2)), lambda lib, b, v: v[0].add_(1)),
    "plain_edit_of_a_detached_output": _edit(lambda lib, b: b.detach().chunk(2), lambda lib, b, v: v[0].mul_(2)),
}


def _no_grad(lib, make):
    with lib.no_grad():
        return make()


@pytest.mark.parametrize("name", MULTI_OUTPUT_EDITS)
def test_outputs_of_multi_output_views_refuse_in_place_edits_as_torch(name):
    assert_same(MULTI_OUTPUT_EDITS[name])


def test_exp_in_place_bumps_the_version_and_saves_its_result():
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        z = x / 2
        q = z * 3
        w = z.exp_()
        w.sum().backward(retain_graph=True)
        grad = x.grad.clone()
        try:
            q.sum().backward()
        except RuntimeError as error:
            return w is z, z._version, grad, str(error)
    assert_same(scenario, close=True)


@pytest.mark.parametrize("call", [
    lambda lib: lib.where(lib.ones(2) > 0, 2, 3),
    lambda lib: lib.where(lib.ones(2) > 0, 2.0, 3),
    lambda lib: lib.stack([lib.ones(1), 2]),
    lambda lib: _first_line_of_error(lambda: lib.where(1, lib.ones(2), 0.0)),
    lambda lib: lib.ones(2, 0).chunk(0),
    lambda lib: lib.tensor(1.0).unbind(),
    lambda lib: lib.ones(2, 3).diagonal(0, 1, 1),
    lambda lib: lib.ones(2, 3).repeat(2),
    lambda lib: lib.cat([lib.ones(1), 2]),
    lambda lib: lib.cat([]),
    lambda lib: lib.ones(3).split(0),
    lambda lib: lib.ones(3).split([1, 1]),
    lambda lib: lib.ones(2, 3).prod(2),
], ids=["where_two_ints", "where_float_int", "stack_a_number", "where_number_condition", "chunk_zero_chunks",
        "unbind_0_dim", "diagonal_same_dims", "repeat_fewer_dims", "cat_a_number", "cat_nothing", "split_size_0",
        "split_sizes_short", "prod_dim_out_of_range"])
def test_more_ops_take_and_refuse_what_torch_does(call):
    assert_same(call)


@pytest.mark.parametrize("correction", [2, 3], ids=["n_equals_correction", "n_below_correction"])
def test_var_of_too_few_elements_has_torch_gradient(correction):
    """Where n - correction <= 0, torch's var gradient is NaN where an element equals its mean and
    +-inf elsewhere, over all elements or along a dim; var_mean's mean alone never meets that factor."""
    def scenario(lib):
        x = lib.tensor([[2.0, 3.0], [4.0, 4.0]], requires_grad=True)
        var, mean = lib.var_mean(x, 1, correction=correction)
        whole = lib.autograd.grad(x.var(correction=2 * correction), x)
        along_dim = lib.autograd.grad(x.var(1, correction=correction).sum(), x)
        return whole, along_dim, lib.autograd.grad(mean.sum(), x), var, mean
    assert_same(scenario, close=True)


def test_set_takes_the_source_memory_and_a_new_grad_accumulator():
    """set_ under no_grad: x takes the source's memory and size (a version more); a graph made before
    keeps x's old AccumulateGrad, which autograd.grad no longer finds for x."""
    def scenario(lib):
        x = lib.ones(4, requires_grad=True)
        before = x * 2
        with lib.no_grad():
            source = lib.arange(3.0)
            x.set_(source)
            source.add_(1)  # shared memory
        try:
            lib.autograd.grad(before.sum(), x)
        except RuntimeError as error:
            refused = str(error)
        (x * x).sum().backward()
        return x, x._version, x.grad, refused, x.data_ptr() == source.data_ptr()
    assert_same(scenario)


@pytest.mark.parametrize("call", [
    lambda lib, x: x.set_(lib.ones(2)),
    lambda lib, x: _no_grad(lib, lambda: x.set_(lib.ones(2, dtype=lib.float64))),
], ids=["leaf_requiring_grad", "other_dtype"])
def test_set_refuses_what_torch_refuses(call):
    assert_same(lambda lib: call(lib, lib.ones(2, requires_grad=True)))


def _first_line_of_error(call):
    """The first line of what ``call`` raised (torch's argument errors go on listing the signatures)."""
    try:
        call()
    except TypeError as error:
        return str(error).split("\n")[0]
