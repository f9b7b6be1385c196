"""``minigrad.autograd.graph``: the graph's nodes as torch names them, and saved-tensor hooks — how a
user sees (and changes) what a graph keeps for backward."""
import contextlib
import weakref
from collections import defaultdict

from .. import function, grad_mode
from ..function import Node
from .gradient_edge import GradientEdge, get_gradient_edge
from .multi_grad import register_multi_grad_hook

__all__ = ["GradientEdge", "Node", "allow_mutation_on_saved_tensors", "disable_saved_tensors_hooks",
           "get_gradient_edge", "increment_version", "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks"]


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


# allow_mutation_on_saved_tensors, as torch builds it (torch/autograd/graph.py): a pair of saved-tensor
# hooks that keep each saved tensor under a handle, and a step before every in-place edit that clones
# a saved tensor about to be edited, so that backward gets the values it saved. torch identifies a
# saved tensor by (id, data_ptr, version) and the memory an edit touches by (data_ptr, version), which
# a view at the same address shares with its base (and one at an offset does not): so does minigrad.
_allow_mutation_on_saved_tensors_enabled = False


def _get_tid(tensor):
    return id(tensor), tensor._data.data_ptr(), tensor._version


def _get_sid(tensor):
    return tensor._data.data_ptr(), tensor._version


class _Handle:
    """What the graph keeps of a saved tensor: the context maps it to the tensor, or to its clone."""


class _AllowMutationOnSavedContext:
    """What ``allow_mutation_on_saved_tensors`` yields, as torch's: ``cloned`` and ``original`` (the
    tensor under each handle the graph keeps, cloned or not: an entry goes when its graph lets go of
    the handle), ``tid_to_weakhandle`` (the handle of each saved tensor still kept) and ``sid_to_tid``."""

    def __init__(self):
        self.cloned = weakref.WeakKeyDictionary()
        self.original = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle = weakref.WeakValueDictionary()
        self.sid_to_tid = defaultdict(set)

    def clear(self):
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()


ERR_OUTSIDE_CONTEXT = (
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    "in which the graph was originally recorded."  # sic: torch's message has no space there
)


class _swap_with_cloned(saved_tensors_hooks):
    """The hooks: pack keeps the tensor under a handle (the same tensor at the same version, saved
    again, under the same handle); unpack gives its clone if an edit made one, else the tensor."""

    def __init__(self, ctx):
        def pack_hook(tensor):
            tid = _get_tid(tensor)
            ctx.sid_to_tid[_get_sid(tensor)].add(tid)
            handle = ctx.tid_to_weakhandle.get(tid)
            if handle is None:
                handle = ctx.tid_to_weakhandle[tid] = _Handle()
                ctx.original[handle] = tensor
            return handle

        def unpack_hook(handle):
            if not _allow_mutation_on_saved_tensors_enabled:
                raise AssertionError(ERR_OUTSIDE_CONTEXT)
            if handle in ctx.cloned:
                return ctx.cloned[handle]
            if handle not in ctx.original:
                raise AssertionError(ERR_OUTSIDE_CONTEXT)
            return ctx.original[handle]

        super().__init__(pack_hook, unpack_hook)


def _clone_if_saved(ctx, tensor):
    """Before ``tensor``'s memory is edited: clone each saved tensor at that memory and version that
    a graph still keeps (once), so that the graph's handle now gives the clone."""
    for tid in ctx.sid_to_tid.get(_get_sid(tensor), ()):
        handle = ctx.tid_to_weakhandle.get(tid)
        if handle is None or handle in ctx.cloned:  # no graph keeps it any more, or cloned already
            continue
        ctx.cloned[handle] = function.Tensor(ctx.original.pop(handle)._data.clone())


class _CloneArgBeforeMutate:
    """torch's _CloneArgBeforeMutateMode, a dispatch mode that sees every op writing into a tensor.
    minigrad's in-place edits all go through two Tensor methods, ``_mutate`` (an edit autograd does
    not record) and ``_record_inplace`` (one it records): while in force, this swaps them for ones
    that run ``_clone_if_saved`` first, so that ops pay nothing when no such context is in force.
    (The swap holds in every thread, where torch's mode holds in the thread that entered it.)"""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        tensor = function.Tensor
        self.methods = tensor._mutate, tensor._record_inplace
        tensor._mutate, tensor._record_inplace = (self._cloning_first(m) for m in self.methods)

    def __exit__(self, *exc):
        function.Tensor._mutate, function.Tensor._record_inplace = self.methods

    def _cloning_first(self, edit):
        ctx = self.ctx

        def cloning_first(tensor, *args):
            _clone_if_saved(ctx, tensor)
            return edit(tensor, *args)
        return cloning_first


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Tensors saved for backward may be edited in place inside: a saved tensor is cloned before its
    first edit, and backward uses the clone. Forward and backward must both run inside the same
    context. As torch's, a nested one raises, and then leaves the outer one switched off too."""
    global _allow_mutation_on_saved_tensors_enabled
    ctx = _AllowMutationOnSavedContext()
    with _swap_with_cloned(ctx), _CloneArgBeforeMutate(ctx):
        try:
            if _allow_mutation_on_saved_tensors_enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _allow_mutation_on_saved_tensors_enabled = True
            yield ctx
        finally:
            ctx.clear()
            _allow_mutation_on_saved_tensors_enabled = False
