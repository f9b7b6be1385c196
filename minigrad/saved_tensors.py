"""What a node keeps of the tensors it saves for backward (SavedTensor, or PackedTensor under
saved-tensor hooks), the marker of a freed entry, and the errors reading them raises."""
import re
import weakref

import torch

from . import grad_mode, releases

ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)
ERR_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
    "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
    "normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
)

Tensor = AccumulateGrad = None
"""``minigrad.tensor.Tensor`` and ``minigrad.function.AccumulateGrad``, which this module can't import
(minigrad.function imports it): minigrad.function binds them here once both exist."""


class SavedTensor:
    """A tensor saved for backward, with the version it had then (torch's SavedVariable).

    An output of the node itself is saved without its grad_fn, to avoid a cycle node -> saved ->
    output -> node; ``unpack`` rebuilds it with ``grad_fn`` pointing back at the node.
    """

    __slots__ = ("tensor", "data", "version_counter", "saved_version", "requires_grad", "output_nr", "was_leaf",
                 "__weakref__")

    def __init__(self, tensor, is_output):
        self.version_counter = counter = tensor._version_counter
        self.saved_version = counter.version
        if is_output:
            self.tensor = None
            self.data = tensor._data
            self.requires_grad = tensor._requires_grad
            self.output_nr = tensor._output_nr
        else:
            self.tensor = tensor
            self.was_leaf = tensor._node is None

    # BEGIN EXERCISE 4
    def unpack(self, node):
        """The saved tensor, for ``node``'s backward or its ``_saved_*`` attributes: refused
        (``_raise_modified``) when its version moved since it was saved, that is, when it was edited
        in place; else the tensor itself, or a saved output of ``node`` rebuilt (``_output``)."""
        # BEGIN NEW IN EXERCISE 4
        if self.version_counter.version != self.saved_version:
            self._raise_modified(node)
        # END NEW IN EXERCISE 4
        return self.tensor if self.tensor is not None else self._output(node)
    # END EXERCISE 4

    def _output(self, node):
        """A saved output of ``node``, with its grad_fn pointing back at the node again. (Tensor's
        arguments by position: a call with keywords costs more, and every backward of tanh, exp... makes one.)"""
        out = Tensor(self.data, False, node if self.requires_grad else None, self.output_nr)
        out._version_counter = self.version_counter
        return out

    def storages(self):
        """The memory this entry keeps alive (for ``minigrad.memory``): none for a wrapped number."""
        if self.tensor is None:
            return (self.data,)
        return () if self.tensor._is_wrapped_number else (self.tensor._data,)

    def _detached_in_place(self):
        """Whether the saved input had a grad_fn then and has none now (``detach_()`` took it)."""
        return self.tensor is not None and not self.was_leaf and self.tensor._node is None

    def _with_hooks(self, node, hooks):
        """This entry packed by ``hooks`` (``register_hooks``): pack gets it detached, as in torch."""
        tensor = self.tensor if self.tensor is not None else self._output(node)
        return PackedTensor(tensor, self.tensor is None, hooks, detached=True)

    # BEGIN EXERCISE 4
    def _raise_modified(self, node):
        """torch's error for a saved tensor edited in place (``ERR_MODIFIED``), in torch's words: the
        tensor as torch describes it, with the op that produced it as it is now (a leaf has none; a
        saved output of ``node`` was produced by ``node``), its version now, the version saved."""
        if self.tensor is None:
            data, producer, output_nr = self.data, node, self.output_nr
        else:
            data, producer, output_nr = self.tensor._data, self.tensor.grad_fn, self.tensor._output_nr
        described = tensor_description(data)
        if producer is not None:
            described += f", which is output {output_nr} of {op_name(producer)},"
        raise RuntimeError(ERR_MODIFIED.format(tensor=described, version=self.version_counter.version,
                                               saved=self.saved_version, hint=anomaly_hint()))
    # END EXERCISE 4


ERR_MODIFIED = (
    "one of the variables needed for gradient computation has been modified by an inplace operation: {tensor} is "
    "at version {version}; expected version {saved} instead. {hint}"
)


def tensor_description(data):
    """A tensor as torch's messages show it: ``[torch.FloatTensor [2, 3]]`` (``torch.cuda.`` on CUDA)."""
    kind = f"torch.{'cuda.' if data.is_cuda else ''}{_TYPE_NAMES.get(data.dtype, str(data.dtype))}"
    return f"[{kind} [{', '.join(map(str, data.shape))}]]"


def op_name(node):
    """A node as torch's version error names it: "ExpBackward0" -> "Exp", "PowBackward1" -> "Pow1",
    "...CopyBackwards" whole (before torch 2.13: its name, whole)."""
    if not releases.SHORT_NODE_NAMES_IN_ERRORS:
        return node.name()
    return re.sub(r"Backward(\d*)$", lambda m: "" if m[1] in ("", "0") else m[1], node.name())


def anomaly_hint():
    """The last sentences of torch's version error, which depend on anomaly detection."""
    if grad_mode.anomaly.enabled:
        return ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    return ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
            "with torch.autograd.set_detect_anomaly(True, check_nan=False).")


class PackedTensor:
    """A tensor saved while ``autograd.graph.saved_tensors_hooks`` were in force: the graph keeps
    only what ``pack(tensor)`` returned, and backward asks ``unpack`` for a tensor again, which gets
    the saved tensor's place in the graph back (its grad_fn, or its leaf's AccumulateGrad), as in
    torch. There is no version check: what pack kept is the hooks' business, a copy or a file."""

    __slots__ = ("packed", "unpack_hook", "is_output", "requires_grad", "edge", "__weakref__")

    def __init__(self, tensor, is_output, hooks, detached=False):
        pack, self.unpack_hook = hooks
        self.is_output, self.requires_grad = is_output, tensor.requires_grad
        self.edge = (None, tensor._output_nr) if is_output or not tensor._requires_grad else tensor._gradient_edge()
        self.packed = _pack(pack, tensor.detach() if detached else tensor)

    def unpack(self, node):
        """What unpack gives back, as a tensor with the saved one's place in the graph; one that needs
        no gradient (and had none) comes back as the very object unpack gave, as in torch."""
        tensor = self.unpack_hook(self.packed)
        if not isinstance(tensor, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(tensor).__name__}")
        if not self.requires_grad and not tensor.requires_grad:
            return tensor
        grad_fn, output_nr = (node if self.is_output else self.edge[0]), self.edge[1]
        out = Tensor(tensor._data, requires_grad=self.requires_grad)
        if isinstance(grad_fn, AccumulateGrad):
            out._grad_accumulator = weakref.ref(grad_fn)
        elif grad_fn is not None and self.requires_grad:
            out._node, out._output_nr = grad_fn, output_nr
        out._version_counter = tensor._version_counter
        return out

    def storages(self):
        """The tensors among what pack kept (a tensor, or a tuple holding some, as ``save_on_cpu``'s)."""
        packed = self.packed if isinstance(self.packed, (tuple, list)) else (self.packed,)
        return tuple(p._data if isinstance(p, Tensor) else p for p in packed if isinstance(p, (Tensor, torch.Tensor)))


def saved_output_is(node, tensor, version):
    """``node`` ran in place on ``tensor`` (``relu_``): what it saved of its output is ``tensor`` at
    ``version``, the version the edit gives it, as torch saves it (the output is the edited tensor),
    so that a later edit of ``tensor`` fails the version check."""
    for saved in node._saved:
        if isinstance(saved, SavedTensor) and saved.tensor is None:
            saved.data, saved.version_counter, saved.saved_version = tensor._data, tensor._version_counter, version
            if _ledger is not None:
                _ledger.moved(saved)


def _pack(pack, tensor):
    """``pack(tensor)`` with grad mode off, as torch calls it; refused if it edited ``tensor`` in place
    (its version moved), which would change what the graph computes with."""
    version = tensor._version_counter.version
    with grad_mode.no_grad():
        packed = pack(tensor)
    if tensor._version_counter.version != version:
        raise RuntimeError(ERR_PACK_INPLACE)
    return packed


ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
    f"{'cannot' if releases.PACK_HOOK_ERROR_SAYS_CANNOT else 'can not'} be modified by in-place operations as "
    "this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations "
    "on the input to a pack hook."
)
ERR_DETACHED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, "
    "please use out-of-place `.detach()` instead"
)


detached_in_place = False
"""Whether ``detach_()`` ever took a tensor out of a graph: until then no backward need look for a
saved input that did (``check_not_detached``)."""


def check_not_detached(node):
    """torch's error when an op's backward finds one of the inputs it saved detached in place since:
    torch's generated nodes unpack their saved inputs without knowing the node, so nothing stands in
    for the lost grad_fn. A custom Function's ``saved_tensors`` and the ``_saved_*`` attributes
    still give the tensor, as in torch."""
    for saved in node._saved:
        if isinstance(saved, SavedTensor) and saved._detached_in_place():
            raise RuntimeError(ERR_DETACHED)


class RawSaved:
    """``grad_fn._raw_saved_<name>`` (torch's ``torch.autograd.SavedTensor``): one entry a node saved,
    read on access, never stored: ``data`` (what a pack hook returned, else the tensor saved; None
    once freed), ``unpack_hook``, and ``register_hooks(pack_hook, unpack_hook)``, which sets hooks for
    that entry alone, as ``autograd.graph.saved_tensors_hooks`` does for every entry saved while it
    is in force. Only a node makes one (``_of``): torch refuses one made from Python."""

    def __init__(self):
        raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")

    @classmethod
    def _of(cls, node, index):
        raw = object.__new__(cls)
        raw._node, raw._index = node, index
        return raw

    @property
    def data(self):
        """A saved output comes without its grad_fn (torch keeps only its data, on its version counter)."""
        saved = self._node._saved[self._index]
        if isinstance(saved, PackedTensor):
            return saved.packed
        if not isinstance(saved, SavedTensor):
            return None
        if saved.tensor is not None:
            return _as_torch_keeps_it(saved.tensor)
        data = Tensor(saved.data)
        data._version_counter = saved.version_counter
        return data

    @property
    def unpack_hook(self):
        saved = self._node._saved[self._index]
        return saved.unpack_hook if isinstance(saved, PackedTensor) else None

    def register_hooks(self, *hooks, **kwargs):
        if len(hooks) != 2 or kwargs or not all(map(callable, hooks)):
            raise TypeError(_incompatible_arguments(self, hooks, kwargs))
        node, index = self._node, self._index
        saved = node._saved[index]
        if isinstance(saved, PackedTensor):
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: "
                               "only one pair of hooks is allowed at a time.")
        if saved is _FREED:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you "
                "need to backward through the graph a second time or if you need to access saved variables after "
                "calling backward.")
        if saved is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        packed = saved._with_hooks(node, hooks)
        node._saved = node._saved[:index] + (packed,) + node._saved[index + 1:]
        if _ledger is not None:
            _ledger.add(packed)


def _incompatible_arguments(raw, hooks, kwargs):
    """pybind11's refusal of ``register_hooks`` called with other than two callables, as torch raises it."""
    invoked = ", ".join(map(repr, (raw, *hooks)))
    if kwargs:
        invoked += "; kwargs: " + ", ".join(f"{name}={value!r}" for name, value in kwargs.items())
    return ("register_hooks(): incompatible function arguments. The following argument types are supported:\n"
            "    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc.Callable, arg1: "
            "collections.abc.Callable) -> None\n\nInvoked with: " + invoked)


def raw_entries(node):
    """A custom Function node's ``_raw_saved_tensors``: a RawSaved per entry; refused once freed."""
    if _FREED in node._saved:
        raise RuntimeError(ERR_BACKWARD_TWICE)
    return tuple(RawSaved._of(node, index) for index in range(len(node._saved)))


def attributes(names):
    """A node class's ``_saved_<name>`` (the tensor, unpacked) and ``_raw_saved_<name>`` (the entry,
    ``RawSaved``), one of each per tensor its op saves, as torch's nodes have them. (Properties, not
    ``__getattr__``: Python calls that when a property raises AttributeError, which would hide an
    unpack hook's own AttributeError, read through ``saved_tensors`` too, behind "no attribute".)"""
    found = {}
    for index, name in enumerate(names):
        found[f"_saved_{name}"] = property(lambda node, i=index: _as_torch_keeps_it(node._unpack(node._saved[i])))
        found[f"_raw_saved_{name}"] = property(lambda node, i=index: RawSaved._of(node, i))
    return found


def _as_torch_keeps_it(tensor):
    """A saved tensor as torch's ``_saved_<name>`` gives it: a wrapped Python number (``x * 2.5``) as
    torch wraps it, a float as float64 and a complex as complex128 (minigrad computes with it in its
    op's dtype: ``wrap_number``)."""
    if tensor is None or not tensor._is_wrapped_number:
        return tensor
    number = tensor._number
    return Tensor(torch.tensor(number, dtype=_WRAPPED_DTYPES.get(type(number))))


_WRAPPED_DTYPES = {float: torch.float64, complex: torch.complex128}
"""The dtype of a Python number torch wraps, where ``torch.tensor`` would give another (an int is int64, a bool bool)."""


def other_attributes(function, **getters):
    """torch's ``grad_fn._saved_<name>`` for what ``function``'s node keeps beside the tensors it saves
    (a number, dims, a flag): each getter reads it off the node."""
    for name, getter in getters.items():
        setattr(function._backward_cls, f"_saved_{name}", property(getter))


def save(tensor, is_output=False, hooks=None):
    """``tensor`` saved for backward: with the saved-tensor hooks in force, if any (PackedTensor),
    except a wrapped Python number, which torch saves as it is. An inference tensor is refused
    before any entry is made (a half-made one, kept alive by the error's traceback, would be found
    by ``minigrad.memory`` when its record starts). ``hooks``: this thread's, where the caller
    holds them already (Function.apply: a thread-local read costs as much as the rest), else read here."""
    if hooks is None:
        hooks = grad_mode._state.saved_tensors_hooks
    if tensor._is_wrapped_number:
        return SavedTensor(tensor, is_output)
    if tensor._is_inference:
        raise RuntimeError(ERR_INFERENCE_SAVED)
    saved = PackedTensor(tensor, is_output, hooks[-1]) if hooks else SavedTensor(tensor, is_output)
    if _ledger is not None:
        _ledger.add(saved)
    return saved


_FREED = object()
_ledger = None
"""``minigrad.memory``'s record of saved storages; None until someone asks (then it costs a call per save)."""


_TYPE_NAMES = {
    torch.float32: "FloatTensor", torch.float64: "DoubleTensor", torch.float16: "HalfTensor",
    torch.bfloat16: "BFloat16Tensor", torch.int64: "LongTensor", torch.int32: "IntTensor",
    torch.bool: "BoolTensor",
}
