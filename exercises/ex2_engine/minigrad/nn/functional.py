"""``minigrad.nn.functional``: losses and linear, built from minigrad ops with torch's node names."""
from .. import ops
from ..tensor import Tensor, matmul


def linear(input, weight, bias=None):
    """As torch: addmm on a batch of rows; other shapes are viewed as rows and back."""
    if bias is None:
        return matmul(input, weight.t())
    if input.dim() == 2:
        return ops.Addmm.apply(bias, input, weight.t())
    rows = ops.Addmm.apply(bias, input.reshape(-1, input.shape[-1]), weight.t())
    return rows.view(*input.shape[:-1], weight.shape[0])


def mse_loss(input, target, reduction="mean"):
    return ops.MseLoss.apply(input, target, reduction)


def l1_loss(input, target, reduction="mean"):
    """torch 2.x decomposes it, so its graph is MeanBackward0 <- AbsBackward0 <- SubBackward0."""
    loss = (input - target).abs()
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def relu(input):
    return input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


__all__ = ["linear", "mse_loss", "l1_loss", "relu", "sigmoid", "tanh", "Tensor"]
