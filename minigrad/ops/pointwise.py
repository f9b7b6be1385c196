"""Pointwise ops: exp, log, sin, cos, activations (with their fused backwards), abs, clone, to, round, sqrt, masked_fill,
where, clamp, maximum, minimum, atan2 and nextafter."""
import torch

from .. import releases
from ..function import Function, constant
from ..saved_tensors import other_attributes
from .arithmetic import AddScalar, DivScalar, MulScalar


THRESHOLD_BACKWARD = torch.ops.aten.threshold_backward.default
TANH_BACKWARD = torch.ops.aten.tanh_backward.default
SIGMOID_BACKWARD = torch.ops.aten.sigmoid_backward.default
"""torch's fused backward kernels (what relu's, tanh's and sigmoid's backward run), looked up once: the
lookup of ``torch.ops.aten.<op>.default`` costs a sixth of the call."""


# --- unary -----------------------------------------------------------------------------------

# BEGIN EXERCISE 1
class Exp(Function):
    """d exp(a)/da = exp(a): the backward needs the output, so torch saves the *result*, not the input."""

    node_name = "ExpBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        """Save the result (the storage you return) and return it."""
        result = a._data.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        """The gradient for a, from the saved result."""
        (result,) = ctx.saved_tensors
        return grad * result
# END EXERCISE 1


class Log(Function):
    node_name = "LogBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._data.log()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


class Sin(Function):
    node_name = "SinBackward0"
    saved_names = ("self",)
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._data.sin()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.cos()


class Cos(Function):
    node_name = "CosBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._data.cos()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * -a.sin()


class Relu(Function):
    node_name = "ReluBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.relu()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return ThresholdBackward.apply(grad, result)


class ThresholdBackward(Function):
    """relu's backward, grad where result > 0 else 0, in one kernel (torch's threshold_backward).

    It is an op itself, so with create_graph=True relu's backward can be differentiated again.
    """

    node_name = "ThresholdBackwardBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, grad, result):
        ctx.save_for_backward(result)
        return THRESHOLD_BACKWARD(grad._data, result._data, 0)

    @staticmethod
    def backward(ctx, g):
        """torch's: the mask again for the gradient, and zeros (no graph) for relu's result."""
        (result,) = ctx.saved_tensors
        need_grad, need_result = ctx.needs_input_grad
        return (ThresholdBackward.apply(g, result) if need_grad else None,
                constant(torch.zeros_like(g._data)) if need_result else None)


other_attributes(ThresholdBackward, threshold=lambda node: 0)  # relu's threshold, as torch's node keeps it


class Tanh(Function):
    node_name = "TanhBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.tanh()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return TanhBackward.apply(grad, result)


class TanhBackward(Function):
    """tanh's backward, grad * (1 - result²), in one kernel (torch's tanh_backward): one op instead
    of three. An op itself, so with create_graph=True it can be differentiated again."""

    node_name = "TanhBackwardBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, result):
        ctx.save_for_backward(grad, result)
        return TANH_BACKWARD(grad._data, result._data)

    @staticmethod
    def backward(ctx, g):
        grad, result = ctx.saved_tensors
        need_grad, need_result = ctx.needs_input_grad
        return (TanhBackward.apply(g, result) if need_grad else None,
                g * (MulScalar.apply(result, -2) * grad) if need_result else None)  # torch's, op for op


class Sigmoid(Function):
    node_name = "SigmoidBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.sigmoid()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return SigmoidBackward.apply(grad, result)


class SigmoidBackward(Function):
    """sigmoid's backward, grad * result * (1 - result), in one kernel (torch's sigmoid_backward)."""

    node_name = "SigmoidBackwardBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, result):
        ctx.save_for_backward(grad, result)
        return SIGMOID_BACKWARD(grad._data, result._data)

    @staticmethod
    def backward(ctx, g):
        grad, result = ctx.saved_tensors
        need_grad, need_result = ctx.needs_input_grad
        return (SigmoidBackward.apply(g, result) if need_grad else None,
                g * grad * AddScalar.apply(MulScalar.apply(result, -2), 1) if need_result else None)


class Abs(Function):
    node_name = "AbsBackward0"
    saved_names = ("self",)
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._data.abs()

    @staticmethod
    def backward(ctx, grad):
        """torch's ``grad * self.sgn()``: the sign is an op of its own (SgnBackward0), so under create_graph
        the gradient requires grad, as torch's does, though its own gradient is zero."""
        (a,) = ctx.saved_tensors
        return grad * a.sgn()


class Sgn(Function):
    """``a.sgn()``: the sign, -1, 0 or 1. Its gradient is zero: torch's sgn_backward for real tensors
    gives an efficient zero tensor (no memory behind it: ``tolist()`` refuses it, as torch's), so it needs
    no graph. It saves self and result, as torch's node does, and checks their versions in backward."""

    node_name = "SgnBackward0"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a):
        result = a._data.sgn()
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        _, result = ctx.saved_tensors
        return constant(torch._efficientzerotensor(result.shape, dtype=result.dtype, device=result.device))


class Clone(Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a, memory_format=torch.preserve_format):
        return a._data.clone(memory_format=memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ToCopy(Function):
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, a, dtype, device):
        ctx.source = (a.dtype, a.device)
        out = a._data.to(dtype=dtype, device=device)
        if out.is_floating_point() or out.is_complex():
            return out
        out = constant(out)  # an integer copy: no gradient, out of the graph, as in torch
        ctx.mark_non_differentiable(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        dtype, device = ctx.source
        return grad.to(dtype=dtype, device=device), None, None


# --- rounding and roots ------------------------------------------------------------------------

class Round(Function):
    """Piecewise constant: its gradient is zero everywhere (torch's ``zeros_like(grad)``, no graph)."""

    node_name = "RoundBackward0"

    @staticmethod
    def forward(ctx, a):
        return a._data.round()

    @staticmethod
    def backward(ctx, grad):
        return constant(torch.zeros_like(grad._data))


class Sqrt(Function):
    node_name = "SqrtBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = a._data.sqrt()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad / MulScalar.apply(result, 2)  # torch's 2 * result: a number times a tensor (MulBackward1)


class MaskedFill(Function):
    """``a.masked_fill(mask, number)``: the filled places get no gradient. The mask (storage) is not
    an input of the node, as in torch."""

    node_name = "MaskedFillBackward0"
    saved_names = ("mask",)

    @staticmethod
    def forward(ctx, a, mask, value):
        ctx.save_for_backward(constant(mask))
        return a._data.masked_fill(mask, value)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return MaskedFill.apply(grad, mask._data, 0), None, None


class Where(Function):
    """``torch.where(condition, a, b)``: a where the condition holds, else b (broadcast together). The
    gradient goes the same ways, so the node saves the condition, the tensor itself (its version is
    checked). It comes boxed in a 1-tuple: an argument but no input of the node, which has edges for
    a and b only, as torch's."""

    node_name = "WhereBackward0"
    saved_names = ("condition",)

    @staticmethod
    def forward(ctx, boxed_condition, a, b):
        (condition,) = boxed_condition
        ctx.save_for_backward(condition)
        return torch.where(condition._data, a._data, b._data)

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        zero = constant(grad._data.new_zeros(()))
        need_a, need_b = ctx.needs_input_grad[1:]
        return (None, Where.apply((condition,), grad, zero) if need_a else None,
                Where.apply((condition,), zero, grad) if need_b else None)


class Clamp(Function):
    """``a.clamp(min, max)`` with numbers as bounds, one of them None at most: torch's ClampBackward1.
    The gradient passes where ``min <= a <= max``, the bounds included (torch's clamp_backward, a
    ``where``), so the node saves a, and the bounds as numbers (``_saved_min``, ``_saved_max``)."""

    node_name = "ClampBackward1"
    saved_names = ("self",)
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a, min, max):
        ctx.save_for_backward(a)
        ctx.min, ctx.max = min, max
        return a._data.clamp(min, max)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        within = _within(a._data, ctx.min, ctx.max)
        return Where.apply((constant(within),), grad, constant(grad._data.new_zeros(()))), None, None


class ClampMin(Clamp):
    """``a.clamp_min(min)``: ClampMinBackward0, which keeps ``_saved_min`` only."""

    node_name = "ClampMinBackward0"

    @staticmethod
    def forward(ctx, a, min):
        return Clamp.forward(ctx, a, min, None)

    @staticmethod
    def backward(ctx, grad):
        return Clamp.backward(ctx, grad)[:2]


class ClampMax(ClampMin):
    """``a.clamp_max(max)``: ClampMaxBackward0, which keeps ``_saved_max`` only."""

    node_name = "ClampMaxBackward0"

    @staticmethod
    def forward(ctx, a, max):
        return Clamp.forward(ctx, a, None, max)


def _within(data, min, max):
    """Where ``min <= data <= max`` (a bound that is None bounds nothing), as clamp_backward's mask."""
    if min is None:
        return data <= max
    if max is None:
        return data >= min
    return (data >= min).logical_and_(data <= max)


other_attributes(Clamp, min=lambda node: node.min, max=lambda node: node.max)
other_attributes(ClampMin, min=lambda node: node.min)
other_attributes(ClampMax, max=lambda node: node.max)


# --- binary ----------------------------------------------------------------------------------

class Maximum(Function):
    """``torch.maximum(a, b)``, also ``a.max(b)``: MaximumBackward0 saves both. The gradient goes to the
    larger, half to each where they tie: torch's formula, a ``where`` then ``masked_fill_`` of the
    places the input lost (so with create_graph its graph is torch's too)."""

    node_name = "MaximumBackward0"
    saved_names = ("self", "other")
    kernel, loses = torch.maximum, torch.lt

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return cls.kernel(a._data, b._data)

    @classmethod
    def backward(cls, ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (_split(grad, a, b, cls.loses(a._data, b._data)) if need_a else None,
                _split(grad, a, b, cls.loses(b._data, a._data)) if need_b else None)


class Minimum(Maximum):
    """``torch.minimum(a, b)``, also ``a.min(b)``: as Maximum, the gradient going to the smaller."""

    node_name = "MinimumBackward0"
    kernel, loses = torch.minimum, torch.gt


def _split(grad, a, b, lost):
    """grad, halved where a and b tie, zero where the input ``lost``."""
    split = Where.apply((constant(a._data == b._data),), DivScalar.apply(grad, 2), grad)
    return split.masked_fill_(constant(lost), 0)


class Atan2(Function):
    """``torch.atan2(a, b)``, the angle of the point (b, a): d/da = b / (a² + b²), d/db = -a / (a² + b²),
    so the node saves both inputs (Atan2Backward0). As torch's atan2_backward, the reciprocal is taken
    as 0 where a² + b² is 0: the origin gets a zero gradient, not NaN."""

    node_name = "Atan2Backward0"
    saved_names = ("self", "other")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.atan2(a._data, b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        denominator = a * a + b * b
        recip = MaskedFill.apply(denominator.reciprocal(), denominator._data == 0, 0)
        return (grad * b * recip if need_a else None, grad * -a * recip if need_b else None)


class Nextafter(Function):
    """``torch.nextafter(a, b)``: the next float after a towards b, recorded as NextafterBackward0. Before
    2.13 torch has no derivative for it: the node saves nothing, and backward through it fails. From 2.13
    (``releases.NEXTAFTER_HAS_A_DERIVATIVE``) it saves both inputs: a's gradient is grad, but 0 where a
    equals b (the output is then b itself: a ``where``, as torch's), and b's is zeros, outside any graph."""

    node_name = "NextafterBackward0"
    saved_names = ("self", "other") if releases.NEXTAFTER_HAS_A_DERIVATIVE else ()

    @staticmethod
    def forward(ctx, a, b):
        if releases.NEXTAFTER_HAS_A_DERIVATIVE:
            ctx.save_for_backward(a, b)
        return torch.nextafter(a._data, b._data)

    @staticmethod
    def backward(ctx, grad):
        if not releases.NEXTAFTER_HAS_A_DERIVATIVE:
            raise NotImplementedError("the derivative for 'nextafter' is not implemented.")
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        zero = constant(grad._data.new_zeros(()))
        return (Where.apply((constant(a._data == b._data),), zero, grad) if need_a else None,
                constant(torch.zeros_like(grad._data)) if need_b else None)
