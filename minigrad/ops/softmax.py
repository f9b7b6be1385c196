"""Softmax and log-softmax, with their fused backwards."""
import torch

from ..function import Function


# --- softmax ---------------------------------------------------------------------------------
# Each backward is an op of its own running torch's fused kernel (the same numbers as torch), with
# a backward written in minigrad ops, so that create_graph=True can differentiate it again.

class Softmax(Function):
    node_name = "SoftmaxBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a, dim):
        result = a._data.softmax(dim)
        ctx.save_for_backward(result)
        ctx.dim = dim
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return SoftmaxBackwardData.apply(grad, result, ctx.dim), None


class SoftmaxBackwardData(Function):
    """result * (grad - sum(grad * result)): softmax's backward (torch's _softmax_backward_data)."""

    node_name = "SoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, output, dim):
        ctx.save_for_backward(grad, output)
        ctx.dim = dim
        return torch._softmax_backward_data(grad._data, output._data, dim, output.dtype)

    @staticmethod
    def backward(ctx, g):
        grad, output = ctx.saved_tensors
        need_grad, need_output = ctx.needs_input_grad[:2]
        dim = ctx.dim
        grad_output = None
        if need_output:
            grad_output = (grad * g - (output * grad).sum(dim, keepdim=True) * g
                           - grad * (output * g).sum(dim, keepdim=True))
        return SoftmaxBackwardData.apply(g, output, dim) if need_grad else None, grad_output, None


class LogSoftmax(Function):
    node_name = "LogSoftmaxBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a, dim):
        result = a._data.log_softmax(dim)
        ctx.save_for_backward(result)
        ctx.dim = dim
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return LogSoftmaxBackwardData.apply(grad, result, ctx.dim), None


class LogSoftmaxBackwardData(Function):
    """grad - exp(result) * sum(grad): log_softmax's backward (torch's _log_softmax_backward_data)."""

    node_name = "LogSoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, output, dim):
        ctx.save_for_backward(grad, output)
        ctx.dim = dim
        return torch._log_softmax_backward_data(grad._data, output._data, dim, output.dtype)

    @staticmethod
    def backward(ctx, g):
        grad, output = ctx.saved_tensors
        need_grad, need_output = ctx.needs_input_grad[:2]
        dim = ctx.dim
        return (g - (g * output.exp()).sum(dim, keepdim=True) if need_grad else None,
                -grad.sum(dim, keepdim=True) * output.exp() * g if need_output else None, None)
