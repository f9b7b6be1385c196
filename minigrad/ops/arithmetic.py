"""Arithmetic: add, sub, mul, div, reciprocal, neg and pow."""
import torch

from .. import function
from ..function import Function, constant
from ..saved_tensors import other_attributes


# --- arithmetic -------------------------------------------------------------------------------

class Add(Function):
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b):
        return a._data + b._data

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (grad if need_a else None, grad if need_b else None)


class Sub(Function):
    node_name = "SubBackward0"

    @staticmethod
    def forward(ctx, a, b):
        return a._data - b._data

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (grad if need_a else None, -grad if need_b else None)


class AddScaled(Function):
    """``a.add(b, alpha=k)``, ``a - k * b`` for ``sub``: torch's add with alpha, one node that keeps k."""

    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.alpha = alpha
        return torch.add(a._data, b._data, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b, _ = ctx.needs_input_grad
        return (grad if need_a else None, grad * ctx.alpha if need_b else None, None)


class SubScaled(AddScaled):
    node_name = "SubBackward0"

    @staticmethod
    def forward(ctx, a, b, alpha):
        return AddScaled.forward(ctx, a, b, -alpha)


class Rsub(Function):
    """``number - tensor``: torch's rsub.Scalar, so only the tensor is an input of the node."""

    node_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, a, number):
        return number - a._data

    @staticmethod
    def backward(ctx, grad):
        return -grad, None


# BEGIN EXERCISE 1
def save_factors(ctx, a, b):
    """What the node of a product of ``a`` and ``b`` keeps of them, as torch's nodes keep it: one call
    of ``ctx.save_for_backward`` with two places, a's then b's, each the factor or None. Mul and Mm
    call it, and so do Mv, Dot and Bmm (in ``minigrad/ops/linalg.py``)."""
    need_a, need_b = ctx.needs_input_grad
    ctx.save_for_backward(a if need_b else None, b if need_a else None)
# END EXERCISE 1


# BEGIN EXERCISE 1
class Mul(Function):
    """``a * b`` with broadcasting, torch's MulBackward0: d(a*b)/da = b and d(a*b)/db = a. It saves
    what torch's node saves, no more (``_saved_self``, ``_saved_other``)."""

    node_name = "MulBackward0"
    saved_names = ("self", "other")
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a, b):
        """Save (self, other) with save_factors; return the product's storage."""
        save_factors(ctx, a, b)
        return a._data * b._data

    @staticmethod
    def backward(ctx, grad):
        """Gradients for (a, b), or None where one is not needed. Like torch, leave them shaped like
        the broadcast result: the engine reduces each to its input's shape (with ``sum_to``)."""
        a, b = ctx.saved_tensors
        return (grad * b if b is not None else None, grad * a if a is not None else None)
# END EXERCISE 1


class Div(Function):
    node_name = "DivBackward0"
    saved_names = ("self", "other")
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b)
        return a._data / b._data

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (grad / b if need_a else None, -grad * (a / b / b) if need_b else None)  # torch's, op for op


class Reciprocal(Function):
    node_name = "ReciprocalBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.reciprocal()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return -grad * (result * result)


class Neg(Function):
    node_name = "NegBackward0"

    @staticmethod
    def forward(ctx, a):
        return -a._data

    @staticmethod
    def backward(ctx, grad):
        return -grad


class MulScalar(Function):
    """A tensor times a number inside torch's C++ formulas (mul.Scalar, MulBackward1): the number stays
    a number, kept as ``_saved_other``, and no wrapped tensor is made of it. Pow's backward uses it."""

    node_name = "MulBackward1"

    @staticmethod
    def forward(ctx, a, number):
        ctx.other = number
        return a._data * number

    @staticmethod
    def backward(ctx, grad):
        return MulScalar.apply(grad, ctx.other), None


class DivScalar(Function):
    """A tensor divided by a number inside torch's C++ formulas (div.Scalar, DivBackward1), as MulScalar;
    maximum's and minimum's backwards halve the gradient where their inputs tie with it."""

    node_name = "DivBackward1"

    @staticmethod
    def forward(ctx, a, number):
        ctx.other = number
        return a._data / number

    @staticmethod
    def backward(ctx, grad):
        return DivScalar.apply(grad, ctx.other), None


class AddScalar(Function):
    """A number added to a tensor inside torch's C++ formulas (add.Scalar, AddBackward1), as MulScalar:
    sigmoid's double backward adds one. It saves nothing."""

    node_name = "AddBackward1"

    @staticmethod
    def forward(ctx, a, number):
        return a._data + number

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class SubScalar(AddScalar):
    """A number taken from a tensor (sub.Scalar, SubBackward1): pow's backward lowers the exponent by one."""

    node_name = "SubBackward1"

    @staticmethod
    def forward(ctx, a, number):
        return a._data - number


for _function in (MulScalar, DivScalar):
    other_attributes(_function, other=lambda node: node.other)


class FloorDivide(Function):
    """``a // b`` (either may be a number): torch records it, but has no derivative for it. Its node is
    torch's NotImplemented, with an edge per tensor that requires grad; running it raises torch's error."""

    node_name = "torch::autograd::NotImplemented"

    @staticmethod
    def forward(ctx, a, b):
        return _value(a) // _value(b)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::floor_divide is not implemented")


def _value(operand):
    """A tensor's storage; a number (Python's or numpy's) as it is."""
    return operand._data if isinstance(operand, function.Tensor) else operand


class Pow(Function):
    """``tensor ** number``. Its backward is torch's pow_backward: ``grad * (exponent * a ** (exponent - 1))``,
    or zeros outside any graph for exponent 0."""

    node_name = "PowBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return a._data ** exponent

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        exponent = ctx.exponent
        if exponent == 0:
            return constant(torch.zeros_like(a._data, memory_format=torch.contiguous_format)), None
        power = a ** (exponent - 1)  # alive to the end, as torch's temporary: the same peak of memory
        return grad * MulScalar.apply(power, exponent), None


other_attributes(Pow, exponent=lambda node: node.exponent)  # torch's: the number itself


class PowTensor(Function):
    """``tensor ** tensor``."""

    node_name = "PowBackward1"
    saved_names = ("self", "exponent", "result")

    @staticmethod
    def forward(ctx, a, b):
        result = a._data ** b._data
        ctx.save_for_backward(a, b, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        """torch's pow_backward_self and pow_backward_exponent, op for op: 0 where the exponent is 0 (for
        self), and where self is 0 and the exponent is not negative (for the exponent): there
        ``b * a**(b-1)`` and ``log(a)`` are not finite, and the limit is 0 (a ``where``, as torch's)."""
        a, b, result = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        zero = constant(grad._data.new_zeros(()))  # torch's scalar_tensor(0.0, grad.options())
        grad_a = zero.where(constant(b._data == 0), grad * (b * a ** SubScalar.apply(b, 1))) if need_a else None
        cond = constant((a._data == 0) & (b._data >= 0))
        grad_b = grad * zero.where(cond, result * a.log()) if need_b else None
        return grad_a, grad_b


class PowScalarBase(Function):
    """``number ** tensor``."""

    node_name = "PowBackward2"
    saved_names = ("exponent", "result")

    @staticmethod
    def forward(ctx, base, b):
        result = torch.pow(base, b._data)
        ctx.save_for_backward(b, result)
        ctx.base = base
        return result

    @staticmethod
    def backward(ctx, grad):
        """torch's ``grad * (result * log(base))``, log(base) a number; for base 0, torch's limit 0 where the
        exponent is not negative (a ``where``)."""
        b, result = ctx.saved_tensors
        scaled = MulScalar.apply(result, float(torch.log(torch.tensor(float(ctx.base), dtype=torch.float64))))
        if ctx.base == 0:
            scaled = constant(grad._data.new_zeros(())).where(constant(b._data >= 0), scaled)
        return None, grad * scaled
