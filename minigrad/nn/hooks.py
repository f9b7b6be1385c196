"""A module's backward hooks, as torch runs them (``BackwardHook``, torch/utils/hooks.py).

``module(*args)`` on a module with full backward hooks (or pre-hooks) passes its tensor inputs
through ``BackwardHookFunction``, an identity custom Function, before forward, and its tensor
outputs through another after: two ``BackwardHookFunctionBackward`` nodes bracket the module's
graph. In backward, a hook on the outer node collects the gradients of the outputs (and runs the
pre-hooks, which may replace them); a hook on the inner node, which runs once every gradient of
the inputs is known, calls the user's hooks with both, and may replace the inputs' gradients. As in
torch, forward sees a view of each tensor it is given, and the caller a view of each it returns, so
changing either in place is refused (the custom Function's view check).

``register_backward_hook``'s hooks (torch's deprecated kind, which a module may not mix with full
ones) are post hooks of the node of the module's first output, with torch's warnings where that
node's gradients are not the module's.

``Module.__call__`` comes here only for a module that has hooks: one without pays one check.
"""
import functools
import warnings
import weakref

from .. import grad_mode
from ..function import Function
from ..tensor import Tensor

HOOK_DOCS = "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook"
USE_FULL = "Please use register_full_backward_hook to get the documented behavior."
ERR_BOTH_KINDS = ("Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only "
                  "one of them.")


class BackwardHookFunction(Function):
    """Identity on its tensors: its node is where the module's hooks attach. An input that does not
    require grad stays without one."""

    python_in_torch = True

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


class BackwardHook:
    """One call's hooks: the gradients of its outputs, kept from the outer node until the inner one
    runs, and where the tensors are among the arguments (the hooks see None for the others)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module, self.user_hooks, self.user_pre_hooks = module, user_hooks, user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = self.n_inputs = -1
        self.output_tensors_index = self.input_tensors_index = None

    def setup_input_hook(self, args):
        """The arguments forward gets: each tensor through the inner node, which calls the user's hooks."""
        result, self.input_tensors_index = self._apply_on_tensors(
            lambda grad_fn: grad_fn.register_hook(self._input_hook), args)
        self.n_inputs = len(args)
        return result

    def setup_output_hook(self, result):
        """What the caller gets: each tensor through the outer node, which collects grad_output."""
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        wrapped, self.output_tensors_index = self._apply_on_tensors(
            lambda grad_fn: grad_fn.register_hook(self._output_hook), args)
        self.n_outputs = len(args)
        return wrapped if is_tuple else wrapped[0]

    def _apply_on_tensors(self, register, args):
        """``args`` with its tensors through one BackwardHookFunction, whose node gets ``register``ed,
        and the tensors' positions; ``args`` as it is (positions None) when nothing will need a gradient."""
        positions = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        tensors = [args[i] for i in positions]
        if not (any(t.requires_grad for t in tensors) and grad_mode.is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        register(next(t.grad_fn for t in new_tensors if t.grad_fn is not None))
        values = list(args)
        for i, tensor in zip(positions, new_tensors):
            values[i] = tensor
        return (tuple(values) if type(args) is tuple else type(args)(*values)), positions

    def _pack_with_none(self, positions, values, size):
        packed = [None] * size
        for i, value in zip(positions, values):
            packed[i] = value
        return tuple(packed)

    def _input_hook(self, grad_input, _):
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing through the outputs (double backward)
            return None
        result = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, result, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(result):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(result)}")
            result = out
        self.grad_outputs = None  # kept no longer: with create_graph it would hold the graph in a cycle
        return tuple(result[i] for i in self.input_tensors_index)

    _input_hook.__name__ = "hook"  # as torch's errors name it (its BackwardHook's inner function)

    def _output_hook(self, _, grad_output):
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            replaced = pre_hook(self.module, self.grad_outputs)
            if replaced is None:
                continue
            if len(replaced) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(replaced)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = replaced
        grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            # no input requires grad: no inner node will run, the user's hooks run here
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          f"since no inputs require gradients. See {HOOK_DOCS} for more details.", stacklevel=2)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, grad_inputs, self.grad_outputs)
                if out is not None and not (isinstance(out, tuple) and all(g is None for g in out)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_tensors_index)

    _output_hook.__name__ = "hook"


def call_with_hooks(module, *args, **kwargs):
    """``module(*args, **kwargs)`` for a module with backward hooks: torch's ``_call_impl``, its
    backward-hook part (the hooks as they are at the call)."""
    full = module._is_full_backward_hook
    full_hooks = list(module._backward_hooks.values()) if full else []
    pre_hooks = list(module._backward_pre_hooks.values())
    backward_hook = None
    if full_hooks or pre_hooks:
        backward_hook = BackwardHook(module, full_hooks, pre_hooks)
        args = backward_hook.setup_input_hook(args)
    result = module.forward(*args, **kwargs)
    if backward_hook is not None:
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(result)}", stacklevel=2)
        result = backward_hook.setup_output_hook(result)
    if full is False and module._backward_hooks:
        _register_on_first_output(module, list(module._backward_hooks.values()), args, result)
    return result


def _register_on_first_output(module, user_hooks, args, result):
    """``register_backward_hook``'s hooks: post hooks of the node of the first tensor of ``result``."""
    first = result
    while not isinstance(first, Tensor):
        first = next(v for v in first.values() if isinstance(v, Tensor)) if isinstance(first, dict) else first[0]
    grad_fn = first.grad_fn
    if grad_fn is None:
        return
    module_ref = weakref.ref(module)  # the graph does not keep the module alive
    for hook in user_hooks:
        grad_fn.register_hook(functools.partial(_call_with_module, module_ref, hook))
    warning = _non_full_warning(args, result, grad_fn)
    if warning:
        warnings.warn(warning, FutureWarning, stacklevel=3)


def _call_with_module(module_ref, hook, grad_input, grad_output):
    module = module_ref()
    if module is None:
        raise RuntimeError("You are trying to call the hook of a dead Module!")
    return hook(module, grad_input, grad_output)


def _non_full_warning(inputs, result, grad_fn):
    """Why the node's gradients may not be the module's (torch's ``_maybe_warn_non_full_backward_hook``)."""
    outputs = (result,) if isinstance(result, Tensor) else result
    if not (isinstance(outputs, tuple) and all(isinstance(r, Tensor) for r in outputs)):
        return ("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                "Tensors is deprecated and will be removed in future versions. This hook will be missing some of "
                f"the grad_output. {USE_FULL}")
    if not all(isinstance(i, Tensor) for i in inputs):
        return ("Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple "
                "of Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                f"of the grad_input. {USE_FULL}")
    output_nodes = {r.grad_fn for r in outputs if r.grad_fn is not None}
    if not output_nodes or (len(output_nodes) == 1 and grad_fn not in output_nodes):
        return ("Using a non-full backward hook when outputs are nested in python data structure is deprecated and "
                "will be removed in future versions. This hook will be missing some grad_output.")
    if len(output_nodes) > 1:
        return ("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                "deprecated and will be removed in future versions. This hook will be missing some grad_output. "
                f"{USE_FULL}")
    if {i.grad_fn for i in inputs if i.grad_fn is not None} != {n for n, _ in grad_fn.next_functions}:
        return ("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated "
                f"and will be removed in future versions. This hook will be missing some grad_input. {USE_FULL}")
    return None
