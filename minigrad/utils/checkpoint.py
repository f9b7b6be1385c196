"""Gradient checkpointing (``torch.utils.checkpoint``): trade compute for memory.

The forward of a checkpointed function builds its graph as usual, except that every tensor its
nodes save is replaced by an empty holder (a saved-tensor hook), so the graph keeps only the
function's inputs. When backward first needs one of those tensors, the function runs again from
the saved inputs — with the forward's random state — and the recomputed tensors fill the holders.
This is torch's non-reentrant checkpoint: the body runs once in forward and once more in each
backward that reaches it (side effects too: a ``print`` in the body prints again), and recomputation
stops as soon as every holder is filled.

The old form, ``use_reentrant=True`` (torch's default when the argument is left out), is a custom
Function instead: ``CheckpointFunction``, whose backward runs the whole body again and a backward
inside it.

Torch's options of the non-reentrant form (``early_stop``, ``determinism_check``, ``debug``, and the
switches ``set_checkpoint_early_stop`` and ``set_checkpoint_debug_enabled``) are a layer around the
body, ``_CheckedBody``: exercise 8 has learners write the frame's hooks, of any design, and the
layer works with whichever.
"""
import contextlib
import os
import threading
import traceback
import warnings
import weakref

import torch

from .. import grad_mode, releases
from ..saved_tensors import tensor_description
from ..autograd.api import backward
from ..autograd.graph import saved_tensors_hooks
from ..function import Function, PackedTensor, SavedTensor, save
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor

__all__ = ["CheckpointError", "CheckpointFunction", "checkpoint", "set_checkpoint_debug_enabled",
           "set_checkpoint_early_stop"]


class CheckpointError(RuntimeError):
    """The recomputation did not save what the original forward saved."""


class _StopRecomputation(Exception):
    """Every holder is filled: the rest of the body need not run again."""


class _Holder:
    """What the graph keeps in place of a saved tensor: the recomputed tensor, once there is one.

    A recomputation serves the backward that ran it (``grad_mode._state.graph_task``), as torch's
    serves its graph task: a holder filled for another backward is empty to this one, which
    recomputes (a body whose outputs are backpropagated one at a time runs once per backward). A
    recomputed tensor is handed out once in each backward: a holder emptied in the backward that
    runs, asked for its value again, raises. Outside a backward it is simply empty again (each
    access recomputes). The backwards are held weakly: a backward holds its graph, which holds
    this holder."""

    __slots__ = ("_value", "_filled_in", "_emptied_in", "__weakref__")

    def __init__(self):
        self._value = self._filled_in = self._emptied_in = None

    @property
    def value(self):
        if self._value is None and self._emptied_in is not None and _runs_now(self._emptied_in):
            raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                                  "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to do so "
                                  "only once. Otherwise please open an issue with details on your use case.")
        return self._value if _runs_now(self._filled_in) else None

    @value.setter
    def value(self, value):
        """Filled for the backward the recomputation serves (a backward inside the body, which saves
        through the recomputation too, does not change it, as torch keys it by the graph task that
        started the recomputation); emptied in the one that runs."""
        task = getattr(_serving, "task", None) if value is not None else None
        task = task or grad_mode._state.graph_task
        task = None if task is None else weakref.ref(task)
        if value is None:
            self._emptied_in = task
        else:
            self._filled_in = task
        self._value = value


_serving = threading.local()
"""``task``: the backward the recomputation running in this thread serves (set by ``_CheckedBody``)."""


def _runs_now(backward):
    """Whether ``backward`` (a weak reference to a backward, or None: outside any) is the one running,
    or the one the recomputation running serves."""
    task = grad_mode._state.graph_task
    if backward is None:
        return task is None
    served = backward()
    return served is not None and (served is task or served is getattr(_serving, "task", None))


class _Holders:
    """The holders a checkpointed forward handed out, in the order the tensors were saved, held
    weakly: ``holders[i]`` is None once the graph has let go of that one (its node ran and freed
    it), and a recomputation does not fill it again."""

    def __init__(self):
        self._references = []

    def append(self, holder):
        self._references.append(weakref.ref(holder))

    def __len__(self):
        return len(self._references)

    def __getitem__(self, index):
        return self._references[index]()


def checkpoint(function, *args, use_reentrant=None, determinism_check="default", debug=False, early_stop=True,
               preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)``, keeping only its inputs for backward and recomputing the rest.

    ``use_reentrant=False`` is the form torch recommends (``checkpointed_forward``). Left out, torch
    warns and takes the old form, ``use_reentrant=True`` (``CheckpointFunction``), as minigrad does.
    The non-reentrant form's options (``_CheckedBody``): ``early_stop`` (unless
    ``set_checkpoint_early_stop`` says otherwise) stops a recomputation once every saved tensor is
    made again; ``determinism_check`` ("default": shape, dtype and device; or "none") compares what
    a recomputation saves with what the forward saved; ``debug`` (unless
    ``set_checkpoint_debug_enabled`` says otherwise) adds to its errors what both saved, and where.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
            "is recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if determinism_check not in _METADATA:
        raise ValueError(f"determinism_check should be one of {list(_METADATA)}, but got {determinism_check}")
    function = _CheckedBody(function, early_stop if _early_stop is None else _early_stop,
                            _METADATA[determinism_check], debug if _debug is None else _debug)
    if releases.CHECKPOINT_SAVES_A_PLACEHOLDER:  # an empty tensor saved (and unpacked) before the inputs
        def body(placeholder, *inputs, **keywords):
            return function(*inputs, **keywords)
        return checkpointed_forward(body, (Tensor(torch.empty(0), requires_grad=True), *args), kwargs,
                                    preserve_rng_state)
    return checkpointed_forward(function, args, kwargs, preserve_rng_state)


class CheckpointFunction(Function):
    """The reentrant checkpoint, torch's old form: a custom Function whose forward runs the body under
    no_grad (its graph keeps only the tensor arguments) and whose backward runs the body again with
    grad, then ``backward`` on that: a backward inside a backward, hence "reentrant".

    What follows from that, as in torch: the output requires grad only if a tensor argument does (a
    parameter used inside, on data that requires none, gets no gradient); gradients reach only the
    arguments, through ``.grad``, so ``autograd.grad`` and ``backward(inputs=...)`` cannot see
    through it; keyword arguments are refused; the whole body runs again in each backward."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(arg.requires_grad for arg in args if isinstance(arg, Tensor)):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        ctx.run_function = run_function
        ctx.rng = _rng_state(args) if preserve_rng_state else None
        ctx.inputs, ctx.tensor_indices = list(args), [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        for i in ctx.tensor_indices:
            ctx.inputs[i] = None  # saved, below: version-checked, and freed with the graph
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not grad_mode._state.checkpoint_valid:
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        detached = [arg.detach().requires_grad_(arg.requires_grad) if isinstance(arg, Tensor) else arg
                    for arg in inputs]
        outputs = rerun(ctx.run_function, detached, {}, ctx.rng)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        pairs = [(out, grad) for out, grad in zip(outputs, grads) if isinstance(out, Tensor) and out.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([out for out, _ in pairs], [grad for _, grad in pairs])
        return (None, None, *[arg.grad if isinstance(arg, Tensor) else None for arg in detached])


# BEGIN EXERCISE 8
def checkpointed_forward(function, args, kwargs, preserve_rng_state):
    """Run ``function`` once and return its output; its graph keeps none of the tensors the body
    saves, only what a recomputation needs.

    Without grad mode nothing is saved, so the body just runs. Otherwise what the recomputation will
    need is kept: the body, its inputs (an in-place edit of one after the forward makes backward
    fail, as for any saved tensor), its keyword arguments and the random state the body starts from.
    """
    if not grad_mode.is_grad_enabled():
        return function(*args, **kwargs)
    inputs = [save(arg) if isinstance(arg, Tensor) else arg for arg in args]
    frame = _Frame(function, inputs, kwargs, _rng_state(args) if preserve_rng_state else None)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)
# END EXERCISE 8


class _Frame:
    """One checkpointed call: its saved inputs, the random state it started with (or None), and the
    holders its forward handed out, in the order the tensors were saved."""

    def __init__(self, function, inputs, kwargs, rng):
        self.function, self.inputs, self.kwargs, self.rng = function, inputs, kwargs, rng
        self.holders = _Holders()

    # BEGIN EXERCISE 8
    def pack(self, tensor):
        """The forward's pack hook: the graph keeps what it returns in place of ``tensor``. It does not
        keep ``tensor`` alive, and ``unpack`` finds in it the tensor the recomputation makes."""
        holder = _Holder()
        self.holders.append(holder)
        return holder
    # END EXERCISE 8

    # BEGIN EXERCISE 8
    def unpack(self, holder):
        """The unpack hook: the tensor ``pack`` stood in for (``holder`` is what it returned). The body
        runs again once in each backward that unpacks; once handed out, the tensor is not kept, so
        the graph does not keep it alive and the next backward recomputes again."""
        if holder.value is None:
            self.recompute()
        value, holder.value = holder.value, None
        return value
    # END EXERCISE 8

    # BEGIN EXERCISE 8
    def recompute(self):
        """Run the function again (``rerun``: grad mode on, the forward's random numbers) from the saved
        inputs (refused if one was edited in place), making again, detached, the tensors the forward
        saved, for ``unpack``; stop as soon as the last is made (the rest of the body does not run
        again). CheckpointError, in torch's words, if the body saves fewer tensors than the forward, or more."""
        filled = 0

        def fill(tensor):
            """The pack hook of the recomputation: fill the next holder with the tensor, detached as
            torch does (one that needs no grad as it is: unpacked, it is the very object saved): the
            recomputation's own graph is thrown away. That graph keeps it in a holder of its own,
            not as a tensor: like torch's, what it saves is not the user's graphs' (minigrad.memory
            does not count it)."""
            nonlocal filled
            if filled == len(self.holders):
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      "than during the original forward pass.")
            kept = _Holder()
            kept.value = tensor.detach() if tensor.requires_grad else tensor
            holder = self.holders[filled]
            if holder is not None:
                holder.value = kept.value
            filled += 1
            if filled == len(self.holders):
                raise _StopRecomputation
            return kept

        args = [arg.unpack(None) if isinstance(arg, (SavedTensor, PackedTensor)) else arg for arg in self.inputs]
        try:
            with saved_tensors_hooks(fill, lambda kept: kept.value):
                rerun(self.function, args, self.kwargs, self.rng)
        except _StopRecomputation:
            return
        raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the original "
                              f"forward and recomputation.\nNumber of tensors saved during forward: {len(self.holders)}"
                              f"\nNumber of tensors saved during recomputation: {filled}.")
    # END EXERCISE 8


# BEGIN EXERCISE 8
def rerun(function, args, kwargs, rng):
    """Run ``function(*args, **kwargs)`` again, as both checkpoints' backward does (``_Frame.recompute``,
    ``CheckpointFunction.backward``): with grad mode on, from the random state ``rng`` the forward
    started from (when it is None, from the generators as they are), leaving the generators outside
    as they were. Returns what ``function`` returns."""
    devices = [] if rng is None else rng[1]
    with torch.random.fork_rng(devices=devices, enabled=rng is not None), enable_grad():
        if rng is not None:
            _set_rng_state(rng)
        return function(*args, **kwargs)
# END EXERCISE 8


def _rng_state(args):
    """The CPU generator's state, and that of each CUDA device the inputs live on."""
    devices = sorted({arg._data.device.index or 0 for arg in args if isinstance(arg, Tensor) and arg._data.is_cuda})
    return torch.get_rng_state(), devices, [torch.cuda.get_rng_state(d) for d in devices]


def _set_rng_state(state):
    cpu, devices, device_states = state
    torch.set_rng_state(cpu)
    for device, device_state in zip(devices, device_states):
        torch.cuda.set_rng_state(device_state, device)


_early_stop = None
"""What ``set_checkpoint_early_stop`` says in force (None: each checkpoint's ``early_stop``)."""
_debug = None
"""What ``set_checkpoint_debug_enabled`` says in force (None: each checkpoint's ``debug``)."""


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether the checkpoints made in this block stop their recomputations early, whatever their
    ``early_stop`` says; it counts when the forward runs (the backward may come after the block)."""
    global _early_stop
    previous, _early_stop = _early_stop, enable
    try:
        yield
    finally:
        _early_stop = previous


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Whether the checkpoints made in this block are in debug mode, whatever their ``debug`` says
    (None: as it says)."""
    global _debug
    previous, _debug = _debug, enabled
    try:
        yield
    finally:
        _debug = previous


def _shape_dtype_device(tensor):
    return {"shape": tensor._data.shape, "dtype": tensor._data.dtype, "device": tensor._data.device}


_METADATA = {"default": _shape_dtype_device, "none": lambda tensor: None}
"""``determinism_check``'s choices: what is compared of each tensor saved, in the forward and again."""


class _Box:
    """What the graph keeps from ``_CheckedBody``'s hooks: not a tensor (``minigrad.memory`` counts
    tensors a graph saves, and torch's measure does not see these), one value."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value


def _unbox(box):
    return box.value


class _CheckedBody:
    """The body, run with the options of torch's non-reentrant checkpoint. The frame's hooks keep the
    tensors the forward saves and make them again; a pair of saved-tensor hooks of this layer, above
    the frame's while the body runs, sees each tensor saved, in order, in the forward and in each
    recomputation, and hands it on. So it compares what each recomputation saves with what the
    forward saved (torch's ``check_recomputed_tensors_match``, with its errors), runs a recomputation
    to the end of the body when early stop is off (holding on to the frame's stop until then, and
    keeping the tensors saved past the forward's), and, in debug mode, logs each tensor saved and
    where, for the error torch writes then. (minigrad has no dispatcher: where torch logs every
    operator, this log has the tensors saved.)"""

    def __init__(self, function, early_stop, metadata_fn, debug):
        self.function, self.early_stop, self.metadata_fn = function, early_stop, metadata_fn
        self.logs = ([], []) if debug else None
        """In debug mode: what the forward saved, and what the latest recomputation did: (line, stack)."""
        self.saved, self.metadata = [], []
        """What the forward's graph keeps (weakly: dead once its node frees it), and its metadata."""
        self.forward_started = self.forward_completed = False

    def __call__(self, *args, **kwargs):
        if not grad_mode.is_grad_enabled():  # no frame: nothing saved, nothing recomputed
            return self.function(*args, **kwargs)
        if self.forward_started:
            return self._recompute(args, kwargs)
        self.forward_started = True
        pack, unpack = grad_mode._state.saved_tensors_hooks[-1]  # the frame's

        def watching_pack(tensor):
            self.metadata.append(self.metadata_fn(tensor))
            self._log(0, tensor)
            kept = _Box(pack(tensor))
            self.saved.append(weakref.ref(kept))
            return kept

        def watching_unpack(kept):
            try:
                return unpack(kept.value)
            except CheckpointError as error:
                if self.logs is None:
                    raise
                raise CheckpointError(self._debug_message()) from error

        with saved_tensors_hooks(watching_pack, watching_unpack):
            output = self.function(*args, **kwargs)
        self.forward_completed = True
        return output

    def _recompute(self, args, kwargs):
        """One recomputation, under the frame's recomputing hooks (``fill``, ``unfill``): the body
        again, each tensor saved handed to ``fill`` as long as the forward saved as many. The frame
        stops the body at the last (an exception of its own): then, or at the body's end, what was
        saved is checked."""
        fill = grad_mode._state.saved_tensors_hooks[-1][0]
        count, recomputed, stop, mismatch_allowed = 0, [], None, False
        if self.logs is not None:
            self.logs[1].clear()

        def watching_fill(tensor):
            nonlocal count, stop, mismatch_allowed
            self._log(1, tensor)
            count += 1
            if count > len(self.saved):
                if self.forward_completed:
                    raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                          f"than during the original forward pass.\n{_tip()}")
                mismatch_allowed = True  # a backward inside the forward: it has saved fewer so far
                return _Box(tensor.detach() if tensor.requires_grad else tensor)
            recomputed.append(self.metadata_fn(tensor))
            if count == len(self.saved) and self.early_stop:
                self._check(count, recomputed)
            try:
                fill(tensor)
            except Exception as stopped:  # noqa: BLE001 - the frame's early stop, whatever its class
                if self.early_stop or count < len(self.saved):
                    raise
                stop = stopped
            return _Box(tensor.detach() if tensor.requires_grad else tensor)

        served, _serving.task = getattr(_serving, "task", None), grad_mode._state.graph_task
        try:
            with saved_tensors_hooks(watching_fill, _unbox):
                self.function(*args, **kwargs)
        finally:
            _serving.task = served
        if not mismatch_allowed:
            self._check(count, recomputed)
        if stop is not None:
            try:
                raise stop
            finally:
                stop = None  # the exception's traceback holds this frame: no cycle through it

    def _check(self, count, recomputed):
        """torch's checks of a recomputation: as many tensors saved as in the forward, each (of those
        the graph still holds) with the metadata it had there."""
        if count != len(self.saved):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the original "
                                  f"forward and recomputation.\nNumber of tensors saved during forward: {len(self.saved)}"
                                  f"\nNumber of tensors saved during recomputation: {count}.\n{_tip()}")
        different = "".join(f"tensor at position {i}:\nsaved metadata: {saved}\nrecomputed metadata: {again}\n"
                            for i, (kept, saved, again) in enumerate(zip(self.saved, self.metadata, recomputed))
                            if kept() is not None and saved != again)
        if different:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                                  f"metadata than during the forward pass.\n{different}.\n{_tip()}")

    def _log(self, which, tensor):
        if self.logs is not None:
            log = self.logs[which]
            stack = [frame for frame in traceback.extract_stack()[:-2] if not frame.filename.startswith(_MINIGRAD)]
            log.append((f"${len(log)}: {tensor_description(tensor._data)} saved", stack))

    def _debug_message(self):
        def traces(log, label):
            return "".join(f"{line}   ({i + 1} of {len(log)} in {label})\n\n"
                           + "".join(f"{frame.filename}:{frame.lineno}:{frame.name}\n" for frame in stack) + "\n\n"
                           for i, (line, stack) in enumerate(log))
        forward, recomputation = self.logs
        return _DEBUG_MESSAGE.format(forward_traces=traces(forward, "original"),
                                     recompute_traces=traces(recomputation, "recompute"),
                                     forward_ops="\n".join(line for line, _ in forward),
                                     recompute_ops="\n".join(line for line, _ in recomputation))


_MINIGRAD = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""Frames in minigrad's own files are left out of the debug log's stacks, as torch leaves out its dispatcher's."""


def _tip():
    """The end of torch's checkpoint errors."""
    tip = ("\nTip: To see a more detailed error message, either pass `debug=True` to\n"
           "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
           "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
           "enable checkpoint\u2011debug mode globally.\n")
    if releases.CHECKPOINT_TIP_NAMES_COMPILE:
        tip += ("\nIf this error occurs under torch.compile with automatic_dynamic_shapes enabled,\n"
                "it may be because the recomputation selected a different compiled graph than the\n"
                "forward pass (e.g., a dynamic graph instead of the original static graph).\n"
                "To fix this, either:\n"
                "  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as\n"
                "    dynamic upfront, avoiding the static-to-dynamic transition.\n"
                "  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache\n"
                "    reordering, which can change which graph is checked first between forward\n"
                "    and recompute.\n"
                "See https://github.com/pytorch/pytorch/issues/166926 for more details and\n"
                "workaround examples.\n")
    return tip


_DEBUG_MESSAGE = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.
Scroll all the way down for guidance on how to navigate these logs.

+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        1. Stack traces of the operators that ran in the original forward     |
+------------------------------------------------------------------------------+

{forward_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        2. Stack traces of the operators that ran during recomputation        |
+------------------------------------------------------------------------------+

{recompute_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|       3. Log of operators in the original forward and recomputation          |
+------------------------------------------------------------------------------+
(Scroll up to correlate stack traces with each operation listed below. This
 helps identify their source in the code.)

IMPORTANT: Differences in "detach" calls between the original forward and the
           recomputation are expected. They are introduced by the checkpointing
           mechanism and can be ignored.

Operations executed during the original forward:

{forward_ops}

Operations executed during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, you can do the following:

 1) Compare the operators ran during original forward and recomputation to
    see where they differ. These operators are printed above in the order they
    were executed.

 2) Review the stack trace for each operator to locate its invocation source.
    Each operator's stack trace is printed in their execution order.

 Note that the logs can be quite long. Here's how they are structured:
 (Tip: you can Ctrl-f for these headers)

 1. Stack traces of the operators that ran in the original forward
 2. Stack traces of the operators that ran during recomputation
 3. Log of operators in the original forward and recomputation
 4. Error message                                             <--- You are here
--------------------------------------------------------------------------------
"""
"""torch's error in debug mode (its ``_checkpoint_error_template``)."""
