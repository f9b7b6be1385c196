"""The fused ops only minigrad.nn uses: addmm, losses, GELU, layer norm, embedding, dropout."""
import math

import torch

from .. import grad_mode
from ..function import Function, constant
from ..ops.arithmetic import DivScalar, MulScalar
from ..ops.linalg import mat1_grad, mat2_grad
from ..saved_tensors import other_attributes


# --- linear layer ----------------------------------------------------------------------------

class Addmm(Function):
    """``bias + mat1 @ mat2``: what nn.Linear runs on a batch."""

    node_name = "AddmmBackward0"
    saved_names = ("mat1", "mat2")

    @staticmethod
    def forward(ctx, bias, mat1, mat2):
        _, need_1, need_2 = ctx.needs_input_grad
        ctx.save_for_backward(mat1 if need_2 else None, mat2 if need_1 else None)
        ctx.mat1_layout, ctx.mat2_layout = mat1._data.stride(), mat2._data.stride()
        return torch.addmm(bias._data, mat1._data, mat2._data)

    @staticmethod
    def backward(ctx, grad):
        mat1, mat2 = ctx.saved_tensors
        need_bias = ctx.needs_input_grad[0]
        return (grad if need_bias else None,
                mat1_grad(grad, mat2, ctx.mat1_layout) if mat2 is not None else None,
                mat2_grad(grad, mat1, ctx.mat2_layout) if mat1 is not None else None)


# --- losses ----------------------------------------------------------------------------------

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
"""torch's numbers for a loss's reduction (``at::Reduction``), as its kernels take them and its nodes show them."""


class MseLoss(Function):
    """(a - target)², each, summed or their mean. Each input's gradient is torch's fused kernel
    (MseLossBackward), the target's with the two swapped, as torch's formula has it."""

    node_name = "MseLossBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, a, target, reduction):
        ctx.save_for_backward(a, target)
        ctx.reduction = reduction
        return MSE_LOSS(a._data, target._data, REDUCTIONS[reduction])

    @staticmethod
    def backward(ctx, grad):
        a, target = ctx.saved_tensors
        need_a, need_target, _ = ctx.needs_input_grad
        return (MseLossBackward.apply(grad, a, target, ctx.reduction) if need_a else None,
                MseLossBackward.apply(grad, target, a, ctx.reduction) if need_target else None, None)


class MseLossBackward(Function):
    """mse_loss's backward, grad * 2 * (a - target) (over the count of elements for "mean"), in one kernel
    (torch's mse_loss_backward). An op itself, so with create_graph=True it can be differentiated again:
    for a and target, torch's mse_loss_double_backward, 2 * g * grad (over the count for "mean")."""

    node_name = "MseLossBackwardBackward0"
    saved_names = ("grad_output", "self", "target")

    @staticmethod
    def forward(ctx, grad, a, target, reduction):
        ctx.save_for_backward(grad, a, target)
        ctx.reduction = reduction
        return MSE_LOSS_BACKWARD(grad._data, a._data, target._data, REDUCTIONS[reduction])

    @staticmethod
    def backward(ctx, g):
        grad, a, target = ctx.saved_tensors
        need_grad, need_a, need_target, _ = ctx.needs_input_grad
        twice = None
        if need_a or need_target:
            twice = MulScalar.apply(g * grad, 2)
            if ctx.reduction == "mean":
                twice = DivScalar.apply(twice, a.numel())
        return (MseLossBackward.apply(g, a, target, ctx.reduction) if need_grad else None,
                twice if need_a else None, -twice if need_target else None, None)


MSE_LOSS, MSE_LOSS_BACKWARD = torch._C._nn.mse_loss, torch.ops.aten.mse_loss_backward.default
"""torch's kernels: the loss as torch.nn.functional.mse_loss calls it, its backward as an aten op (it has no other binding)."""
other_attributes(MseLoss, reduction=lambda node: REDUCTIONS[node.reduction])
other_attributes(MseLossBackward, reduction=lambda node: REDUCTIONS[node.reduction])


# --- GELU ------------------------------------------------------------------------------------

class Gelu(Function):
    node_name = "GeluBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, approximate):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        return torch.nn.functional.gelu(a._data, approximate=approximate)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return GeluBackward.apply(grad, a, ctx.approximate), None


class GeluBackward(Function):
    """grad * gelu'(self) in torch's kernel (gelu_backward); its own backward needs gelu''."""

    node_name = "GeluBackwardBackward0"
    saved_names = ("grad_output", "self")

    @staticmethod
    def forward(ctx, grad, a, approximate):
        ctx.save_for_backward(grad, a)
        ctx.approximate = approximate
        return torch.ops.aten.gelu_backward.default(grad._data, a._data, approximate=approximate)

    @staticmethod
    def backward(ctx, g):
        grad, a = ctx.saved_tensors
        need_grad, need_a = ctx.needs_input_grad[:2]
        return (GeluBackward.apply(g, a, ctx.approximate) if need_grad else None,
                g * grad * _gelu_second_derivative(a, ctx.approximate) if need_a else None, None)


_PDF_SCALE = 1.12837916709551257390 * 0.70710678118654752440 * 0.5
"""1 / sqrt(2 pi), as torch's kBeta computes it from C's M_2_SQRTPI and M_SQRT1_2."""


def _gelu_second_derivative(x, approximate):
    """gelu'' in minigrad ops. Exact: gelu = x Φ(x), so gelu'' = 2 φ(x) - x² φ(x), op for op as torch's
    gelu_double_backward (numbers times tensors: MulBackward1). With tanh: gelu = x (1 + tanh u) / 2,
    u = k (x + c x³), so gelu'' = (1 - t²) (u' + x (u'' - 2 t u'²) / 2) (torch's own formula needs cosh)."""
    if approximate == "none":
        x_squared = x * x
        pdf = MulScalar.apply(MulScalar.apply(x_squared, -0.5).exp(), _PDF_SCALE)
        return MulScalar.apply(pdf, 2) - x_squared * pdf
    k, c = math.sqrt(2 / math.pi), 0.044715
    t = ((x + x * x * x * c) * k).tanh()
    du, ddu = (x * x * (3 * c) + 1) * k, x * (6 * c * k)
    return (1 - t * t) * (du + x * (ddu - t * du * du * 2) * 0.5)


# --- layer norm ------------------------------------------------------------------------------

class NativeLayerNorm(Function):
    """torch's fused layer norm: one node for normalisation, scale and shift, saving the input and
    the per-row mean and 1/std (``result1``, ``result2``) as torch does."""

    node_name = "NativeLayerNormBackward0"
    saved_names = ("input", "weight", "bias", "result1", "result2")

    @staticmethod
    def forward(ctx, a, normalized_shape, weight, bias, eps):
        out, mean, rstd = torch.native_layer_norm(a._data, normalized_shape, _storage_or_none(weight),
                                                  _storage_or_none(bias), eps)
        ctx.save_for_backward(a, _defined(weight), _defined(bias), constant(mean), constant(rstd))
        ctx.normalized_shape, ctx.eps = tuple(normalized_shape), eps
        return out

    @staticmethod
    def backward(ctx, grad):
        """torch's fused backward when nothing records it; with create_graph=True, the same formula in
        minigrad ops, with the mean and 1/std recomputed from the input so they are differentiated too."""
        a, weight, bias, mean, rstd = ctx.saved_tensors
        need_a, _, need_weight, need_bias, _ = ctx.needs_input_grad
        if not grad_mode.is_grad_enabled():
            grads = torch.ops.aten.native_layer_norm_backward.default(
                grad._data, a._data, ctx.normalized_shape, mean._data, rstd._data, _storage_or_none(weight),
                _storage_or_none(bias), [need_a, need_weight, need_bias])
            grad_a, grad_weight, grad_bias = (None if g is None else constant(g) for g in grads)
            return grad_a, None, grad_weight, grad_bias, None
        dims = tuple(range(a.dim() - len(ctx.normalized_shape), a.dim()))
        rows = tuple(range(a.dim() - len(ctx.normalized_shape)))
        mean = a.mean(dims, keepdim=True)
        centered = a - mean
        rstd = ((centered * centered).mean(dims, keepdim=True) + ctx.eps) ** -0.5
        normalized = centered * rstd
        scaled = grad if weight is None else grad * weight
        grad_a = rstd * (scaled - scaled.mean(dims, keepdim=True)
                         - normalized * (scaled * normalized).mean(dims, keepdim=True)) if need_a else None
        grad_weight = (grad * normalized).sum(rows) if rows else grad * normalized
        grad_bias = grad.sum(rows) if rows else grad
        return grad_a, None, grad_weight if need_weight else None, grad_bias if need_bias else None, None


def _storage_or_none(tensor):
    return None if tensor is None or tensor is _undefined else tensor._data


_undefined = None


def undefined():
    """An optional tensor argument left out (torch's undefined tensor), for ops whose node has an edge
    for it all the same (``(None, 0)``, as torch gives every optional tensor input): layer_norm without
    weight. Made on first use: ops is imported before Tensor exists."""
    global _undefined
    if _undefined is None:
        _undefined = constant(torch.empty(0))
    return _undefined


def _defined(tensor):
    return None if tensor is _undefined else tensor


# --- embedding -------------------------------------------------------------------------------

class Embedding(Function):
    """Rows of ``weight`` picked by ``indices`` (storage: not an input of the node, as in torch)."""

    node_name = "EmbeddingBackward0"
    saved_names = ("indices",)

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        ctx.save_for_backward(constant(indices))
        ctx.num_weights, ctx.padding_idx, ctx.scale_grad_by_freq = weight.shape[0], padding_idx, scale_grad_by_freq
        return torch.embedding(weight._data, indices, padding_idx, scale_grad_by_freq)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return EmbeddingDenseBackward.apply(grad, indices._data, ctx.num_weights, ctx.padding_idx,
                                            ctx.scale_grad_by_freq), None, None, None


class EmbeddingDenseBackward(Function):
    """Sum each row's gradients into a weight-shaped gradient (torch's embedding_dense_backward)."""

    node_name = "EmbeddingDenseBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
        ctx.indices, ctx.padding_idx = indices, padding_idx
        return torch.ops.aten.embedding_dense_backward.default(grad._data, indices, num_weights, padding_idx,
                                                               scale_grad_by_freq)

    @staticmethod
    def backward(ctx, g):
        rows = Embedding.apply(g, ctx.indices, -1, False)
        if ctx.padding_idx >= 0:
            rows = rows * constant((ctx.indices != ctx.padding_idx).unsqueeze(-1).to(rows.dtype))
        return rows, None, None, None, None


# --- classification losses -------------------------------------------------------------------


class NllLoss(Function):
    """Negative log-likelihood of class indices. The target and the class weights are storage: torch
    does not differentiate the loss with respect to them."""

    node_name = "NllLossBackward0"
    saved_names = ("self", "target", "weight", "total_weight")

    @staticmethod
    def forward(ctx, a, target, weight, reduction, ignore_index):
        out, total_weight = torch.ops.aten.nll_loss_forward.default(a._data, target, weight, REDUCTIONS[reduction],
                                                                    ignore_index)
        ctx.save_for_backward(a, constant(target), None if weight is None else constant(weight), constant(total_weight))
        ctx.reduction, ctx.ignore_index = reduction, ignore_index
        return out

    @staticmethod
    def backward(ctx, grad):
        a, target, weight, total_weight = ctx.saved_tensors
        return NllLossBackward.apply(grad, a, target._data, _storage_or_none(weight), ctx.reduction, ctx.ignore_index,
                                     total_weight._data), None, None, None, None


class NllLossBackward(Function):
    """The loss's gradient, -weight[target] at each row's target class (scaled for "mean"). Linear in
    ``grad``, so its own gradient for ``grad`` is the loss of the incoming gradient; for ``self``, zeros
    (torch's ``zeros_like(grad)``: a gradient, with no graph)."""

    node_name = "NllLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, a, target, weight, reduction, ignore_index, total_weight):
        ctx.args = target, weight, reduction, ignore_index
        return torch.ops.aten.nll_loss_backward.default(grad._data, a._data, target, weight, REDUCTIONS[reduction],
                                                        ignore_index, total_weight)

    @staticmethod
    def backward(ctx, g):
        need_grad, need_self = ctx.needs_input_grad[:2]
        return (NllLoss.apply(g, *ctx.args) if need_grad else None,
                constant(torch.zeros_like(g._data)) if need_self else None, None, None, None, None, None)


# --- dropout on accelerators -----------------------------------------------------------------

class NativeDropout(Function):
    """What torch's dropout runs on CUDA: a fused kernel that returns the output and the kept mask."""

    node_name = "NativeDropoutBackward0"
    saved_names = ("result1",)

    @staticmethod
    def forward(ctx, a, p, train):
        out, mask = torch.native_dropout(a._data, p, train)
        ctx.save_for_backward(constant(mask))
        ctx.scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * constant(mask._data.to(grad.dtype) * ctx.scale), None, None
