"""Issue 26: minigrad/ops.py became the package minigrad/ops/ (one module per topic, the nn-only ops in
minigrad/nn/functional_ops.py). Every name ops.py defined is still in one of them, and
exercise 1's plug cells (``minigrad.ops.Mul = Mul``) still reach the Tensor methods, which look each op
up on the package when they run, and (issue 34) the given ops built on a part: Mv, Dot and Bmm save
with the learner's ``save_factors``, MeanDim runs the learner's ``SumDim``."""
import contextlib
import importlib
import re
from pathlib import Path

import pytest

import minigrad
import minigrad.ops

ROOT = Path(__file__).resolve().parents[2]

# Everything minigrad/ops.py defined (classes, functions, constants), in its order, before the split
# (its IndexBackward is now two ops with torch's names, SelectBackward and SliceBackward).
OPS_PY_NAMES = [
    "Add", "Sub", "AddScaled", "SubScaled", "Rsub", "Mul", "Div", "Reciprocal", "Neg", "Pow", "PowTensor",
    "PowScalarBase", "Exp", "Log", "Relu", "ThresholdBackward", "Tanh", "TanhBackward", "Sigmoid", "SigmoidBackward",
    "Abs", "Clone", "ToCopy", "Sum", "_keep_dims", "_normalize_dims", "SumDim", "Mean", "MeanDim", "Max", "MaxDim",
    "mat2_grad", "Mm", "Mv", "Dot", "Addmm", "T", "Transpose", "Reshaping", "View", "UnsafeView", "Squeeze",
    "SqueezeDim", "SqueezeDims", "Expand", "Unsqueeze", "SqueezeDimInplace", "Alias", "Select", "Slice",
    "SelectBackward", "SliceBackward", "Zero", "Fill", "FillTensor", "Copy", "MseLoss", "Round", "Sqrt", "MaskedFill", "Unique2",
    "ReshapeAlias", "LinalgVectorNorm", "Bmm", "Softmax", "SoftmaxBackwardData", "LogSoftmax",
    "LogSoftmaxBackwardData", "Gelu", "GeluBackward", "_gelu_second_derivative", "NativeLayerNorm",
    "_storage_or_none", "_undefined", "undefined", "_defined", "Embedding", "EmbeddingDenseBackward", "REDUCTIONS",
    "NllLoss", "NllLossBackward", "NativeDropout",
]


NN_OPS = {"Addmm", "MseLoss", "Gelu", "GeluBackward", "_gelu_second_derivative", "NativeLayerNorm", "_storage_or_none",
          "_undefined", "undefined", "_defined", "Embedding", "EmbeddingDenseBackward", "REDUCTIONS", "NllLoss",
          "NllLossBackward", "NativeDropout"}
"""The names ops.py held that only minigrad.nn uses: they moved beside it."""


@pytest.mark.parametrize("name", OPS_PY_NAMES)
def test_every_name_of_ops_py_is_on_the_package_or_beside_nn(name):
    from minigrad.nn import functional_ops
    if name in NN_OPS:
        assert hasattr(functional_ops, name) and not hasattr(minigrad.ops, name)
    else:
        assert hasattr(minigrad.ops, name)
        exec(f"from minigrad.ops import {name}", {})


def plug_cells():
    """Exercise 1's locked plug cells that patch minigrad.ops: {op name: the cell's code}."""
    spec = (ROOT / "grader" / "exercises" / "ex1_ops.py").read_text()
    cells = re.findall(r"^# %% locked plug-(\w+)\n(.*?)(?=^# %%)", spec, flags=re.M | re.S)
    return {name: code for name, code in cells if "minigrad.ops." in code}


def recording(original, calls):
    """A learner's version of ``original``: the same op, noting each forward and backward."""
    class Recording(original):
        node_name = original.node_name

        @staticmethod
        def forward(ctx, *args):
            calls.append("forward")
            return original.forward(ctx, *args)

        @staticmethod
        def backward(ctx, *grads):
            calls.append("backward")
            return original.backward(ctx, *grads)

    Recording.__name__ = Recording.__qualname__ = original.__name__
    return Recording


EXPRESSIONS = {
    "Mul": lambda x, y: x * y,
    "Exp": lambda x, y: x.exp(),
    "Mm": lambda x, y: x @ y,
    "SumDim": lambda x, y: x.sum(0),
}


@contextlib.contextmanager
def plugged(name, learners):
    """Exercise 1's plug cell for ``name`` run as the notebook runs it (``graded`` gives the definition
    back outside the lab), with ``learners`` as the learner's ``name``; every module attribute the cell
    assigns is put back afterwards."""
    code = plug_cells()[name]
    targets = [target.rpartition(".") for target in re.findall(r"^(minigrad(?:\.\w+)+) = ", code, flags=re.M)]
    originals = [(importlib.import_module(module), attribute) for module, _, attribute in targets]
    saved = [(module, attribute, getattr(module, attribute)) for module, attribute in originals]
    try:
        exec(code, {"minigrad": minigrad, "graded": lambda definition: definition, name: learners})
        yield
    finally:
        for module, attribute, original in saved:
            setattr(module, attribute, original)
    assert all(getattr(module, attribute) is original for module, attribute, original in saved)


def test_the_plug_cells_patch_exactly_the_exercise_parts():
    assert sorted(plug_cells()) == sorted([*EXPRESSIONS, "save_factors"])


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_a_plugged_op_is_the_one_tensor_methods_run(name):
    original = getattr(minigrad.ops, name)
    calls = []
    learners = recording(original, calls)
    with plugged(name, learners):
        assert minigrad.ops.__dict__[name] is learners
        x = minigrad.randn(3, 3, dtype=minigrad.float64, requires_grad=True)
        y = minigrad.randn(3, 3, dtype=minigrad.float64)
        out = EXPRESSIONS[name](x, y)
        assert type(out.grad_fn)._forward_cls is learners and out.grad_fn.name() == original.node_name
        out.sum().backward()
        assert "forward" in calls and "backward" in calls
        assert x.grad is not None and x.grad.shape == x.shape
    assert minigrad.ops.__dict__[name] is original


def test_mean_over_dims_runs_the_plugged_sum():
    """MeanDim runs SumDim's forward and backward: in exercise 1, the learner's."""
    calls = []
    with plugged("SumDim", recording(minigrad.ops.SumDim, calls)):
        x = minigrad.randn(2, 3, 4, dtype=minigrad.float64, requires_grad=True)
        y = x.mean((0, 2))
        y.backward(minigrad.ones(3, dtype=minigrad.float64))
    assert calls == ["forward", "backward"] and y.grad_fn.name() == "MeanBackward1"
    assert x.grad._data.eq(1 / 8).all()


@pytest.mark.parametrize("product", ["mv", "dot", "bmm"])
def test_the_given_products_save_with_the_plugged_save_factors(product):
    """Mv, Dot and Bmm (not parts) save their factors with save_factors: in exercise 1, the learner's."""
    original, calls = minigrad.ops.linalg.save_factors, []

    def learners(ctx, a, b):
        calls.append(ctx)
        return original(ctx, a, b)

    shapes = {"mv": ((2, 3), (3,)), "dot": ((3,), (3,)), "bmm": ((2, 2, 3), (2, 3, 2))}[product]
    with plugged("save_factors", learners):
        a = minigrad.randn(shapes[0], dtype=minigrad.float64, requires_grad=True)
        b = minigrad.randn(shapes[1], dtype=minigrad.float64)
        y = getattr(a, product)(b)
        assert calls == [y.grad_fn] and y.grad_fn._saved_self is None
        y.sum().backward()
    assert a.grad is not None and a.grad.shape == a.shape
