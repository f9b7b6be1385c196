"""``minigrad.autograd.graph``: the graph's nodes as torch names them, and saved-tensor hooks — how a
user sees (and changes) what a graph keeps for backward."""
import contextlib

from .. import function, grad_mode
from ..function import Node
from .gradient_edge import GradientEdge, get_gradient_edge
from .multi_grad import register_multi_grad_hook

__all__ = ["GradientEdge", "Node", "disable_saved_tensors_hooks", "get_gradient_edge", "increment_version",
           "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks"]


def increment_version(tensor):
    """Bump the version of ``tensor`` (or of each tensor in an iterable), as an in-place op would: for
    code that edits a tensor's memory where autograd cannot see it (its storage, a custom kernel), so
    that graphs that saved it refuse to use the old values. An inference tensor has no version: it is
    skipped. Tensors before a non-tensor in the iterable are bumped, then torch's error is raised."""
    if isinstance(tensor, function.Tensor):
        tensor = (tensor,)
    try:
        tensors = iter(tensor)
    except TypeError:
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input") from None
    for t in tensors:
        if not isinstance(t, function.Tensor):
            raise RuntimeError("increment_version expects each element of the iterable to be a tensor")
        if t._version_counter is not None:
            t._version_counter.version += 1


class saved_tensors_hooks:
    """While in force, every tensor a node saves is handed to ``pack_hook`` and the node keeps what it
    returns; backward gets the tensor back from ``unpack_hook(packed)``. The innermost hooks apply."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if grad_mode._state.saved_tensors_hooks_disabled is not None:
            raise RuntimeError(grad_mode._state.saved_tensors_hooks_disabled)
        grad_mode._state.saved_tensors_hooks += ((self.pack_hook, self.unpack_hook),)

    def __exit__(self, *exc):
        grad_mode._state.saved_tensors_hooks = grad_mode._state.saved_tensors_hooks[:-1]


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """While in force, entering ``saved_tensors_hooks`` raises RuntimeError(error_message), for a
    feature that can't work with them; entering it while hooks are in force raises the same. The
    innermost message applies; on exit the one before it, if any, is back."""
    state = grad_mode._state
    previous = state.saved_tensors_hooks_disabled
    try:
        state.saved_tensors_hooks_disabled = error_message
        if state.saved_tensors_hooks:
            raise RuntimeError(error_message)
        yield
    finally:
        state.saved_tensors_hooks_disabled = previous


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors wait on the CPU and go back to their device in backward: GPU memory for compute."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            kept = tensor.detach().cpu() if tensor.is_cuda else tensor.detach().clone()
            if pin_memory and tensor.is_cuda:
                kept._data = kept._data.pin_memory()
            return tensor.device, kept

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)
