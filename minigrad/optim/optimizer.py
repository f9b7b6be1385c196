"""Optimizer: parameter groups, per-parameter state, zero_grad, as torch.optim.Optimizer.

Updates run with torch's own in-place kernels, in torch's order (the same rounding, so the same
numbers as torch step after step): SGD through minigrad's in-place ops under no_grad, Adam on the
storage; each in-place edit bumps the edited tensor's version, as torch's updates under no_grad do.
"""
from collections import defaultdict

import torch

from .. import grad_mode, user_warnings
from ..tensor import Tensor


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params._data.type()}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def add_param_group(self, param_group):
        params = param_group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        param_group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{torch.typename(param)}")
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        if len({id(p) for p in param_group["params"]}) != len(param_group["params"]):
            user_warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this "
                               "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                               "information", UserWarning, __file__, frames=2)  # at the optimizer's __init__
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in existing for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # BEGIN EXERCISE 6
    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient before the next backward: set it to None (the default), or,
        with ``set_to_none=False``, zero it in place (the same tensor, detached from any graph that made
        it). Parameters without a gradient are left alone."""
        for group in self.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()
    # END EXERCISE 6

    def step(self, closure=None):
        """Run ``closure`` (with grad mode on) for the loss, then update every parameter that has a gradient,
        with grad mode off (as torch's step): the updates edit the parameters in place and record nothing."""
        loss = None
        if closure is not None:
            with grad_mode.enable_grad():
                loss = closure()
        with grad_mode.no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group):
        """One group's step: each parameter that has a gradient, one after the other (torch's
        single-tensor implementation)."""
        for param in group["params"]:
            if param.grad is not None:
                self._update(param, param.grad, group)

    def _update(self, param, grad, group):
        """One parameter's step, ``grad`` its gradient (``param.grad``). Its entry in ``self.state`` is made
        when first looked up: only optimizers that keep state should (as in torch, plain SGD leaves it empty)."""
        raise NotImplementedError

    def __repr__(self):
        text = type(self).__name__ + " ("
        for index, group in enumerate(self.param_groups):
            text += f"\nParameter Group {index}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def edit(tensor, kernel, *args, **kwargs):
    """``kernel(storage, *args, **kwargs)`` in place on a minigrad tensor: its version goes up by one."""
    tensor._mutate(lambda data: kernel(data, *args, **kwargs))


def edit_all(tensors, kernel, *args, **kwargs):
    """``kernel(storages, *args, **kwargs)``, one of torch's foreach kernels, in place on minigrad
    tensors: each one's version goes up as its storage's does. Not every foreach kernel bumps it
    (on CUDA, torch 2.11's ``_foreach_lerp_`` leaves it), so the storages say how much."""
    storages = [tensor._data for tensor in tensors]
    before = [storage._version for storage in storages]
    kernel(storages, *args, **kwargs)
    for tensor, storage, version in zip(tensors, storages, before):
        for _ in range(storage._version - version):
            tensor._mutate(lambda data: None)
