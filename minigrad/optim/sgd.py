"""SGD with momentum, dampening, weight decay and Nesterov momentum: torch's single-tensor update."""
from .optimizer import Optimizer


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

    # BEGIN EXERCISE 6
    def _update(self, param, grad, group):
        """One parameter's step (grad mode is off): the gradient (negated to maximize), plus weight decay
        times the parameter; with momentum, the buffer in ``self.state[param]`` — a copy of the first
        gradient, then ``momentum * buffer + (1 - dampening) * gradient``, edited in place — is the
        direction (Nesterov: the gradient plus ``momentum * buffer``); the parameter moves by ``-lr`` times
        the direction, in place (the model holds this very tensor)."""
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.clone().detach()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        param.add_(grad, alpha=-group["lr"])
    # END EXERCISE 6
