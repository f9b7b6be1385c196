"""Devices, as torch propagates them, for every op of the subset: on torch's ``meta`` device (a
stand-in for CUDA that runs here: shapes, dtypes and a device, no values), alone and beside CPU tensors.

torch lets a CPU 0-dim tensor (a Python number becomes one) take part in an op on another device:
the result is on the other device, and backward moves that input's gradient to the CPU (on meta,
which has no data to move, that is torch's "Cannot copy out of meta tensor" error). A CPU tensor
with dims beside a meta one is an error, in the op or in backward. Each scenario runs with both
libraries, which must agree on the result's device, shape, dtype and grad_fn and on each leaf's
gradient after backward, or on the error.
"""
import itertools

import pytest

from coursekit.testing import assert_same, plain

A, ROW = (2, 3), (3,)


def meta(*shape):
    return ("meta", shape)


def cpu(*shape):
    return ("cpu", shape)


def leaf(lib, spec):
    """A float32 leaf that requires grad, from a ``(device, shape)`` spec; a Python number as it is."""
    if not isinstance(spec, tuple):
        return spec
    device, shape = spec
    return lib.ones(shape, device=device, requires_grad=True)


def described(tensor):
    if tensor is None:
        return None
    return str(tensor.device), tuple(tensor.shape), str(tensor.dtype), tensor.grad_fn and tensor.grad_fn.name()


def devices(lib, op, specs):
    """The op's results (values and indices, for max over a dim), then each leaf's gradient after
    backward from the first result with a gradient of ones, or backward's error."""
    inputs = [leaf(lib, spec) for spec in specs]
    out = op(lib, *inputs)
    outs = tuple(out) if isinstance(out, tuple) else (out,)
    try:
        outs[0].backward(lib.ones_like(outs[0]))
        grads = [described(x.grad) for x in inputs if not isinstance(x, float)]
    except Exception as error:  # noqa: BLE001 - the error is the result being compared
        grads = plain(error)
    return [described(o) for o in outs], grads


def setitem(key):
    def assign(lib, x, value):
        target = x.clone()
        target[key] = value
        return target
    return assign


# Operand pairs: both meta (and broadcast), with a Python number, with a CPU 0-dim tensor, with a
# CPU tensor that has dims (torch refuses), and a meta 0-dim tensor with a CPU tensor.
PAIRS = {
    "meta-meta": (meta(*A), meta(*A)),
    "meta-meta_row": (meta(*A), meta(*ROW)),
    "meta-number": (meta(*A), 2.0),
    "number-meta": (2.0, meta(*A)),
    "meta-cpu0": (meta(*A), cpu()),
    "cpu0-meta": (cpu(), meta(*A)),
    "meta-cpu": (meta(*A), cpu(*A)),
    "cpu-meta": (cpu(*A), meta(*A)),
    "meta0-cpu": (meta(), cpu(*A)),
    "cpu-meta0": (cpu(*A), meta()),
}
TENSOR_LEFT = {name: pair for name, pair in PAIRS.items() if not name.startswith("number")}
TENSORS = {name: pair for name, pair in TENSOR_LEFT.items() if "number" not in name}
# In-place arithmetic runs with the pairs where meta stands in for CUDA: torch's meta kernels of
# in-place ops check no devices (``meta.add_(cpu)`` passes, ``cpu.add_(meta0)`` runs and adds
# nothing), and a meta result can't be copied into a CPU tensor (``cpu0.add_(meta)``). Left out
# too, ``meta0.add_(cpu)``: torch's kernel finds the shape error before the device error, but
# minigrad, which computes an in-place op out of place and copies the result in, meets the device
# error first (on CUDA too).
IN_PLACE_PAIRS = {name: TENSOR_LEFT[name] for name in ("meta-meta", "meta-meta_row", "meta-number", "meta-cpu0")}

BINARY = {  # Python's operators, a number on either side
    "add": lambda lib, x, y: x + y, "sub": lambda lib, x, y: x - y, "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / y, "pow": lambda lib, x, y: x ** y,
}
METHODS = {  # a tensor on the left
    "add_alpha": lambda lib, x, y: x.add(y, alpha=2),
    "sub_alpha": lambda lib, x, y: x.sub(y, alpha=2),
    "pow_method": lambda lib, x, y: x.pow(y),
    "add_fn": lambda lib, x, y: lib.add(x, y),
    "mul_fn": lambda lib, x, y: lib.mul(x, y),
    "copy_": lambda lib, x, y: x.clone().copy_(y),
    "setitem_whole": setitem(slice(None)),
    "setitem_row": setitem(0),
}
IN_PLACE = {  # on a copy: a leaf that requires grad can't be edited in place
    "add_": lambda lib, x, y: x.clone().add_(y),
    "sub_": lambda lib, x, y: x.clone().sub_(y),
    "mul_": lambda lib, x, y: x.clone().mul_(y),
    "div_": lambda lib, x, y: x.clone().div_(y),
    "add_alpha_": lambda lib, x, y: x.clone().add_(y, alpha=2),
    "sub_alpha_": lambda lib, x, y: x.clone().sub_(y, alpha=2),
    "iadd": lambda lib, x, y: x.clone().__iadd__(y),
    "isub": lambda lib, x, y: x.clone().__isub__(y),
    "imul": lambda lib, x, y: x.clone().__imul__(y),
    "idiv": lambda lib, x, y: x.clone().__itruediv__(y),
}
WITH_TENSOR = {  # the second operand is a mask, or where to go
    "masked_fill": lambda lib, x, y: x.masked_fill(y > 0, 1.5),
    "to_other": lambda lib, x, y: x.to(y),
}
MATMUL = {
    "matmul": lambda lib, x, y: x @ y, "matmul_fn": lambda lib, x, y: lib.matmul(x, y),
    "mm": lambda lib, x, y: x.mm(y), "mv": lambda lib, x, y: x.mv(y), "dot": lambda lib, x, y: x.dot(y),
    "bmm": lambda lib, x, y: x.bmm(y),
}
MATMUL_PAIRS = {
    "mm": (meta(2, 3), meta(3, 4)), "mv": (meta(2, 3), meta(3)), "dot": (meta(3), meta(3)),
    "vm": (meta(3), meta(3, 4)), "batch_m": (meta(5, 2, 3), meta(3, 4)), "batch_batch": (meta(5, 2, 3), meta(1, 3, 4)),
    "meta-cpu": (meta(2, 3), cpu(3, 4)), "cpu-meta": (cpu(2, 3), meta(3, 4)), "vector-cpu": (meta(3), cpu(3)),
    "batch-cpu": (meta(5, 2, 3), cpu(5, 3, 4)), "meta-cpu0": (meta(2, 3), cpu()), "cpu0-meta": (cpu(), meta(3, 4)),
}
UNARY = {
    "neg": lambda lib, x: -x, "exp": lambda lib, x: x.exp(), "log": lambda lib, x: x.log(),
    "sqrt": lambda lib, x: x.sqrt(), "relu": lambda lib, x: x.relu(), "tanh": lambda lib, x: x.tanh(),
    "sigmoid": lambda lib, x: x.sigmoid(), "abs": lambda lib, x: x.abs(), "round": lambda lib, x: x.round(),
    "pow_number": lambda lib, x: x ** 2, "number_pow": lambda lib, x: 2 ** x, "rsub": lambda lib, x: 2 - x,
    "rdiv": lambda lib, x: 2 / x, "clone": lambda lib, x: x.clone(),
    "sum": lambda lib, x: x.sum(), "sum_dim": lambda lib, x: x.sum(-1), "mean": lambda lib, x: x.mean(),
    "mean_dim": lambda lib, x: x.mean(0, keepdim=True), "max": lambda lib, x: x.max(),
    "max_dim": lambda lib, x: x.max(-1), "norm": lambda lib, x: x.norm(), "norm_dim": lambda lib, x: x.norm(1, -1),
    "softmax": lambda lib, x: x.softmax(-1), "log_softmax": lambda lib, x: x.log_softmax(-1),
    "reshape": lambda lib, x: x.reshape(-1), "view": lambda lib, x: x.view(-1),
    "expand": lambda lib, x: x.expand(4, *x.shape), "unsqueeze": lambda lib, x: x.unsqueeze(0),
    "squeeze": lambda lib, x: x.unsqueeze(0).squeeze(0), "transpose": lambda lib, x: x.transpose(0, -1),
    "t": lambda lib, x: x.t(), "t_reshape": lambda lib, x: x.t().reshape(-1),
    "index": lambda lib, x: x[0], "index_slice": lambda lib, x: x[:1], "index_mixed": lambda lib, x: x[None, ..., ::2],
    "zero_": lambda lib, x: x.clone().zero_(), "fill_": lambda lib, x: x.clone().fill_(2),
}
TO = {
    "to_dtype": lambda lib, x: x.to(lib.float64), "to_meta": lambda lib, x: x.to("meta"),
    "to_cpu": lambda lib, x: x.to("cpu"), "cpu": lambda lib, x: x.cpu(), "double": lambda lib, x: x.double(),
}
ONE = {"meta": (meta(*A),), "meta0": (meta(),)}
ONE_OR_CPU = {**ONE, "cpu": (cpu(*A),), "cpu0": (cpu(),)}


def cases(ops, operands):
    return [pytest.param(op, specs, id=f"{name}/{kind}")
            for (name, op), (kind, specs) in itertools.product(ops.items(), operands.items())]


CASES = (cases(BINARY, PAIRS) + cases(METHODS, TENSOR_LEFT) + cases(IN_PLACE, IN_PLACE_PAIRS)
         + cases(WITH_TENSOR, TENSORS) + cases(MATMUL, MATMUL_PAIRS) + cases(UNARY, ONE) + cases(TO, ONE_OR_CPU))


@pytest.mark.parametrize("op, specs", CASES)
def test_device_propagation(op, specs):
    assert_same(devices, op, specs)


def from_root(lib, call, shape, gradient):
    """The leaf's gradient from backward (or autograd.grad) of a meta result of ``shape``, started
    from ``gradient`` (a spec): the engine checks it as any node's, and moves a 0-dim one."""
    x = leaf(lib, meta(*shape))
    return [described(g) for g in call(lib, x, x * 2, leaf(lib, gradient).detach())]


def backward(lib, x, out, gradient):
    out.backward(gradient)
    return (x.grad,)


def grad(lib, x, out, gradient):
    return lib.autograd.grad(out, x, gradient)


ROOT_CALLS = {"backward": backward, "grad": grad}
ROOT_GRADIENTS = [(A, meta(*A)), (A, cpu(*A)), (A, cpu()), ((), meta()), ((), cpu()), ((), cpu(1))]


@pytest.mark.parametrize("shape, gradient", ROOT_GRADIENTS)
@pytest.mark.parametrize("call", ROOT_CALLS.values(), ids=ROOT_CALLS.keys())
def test_root_gradient_device(call, shape, gradient):
    assert_same(from_root, call, shape, gradient)


# Every factory that takes device=, and those that take it from a tensor: where torch puts the result.
FACTORIES = {
    "tensor": lambda lib, d: lib.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
    "tensor(number)": lambda lib, d: lib.tensor(3.0, device=d),
    "ones": lambda lib, d: lib.ones(2, 3, device=d),
    "zeros": lambda lib, d: lib.zeros((2, 3), device=d, requires_grad=True),
    "empty": lambda lib, d: lib.empty(2, 3, device=d),
    "full": lambda lib, d: lib.full((2, 3), 1.5, device=d),
    "eye": lambda lib, d: lib.eye(3, device=d),
    "arange": lambda lib, d: lib.arange(5, device=d),
    "arange(float)": lambda lib, d: lib.arange(0.0, 1.0, 0.25, device=d),
    "rand": lambda lib, d: lib.rand(2, 3, device=d),
    "randn": lambda lib, d: lib.randn(2, 3, device=d, dtype=lib.float64),
    "randint": lambda lib, d: lib.randint(0, 5, (2, 3), device=d),
    "randperm": lambda lib, d: lib.randperm(4, device=d),
    "ones_like": lambda lib, d: lib.ones_like(lib.ones(2, 3, device=d)),
    "zeros_like(device=)": lambda lib, d: lib.zeros_like(lib.ones(2, 3), device=d),
    "rand_like": lambda lib, d: lib.rand_like(lib.ones(2, 3, device=d)),
    "randn_like": lambda lib, d: lib.randn_like(lib.ones(2, 3, device=d)),
    "Linear": lambda lib, d: lib.nn.Linear(3, 2, device=d).weight,
    "Module.to": lambda lib, d: lib.nn.Linear(3, 2).to(d).bias,
}


@pytest.mark.parametrize("device", ["meta", "cpu"])
@pytest.mark.parametrize("factory", FACTORIES)
def test_factories_place_their_result_as_torch_does(factory, device):
    def made(lib):
        tensor = FACTORIES[factory](lib, device)
        return described(tensor), tensor.requires_grad
    assert_same(made)


def test_a_python_number_stays_a_cpu_scalar_under_a_default_device():
    """torch wraps a Python number as a CPU 0-dim tensor whatever the default device (``with
    torch.device(...)``): the same number, used again after the block beside CPU tensors, must not
    carry the block's device (minigrad keeps its wrapped numbers for reuse)."""
    def inside_then_after(lib):
        with lib.device("meta"):
            inside = lib.ones(2, requires_grad=True) * 2.5
        after = lib.ones(2) * 2.5
        return described(inside), described(after), after.tolist()
    assert_same(inside_then_after)
