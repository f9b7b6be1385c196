"""Module, Parameter, Linear and the losses, with torch's names and default initialisation."""
import math

import torch

from .. import grad_mode
from ..tensor import Tensor
from . import functional as F


class Parameter(Tensor):
    """A leaf tensor that a Module registers and that requires grad; it shares the given tensor's memory."""

    def __init__(self, data=None, requires_grad=True):
        storage = torch.empty(0) if data is None else data._data if isinstance(data, Tensor) else data
        super().__init__(storage, requires_grad=requires_grad)
        if isinstance(data, Tensor):
            self._version_counter = data._version_counter

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """Holds parameters and submodules in the order they are assigned; ``module(x)`` runs forward."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif name in self._parameters and value is None:
            self._parameters[name] = None
        object.__setattr__(self, name, value)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def named_parameters(self, prefix=""):
        for name, parameter in self._parameters.items():
            if parameter is not None:
                yield prefix + name, parameter
        for name, module in self._modules.items():
            yield from module.named_parameters(prefix + name + ".")

    def parameters(self):
        for _, parameter in self.named_parameters():
            yield parameter

    def children(self):
        return iter(self._modules.values())

    def zero_grad(self, set_to_none=True):
        for parameter in self.parameters():
            if parameter._grad is None:
                continue
            if set_to_none:
                parameter._grad = None
            else:
                with grad_mode.no_grad():
                    parameter._grad.zero_()

    def train(self, mode=True):
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def extra_repr(self):
        return ""

    def __repr__(self):
        children = "".join(f"\n  ({name}): {module!r}" for name, module in self._modules.items())
        return f"{type(self).__name__}({self.extra_repr()}{children}{chr(10) if children else ''})"


class Linear(Module):
    """y = x @ weight.T + bias, initialised as torch does (same draws from the same seed)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        self.bias = Parameter(torch.empty(out_features, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """torch's kaiming_uniform_(a=sqrt(5)) comes down to U(-1/sqrt(fan_in), 1/sqrt(fan_in)), for the bias too."""
        bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
        with grad_mode.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)
