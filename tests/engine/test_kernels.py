"""minigrad.kernels: the log-sum-exp fused in Triton kernels, against torch.logsumexp and against the
same maths from minigrad's ops (values, gradients, second derivatives, saved tensors).

Without a GPU the kernels run on the CPU in Triton's interpreter, so this module sets
TRITON_INTERPRET=1 when pytest collects it, before any test runs: Triton's ``@jit`` reads it when
it defines a function, and triton.language defines its own (the combine functions of tl.max and
tl.sum) on import, which torch._dynamo does for some other tests. It stays set for the rest of
the run, where nothing else uses Triton. With a GPU the kernels are compiled for it instead, and
their CPU cases are skipped. Without Triton the kernel tests are skipped, except on CI, which
installs the extra: there they fail.
"""
import importlib.util
import os
import subprocess
import sys

import pytest
import torch

import minigrad
from minigrad import kernels

INTERPRET = not torch.cuda.is_available()
if INTERPRET:
    os.environ["TRITON_INTERPRET"] = "1"
SKIP_KERNELS = importlib.util.find_spec("triton") is None and not os.environ.get("CI")

SHAPES = [(3, 5), (2, 3, 7), (4, 1), (1,), (2, 1500)]
"""Rows of non-power-of-two lengths, of one element, and longer than a kernel's block (1024)."""
DTYPES = [torch.float32, torch.float64]
INF = float("inf")


def fused(x):
    """kernels.logsumexp where it must run the kernels: its graph is the one LogSumExp node."""
    y = kernels.logsumexp(x)
    assert y.grad_fn.name() == "LogSumExpBackward"
    return y


@pytest.fixture
def kernel_device(device):
    """The device, where this process runs the Triton kernels on it."""
    if SKIP_KERNELS:
        pytest.skip("triton is not installed (the optional extra: pip install '.[kernels]')")
    if device == "cpu" and not INTERPRET:
        pytest.skip("with a GPU, Triton compiles the kernels for it: it interprets them on the CPU only without one")
    return device


@pytest.fixture(params=["kernel", "ops"])
def impl(request, device):
    """The two ways minigrad computes log-sum-exp: the Triton kernels and minigrad's ops."""
    if request.param == "ops":
        return kernels.logsumexp_ops
    request.getfixturevalue("kernel_device")
    return fused


def logsumexp(lib, impl, x):
    return torch.logsumexp(x, -1) if lib is torch else impl(x)


def storage(tensor):
    return tensor._data if isinstance(tensor, minigrad.Tensor) else tensor.detach()


def values_and_grad(lib, impl, x):
    """The log-sum-exp of ``x`` (made a leaf that requires grad) and x.grad for a random upstream gradient."""
    x.requires_grad_()
    y = logsumexp(lib, impl, x)
    lib.manual_seed(1)
    y.backward(lib.randn_like(y))
    return storage(y), storage(x.grad)


def assert_same_numbers(scenario, *args):
    """``scenario(lib, ...)`` gives torch's numbers with minigrad, within the dtype's tolerance
    (infinities and nans where torch has them)."""
    for expected, actual in zip(scenario(torch, *args), scenario(minigrad, *args), strict=True):
        torch.testing.assert_close(actual, expected, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_values_and_grads(impl, device, shape, dtype):
    def scenario(lib):
        lib.manual_seed(0)
        return values_and_grad(lib, impl, lib.randn(shape, dtype=dtype, device=device) * 3)
    assert_same_numbers(scenario)


ROWS = {
    "large": [[1000.0, 1000.0, 1000.0], [1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -999.0]],
    "infinite": [[-INF, -INF, -INF], [INF, 1.0, 2.0], [-INF, 0.0, 1.0]],
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, in Triton's interpreter: log(0) and inf - inf
@pytest.mark.parametrize("rows", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_stable_for_large_and_infinite_values(impl, device, rows, dtype):
    """exp(1000) overflows even float64: each row is shifted by its max first. An infinite max
    shifts by 0, as in torch: -inf rows give -inf and nan gradients, inf rows inf and nans."""
    assert_same_numbers(lambda lib: values_and_grad(lib, impl, lib.tensor(rows, dtype=dtype, device=device)))


def test_large_random_values(impl, device):
    def scenario(lib):
        lib.manual_seed(0)
        return values_and_grad(lib, impl, lib.randn(4, 37, dtype=lib.float32, device=device) * 1000)
    assert_same_numbers(scenario)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_kernel_matches_plain_ops(kernel_device, dtype):
    """The same maths, fused or not: the same numbers, within the dtype's tolerance."""
    x = minigrad.randn(5, 33, dtype=dtype, device=kernel_device) * 10
    expected = values_and_grad(minigrad, kernels.logsumexp_ops, x.clone())
    actual = values_and_grad(minigrad, fused, x.clone())
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, e)


def test_second_derivative(impl, device):
    """LogSumExp's backward is itself an op (LogSumExpGrad), so create_graph=True differentiates it."""
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 6, dtype=lib.float64, device=device).requires_grad_()
        w = lib.randn(3, dtype=lib.float64, device=device).requires_grad_()
        (grad,) = lib.autograd.grad((logsumexp(lib, impl, x) * w).sum(), x, create_graph=True)
        (grad * lib.randn(3, 6, dtype=lib.float64, device=device)).sum().backward()
        return storage(grad), storage(x.grad), storage(w.grad)
    assert_same_numbers(scenario)


def test_saves_what_torch_saves(kernel_device):
    """The input and the result, as torch's LogsumexpBackward0: ``_saved_self``, ``_saved_result``."""
    def scenario(lib):
        lib.manual_seed(0)
        y = logsumexp(lib, fused, lib.randn(2, 5, device=kernel_device).requires_grad_())
        return storage(y.grad_fn._saved_self), storage(y.grad_fn._saved_result)
    assert_same_numbers(scenario)


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
def test_gradcheck(impl, device, check):
    """Finite differences agree with the gradient (and with its gradient)."""
    x = minigrad.randn(2, 5, dtype=minigrad.float64, device=device, requires_grad=True)
    function = kernels.logsumexp if impl is fused else impl  # gradcheck may run it with no node to check
    try:
        assert getattr(minigrad.autograd, check)(function, (x,))
    except NotImplementedError:
        pytest.skip(f"minigrad.autograd.{check} is not implemented yet (issue 9, item 2)")


OTHERS = {
    "int64": ([[1, 2, 3], [4, 5, 1000]], torch.int64),
    "float16": ([[1.0, 2.0], [3.0, 9.0]], torch.float16),
    "0-d": (3.0, torch.float32),
    "empty-rows": ([[], []], torch.float32),
    "empty": ([], torch.float32),
}


@pytest.mark.parametrize("values, dtype", OTHERS.values(), ids=OTHERS.keys())
def test_what_the_kernels_do_not_take_runs_the_ops(device, values, dtype):
    """Other dtypes, 0-d and empty tensors: the ops, with torch's values and dtype."""
    expected = torch.logsumexp(torch.tensor(values, dtype=dtype, device=device), -1)
    actual = kernels.logsumexp(minigrad.tensor(values, dtype=dtype, device=device))
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual._data, expected)


def test_bad_input():
    with pytest.raises(TypeError, match="logsumexp\\(\\): expected a minigrad Tensor, got list"):
        kernels.logsumexp([1.0, 2.0])


def test_without_triton_the_kernels_say_how_to_get_it(monkeypatch):
    """Where the kernels should run, a missing Triton is an error naming the extra, not a silent fallback."""
    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` fails, as when it is not installed
    monkeypatch.delitem(sys.modules, "minigrad.kernels.triton_logsumexp", raising=False)
    monkeypatch.delattr(kernels, "triton_logsumexp", raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    message = r"needs triton, which is not installed: .*pip install '\.\[kernels\]'"
    with pytest.raises(ModuleNotFoundError, match=message):
        kernels.logsumexp(minigrad.ones(2, 3))


def test_minigrad_runs_without_triton():
    """Neither ``import minigrad`` nor ``import minigrad.kernels`` imports Triton, nor does
    logsumexp on the CPU, which runs the ops."""
    code = ("import sys, minigrad, minigrad.kernels\n"
            "x = minigrad.ones(2, 3, dtype=minigrad.float64, requires_grad=True)\n"
            "minigrad.kernels.logsumexp(x).sum().backward()\n"
            "print(x.grad.tolist(), 'triton' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{[[1 / 3] * 3] * 2} False"


# Exercise 9's reference: softmax over the last dimension in Triton kernels (minigrad.kernels.triton_softmax).

def fused_softmax(x):
    """triton_softmax.Softmax, imported only where a test runs the kernels: its graph is one node."""
    from minigrad.kernels.triton_softmax import Softmax

    y = Softmax.apply(x)
    assert y.grad_fn.name() == "SoftmaxBackward"
    return y


def softmax_ops(x):
    """Softmax from minigrad's ops, one node each: sub (the row's max, a constant), exp, sum, div."""
    e = (x - x.detach().max(-1, keepdim=True).values).exp()
    return e / e.sum(-1, keepdim=True)


@pytest.fixture(params=["kernel", "ops"])
def softmax_impl(request, device):
    """The fused softmax (where the kernels run) and the one from minigrad's ops."""
    if request.param == "ops":
        return softmax_ops
    request.getfixturevalue("kernel_device")
    return fused_softmax


def softmax_values_and_grad(lib, impl, x, upstream_seed=1):
    """softmax(x, -1) (x made a leaf that requires grad), what its node saved when it is the fused
    one, and x.grad for a random upstream gradient."""
    x.requires_grad_()
    y = torch.softmax(x, -1) if lib is torch else impl(x)
    lib.manual_seed(upstream_seed)
    y.backward(lib.randn_like(y))
    return storage(y), storage(x.grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_values_and_grads(softmax_impl, device, shape, dtype):
    def scenario(lib):
        lib.manual_seed(0)
        return softmax_values_and_grad(lib, softmax_impl, lib.randn(shape, dtype=dtype, device=device) * 3)
    assert_same_numbers(scenario)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_softmax_stable_for_large_values(softmax_impl, device, dtype):
    """exp(1000) overflows even float64: each row is shifted by its max first."""
    rows = ROWS["large"]
    assert_same_numbers(lambda lib: softmax_values_and_grad(lib, softmax_impl, lib.tensor(rows, dtype=dtype,
                                                                                        device=device)))


def test_softmax_of_a_tensor_that_is_not_contiguous(softmax_impl, device):
    """x.t() is read as rows all the same: the kernels get a contiguous copy."""
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(5, 3, dtype=lib.float64, device=device).requires_grad_()
        y = torch.softmax(x.t(), -1) if lib is torch else softmax_impl(x.t())
        y.backward(lib.randn(5, 3, dtype=lib.float64, device=device).t())  # an upstream gradient laid out as x
        return storage(y), storage(x.grad)
    assert_same_numbers(scenario)


def test_softmax_saves_what_torch_saves(kernel_device):
    """The result only, as torch's SoftmaxBackward0 (``_saved_result``)."""
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(2, 5, device=kernel_device, requires_grad=True)
        y = torch.softmax(x, -1) if lib is torch else fused_softmax(x)
        return (storage(y.grad_fn._saved_result),)
    assert_same_numbers(scenario)


def test_softmax_second_derivative(softmax_impl, device):
    """Softmax's backward is itself an op (SoftmaxGrad), so create_graph=True differentiates it."""
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 6, dtype=lib.float64, device=device, requires_grad=True)
        w = lib.randn(3, 6, dtype=lib.float64, device=device, requires_grad=True)
        y = torch.softmax(x, -1) if lib is torch else softmax_impl(x)
        (grad,) = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        (grad * lib.randn(3, 6, dtype=lib.float64, device=device)).sum().backward()
        return storage(grad), storage(x.grad), storage(w.grad)
    assert_same_numbers(scenario)


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
def test_softmax_gradcheck(kernel_device, check):
    from minigrad.kernels.triton_softmax import Softmax

    x = minigrad.randn(2, 5, dtype=minigrad.float64, device=kernel_device, requires_grad=True)
    assert getattr(minigrad.autograd, check)(Softmax.apply, (x,))


@pytest.mark.parametrize("installed, cuda, why", [
    ({"triton": "3.9.0", "numpy": "2.4.6"}, False, None),
    ({"triton": "3.6.0", "numpy": "2.4.6"}, True, None),  # compiled for the GPU: no interpreter
    ({"triton": "3.6.0", "numpy": "2.4.6"}, False, "the one of Triton 3.6.0 (which torch"),
    ({"numpy": "2.4.6"}, False, "need triton, which is not installed: minigrad's optional extra, pip install -e '.[kernels]'"),
])
def test_the_kernels_say_why_they_cannot_run_here(monkeypatch, installed, cuda, why):
    """Torch 2.11's and 2.12's CUDA builds bring Triton 3.6, whose interpreter fails on these kernels:
    without a GPU that is a reason, as a missing Triton is (lesson 9 prints it and runs the rest)."""
    monkeypatch.setattr(kernels.importlib.util, "find_spec", lambda name: object() if name in installed else None)
    monkeypatch.setattr(kernels.importlib.metadata, "version", lambda name: installed[name])
    monkeypatch.setattr(kernels.torch.cuda, "is_available", lambda: cuda)
    reason = kernels.unavailable()
    assert reason is None if why is None else why in reason
