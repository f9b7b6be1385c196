"""SGD with momentum, dampening, weight decay and Nesterov momentum: torch's single-tensor update."""
import torch

from ..tensor import Tensor
from .optimizer import Optimizer, edit


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        # foreach, differentiable and fused are torch's implementation choices, shown as torch shows them.
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                                  "foreach": None, "differentiable": False, "fused": None})

    def _update(self, param, grad, group):
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param._data, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = Tensor(grad.detach().clone())
            else:
                edit(buf, torch.Tensor.mul_, momentum)
                edit(buf, torch.Tensor.add_, grad, alpha=1 - group["dampening"])
            grad = grad.add(buf._data, alpha=momentum) if group["nesterov"] else buf._data
        edit(param, torch.Tensor.add_, grad, alpha=-group["lr"])
