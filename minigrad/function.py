"""The backward graph: nodes, the tensors they save, and Function, the way every op builds a node.

Mirrors torch/autograd/function.py: an op is a Function with ``forward(ctx, ...)`` and
``backward(ctx, *grads)``; the ``ctx`` is the backward node itself (``y.grad_fn``).
"""
import itertools
import sys

import torch

from . import grad_mode

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

_sequence_nr = itertools.count()


class Node:
    """A backward function: what a tensor's ``grad_fn`` points to.

    ``next_functions`` holds one ``(node, input_nr)`` edge per input of the forward op and
    ``_input_shapes`` the shapes those inputs had; the engine runs nodes newest-first by
    ``_sequence_nr``, as torch's ready queue does.
    """

    next_functions = ()
    _input_shapes = ()
    _tensor_pre_hooks = None
    """Hooks registered on the tensors this node made: ``{output_nr: [hook, ...]}``."""
    _retains_grad_hooks = None
    """``{output_nr: hook}`` for the outputs that ``retain_grad()``."""

    def __init__(self):
        self._sequence_nr = next(_sequence_nr)

    def name(self):
        return type(self).__name__

    def __lt__(self, other):
        """Order in the engine's ready queue (a heap, smallest first): the newer node first. Two
        leaves' AccumulateGrad nodes have equal numbers: a tie, which the heap breaks as torch's does."""
        return self._sequence_nr > other._sequence_nr

    def apply(self, grads):
        """One gradient (or None) per edge, from the list of gradients of the node's outputs.

        The list is handed over, as torch's ``variable_list&&``: the node may take a gradient out of
        it, and when nothing else holds that gradient, keep it instead of copying (AccumulateGrad)."""
        raise NotImplementedError

    def _release_saved(self):
        """Drop the saved tensors (what retain_graph=False frees). Nodes that save nothing have nothing to do."""

    def __call__(self, *grads):
        """Calling a node by hand, as ``y.grad_fn(grad)`` in torch: one input gives a tensor, several a tuple."""
        result = self.apply(list(grads))
        return result[0] if len(result) == 1 else result

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node behind a leaf: adds the incoming gradient into ``variable.grad``.

    Its sequence number is the largest possible, so a ready AccumulateGrad runs first.
    """

    def __init__(self, variable):
        Node.__init__(self)
        self._sequence_nr = sys.maxsize
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def apply(self, grads):
        grad = grads.pop()
        variable = self.variable
        for hook in variable._hooks or ():
            result = hook(grad)
            if result is not None:
                grad = result
        old = variable._grad
        if old is None:
            variable._grad = grad if grad_mode.is_grad_enabled() or _owned(grad) else grad.clone()
        elif grad_mode.is_grad_enabled():
            variable._grad = old + grad
        else:
            old.add_(grad)
        return ()


def _owned(grad):
    """True when nothing but ``AccumulateGrad.apply`` holds ``grad`` and its memory, so it can become
    ``.grad`` without a copy: the engine handed the list over and apply took the gradient out of it.

    torch's AccumulateGrad makes the same check on C++ reference counts. Here: Python references
    (apply's local, this frame's argument and getrefcount's: ``_SOLE_REFS``, measured below) and the
    storage's users (this tensor and at most its view base). A gradient held anywhere else — a hook
    kept it, autograd.grad captured it, a caller passed it in — is copied.
    """
    data = grad._data
    return (sys.getrefcount(grad) <= _SOLE_REFS and grad.grad_fn is None and data.is_contiguous()
            and _storage_users(data) <= 1 + (data._base is not None))


def _sole_refs():
    """What sys.getrefcount reports in ``_owned`` for a gradient only apply's local holds (the
    interpreter's own count differs between Python versions)."""
    def apply(grads):
        grad = grads.pop()
        return count(grad)

    def count(grad):
        return sys.getrefcount(grad)
    return apply([object()])


_SOLE_REFS = _sole_refs()


def _storage_users(data):
    count = getattr(torch._C, "_storage_Use_Count", None)
    return count(data.untyped_storage()._cdata) - 1 if count else sys.maxsize


class SavedTensor:
    """A tensor saved for backward, with the version it had then (torch's SavedVariable).

    An output of the node itself is saved without its grad_fn, to avoid a cycle node -> saved ->
    output -> node; ``unpack`` rebuilds it with ``grad_fn`` pointing back at the node.
    """

    __slots__ = ("tensor", "data", "version_counter", "saved_version", "requires_grad", "output_nr")

    def __init__(self, tensor, is_output):
        if tensor._is_inference:
            raise RuntimeError(ERR_INFERENCE_SAVED)
        self.version_counter = tensor._version_counter
        self.saved_version = tensor._version_counter.version
        if is_output:
            self.tensor = None
            self.data = tensor._data
            self.requires_grad = tensor._requires_grad
            self.output_nr = tensor._output_nr
        else:
            self.tensor = tensor

    def unpack(self, node):
        if self.version_counter.version != self.saved_version:
            self._raise_modified(node)
        if self.tensor is not None:
            return self.tensor
        out = Tensor(self.data, grad_fn=node if self.requires_grad else None, output_nr=self.output_nr)
        out._version_counter = self.version_counter
        return out

    def _raise_modified(self, node):
        """torch's message names the node that produced the tensor, as it is now (after any rebase)."""
        if self.tensor is None:
            data, producer, output_nr = self.data, node, self.output_nr
        else:
            data, producer, output_nr = self.tensor._data, self.tensor.grad_fn, self.tensor._output_nr
        kind = f"torch.{'cuda.' if data.is_cuda else ''}{_TYPE_NAMES.get(data.dtype, str(data.dtype))}"
        described = f"[{kind} [{', '.join(map(str, data.shape))}]]"
        if producer is not None:
            name = producer.name().replace("Backward0", "").replace("Backward", "")
            described += f", which is output {output_nr} of {name},"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: {described} is at version {self.version_counter.version}; expected version "
            f"{self.saved_version} instead. Hint: enable anomaly detection to find the operation that "
            "failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
        )


_FREED = object()


_TYPE_NAMES = {
    torch.float32: "FloatTensor", torch.float64: "DoubleTensor", torch.float16: "HalfTensor",
    torch.bfloat16: "BFloat16Tensor", torch.int64: "LongTensor", torch.int32: "IntTensor",
    torch.bool: "BoolTensor",
}


class BackwardFunction(Node):
    """The node (and ``ctx``) a Function builds: saves tensors, then runs the Function's backward."""

    _to_save = _saved = ()
    _input_positions = None

    def __init__(self, args):
        """The node of a Function applied to ``args``: one edge and one input shape per tensor among
        them, collected before forward runs, as torch does."""
        Node.__init__(self)
        edges, shapes = [], []
        for arg in args:
            if isinstance(arg, Tensor):
                edges.append(arg._gradient_edge())
                shapes.append(arg._data.shape)
        self.next_functions, self._input_shapes = tuple(edges), tuple(shapes)
        self._input_positions = None if len(edges) == len(args) else [
            i for i, arg in enumerate(args) if isinstance(arg, Tensor)]

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def _save(self, output, result):
        """Wrap what forward passed to save_for_backward; its output is saved as ``result``, the
        tensor apply returns (see SavedTensor)."""
        self._saved = tuple([None if t is None else SavedTensor(result, True) if t is output or t is result
                             else SavedTensor(t, False) for t in self._to_save])
        self._to_save = None

    @property
    def saved_tensors(self):
        return tuple(map(self._unpack, self._saved))

    # BEGIN EXERCISE 3
    def _unpack(self, saved):
        """One entry of ``_saved`` as a tensor: None stays None (never saved), a freed entry raises
        torch's "backward through the graph a second time" error, a SavedTensor is unpacked."""
        if saved is None:
            return None
        # BEGIN NEW IN EXERCISE 3
        if saved is _FREED:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        # END NEW IN EXERCISE 3
        return saved.unpack(self)
    # END EXERCISE 3

    # BEGIN EXERCISE 3
    def _release_saved(self):
        """Free what the node saved (the engine calls this after running it, unless retain_graph):
        each saved entry becomes ``_FREED``; entries that were never saved stay None."""
        if self._saved:
            self._saved = tuple(None if s is None else _FREED for s in self._saved)
    # END EXERCISE 3

    def apply(self, grads):
        """One gradient per edge: backward returns one per forward argument; keep the tensors' ones."""
        result = self._forward_cls.backward(self, *grads)
        if type(result) is not tuple:
            result = (result,)
        if self._input_positions is not None:
            result = tuple(result[i] for i in self._input_positions)
        return result

    def __getattr__(self, name):
        """``grad_fn._saved_self`` and friends, named as torch names them."""
        names = type(self)._forward_cls.saved_names
        if name.startswith("_saved_") and name[7:] in names:
            return self._unpack(self._saved[names.index(name[7:])])
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class Function:
    """Base of every op and of user-defined functions, as ``torch.autograd.Function``.

    Subclasses define ``forward(ctx, *args)`` returning a torch.Tensor (storage) or a minigrad
    Tensor, and ``backward(ctx, *grads)`` returning one gradient (or None) per argument of forward.
    """

    node_name = None
    """The backward node's name (``MulBackward0``, torch's); by default ``<Class>Backward``."""
    saved_names = ()
    """What ``save_for_backward`` saves, in order, as torch names it: ``grad_fn._saved_<name>``."""
    is_view = False
    """The output shares its input's memory and version counter (a view of it)."""
    inplace_saves_self = False
    """The op saves its first input for backward, so its in-place form (``a.mul_(b)``) must save a
    copy of ``a``'s old values: the in-place edit would otherwise overwrite what backward needs."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("node_name") or cls.__name__ + "Backward"
        cls._backward_cls = type(name, (BackwardFunction,), {"_forward_cls": cls})

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args):
        state = grad_mode._state
        enabled = state.grad_enabled
        needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
        record = enabled and True in needs
        ctx = cls._backward_cls(args) if record else _ForwardContext()
        ctx.needs_input_grad = needs
        state.grad_enabled = False
        try:
            out = cls.forward(ctx, *args)
        finally:
            state.grad_enabled = enabled
        if isinstance(out, Tensor):
            out = out._data
        result = Tensor(out, grad_fn=ctx if record else None)
        if cls.is_view:
            result._become_view_of(args[0])
        elif state.inference:
            result._is_inference, result._version_counter = True, None
        if record and ctx._to_save:
            ctx._save(out, result)
        return result


class _ForwardContext:
    """The ``ctx`` of a forward that records nothing (grad mode off, or no input requires grad)."""

    def save_for_backward(self, *tensors):
        pass


def constant(data):
    """A tensor that takes part in a backward formula but never needs a gradient (a mask, indices)."""
    return Tensor(data)


# The package's one import cycle: Function.apply wraps what forward computed in a Tensor, and
# Tensor's methods apply Functions (ops.py, views.py). Imported last, when everything above exists.
from .tensor import Tensor  # noqa: E402
