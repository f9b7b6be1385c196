"""``minigrad.nn.functional``: built from minigrad ops, with torch's node names and torch's kernels."""
import warnings

import torch

from . import functional_ops as ops
from .. import autocast_mode, grad_mode
from ..function import constant
from ..tensor import Tensor, matmul


def linear(input, weight, bias=None):
    """torch's choice of kernels: addmm for a matrix; other contiguous input viewed as rows, addmm,
    viewed back; anything else matmul, then the bias added in place (AddBackward0 on top)."""
    if grad_mode._state.autocast_enabled:
        input, weight, bias = autocast_mode.cast("linear", input, weight, bias)
    if bias is not None and input.dim() == 2:
        return ops.Addmm.apply(bias, input, weight.t())
    if bias is not None and bias.dim() == 1 and input.is_contiguous():
        rows = ops.Addmm.apply(bias, input.view(-1, input.shape[-1]), weight.t())
        return rows.view(*input.shape[:-1], weight.shape[0])
    output = matmul(input, weight.t())
    return output if bias is None else output.add_(bias)


def mse_loss(input, target, reduction="mean"):
    """torch's: a target of another size than the input's is warned about, then both are broadcast (an
    ExpandBackward0 for each that grows; autocast's cast comes after, in torch's kernel), and the loss is
    one kernel, over the broadcast elements."""
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=2)
        shape = torch.broadcast_tensors(input._data, target._data)[0].shape  # (torch's error where they don't broadcast)
        input, target = (t if t.shape == shape else t.expand(shape) for t in (input, target))
    if grad_mode._state.autocast_enabled:
        input, target = autocast_mode.cast("mse_loss", input, target)
    return ops.MseLoss.apply(input, target, reduction)


def l1_loss(input, target, reduction="mean"):
    """torch 2.x decomposes it, so its graph is MeanBackward0 <- AbsBackward0 <- SubBackward0."""
    loss = (input - target).abs()
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Class-index targets, for a batch of rows of log-probabilities (or one row)."""
    if grad_mode._state.autocast_enabled:
        input, weight = autocast_mode.cast("nll_loss", input, weight)
    if input.dim() > 2:
        raise NotImplementedError("minigrad's nll_loss takes 1-D or 2-D input (classes along the last dim)")
    return ops.NllLoss.apply(input, target._data, _storage(weight), reduction, ignore_index)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """torch's graph: NllLossBackward0 on LogSoftmaxBackward0 over the class dim. A target shaped like
    the input holds class probabilities, as torch reads it (which minigrad does not take)."""
    if target.shape == input.shape:
        if not target.is_floating_point():
            raise RuntimeError("Expected floating point type for target with class probabilities, got "
                               + torch.empty(0, dtype=target.dtype).type()[len("torch."):-len("Tensor")])
        raise NotImplementedError("minigrad's cross_entropy takes class indices as targets, not probabilities")
    if grad_mode._state.autocast_enabled:
        input, weight = autocast_mode.cast("cross_entropy_loss", input, weight)
    return nll_loss(log_softmax(input, 0 if input.dim() == 1 else 1), target, weight, ignore_index, reduction)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def gelu(input, approximate="none"):
    return ops.Gelu.apply(input, approximate)


def softmax(input, dim=None):
    return input.softmax(_implicit_dim("softmax", input) if dim is None else dim)


def log_softmax(input, dim=None):
    return input.log_softmax(_implicit_dim("log_softmax", input) if dim is None else dim)


def _implicit_dim(name, input):
    """torch's choice of dim where none is given, with its deprecation warning: 0 for a 0-, 1- or 3-dim
    input (one sample, or one image's channels), else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if input.dim() in (0, 1, 3) else 1


def dropout(input, p=0.5, training=True):
    """torch's choice of kernel, so the same seed drops the same elements: on CUDA the fused
    native_dropout (NativeDropoutBackward0); on CPU a Bernoulli mask scaled by 1/(1-p), drawn as
    torch draws it, times the input (MulBackward0). Out of training (or p=0) the input itself."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    data = input._data
    if data.is_cuda and p < 1:
        return ops.NativeDropout.apply(input, p, training)
    if p == 1:
        return input * constant(torch.zeros((), dtype=data.dtype, device=data.device))
    noise = torch.empty_like(data).bernoulli_(1 - p).div_(1 - p)
    return input * constant(noise)


def embedding(input, weight, padding_idx=None):
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += weight.shape[0]
    return ops.Embedding.apply(weight, input._data, padding_idx, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if grad_mode._state.autocast_enabled:
        input, weight, bias = autocast_mode.cast("layer_norm", input, weight, bias)
    return ops.NativeLayerNorm.apply(input, tuple(normalized_shape), ops.undefined() if weight is None else weight,
                                     ops.undefined() if bias is None else bias, eps)


def _storage(tensor):
    return None if tensor is None else tensor._data


__all__ = ["cross_entropy", "dropout", "embedding", "gelu", "l1_loss", "layer_norm", "linear", "log_softmax",
           "mse_loss", "nll_loss", "relu", "sigmoid", "softmax", "tanh", "Tensor"]
