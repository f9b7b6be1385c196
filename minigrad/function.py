"""The backward graph: nodes, and Function, the way every op builds a node (what a node keeps of
the tensors it saves is in saved_tensors.py).

Mirrors torch/autograd/function.py: an op is a Function with ``forward(ctx, ...)`` and
``backward(ctx, *grads)``; the ``ctx`` is the backward node itself (``y.grad_fn``).
"""
import itertools
import os
import sys
import threading
import traceback

import torch

from . import custom_function, engine, grad_dtypes, grad_mode, graph_owned, releases, saved_tensors, user_warnings
from .graph_owned import GraphOwned
# The node's saved entries (saved_tensors.py), and the names the course imports from here
from .saved_tensors import (ERR_BACKWARD_TWICE, ERR_INFERENCE_SAVED, ERR_MODIFIED, _FREED,  # noqa: F401
                            PackedTensor, SavedTensor, anomaly_hint, op_name, save, tensor_description)
from .utils.hooks import RemovableHandle

_sequence_numbers = itertools.count()
UINT64_MAX = 2**64 - 1
"""The sequence number of the nodes that run as soon as they are ready (AccumulateGrad, Error)."""
_NO_EDGE = (None, 0)
"""The edge of an input that needs no gradient (``_gradient_edge()`` of a tensor that does not require grad)."""


class Node:
    """A backward function: what a tensor's ``grad_fn`` points to.

    ``next_functions`` holds one ``(node, input_nr)`` edge per input of the forward op,
    ``_input_metadata`` one ``(shape, dtype, device)`` per input, what it was (torch's InputMetadata:
    the engine checks each gradient against it, and casts it to the dtype; None for an input that needs
    no gradient, whose edge leads nowhere: torch checks none there); the engine runs nodes
    newest-first by ``_sequence_nr()``, as torch's ready queue does.
    """

    next_functions = ()
    _input_metadata = ()
    _tensor_pre_hooks = None
    """Hooks registered on the tensors this node made: ``{output_nr: [hook, ...]}``."""
    _retains_grad_hooks = None
    """``{output_nr: hook}`` for the outputs that ``retain_grad()``."""
    _pre_hooks = _post_hooks = None
    """``register_prehook``'s and ``register_hook``'s hooks, in order."""
    _has_pre_hooks = False
    """Set once a hook that runs before the node (any of the three above) is registered: the one thing
    the engine tests per node."""
    _metadata = None
    _casts_own_input = False
    """Whether the node casts the gradient it takes itself (a leaf's AccumulateGrad, once its grad_dtype
    is set): the engine then leaves it as it comes."""

    def __init__(self, sequence_nr=None):
        """``sequence_nr``: the node's place in the engine's order; by default the next number, as torch's
        ``Node()`` takes it (``at::sequence_number::get_and_increment``)."""
        self._sequence_number = next(_sequence_numbers) if sequence_nr is None else sequence_nr
        if grad_mode.anomaly.enabled:
            self._metadata = {"traceback_": _forward_stack()}
            parent = grad_mode._state.running_node
            if parent is not None:
                self._metadata["parent_"] = parent

    def name(self):
        return type(self).__name__

    def _sequence_nr(self):
        """The node's sequence number: made later, higher (torch's ``node._sequence_nr()``, a method)."""
        return self._sequence_number

    @property
    def metadata(self):
        """A dict for anything a user wants to keep on the node (torch's ``Node.metadata``); anomaly
        detection keeps the forward's stack there, under ``traceback_``, and the node whose backward
        made this one, under ``parent_``."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_prehook(self, hook):
        """``hook(grad_outputs)`` runs before the node, and may return new ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks, self._has_pre_hooks = [], True
        self._pre_hooks.append(hook)
        return RemovableHandle(self._pre_hooks, hook)

    def register_hook(self, hook):
        """``hook(grad_inputs, grad_outputs)`` runs after the node, and may return new ``grad_inputs``."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return RemovableHandle(self._post_hooks, hook)

    __lt__ = engine.runs_first  # the order of the engine's ready queue: the newer node first

    def apply(self, grads):
        """One gradient (or None) per edge, from the list of gradients of the node's outputs.

        The list is handed over, as torch's ``variable_list&&``: the node may take a gradient out of
        it, and when nothing else holds that gradient, keep it instead of copying (AccumulateGrad)."""
        raise NotImplementedError

    def _release_saved(self):
        """Drop the saved tensors (what retain_graph=False frees). Nodes that save nothing have nothing to do."""

    def _output_count(self):
        """How many outputs the forward op had: a gradient for each is what the node takes."""
        return 1

    def __call__(self, *grads):
        """Calling a node by hand, as ``y.grad_fn(grad)`` in torch: one gradient per output of the
        forward op in; out, one input gives a tensor, several a tuple."""
        expected = self._output_count()
        if len(grads) != expected:
            raise TypeError(f"expected {expected} arguments, got {len(grads)} instead")
        result = self.apply(list(grads))
        return result[0] if len(result) == 1 else result

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


def input_metadata(data):  # what a node keeps of an input's storage to check its gradient against
    return data.shape, data.dtype, data.device


class GraphRoot(Node):
    """torch's GraphRoot: a node whose edges are backward's roots and which hands out their
    gradients (what reaches it is the list of them). Backward starts from it where a node is among
    the roots more than once (the same tensor twice, two outputs of one node): walked from there,
    that node's edges are counted once, and all its roots' gradients summed before it runs."""

    def __init__(self, roots):
        Node.__init__(self)
        self.next_functions = tuple(roots)

    def name(self):
        return "torch::autograd::GraphRoot"

    def apply(self, grads):
        return list(grads[0])


class AccumulateGrad(Node):
    """The node behind a leaf: adds the incoming gradient into ``variable.grad``.

    Its sequence number is the largest possible (torch's UINT64_MAX), so a ready AccumulateGrad runs first.
    """

    _has_pre_hooks = True
    """The leaf's hooks are registered on the leaf (``Tensor._hooks``), out of the node's sight: the
    engine always looks."""

    def __init__(self, variable):
        Node.__init__(self, UINT64_MAX)
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    @property
    def _casts_own_input(self):
        return self.variable._grad_dtype is not grad_dtypes.OWN

    @property
    def _tensor_pre_hooks(self):
        """The leaf's hooks (``register_hook``) are this node's tensor pre-hooks, as in torch: they run
        before the node's own pre-hooks, and also where autograd.grad only captures the gradient."""
        hooks = self.variable._hooks
        return {0: hooks} if hooks else None

    def apply(self, grads):
        """Accumulate, then run the leaf's post-accumulate-grad hooks (an optimizer's step in backward).
        Backwards in several threads may accumulate into one leaf at once: one at a time, as torch's
        AccumulateGrad locks, so that no gradient is lost."""
        grad = grads.pop()
        variable = self.variable
        grad_dtype, enabled = variable._grad_dtype, grad_mode._state.grad_enabled
        if grad_dtype is not grad_dtypes.OWN:  # as _casts_own_input: the cast is here (grad_dtypes)
            grad = grad if grad_dtype in (None, grad._data.dtype) else grad.to(grad_dtype)
        with _ACCUMULATING:
            old = variable._grad
            if old is None and enabled:
                variable._grad = _copy_like(variable, grad)
            elif old is None:
                variable._grad = grad if _owned(grad, bool(self._post_hooks)) else _copy_like(variable, grad)
            elif enabled:
                variable._grad = old + grad
            else:
                old.add_(grad)
        hooked = variable  # what each hook gets: the tensor, or what the hook before returned in its place
        for hook in tuple(variable._post_accumulate_grad_hooks or ()):
            result = hook(hooked)
            if result is not None and result is not hooked:
                hooked = engine.checked_hook_result(hook, hooked, result)
        if hooked is not variable:
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        return ()


_ACCUMULATING = threading.Lock()


def _forward_stack():
    """The stack making a node, without minigrad's own frames at its end: it ends at the user's line,
    as torch's anomaly mode shows it (its own frames are C++), however many frames minigrad's call
    took (none where minigrad is compiled: the lessons on a class's hub)."""
    stack = traceback.extract_stack()
    while stack and stack[-1].filename.startswith(os.path.dirname(__file__) + os.sep):
        stack.pop()
    return traceback.format_list(stack)


def _copy_like(variable, grad):
    """A first gradient AccumulateGrad can't keep as it is (under create_graph, or held elsewhere), as
    torch copies it (clone_obey_contract): into new memory laid out like the variable (torch's "gradient
    layout contract"; the copy recorded as CopyBackwards under create_graph), or, for a variable whose
    memory has gaps or overlaps (an expanded leaf), a contiguous clone."""
    data = variable._data
    if not _dense(data):
        return grad.clone(memory_format=torch.contiguous_format)
    return Tensor(torch.empty_strided(data.shape, data.stride(), dtype=grad.dtype, device=grad.device)).copy_(grad)


def _dense(data):
    """Whether the elements fill their memory exactly, without gaps or overlaps, in some order of the
    dims (torch's is_non_overlapping_and_dense)."""
    expected = 1
    for size, stride in sorted(zip(data.shape, data.stride()), key=lambda size_stride: size_stride[1]):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def _owned(grad, posthooks_hold):
    """True when nothing but ``AccumulateGrad.apply`` (and the engine, for post hooks' ``grad_outputs``:
    torch's ``1 + !post_hooks().empty()``) holds ``grad`` and its memory, so it can become ``.grad``
    without a copy: the engine handed the list over and apply took the gradient out of it.

    torch's AccumulateGrad makes the same check on C++ reference counts. Here: Python references
    (apply's local, this frame's argument and getrefcount's: ``_SOLE_REFS``, measured below) and the
    storage's users (this tensor and at most its view base). A gradient held anywhere else — a hook
    kept it, autograd.grad captured it, a caller passed it in — is copied.
    """
    data = grad._data
    return (sys.getrefcount(grad) <= _SOLE_REFS + posthooks_hold and grad.grad_fn is None and data.is_contiguous()
            and _storage_use_count is not None
            and _storage_use_count(data.untyped_storage()._cdata) - 1 <= 1 + (data._base is not None))


def _sole_refs(grads):
    """What sys.getrefcount reports in ``_owned`` for a gradient only apply's local holds: popped and
    counted as apply and ``_owned`` do, by functions of the module as they are (the count differs
    between Python versions, and where minigrad is compiled, Cython's nested functions count otherwise)."""
    grad = grads.pop()
    return _refs_seen(grad, False)


def _refs_seen(grad, posthooks_hold):  # called as _owned is
    return sys.getrefcount(grad)


_SOLE_REFS = _sole_refs([object()])


_storage_use_count = getattr(torch._C, "_storage_Use_Count", None)
"""torch's count of a storage's users (one more while ``untyped_storage()``'s result lives); None in a
torch without it, where no gradient counts as owned."""


class BackwardFunction(Node):
    """The node (and ``ctx``) a Function builds: saves tensors, then runs the Function's backward."""

    _to_save = _saved = ()
    _input_positions = None
    _outputs = None
    """For a Function whose forward returned a tuple: what each output is, by position
    (``custom_function.OutputInfo``)."""
    materialize_grads = True
    _dirty = _non_differentiable = ()
    needs_input_grad = ()
    """Whether each input requires grad (torch's ``ctx.needs_input_grad``), set when made."""

    @classmethod
    def recording(cls, args):
        """The node of a Function applied to ``args``, or None where no input requires grad: one edge and
        one input metadata per tensor among them, collected before forward runs, as torch does, in the
        one pass over ``args`` that finds which of them require grad (``needs_input_grad``)."""
        needs, edges, metadata, sequence_nr = [], [], [], None
        for arg in args:
            if not isinstance(arg, Tensor):
                needs.append(False)
            elif arg._requires_grad or arg._view is not None and arg.requires_grad:
                if sequence_nr is None:  # the node's number, taken before an edge makes a node (a view's new grad_fn)
                    sequence_nr = next(_sequence_numbers)
                needs.append(True)
                grad_fn = arg._node  # as _gradient_edge(), unrolled for a non-view's grad_fn (a view's may be stale)
                edges.append((grad_fn, arg._output_nr) if grad_fn is not None and arg._view is None else
                             arg._gradient_edge())
                data = arg._data
                metadata.append((data.shape, data.dtype, data.device))  # as input_metadata(data), unrolled
            else:  # a tensor that needs no gradient: no edge, nothing to check (torch's)
                needs.append(False)
                edges.append(_NO_EDGE)
                metadata.append(None)
        if sequence_nr is None:
            return None
        node = cls(sequence_nr)
        node.needs_input_grad, node.next_functions, node._input_metadata = tuple(needs), tuple(edges), tuple(metadata)
        if len(edges) != len(args):
            node._input_positions = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        return node

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        """Inputs that forward changed in place: they become outputs of this node, as in torch."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Outputs with no gradient (indices, masks): they don't require grad, and backward receives
        zeros for them."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """Whether backward receives zeros (True, the default) or None for outputs that got no gradient."""
        self.materialize_grads = value

    def name(self):
        return self._node_name

    def _output_count(self):
        return 1 if self._outputs is None else len(self._outputs)

    def _save(self, outputs, hooks=None):
        """Wrap what forward passed to save_for_backward, under the saved-tensor ``hooks`` (see save).
        ``outputs``: ``(returned, result, is_output)`` for each output, ``returned`` as forward returned
        it, ``result`` what apply returns for it; a tensor forward returned is saved as its result, as
        an output of this node if ``is_output`` (it has this node as grad_fn, torch's test). The node
        lets go of the tensors first: should a pack hook raise (checkpoint's early stop does), no output
        is left in a cycle with its node."""
        saved, to_save = [], self._to_save
        self._to_save = None
        for t in to_save:
            if t is None:
                saved.append(None)
                continue
            for returned, result, is_output in outputs:
                if t is returned or t is result:
                    t = result
                    break
            else:
                is_output = False
            saved.append(save(t, is_output, hooks))
        self._saved = tuple(saved)

    @property
    def saved_tensors(self):  # a loop: it costs less than tuple(map(...)) over a node's few entries
        tensors = []
        for saved in self._saved:
            tensors.append(self._unpack(saved))
        return tuple(tensors)

    @property
    def _raw_saved_tensors(self):
        return saved_tensors.raw_entries(self)

    @property
    def saved_variables(self):
        """``saved_tensors`` under its old name, which torch still reads, with a deprecation warning."""
        user_warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, __file__)
        return self.saved_tensors

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
        """Free what the node saved (the engine calls this after running it, unless retain_graph): no
        entry holds a SavedTensor any more, and ``_unpack`` tells a freed entry from one that was
        never saved (None, which stays None); one entry per place, as before."""
        if self._saved:
            self._saved = tuple(None if s is None else _FREED for s in self._saved)
    # END EXERCISE 3

    def apply(self, grads):
        """One gradient per edge: backward returns one per forward argument; keep the tensors' ones."""
        if self._outputs is not None:
            grads = self._output_grads(grads)
        if saved_tensors.detached_in_place and self._forward_cls.saved_names:  # an op of torch's (custom: none)
            saved_tensors.check_not_detached(self)
        cls = self._forward_cls
        result = (cls.backward if cls.vjp is Function.vjp else self._vjp())(self, *grads)
        if type(result) is not tuple:
            result = (result,)
        if len(result) != len(self.needs_input_grad):
            result = self._trim(result)
        if self._input_positions is not None:
            positions = self._input_positions
            for i, grad in enumerate(result):
                if grad is not None and i not in positions:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
            result = tuple(result[i] for i in positions)
        return result

    def _vjp(self):  # the vjp of a Function that defines it in place of backward (never both, as torch checks)
        cls = self._forward_cls
        if cls.backward is not Function.backward:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        return cls.vjp

    def _output_grads(self, grads):
        """One gradient per output of forward, as backward takes them: None for the outputs that got
        none (and for non-tensors), or zeros of the output's shape when grads are materialized."""
        grads = list(grads) + [None] * (len(self._outputs) - len(grads))
        if self.materialize_grads:
            for i, (grad, info) in enumerate(zip(grads, self._outputs)):
                if grad is None and info is not None:
                    grads[i] = Tensor(torch.zeros(info.shape, dtype=info.dtype, device=info.device))
        return grads

    def _trim(self, result):  # torch accepts more gradients than forward had inputs if the extra ones are all None
        expected = len(self.needs_input_grad)
        if len(result) > expected and all(g is None for g in result[expected:]):
            return result[:expected]
        raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                           f"(expected {expected}, got {len(result)})")


class Function:
    """Base of every op and of user-defined functions, as ``torch.autograd.Function``.

    Subclasses define ``forward(ctx, *args)`` — or ``forward(*args)`` and ``setup_context(ctx,
    inputs, output)``, torch's newer form — returning a tensor (storage, for minigrad's own ops), a
    minigrad Tensor, or a tuple of outputs; and ``backward(ctx, *grads)``, one gradient per output
    in, one gradient (or None) per argument of forward out.
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
    python_in_torch = None
    """Whether torch runs this Function in Python (a PyNode, whose ctx before torch 2.13 does not own
    its node: ``graph_owned``): a Function defined outside minigrad, and those of minigrad's that torch
    writes in Python (set on them); not minigrad's ops, which torch writes in C++."""
    clear_saved_tensors_on_access = False
    """torch's: when true (as apply finds it), the first ``ctx.saved_tensors`` lets go of the saved
    tensors and a second is refused (``custom_function.wrap_outputs``)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("node_name") or cls.__name__ + "Backward"
        saved = saved_tensors.attributes(cls.saved_names)
        python_in_torch = cls.__dict__.get("python_in_torch", not cls.__module__.startswith("minigrad."))
        bases = (BackwardFunction,) if releases.CTX_OWNS_NODE or not python_in_torch else (GraphOwned, BackwardFunction)
        cls._backward_cls = type(name.rsplit("::", 1)[-1], bases, {"_forward_cls": cls, "_node_name": name, **saved})
        cls._separate_setup = cls.setup_context is not Function.setup_context

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward
    """torch's other name for backward: a Function defines one of the two."""

    def __call__(self, *args, **kwargs):
        """Calling an instance was the old form of Functions (forward and backward as methods)."""
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward with grad mode off, as torch does. When grad mode is on and an input requires
        grad, the outputs' grad_fn is the ``ctx`` forward filled: a new node, one edge per tensor input
        (but a view of an inference tensor records nothing: it is an inference tensor, not a view).
        Keyword arguments count as inputs (before torch 2.13, apply refuses them)."""
        separate_setup, is_view = cls._separate_setup, cls.is_view  # (class attributes: read once)
        if kwargs or separate_setup:
            args, kwargs, inputs = cls._arguments(args, kwargs)
        else:
            inputs = args
        modes = grad_mode._state.__dict__  # this thread's grad modes (see _State)
        enabled = modes["grad_enabled"]
        ctx = None
        if enabled and not (is_view and args[0]._is_inference):
            ctx = cls._backward_cls.recording(inputs)
        record = ctx is not None
        if not record:  # (_ForwardContext has no __init__: see there)
            ctx = _ForwardContext()
            ctx._inputs, ctx._forward_cls = inputs, cls
        if enabled:
            modes["grad_enabled"] = False
        try:
            if separate_setup:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            elif kwargs:
                out = cls.forward(ctx, *args, **kwargs)
            else:  # the usual call: passing the empty kwargs along would cost more
                out = cls.forward(ctx, *args)
        finally:
            modes["grad_enabled"] = enabled
        if type(out) is not torch.Tensor:
            return custom_function.wrap_outputs(ctx, record, inputs, out)
        result = Tensor(out, True, ctx) if record else Tensor(out)
        if is_view and not args[0]._is_inference:
            result._become_view_of(args[0], modes)
        elif is_view or modes["inference"]:
            result._is_inference, result._version_counter = True, None
        if record and ctx._to_save:
            ctx._save(((out, result, True),), modes["saved_tensors_hooks"])
        return result

    @classmethod
    def _arguments(cls, args, kwargs):
        """``(args, kwargs, inputs)`` for a call with keyword arguments, or of a Function with
        setup_context (whose forward sees its defaults too): ``inputs``, what ``needs_input_grad``
        and the node's edges cover, are the arguments then the keyword arguments' values."""
        if kwargs and not releases.APPLY_TAKES_KEYWORDS:
            raise TypeError("apply() takes no keyword arguments")
        if cls._separate_setup:
            args, kwargs = custom_function.with_defaults(cls.forward, args, kwargs), {}
        return args, kwargs, args + tuple(kwargs.values()) if kwargs else args


class _ForwardContext:
    """The ``ctx`` of a forward that records nothing (grad mode off, or no input requires grad).
    Function.apply sets its two fields, ``_inputs`` and ``_forward_cls`` (the Function this forward
    runs for: the grader's guards tell a learner's ctx by it), itself: an ``__init__`` in Python
    would cost a frame on every op that records nothing (all those of a backward)."""

    _dirty = _non_differentiable = ()
    _to_save = None

    @property
    def needs_input_grad(self):
        """Whether each input requires grad (torch's ``ctx.needs_input_grad``): worked out when asked,
        since most forwards that record nothing (a backward's ops) never ask. A tensor's own flag first,
        the property (which asks a view's base) only for a view whose flag is off."""
        needs = []
        for a in self._inputs:  # (a loop: a list comprehension costs a call in Python 3.11)
            needs.append(isinstance(a, Tensor) and (a._requires_grad or a._view is not None and a.requires_grad))
        return tuple(needs)

    def save_for_backward(self, *tensors):
        """Kept only for apply's check of a Function with setup_context, which torch makes with or
        without a graph (custom_function.wrap_outputs)."""
        self._to_save = tensors

    mark_dirty = BackwardFunction.mark_dirty
    mark_non_differentiable = BackwardFunction.mark_non_differentiable
    set_materialize_grads = BackwardFunction.set_materialize_grads


def constant(data):
    """A tensor that takes part in a backward formula but never needs a gradient (a mask, indices)."""
    return Tensor(data)


# The package's one import cycle: Function.apply wraps what forward computed in a Tensor, and
# Tensor's methods apply Functions (ops/, views.py). Imported last, when everything above exists.
from .tensor import Tensor  # noqa: E402

# saved_tensors.py, custom_function.py, graph_owned.py and engine.py can't import this module (this module imports
# them): they get Tensor (and AccumulateGrad, Node) here.
saved_tensors.Tensor, saved_tensors.AccumulateGrad = Tensor, AccumulateGrad
custom_function.Tensor = engine.Tensor = graph_owned.Tensor = Tensor
graph_owned.Node = Node
