"""Module and Parameter: a tree of modules holding parameters and buffers, walked, saved and moved as
torch does."""
import itertools
from collections import OrderedDict, namedtuple

import torch

from .. import grad_mode
from ..tensor import Tensor
from ..tensor_ops import to_arguments
from ..utils.hooks import RemovableHandle
from . import hooks

_hook_ids = itertools.count()
"""The keys of modules' hooks in their dicts (torch's ``RemovableHandle.next_id``)."""


class Parameter(Tensor):
    """A leaf tensor that a Module registers and that requires grad; it shares the given tensor's memory."""

    def __init__(self, data=None, requires_grad=True):
        storage = torch.empty(0) if data is None else data._data if isinstance(data, Tensor) else data
        super().__init__(storage, requires_grad=requires_grad)
        if isinstance(data, Tensor):
            self._version_counter = data._version_counter

    def __deepcopy__(self, memo):
        """As torch's Parameter: a new parameter on a copy of the values, with requires_grad, and nothing
        else (no .grad, no hooks, no attributes)."""
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._data.clone(memory_format=torch.preserve_format), self.requires_grad)
        return memo[id(self)]

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it could not match (none, when strict)."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class Module:
    """Holds parameters and submodules in the order they are assigned; ``module(x)`` runs forward."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_is_full_backward_hook", None)

    def __setattr__(self, name, value):
        if isinstance(value, (Parameter, Module)):
            vars(self).pop(name, None)  # a plain attribute becomes a parameter or submodule, as in torch
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{torch.typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            self._buffers[name] = value
            object.__setattr__(self, name, value)
        else:
            if name in self._parameters and value is not None:
                raise TypeError(f"cannot assign '{torch.typename(_storage(value))}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            if name in self._parameters:
                self._parameters[name] = None
            object.__setattr__(self, name, value)

    def _check_name(self, name, kind, table):
        """Refuse, as torch does, a name that is not a plain new one: a ``kind`` may not replace an
        attribute (a method, ``__class__``) that is not already one (in ``self.<table>``). So registering writes
        only what it registers, on a module (a method called unbound takes any object as ``self``)."""
        if not isinstance(self, Module):
            raise TypeError(f"register a {kind} on a Module, not on a {type(self).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {torch.typename(name)}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\"")
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")
        if hasattr(self, name) and name not in getattr(self, table):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        Module._check_name(self, name, "parameter", "_parameters")
        self._modules.pop(name, None)
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor the module keeps that is not a parameter (running statistics, a codebook): moved by
        ``to()``, saved by ``state_dict`` when ``persistent``, never yielded by ``parameters()``."""
        Module._check_name(self, name, "buffer", "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{torch.typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name, module):
        Module._check_name(self, name, "module", "_modules")
        self._parameters.pop(name, None)
        self._modules[name] = module
        object.__setattr__(self, name, module)

    def __call__(self, *args, **kwargs):
        """``forward``, and the backward hooks around it where the module has some (torch's ``_call_impl``)."""
        if self._backward_hooks or self._backward_pre_hooks:
            return hooks.call_with_hooks(self, *args, **kwargs)
        return self.forward(*args, **kwargs)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs once the gradients of the module's positional
        inputs are known (of its outputs, where no input requires grad), and may return new grad_input
        (``minigrad.nn.hooks``)."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(hooks.ERR_BOTH_KINDS)
        object.__setattr__(self, "_is_full_backward_hook", True)
        return self._add_backward_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook):
        """torch's deprecated form: ``hook(module, grad_input, grad_output)`` as a post hook of the node
        of the module's first output, whose inputs and outputs need not be the module's (torch warns
        where it sees so)."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(hooks.ERR_BOTH_KINDS)
        object.__setattr__(self, "_is_full_backward_hook", False)
        return self._add_backward_hook(self._backward_hooks, hook, False)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs once the gradients of the module's outputs are known, and
        may return new grad_output."""
        return self._add_backward_hook(self._backward_pre_hooks, hook, prepend)

    def _add_backward_hook(self, table, hook, prepend):
        """Keep ``hook`` in ``table`` (first, with ``prepend``): the module's calls run it from now on."""
        key = next(_hook_ids)
        table[key] = hook
        if prepend:
            table.move_to_end(key, last=False)
        return RemovableHandle(table, key)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    # --- walking the tree --------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """This module, then each submodule depth-first, each once (as torch, unless remove_duplicate=False)."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Every registered parameter, whether it requires grad or not, each once (a shared one under its
        first name), as torch yields them."""
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        memo = set()
        for module_prefix, module in modules:
            for name, parameter in module._parameters.items():
                if parameter is None or parameter in memo:
                    continue
                if remove_duplicate:
                    memo.add(parameter)
                yield module_prefix + ("." if module_prefix else "") + name, parameter

    def parameters(self, recurse=True):
        for _, parameter in self.named_parameters(recurse=recurse):
            yield parameter

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        memo = set()
        for module_prefix, module in modules:
            for name, buffer in module._buffers.items():
                if buffer is None or buffer in memo:
                    continue
                if remove_duplicate:
                    memo.add(buffer)
                yield module_prefix + ("." if module_prefix else "") + name, buffer

    def buffers(self, recurse=True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # --- modes and gradients -----------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for parameter in self.parameters():
            parameter.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for parameter in self.parameters():
            grad = parameter._grad
            if grad is None:
                continue
            if set_to_none:
                parameter._grad = None
            else:
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    # --- devices and dtypes ------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """Move (and, for floating point, cast) every parameter and its gradient; the Parameter objects
        stay the same, so optimizers built before still hold them."""
        dtype, device = to_arguments(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(data):
            return data.to(device=device, dtype=dtype if data.is_floating_point() else None)
        return self._apply(convert)

    def cuda(self, device=None):
        return self._apply(lambda data: data.cuda(device))

    def cpu(self):
        return self._apply(lambda data: data.cpu())

    def float(self):
        return self._apply(lambda data: data.float() if data.is_floating_point() else data)

    def double(self):
        return self._apply(lambda data: data.double() if data.is_floating_point() else data)

    def _apply(self, convert):
        """Replace each parameter's (and gradient's) storage by ``convert(storage)``, as torch's
        ``param.data = ...``: the version counter does not move; each buffer by a converted one."""
        for module in self.modules():
            for name, buffer in module._buffers.items():
                converted = None if buffer is None else convert(buffer._data)
                if converted is not None and converted is not buffer._data:
                    module._buffers[name] = Tensor(converted)
                    object.__setattr__(module, name, module._buffers[name])
            for parameter in module._parameters.values():
                if parameter is None:
                    continue
                parameter._data = convert(parameter._data)
                if parameter._grad is not None:
                    parameter._grad._data = convert(parameter._grad._data)
        return self

    # --- saving and loading ------------------------------------------------------------------
    def state_dict(self, *, prefix="", keep_vars=False):
        """Parameters by dotted name, each module's own first, shared ones under every name (torch's keys)."""
        destination = OrderedDict()
        for name, parameter in self._parameters.items():
            if parameter is not None:
                destination[prefix + name] = parameter if keep_vars else parameter.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                destination.update(module.state_dict(prefix=prefix + name + ".", keep_vars=keep_vars))
        return destination

    def load_state_dict(self, state_dict, strict=True):
        """Copy the values in (under no_grad: the parameters' versions go up); torch tensors are taken too,
        as from a checkpoint real torch saved. With ``strict``, missing and unexpected keys are errors,
        reported as torch reports them; shape mismatches always are."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        for prefix, module in self.named_modules(remove_duplicate=False):
            module._load_own(state_dict, prefix + "." if prefix else "", missing, unexpected, errors)
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__,
                                                                                     "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_own(self, state_dict, prefix, missing, unexpected, errors):
        """This module's part of load_state_dict (torch's _load_from_state_dict)."""
        own = {name: p for name, p in self._parameters.items() if p is not None}
        own.update({name: b for name, b in self._buffers.items()
                    if b is not None and name not in self._non_persistent_buffers})
        for name, parameter in own.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if isinstance(value, torch.Tensor):
                value = Tensor(value)
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(value)}")
                continue
            if value.shape != parameter.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                              f"the shape in current model is {parameter.shape}.")
                continue
            with grad_mode.no_grad():
                parameter.copy_(value)
        for key in state_dict:
            if key.startswith(prefix):
                first = key[len(prefix):].split(".", 1)
                if (first[0] not in self._modules) if len(first) > 1 else (first[0] not in own):
                    unexpected.append(key)

    # --- printing ----------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        """torch's layout: the extra_repr, then each child indented by two."""
        extra_lines = self.extra_repr().split("\n") if self.extra_repr() else []
        child_lines = [f"({name}): {_add_indent(repr(module), 2)}" for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = type(self).__name__ + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def _add_indent(text, spaces):
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [" " * spaces + line if line.strip() else "" for line in rest])


def _storage(value):
    return value._data if isinstance(value, Tensor) else value
