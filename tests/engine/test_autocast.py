"""Autocast (``minigrad.autocast``) and ``Tensor.T``, against torch: each scenario runs with both.

Under autocast the ops of torch's lists that minigrad has cast their floating inputs (bfloat16 on CPU
by default): what is compared is each result's values, dtype and graph (the casts are ToCopyBackward0
nodes), the leaves' gradients and their dtype after backward, autocast's state as its functions tell
it, in and out of nested blocks, its errors and warnings, the casts it keeps of leaves, the meta
device (never cast by CPU autocast), and checkpoint's recomputation under the forward's autocast.
"""
import warnings

import pytest
import torch

from coursekit.testing import assert_same, graph_signature


def inputs(lib, *shapes, dtype=None, device="cpu"):
    """Leaves that require grad, the same numbers in both libraries."""
    lib.manual_seed(0)
    return [lib.randn(shape, dtype=dtype, device=device, requires_grad=True) for shape in shapes]


def described(t):
    return str(t.dtype), tuple(t.shape), str(t.device), t.grad_fn and t.grad_fn.name()


def run(lib, op, leaves, autocast=True, dtype=None):
    """op's result (values, dtype, graph) under CPU autocast, and the leaves' gradients after a
    backward outside it."""
    with lib.autocast("cpu", dtype=dtype, enabled=autocast):
        out = op(lib, *leaves)
    out.float().sum().backward()
    return out, described(out), graph_signature(out), [(leaf.grad, str(leaf.grad.dtype)) for leaf in leaves]


OPS = {
    "mm": (lambda lib, a, b: lib.mm(a, b), [(2, 3), (3, 4)]),
    "Tensor.mm": (lambda lib, a, b: a.mm(b), [(2, 3), (3, 4)]),
    "matmul-2d": (lambda lib, a, b: a @ b, [(2, 3), (3, 4)]),
    "matmul-3d-2d": (lambda lib, a, b: lib.matmul(a, b), [(2, 2, 3), (3, 4)]),
    "matmul-1d-2d": (lambda lib, a, b: a @ b, [(3,), (3, 4)]),
    "matmul-batches": (lambda lib, a, b: a @ b, [(2, 2, 3), (2, 3, 4)]),
    "matmul-2d-1d": (lambda lib, a, b: a @ b, [(2, 3), (3,)]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [(2, 2, 3), (2, 3, 4)]),
    "mv": (lambda lib, a, b: lib.mv(a, b), [(2, 3), (3,)]),
    "dot": (lambda lib, a, b: lib.dot(a, b), [(3,), (3,)]),
    "linear": (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
    "linear-3d": (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(2, 2, 3), (4, 3), (4,)]),
    "linear-no-bias": (lambda lib, x, w: lib.nn.functional.linear(x, w), [(2, 3), (4, 3)]),
    "prod": (lambda lib, a: a.prod(), [(2, 3)]),
    "prod-dim": (lambda lib, a: a.prod(1), [(2, 3)]),
    "prod-of-bf16": (lambda lib, a: (a @ a).prod(), [(3, 3)]),
    "cat-promotes": (lambda lib, a, b: lib.cat([a @ a, b]), [(3, 3), (3, 3)]),
    "cat-lower": (lambda lib, a, b: lib.cat([a @ a, b @ b]), [(3, 3), (3, 3)]),
    "stack-promotes": (lambda lib, a, b: lib.stack([b, a @ a]), [(3, 3), (3, 3)]),
    "mse_loss": (lambda lib, a, b: lib.nn.functional.mse_loss(a @ a, b), [(3, 3), (3, 3)]),
    "mse_loss-broadcast": (lambda lib, a, b: lib.nn.functional.mse_loss(a @ a[:, :1], b), [(3, 3), (1, 2)]),
    "nll_loss": (lambda lib, a: lib.nn.functional.nll_loss(a @ a, lib.tensor([0, 2, 1])), [(3, 3)]),
    "cross_entropy": (lambda lib, a: lib.nn.functional.cross_entropy(a @ a, lib.tensor([0, 2, 1])), [(3, 3)]),
    "not-listed-ops": (lambda lib, a: ((a.exp() + a.abs().log()) * 2).sin().sum(), [(2, 3)]),
    "sum-of-bf16": (lambda lib, a: (a @ a).sum(), [(3, 3)]),
    "module": (lambda lib, x: lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))(x),
               [(5, 3)]),
    "attention": (lambda lib, x: lib.nn.MultiheadAttention(4, 2)(x, x, x)[0], [(3, 1, 4)]),
    "layer_norm-of-bf16": (lambda lib, a: lib.nn.functional.layer_norm(a @ a, (3,)), [(3, 3)]),
}


@pytest.mark.parametrize("autocast", [True, False], ids=["on", "off"])
@pytest.mark.parametrize("name", OPS)
def test_ops_cast_as_torchs_autocast_casts_them(name, autocast):
    op, shapes = OPS[name]
    assert_same(lambda lib: run(lib, op, inputs(lib, *shapes), autocast))


@pytest.mark.parametrize("name", ["mm", "linear", "cat-promotes", "prod"])
def test_float16_on_cpu(name):
    op, shapes = OPS[name]
    assert_same(lambda lib: run(lib, op, inputs(lib, *shapes), dtype=lib.float16))


@pytest.mark.parametrize("name", ["mm", "linear", "cat-promotes", "prod", "dot"])
def test_float64_is_never_cast(name):
    op, shapes = OPS[name]
    assert_same(lambda lib: run(lib, op, inputs(lib, *shapes, dtype=lib.float64)))


def test_mixed_low_precision_inputs_are_refused_by_promotion():
    def scenario(lib):
        a, b = inputs(lib, (2,), (2,))
        with lib.autocast("cpu"):
            return lib.cat([a.to(lib.float16), b.to(lib.bfloat16)])
    assert_same(scenario)


def test_state_in_nested_blocks():
    def state(lib):
        return [(lib.is_autocast_enabled(d), str(lib.get_autocast_dtype(d))) for d in ("cpu", "cuda")] + [
            lib.is_autocast_enabled(), lib.is_autocast_cache_enabled()]

    def scenario(lib):
        a, b = inputs(lib, (2, 2), (2, 2))
        seen = [state(lib)]
        with lib.autocast("cpu") as outer:
            seen += [type(outer).__name__, state(lib), described(a @ b)]
            with lib.autocast("cpu", enabled=False):
                seen += [state(lib), described(a @ b), described(a.clone() @ b.clone())]
            with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
                # a and b's casts, kept by the outer block, are reused whatever their dtype; new ones are not
                seen += [state(lib), described(a @ b), described(a.clone() @ b.clone())]
            seen += [state(lib)]
        seen += [state(lib), described(a @ b)]
        return seen
    assert_same(scenario)


def test_decorator_and_its_errors():
    def scenario(lib):
        a, b = inputs(lib, (2, 2), (2, 2))

        @lib.autocast("cpu")
        def product(x, y):
            return x @ y

        out = [described(product(a, b)), lib.is_autocast_enabled("cpu"), product.__name__]
        try:
            out.append(callable(lib.autocast("cpu")(3)))  # torch 2.11 wraps it
        except TypeError as error:  # later releases refuse it
            out.append(str(error))
        return out
    assert_same(scenario)


ERRORS = {
    "meta": lambda lib: lib.autocast("meta"),
    "meta-with-dtype": lambda lib: lib.autocast("meta", dtype=lib.bfloat16),
    "device-object": lambda lib: lib.autocast(lib.device("cpu")),
    "unknown-device": lambda lib: lib.autocast("nowhere"),
    "is_autocast_enabled-meta": lambda lib: lib.is_autocast_enabled("meta"),
    "get_autocast_dtype-meta": lambda lib: lib.get_autocast_dtype("meta"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_torchs(name):
    assert_same(ERRORS[name])


def warned(lib, device, dtype):
    a, b = inputs(lib, (2, 2), (2, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autocast(device, dtype=dtype):
            out = [lib.is_autocast_enabled(device), described(a @ b)]
    return out, [(w.category.__name__, str(w.message)) for w in caught]


def test_an_unsupported_dtype_warns_and_disables_autocast():
    assert_same(warned, "cpu", torch.float32)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the warning of a machine without CUDA")
def test_cuda_autocast_without_cuda_warns_and_does_nothing():
    assert_same(warned, "cuda", None)


def test_cuda_autocast_leaves_cpu_tensors_alone():
    def scenario(lib):
        a, b = inputs(lib, (2, 2), (2, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no CUDA here: torch warns, see above
            with lib.autocast("cuda"):
                return described(a @ b), described(a.exp())
    assert_same(scenario)


def test_meta_tensors_are_not_cast_by_cpu_autocast():
    def scenario(lib):
        a, b = inputs(lib, (2, 3), (3, 4), device="meta")
        with lib.autocast("cpu"):
            out = a @ b
            mixed = lib.cat([a @ b, (a @ b).to(lib.bfloat16)])
        return described(out), described(mixed), graph_signature(mixed)
    assert_same(scenario)


def test_kept_casts_of_leaves():
    def scenario(lib):
        a, b = inputs(lib, (2, 2), (2, 2))
        view = a[0]
        with lib.autocast("cpu"):
            first, second = a @ b, b @ a
            viewed = view @ b
        with lib.autocast("cpu", cache_enabled=False):
            uncached = a @ b
        with lib.autocast("cpu"):
            later = a @ b
        cast = lambda out, i: out.grad_fn.next_functions[i][0]  # noqa: E731
        return [cast(first, 0) is cast(second, 1), cast(first, 1) is cast(second, 0),
                cast(uncached, 0) is cast(first, 0), cast(later, 0) is cast(first, 0), graph_signature(viewed)]
    assert_same(scenario)


def test_casts_under_no_grad_record_nothing():
    def scenario(lib):
        a, b = inputs(lib, (2, 2), (2, 2))
        with lib.no_grad(), lib.autocast("cpu"):
            out = a @ b
        return described(out), out.requires_grad
    assert_same(scenario)


def checkpointed(lib, reentrant, forward_autocast, backward_autocast):
    """A body of listed and unlisted ops, checkpointed under one autocast state and recomputed under
    another: the recomputation runs under the forward's (its dtypes and the gradients show it)."""
    seen = []

    def body(x, w):
        h = (x @ w).relu()
        seen.append((lib.is_autocast_enabled("cpu"), str(h.dtype)))
        return lib.nn.functional.linear(h, w).float().sum()

    x, w = inputs(lib, (3, 3), (3, 3))
    with lib.autocast("cpu", enabled=forward_autocast):
        loss = lib.utils.checkpoint.checkpoint(body, x, w, use_reentrant=reentrant)
    with lib.autocast("cpu", enabled=backward_autocast):
        loss.backward()
    return loss, seen, x.grad, w.grad, str(x.grad.dtype)


@pytest.mark.parametrize("backward_autocast", [True, False], ids=["backward-on", "backward-off"])
@pytest.mark.parametrize("forward_autocast", [True, False], ids=["forward-on", "forward-off"])
@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_checkpoint_recomputes_under_the_forwards_autocast(reentrant, forward_autocast, backward_autocast):
    assert_same(checkpointed, reentrant, forward_autocast, backward_autocast)


# --- Tensor.T ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_T_reverses_the_dims_as_a_view(shape):
    def scenario(lib):
        x, = inputs(lib, shape)
        base = x.clone()
        t = base.T
        grad = lib.autograd.grad(t, x, lib.ones_like(t), create_graph=True)[0]
        return [t, described(t), t._base is base, t.grad_fn._saved_dims, t.is_contiguous(), t.stride(),
                graph_signature(grad)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(scenario)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_T_warns_as_torch_does_outside_two_dims(shape):
    def scenario(lib):
        x, = inputs(lib, shape)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.set_warn_always(True)  # torch warns once a process; here each time, in both runs
            try:
                x.T
            finally:
                lib.set_warn_always(False)
        return [(w.category.__name__, str(w.message), w.filename == __file__) for w in caught]  # at x.T's line
    assert_same(scenario)


def test_cuda_says_whether_bfloat16_is_supported_as_torch():
    assert_same(lambda lib: lib.cuda.is_bf16_supported())
