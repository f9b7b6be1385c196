"""The Tensor API forum code reaches for beside the course's ops, each run with torch and with minigrad:
clamp (clip, clamp_min, clamp_max, clamp_), permute, flatten, gather, scatter_add, maximum and minimum,
``//``, new_tensor, square, abs_, masked_fill_ and clone's memory_format. Values, gradients (second order
too), the graph with what its node saves, views and versions, errors."""
import pytest

from coursekit.testing import assert_same, graph_signature, outcome

SAVED = ("self", "min", "max", "dims", "exponent", "mask", "dim", "index", "sparse_grad")


def recorded(lib, device, op, shape=(2, 3, 4)):
    """The op on a float64 leaf with values on both sides of 0 and 1 (and exactly on 0 and 1, where
    clamp's bounds are): its output, graph and saved attributes, the leaf's gradient for a random
    upstream gradient, and whether the output is a view of the leaf or the leaf itself."""
    lib.manual_seed(0)
    x = (lib.randn(shape, dtype=lib.float64, device=device) * 2)
    x.view(-1)[:2] = lib.tensor([0.0, 1.0], dtype=lib.float64)
    x.requires_grad_()
    out = op(lib, x)
    node = out.grad_fn
    saved = {name: getattr(node, "_saved_" + name) for name in SAVED if hasattr(node, "_saved_" + name)}
    out.backward(lib.randn_like(out))
    return out, graph_signature(out), saved, x.grad, out._is_view(), out._base is x, out is x


CASES = {
    "clamp": lambda lib, x: x.clamp(-0.5, 1),
    "clamp_min_kw": lambda lib, x: x.clamp(min=0),
    "clamp_max_kw": lambda lib, x: x.clamp(max=1),
    "clamp_empty_range": lambda lib, x: x.clamp(1, -1),
    "clamp_fn": lambda lib, x: lib.clamp(x, 0, 1),
    "clip": lambda lib, x: x.clip(0, 1),
    "clip_fn": lambda lib, x: lib.clip(x, max=0),
    "clamp_min": lambda lib, x: x.clamp_min(0),
    "clamp_max": lambda lib, x: lib.clamp_max(x, 1),
    "clamp_in_place": lambda lib, x: (x * 1).clamp_(0, 1),
    "permute": lambda lib, x: x.permute(2, 0, 1),
    "permute_sequence": lambda lib, x: x.permute((1, 2, 0)),
    "permute_negative": lambda lib, x: x.permute(-1, 0, -2),
    "permute_fn": lambda lib, x: lib.permute(x, [0, 2, 1]),
    "permute_then_reshape": lambda lib, x: x.permute(2, 0, 1).reshape(4, 6),
    "flatten": lambda lib, x: x.flatten(),
    "flatten_from_1": lambda lib, x: x.flatten(1),
    "flatten_negative": lambda lib, x: x.flatten(-3, -2),
    "flatten_nothing_to_merge": lambda lib, x: x.flatten(1, 1),
    "flatten_non_contiguous": lambda lib, x: x.transpose(0, 2).flatten(),
    "flatten_fn": lambda lib, x: lib.flatten(x, 0, 1),
    "gather": lambda lib, x: x.gather(2, _index(lib, x)),
    "gather_repeated_index": lambda lib, x: x.gather(0, lib.zeros(3, 3, 2, dtype=lib.long, device=x.device)),
    "gather_negative_dim": lambda lib, x: lib.gather(x, -1, _index(lib, x)),
    "scatter_add": lambda lib, x: x.scatter_add(2, _index(lib, x), x[:, :, :2] * 3),
    "scatter_add_fn": lambda lib, x: lib.scatter_add(x * 1, 2, _index(lib, x), x[:, :, 1:3]),
    "max_other_ties_at_0": lambda lib, x: x.max(lib.zeros(4, dtype=lib.float64, device=x.device)),
    "maximum_of_two_that_require_grad": lambda lib, x: lib.maximum(x, x * 0.5),
    "minimum_broadcast_ties_at_1": lambda lib, x: x.minimum(
        lib.tensor([1.0, 0.0, -1.0, 0.5], dtype=lib.float64, device=x.device)),
    "min_other_fn": lambda lib, x: lib.minimum(x * -1, x),
    "square": lambda lib, x: x.square(),
    "square_fn": lambda lib, x: lib.square(x),
    "abs_in_place": lambda lib, x: (x * 1).abs_(),
    "masked_fill_in_place": lambda lib, x: (x * 1).masked_fill_(x > 0.5, 2.0),
    "masked_fill_in_place_view": lambda lib, x: (x * 1)[0].masked_fill_(x[0] < 0, 0.0),
}


def _index(lib, x):
    """Indices into the last dim of a (2, 3, 4) tensor, two per row, one of them twice."""
    return lib.tensor([[[0, 3], [1, 1], [2, 0]], [[3, 3], [0, 1], [2, 2]]], device=x.device)


@pytest.mark.parametrize("name", CASES)
def test_values_gradients_graph_and_saved(name, device):
    assert_same(recorded, device, CASES[name], close=True)


def flattened(lib, shape):
    x = lib.arange(float(max(1, len(shape)) * 2)).reshape(shape) if 0 not in shape else lib.zeros(shape)
    x.requires_grad_()
    out = x.flatten()
    out.sum().backward()
    return out, graph_signature(out), out is x, x.grad


@pytest.mark.parametrize("shape", [(), (4,), (2, 0, 3), (1, 2)], ids=["0d", "1d", "empty", "2d"])
def test_flatten_of_each_rank(shape):
    assert_same(flattened, shape)


def second_order(lib, op):
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    w = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
    (first,) = lib.autograd.grad((op(x) * w).sum(), x, create_graph=True)
    second = lib.autograd.grad((first * first).sum(), (x, w), allow_unused=True)
    return graph_signature(first), first, second


@pytest.mark.parametrize("op", [lambda x: x.clamp(-0.5, 0.5), lambda x: x.clamp_min(0), lambda x: x.square(),
                                lambda x: x ** 3, lambda x: x ** 0, lambda x: x.permute(1, 0), lambda x: x.flatten(),
                                lambda x: x.maximum(x * 0.5), lambda x: x.min(x.new_zeros(()))],
                         ids=["clamp", "clamp_min", "square", "pow_3", "pow_0", "permute", "flatten", "maximum",
                              "min_other"])
def test_second_order(op):
    assert_same(second_order, op, close=True)


def gathered_twice(lib):
    """gather's backward is an op too (zeros, then scatter_add_ in place): its graph with create_graph,
    the gradient's version, and the second derivative through it."""
    lib.manual_seed(0)
    x = lib.randn(3, 4, dtype=lib.float64, requires_grad=True)
    w = lib.randn(3, 2, dtype=lib.float64, requires_grad=True)
    index = lib.tensor([[0, 1], [2, 2], [3, 0]])
    (first,) = lib.autograd.grad((x.gather(1, index) * w).sum(), x, create_graph=True)
    node = first.grad_fn
    saved = node._saved_dim, node._saved_index is index
    return graph_signature(first), saved, first._version, first, lib.autograd.grad((first * first).sum(), w)


def test_second_order_through_gather():
    assert_same(gathered_twice, close=True)


def in_place_then_saved_edited(lib, op):
    """An in-place op whose node saved self (a copy), then the result edited again: backward still runs,
    as in torch; and the version counter moves once per edit."""
    x = lib.tensor([-2.0, -0.5, 0.5, 2.0], requires_grad=True)
    y = x * 1
    versions = [y._version]
    op(y)
    versions.append(y._version)
    y.mul_(3)
    versions.append(y._version)
    y.sum().backward()
    return versions, y.grad_fn.name(), x.grad


@pytest.mark.parametrize("op", [lambda y: y.clamp_(-1, 1), lambda y: y.abs_(), lambda y: y.masked_fill_(y > 1, 0.0)],
                         ids=["clamp_", "abs_", "masked_fill_"])
def test_in_place_forms(op):
    assert_same(in_place_then_saved_edited, op)


REFUSED = {
    "clamp_without_bounds": lambda lib, x: x.clamp(),
    "clamp_in_place_without_bounds": lambda lib, x: x.detach().clamp_(),
    "abs_of_a_leaf": lambda lib, x: x.abs_(),
    "masked_fill_of_a_leaf": lambda lib, x: x.masked_fill_(x > 0, 0.0),
    "permute_too_few": lambda lib, x: x.permute(0, 1),
    "permute_repeated": lambda lib, x: x.permute(0, 0, 1),
    "permute_out_of_range": lambda lib, x: x.permute(0, 1, 5),
    "flatten_backwards": lambda lib, x: x.flatten(2, 1),
    "flatten_out_of_range": lambda lib, x: x.flatten(3),
    "gather_float_index": lambda lib, x: x.gather(1, lib.zeros(2, 3, 4)),
    "gather_index_out_of_range": lambda lib, x: x.gather(1, lib.full((2, 3, 4), 3, dtype=lib.long)),
    "gather_index_of_fewer_dims": lambda lib, x: x.gather(1, lib.zeros(2, dtype=lib.long)),
    "gather_dim_out_of_range": lambda lib, x: x.gather(3, lib.zeros(2, 3, 4, dtype=lib.long)),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_as_torch_refuses(name):
    def scenario(lib):
        x = lib.randn(2, 3, 4, requires_grad=True)
        return REFUSED[name](lib, x), x._version
    assert_same(scenario)


def test_what_minigrad_leaves_out_is_refused_clearly():
    import minigrad
    x = minigrad.randn(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="numbers as bounds"):
        x.clamp(min=minigrad.zeros(3))
    with pytest.raises(NotImplementedError, match="no sparse gradient"):
        x.gather(0, minigrad.zeros(1, dtype=minigrad.long), sparse_grad=True)


def on_integers(lib):
    x = lib.tensor([1, 5, 9])
    return x.clamp(2, 6), x.clamp(2.5, 6), x.clamp_min(3).dtype, x.square(), x.flatten().dtype


def test_integer_tensors():
    assert_same(on_integers)


def cloned(lib, memory_format, transposed):
    """clone's memory_format: the copy's strides, and the gradient's, as torch lays them out."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, 4, 5, requires_grad=True)
    source = x.transpose(0, 1) if transposed else x
    y = source.clone(memory_format=getattr(lib, memory_format)) if memory_format else lib.clone(source)
    y.backward(lib.randn_like(y))
    return y.grad_fn.name(), y.stride(), x.grad.stride(), x.grad


@pytest.mark.parametrize("memory_format", [None, "preserve_format", "contiguous_format", "channels_last"])
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
def test_clone_memory_format(memory_format, transposed):
    assert_same(cloned, memory_format, transposed)


def first_gradient_held_elsewhere(lib, leaf, layout):
    """A leaf's first gradient, held by the caller too, is copied as torch copies it: laid out like the
    leaf (a copy_: version 1), or contiguous for a leaf whose memory is not dense (an expanded one)."""
    lib.manual_seed(0)
    x = {"contiguous": lambda: lib.randn(3, 4), "transposed": lambda: lib.randn(4, 3).t(),
         "expanded": lambda: lib.randn(3, 1).expand(3, 4)}[leaf]().requires_grad_()
    grad = {"contiguous": lambda: lib.randn(3, 4), "transposed": lambda: lib.randn(4, 3).t()}[layout]()
    x.backward(grad)
    return x.grad.stride(), x.grad._version, x.grad is grad, x.grad


@pytest.mark.parametrize("leaf", ["contiguous", "transposed", "expanded"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_a_first_gradient_held_elsewhere_is_copied_in_the_leafs_layout(leaf, layout):
    assert_same(first_gradient_held_elsewhere, leaf, layout)


def floor_divided(lib):
    """``//``: on integers what indexing code computes; on a tensor that requires grad, torch records a
    NotImplemented node, whose backward fails; ``//=`` edits in place."""
    i = lib.arange(6)
    j = lib.arange(6)
    j //= 4
    x = lib.tensor([1.5, -2.5, 7.0], requires_grad=True)
    y, z = x // 2, 7 // x
    return (i // 4, 7 // lib.tensor(2), (i // 2.5).dtype, lib.floor_divide(i, 4), j, j._version,
            y, graph_signature(y), graph_signature(z), graph_signature(x // x), outcome(y.sum().backward))


def test_floor_divide():
    assert_same(floor_divided)


def test_floor_divide_by_numpys_numbers():
    numpy = pytest.importorskip("numpy")  # not one of the engine tests' dependencies
    assert_same(lambda lib: (lib.arange(6) // numpy.int64(4), numpy.int64(7) // lib.tensor([2, 3]),
                             lib.tensor([5.0, -1.0], requires_grad=True) // numpy.float64(2.5)))


def new_tensors(lib):
    x = lib.randn(3, dtype=lib.float64)
    made = [x.new_tensor([1, 2]), x.new_tensor([[1.5]], dtype=lib.float32), x.new_tensor(3, requires_grad=True)]
    return [(t, t.dtype, t.requires_grad, t.is_leaf, t.grad_fn) for t in made]


def test_new_tensor():
    assert_same(new_tensors)
