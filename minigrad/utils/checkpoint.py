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
inside it. ``checkpoint_sequential`` checkpoints a sequence of modules segment by segment. Both forms
run the body again under the autocast state of its forward (``autocast_mode.preserved``), as torch's.

Torch's options of the non-reentrant form, and its errors about what a recomputation saves, are in
``minigrad/utils/checkpoint_options.py``. ``context_fn`` gives two context managers, for the forward
and for each recomputation: selective checkpointing (``create_selective_checkpoint_contexts``) is
torch's own pair of dispatch modes, which sit below autograd in torch; minigrad's ops compute on
torch storage, so these modes see (and cache) the aten ops minigrad's kernels run, and a policy names
them as ``torch.ops.aten.<op>.<overload>`` (``minigrad.ops.aten``).
"""
import contextlib
import weakref

import torch
from torch.utils.checkpoint import (  # noqa: F401 - minigrad's, as torch's: see above
    CheckpointPolicy, SelectiveCheckpointContext, create_selective_checkpoint_contexts)

from .. import autocast_mode, grad_mode, releases, user_warnings
from ..autograd.api import backward
from ..autograd.graph import saved_tensors_hooks
from ..function import Function, PackedTensor, SavedTensor, save
from ..grad_mode import enable_grad, no_grad
from ..nn.container import Sequential
from ..tensor import Tensor
from . import checkpoint_options
from .checkpoint_options import (  # noqa: F401 - torch.utils.checkpoint's names
    _METADATA, CheckpointError, GraphExecGroup, _CheckedBody, _serving, served_task, set_checkpoint_debug_enabled,
    set_checkpoint_early_stop)

__all__ = ["CheckpointError", "CheckpointFunction", "CheckpointPolicy", "GraphExecGroup", "SelectiveCheckpointContext",
           "check_backward_validity", "checkpoint", "checkpoint_sequential", "create_selective_checkpoint_contexts",
           "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop"]


class _StopRecomputation(Exception):
    """Every holder is filled: the rest of the body need not run again."""


class _Holder:
    """What the graph keeps in place of a saved tensor: the recomputed tensor, once there is one.

    A recomputation serves the backward that ran it (``grad_mode._state.graph_task``), as torch's
    serves its graph task: a holder filled for another backward is empty to this one, which
    recomputes (a body whose outputs are backpropagated one at a time runs once per backward). A
    recomputed tensor is handed out once in each backward: a holder emptied in the backward that
    runs, asked for its value again, raises. Outside a backward it is simply empty again (each
    access recomputes). Under a ``GraphExecGroup`` the group stands for the backward: the backwards
    made in it share what one recomputation made. The backwards are held weakly: a backward holds its
    graph, which holds this holder."""

    __slots__ = ("_value", "_filled_in", "_emptied_in", "__weakref__")

    def __init__(self):
        self._value = self._filled_in = self._emptied_in = None

    @property
    def value(self):
        if self._value is None and self._emptied_in is not None and _runs_now(self._emptied_in):
            overlap = ("" if getattr(_serving, "group", None) is None else
                       "Performing two backward calls that overlap (i.e. require the same saved activation in order "
                       "to compute gradients) is not allowed while under the torch.utils.checkpoint.GraphExecGroup "
                       "context. ")
            raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                                  f"unpacked once. {overlap}If you are calling ctx.saved_tensors in backward, make "
                                  "sure to do so only once. Otherwise please open an issue with details on your use case.")
        return self._value if _runs_now(self._filled_in) else None

    @value.setter
    def value(self, value):
        """Filled for the backward the recomputation serves (a backward inside the body, which saves
        through the recomputation too, does not change it, as torch keys it by the graph task that
        started the recomputation); emptied in the one that runs."""
        task = getattr(_serving, "task", None) if value is not None else None
        task = task or served_task()
        task = None if task is None else weakref.ref(task)
        if value is None:
            self._emptied_in = task
        else:
            self._filled_in = task
        self._value = value


def _runs_now(backward):
    """Whether ``backward`` (a weak reference to a backward, or None: outside any) is the one running,
    or the one the recomputation running serves."""
    task = served_task()
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


def noop_context_fn():
    """checkpoint's default ``context_fn``: nothing around the forward, nothing around the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, preserve_rng_state=True, **kwargs):
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
        user_warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
            "is recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            UserWarning, __file__)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(autocast_mode.preserved(function), preserve_rng_state, *args)
    debug = debug if checkpoint_options._debug is None else checkpoint_options._debug
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _METADATA:
        raise ValueError(f"determinism_check should be one of {list(_METADATA)}, but got {determinism_check}")
    early_stop = early_stop if checkpoint_options._early_stop is None else checkpoint_options._early_stop
    function = autocast_mode.preserved(_CheckedBody(function, early_stop,
                                                    _METADATA[determinism_check], debug, context_fn()))
    if releases.CHECKPOINT_SAVES_A_PLACEHOLDER:  # an empty tensor saved (and unpacked) before the inputs
        def body(placeholder, *inputs, **keywords):
            return function(*inputs, **keywords)
        return checkpointed_forward(body, (Tensor(torch.empty(0), requires_grad=True), *args), kwargs,
                                    preserve_rng_state)
    return checkpointed_forward(function, args, kwargs, preserve_rng_state)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """``functions`` (an ``nn.Sequential`` or a list of modules or functions) run one after another on
    ``input``, cut into ``segments`` chunks, each checkpointed but the last, as torch's: left out,
    ``use_reentrant`` warns (in its own words) and takes the old form, as ``checkpoint`` does."""
    if use_reentrant is None:
        user_warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            UserWarning, __file__)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run(start, end):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1  # the last segment runs as it is
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


def check_backward_validity(inputs):
    """torch's: a warning, at the caller's line, where no tensor among ``inputs`` requires grad (the
    checkpoint's output then requires none, and nothing used inside it gets a gradient)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        user_warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                           __file__)


class CheckpointFunction(Function):
    """The reentrant checkpoint, torch's old form: a custom Function whose forward runs the body under
    no_grad (its graph keeps only the tensor arguments) and whose backward runs the body again with
    grad, then ``backward`` on that: a backward inside a backward, hence "reentrant".

    What follows from that, as in torch: the output requires grad only if a tensor argument does (a
    parameter used inside, on data that requires none, gets no gradient); gradients reach only the
    arguments, through ``.grad``, so ``autograd.grad`` and ``backward(inputs=...)`` cannot see
    through it; keyword arguments are refused; the whole body runs again in each backward."""

    python_in_torch = True

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
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
