"""Adam (and AMSGrad): torch's single-tensor update, with its bias corrections computed in Python floats."""
import torch

from ..tensor import Tensor
from .optimizer import Optimizer, edit


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        # foreach, capturable, differentiable, fused: torch's implementation choices, shown as torch shows them.
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad, "maximize": maximize, "foreach": None, "capturable": False,
                                  "differentiable": False, "fused": None, "decoupled_weight_decay": False})

    def _update(self, param, grad, group):
        grad = grad._data
        state = self.state[param]
        if not state:
            state["step"] = Tensor(torch.tensor(0.0))
            state["exp_avg"] = Tensor(torch.zeros_like(param._data, memory_format=torch.preserve_format))
            state["exp_avg_sq"] = Tensor(torch.zeros_like(param._data, memory_format=torch.preserve_format))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = Tensor(torch.zeros_like(param._data, memory_format=torch.preserve_format))
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        edit(state["step"], torch.Tensor.add_, 1)
        if group["weight_decay"] != 0:
            grad = grad.add(param._data, alpha=group["weight_decay"])
        edit(state["exp_avg"], torch.Tensor.lerp_, grad, 1 - beta1)
        edit(state["exp_avg_sq"], torch.Tensor.mul_, beta2)
        edit(state["exp_avg_sq"], torch.Tensor.addcmul_, grad, grad, value=1 - beta2)
        step = state["step"].item()
        step_size = group["lr"] / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        second_moment = state["exp_avg_sq"]
        if group["amsgrad"]:
            edit(state["max_exp_avg_sq"], torch.Tensor.copy_, torch.maximum(state["max_exp_avg_sq"]._data,
                                                                           second_moment._data))
            second_moment = state["max_exp_avg_sq"]
        denom = (second_moment._data.sqrt() / bias_correction2_sqrt).add_(group["eps"])
        edit(param, torch.Tensor.addcdiv_, state["exp_avg"]._data, denom, value=-step_size)
