"""Adam (and AMSGrad), with its bias corrections computed in Python floats, as torch does by default:
its single-tensor update, and on CUDA its foreach update (torch's ``_multi_tensor_adam``)."""
from collections import defaultdict

import torch

from ..tensor import Tensor
from .optimizer import Optimizer, edit, edit_all


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False):
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
        # capturable, differentiable, fused: torch's other implementation choices, shown as torch shows them.
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach, "capturable": False,
                                  "differentiable": False, "fused": None, "decoupled_weight_decay": False})

    def _state(self, param, group):
        state = self.state[param]
        if not state:
            state["step"] = Tensor(torch.tensor(0.0))
            state["exp_avg"] = Tensor(torch.zeros_like(param._data, memory_format=torch.preserve_format))
            state["exp_avg_sq"] = Tensor(torch.zeros_like(param._data, memory_format=torch.preserve_format))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = Tensor(torch.zeros_like(param._data, memory_format=torch.preserve_format))
        return state

    def _update_group(self, group):
        """The foreach update if the group says ``foreach=True``, or by torch's default when it says
        None (``_default_to_fused_or_foreach``) if every parameter with a gradient is on CUDA; else
        the single-tensor one. They round differently, and bump the state's versions differently."""
        params = [param for param in group["params"] if param.grad is not None]
        foreach = group["foreach"]
        if foreach is None:
            foreach = all(param._data.device.type == "cuda" for param in params)
        if params and foreach:
            self._foreach_update(params, group)
        else:
            super()._update_group(group)

    def _foreach_update(self, params, group):
        """torch's ``_multi_tensor_adam``: each step of the update as one kernel over the parameters
        of one device and dtype."""
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        alike = defaultdict(list)
        for param in params:
            alike[param._data.device, param._data.dtype].append(param)
        for same in alike.values():
            states = [self._state(param, group) for param in same]
            grads = [param.grad._data for param in same]
            if group["maximize"]:
                grads = torch._foreach_neg(grads)
            steps = [state["step"] for state in states]
            edit_all(steps, torch._foreach_add_, torch.tensor(1.0), alpha=1.0)
            if weight_decay != 0:
                if group["maximize"]:
                    torch._foreach_add_(grads, [param._data for param in same], alpha=weight_decay)
                else:
                    grads = torch._foreach_add(grads, [param._data for param in same], alpha=weight_decay)
            exp_avgs = [state["exp_avg"] for state in states]
            exp_avg_sqs = [state["exp_avg_sq"] for state in states]
            edit_all(exp_avgs, torch._foreach_lerp_, grads, 1 - beta1)
            edit_all(exp_avg_sqs, torch._foreach_mul_, beta2)
            edit_all(exp_avg_sqs, torch._foreach_addcmul_, grads, grads, 1 - beta2)
            step_size = [(lr / (1 - beta1 ** step.item())) * -1 for step in steps]
            bias_correction2_sqrt = [(1 - beta2 ** step.item()) ** 0.5 for step in steps]
            second_moments = exp_avg_sqs
            if group["amsgrad"]:
                second_moments = [state["max_exp_avg_sq"] for state in states]
                edit_all(second_moments, torch._foreach_maximum_, [t._data for t in exp_avg_sqs])
            denom = torch._foreach_sqrt([t._data for t in second_moments])
            torch._foreach_div_(denom, bias_correction2_sqrt)
            torch._foreach_add_(denom, eps)
            edit_all(same, torch._foreach_addcdiv_, [t._data for t in exp_avgs], denom, step_size)

    def _update(self, param, grad, group):
        grad = grad._data
        state = self._state(param, group)
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
