"""The options of torch's non-reentrant checkpoint, around minigrad's (``minigrad.utils.checkpoint``):
``early_stop``, ``determinism_check``, ``debug`` and ``context_fn``, the switches
``set_checkpoint_early_stop`` and ``set_checkpoint_debug_enabled``, and the errors they raise in
torch's words. Exercise 8 has learners write the checkpoint's frame, of any design: these work with
whichever, as a layer around the body (``_CheckedBody``)."""
import contextlib
import os
import threading
import traceback
import weakref

from .. import grad_mode, releases
from ..autograd.graph import saved_tensors_hooks
from ..saved_tensors import tensor_description


class CheckpointError(RuntimeError):
    """The recomputation did not save what the original forward saved."""


_serving = threading.local()
"""In this thread: ``task``, the backward the recomputation running serves (set by ``_CheckedBody``);
``group``, the ``GraphExecGroup`` in force."""

_early_stop = None
"""What ``set_checkpoint_early_stop`` says in force (None: each checkpoint's ``early_stop``)."""
_debug = None
"""What ``set_checkpoint_debug_enabled`` says in force (None: each checkpoint's ``debug``)."""


class GraphExecGroup:
    """torch's: the backward calls made in this block count as one for checkpoints: a recomputation
    serves them all, so each checkpointed body runs again at most once. They must then use disjoint
    parts of the graph, even with retain_graph: a tensor one of them unpacked is not there for another."""

    def __enter__(self):
        current = getattr(_serving, "group", None)
        if current is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group {current}")
        _serving.group = self
        return self

    def __exit__(self, *args):
        _serving.group = None


def served_task():
    """Who a recomputation serves, and a tensor it makes is for, as torch keys them: the
    ``GraphExecGroup`` in force, else the backward running (None outside both)."""
    return getattr(_serving, "group", None) or grad_mode._state.graph_task


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


def _detached(tensor):
    """A tensor a recomputation saves, out of its graph as torch's recomputation hook takes it (detached
    when it requires grad), its storage too: the dispatch modes of ``context_fn`` see that detach."""
    if not tensor.requires_grad:
        return tensor
    detached = tensor.detach()
    detached._data = tensor._data.detach()
    return detached


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

    def __init__(self, function, early_stop, metadata_fn, debug, contexts):
        self.function, self.early_stop, self.metadata_fn = function, early_stop, metadata_fn
        self.forward_context, self.recompute_context = contexts
        """``context_fn``'s: the forward runs in the first, each recomputation in the second."""
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

        with saved_tensors_hooks(watching_pack, watching_unpack), self.forward_context:
            output = self.function(*args, **kwargs)
        self.forward_completed = True
        return output

    def _recompute(self, args, kwargs):
        """One recomputation, under the frame's recomputing pack hook (``fill``): the body again, each
        tensor saved handed to ``fill`` (which fills the forward's holders) as long as the forward
        saved as many. The frame stops the body at the last (an exception of its own): then, or at
        the body's end, what was saved is checked. The recomputation's own graph keeps each tensor
        here, detached, as torch's recomputation hook gives it back; what ``fill`` returns is not
        needed. Holders filled meanwhile, a backward inside the body included, are filled for the
        backward that started the recomputation (``_serving``)."""
        fill = grad_mode._state.saved_tensors_hooks[-1][0]
        count, recomputed, stop, mismatch_allowed = 0, [], None, False
        if self.logs is not None:
            self.logs[1].clear()

        def watching_fill(tensor):
            nonlocal count, stop, mismatch_allowed
            self._log(1, tensor)
            tensor = _detached(tensor)  # first, as torch's recomputation hook does
            count += 1
            if count > len(self.saved):
                if self.forward_completed:
                    raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                          f"than during the original forward pass.\n{_tip()}")
                mismatch_allowed = True  # a backward inside the forward: it has saved fewer so far
                return _Box(tensor)
            recomputed.append(self.metadata_fn(tensor))
            if count == len(self.saved) and self.early_stop:
                self._check(count, recomputed)
            try:
                fill(tensor)
            except Exception as stopped:  # noqa: BLE001 - the frame's early stop, whatever its class
                if self.early_stop or count < len(self.saved):
                    raise
                stop = stopped
            return _Box(tensor)

        served, _serving.task = getattr(_serving, "task", None), served_task()
        try:
            with saved_tensors_hooks(watching_fill, _unbox), self.recompute_context:
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
