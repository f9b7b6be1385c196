"""Autograd's switches: grad modes (whether ops record the backward graph), the saved-tensor
hooks and autocast's state in force, thread-local as in torch; anomaly detection, global as in torch."""
import functools
import inspect
import sys
import threading

from . import user_warnings


class _State(threading.local):
    grad_enabled = True
    inference = False
    saved_tensors_hooks = ()
    """The stack of (pack, unpack) pairs of ``autograd.graph.saved_tensors_hooks``; the last applies."""
    saved_tensors_hooks_disabled = None
    """The message ``autograd.graph.disable_saved_tensors_hooks`` refuses new hooks with, while in force."""
    graph_task = None
    """The backward that runs (``engine.GraphTask``): checkpoint recomputes once in each; final
    callbacks and multi-grad hooks ask it what runs."""
    checkpoint_valid = True
    """False inside a backward that runs only part of the graph (autograd.grad, backward(inputs=)), or
    inside one such: the reentrant checkpoint refuses to run there, as in torch."""
    reentrant_depth = 0
    """How many backwards run nested in this thread's stack, inside a node's backward (the engine's
    ``current_depth``): past ``engine.MAX_DEPTH`` the next one runs on a fresh thread."""
    running_node = None
    """The node whose backward runs under anomaly mode: nodes made meanwhile record it as their parent."""
    multithreading_enabled = True
    """``autograd.set_multithreading_enabled``: only remembered (see there)."""
    autocast_enabled = frozenset()
    """The device types autocast is on for (``minigrad.autocast_mode``): empty, the ops of its lists
    cast nothing, at the cost of this one test."""
    autocast_dtypes = {}
    """Each device type's autocast dtype, as the last block set it (replaced, never changed in place)."""
    autocast_cache_enabled = True
    autocast_nesting = 0

    def __init__(self):
        """Each thread's own dict holds the two grad modes and what the engine keeps of a backward
        from the start, so that ``Function.apply`` and ``engine.run_backward`` read and set them there
        (``_state.__dict__``): one thread-local lookup per op or backward, where each attribute of a
        threading.local costs about as much as that lookup."""
        vars(self).update({name: getattr(_State, name) for name in (
            "grad_enabled", "inference", "saved_tensors_hooks", "graph_task", "checkpoint_valid", "reentrant_depth")})


_state = _State()


class _Anomaly:
    """``autograd.detect_anomaly``: nodes remember where the forward made them; ``check_nan`` makes
    backward fail at the first node that returns NaN. Both are the instance's own attributes, not the
    class's defaults: ``enabled`` is read for every node made and run, and Python reads an instance's
    own attribute faster."""

    def __init__(self):
        self.enabled = False
        self.check_nan = True


anomaly = _Anomaly()


def is_grad_enabled():
    return _state.grad_enabled


def is_inference_mode_enabled():
    return _state.inference


def is_multithreading_enabled():
    return _state.multithreading_enabled


class _Mode:
    """Context manager that is also a decorator, like torch's grad-mode classes. ``with mode:`` calls
    ``mode._enter()`` and, however the block ends, ``mode._exit()``; each mode says what it switches
    to in ``_set``. As a decorator, every call of the function runs in a fresh mode made from
    ``self._args`` (what this one was made with), so calls that nest or recurse each restore their own."""

    _args = ()

    def __call__(self, fn):
        return _decorate(lambda: self.__class__(*self._args), fn)

    def __enter__(self):
        self._enter()

    def __exit__(self, *exc):
        self._exit()

    # BEGIN EXERCISE 5
    def _enter(self):
        """Switch to this mode (``self._set()``), so that ``_exit`` can put back the modes in force
        now: each mode object its own, so that blocks nest."""
        self._was_grad_enabled = _state.grad_enabled
        # BEGIN NEW IN EXERCISE 5
        self._was_inference = _state.inference
        # END NEW IN EXERCISE 5
        self._set()
    # END EXERCISE 5

    # BEGIN EXERCISE 5
    def _exit(self):
        """Put back the modes that were in force when this one was entered: not "grad on", since a
        block may sit inside another mode's block."""
        _state.grad_enabled = self._was_grad_enabled
        # BEGIN NEW IN EXERCISE 5
        _state.inference = self._was_inference
        # END NEW IN EXERCISE 5
    # END EXERCISE 5


def _decorate(make_mode, fn):
    """``fn`` run in a fresh mode from ``make_mode()`` at each call, as torch's context_decorator
    (torch/utils/_contextlib.py) wraps it. A generator function's generator runs in the mode only
    while it runs: from each resumption (next, send, throw, close) to its next yield, its caller
    keeping its own mode in between. A class is decorated as the call that constructs it (torch
    still does that, with a warning that it is deprecated)."""
    if inspect.isclass(fn):
        user_warnings.warn("Decorating classes is deprecated and will be disabled in future versions. You should "
                           "only decorate functions or methods. To preserve the current behavior of class decoration, "
                           "you can directly decorate the `__init__` method and nothing else.", FutureWarning, __file__,
                           frames=2)
        cls = fn

        def fn(*args, **kwargs):
            return cls(*args, **kwargs)

    if inspect.isgeneratorfunction(fn):
        return _decorate_generator(make_mode, fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with make_mode():
            return fn(*args, **kwargs)
    return wrapper


def _decorate_generator(make_mode, fn):
    @functools.wraps(fn)
    def generator(*args, **kwargs):
        inner = fn(*args, **kwargs)
        try:
            with make_mode():
                response = inner.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_mode():
                        inner.close()
                    raise
                except BaseException:
                    with make_mode():
                        response = inner.throw(*sys.exc_info())
                else:
                    with make_mode():
                        response = inner.send(request)
        except StopIteration as stop:
            return stop.value
    return generator


class _NoArgumentMode(_Mode):
    """A mode that takes no argument also decorates without parentheses (``@torch.enable_grad``) and
    takes the function to wrap as its argument (``torch.no_grad(f)``), as torch's
    _NoParamDecoratorContextManager does."""

    def __new__(cls, fn=None):
        if fn is None:
            return super().__new__(cls)
        return cls()(fn)


class no_grad(_NoArgumentMode):
    def _set(self):
        _state.grad_enabled = False


class enable_grad(_NoArgumentMode):
    def _set(self):
        _state.grad_enabled = True


class set_grad_enabled(_Mode):
    """Takes effect on construction (torch.set_grad_enabled(False) works as a call) and undoes it on exit."""

    def __init__(self, mode):
        if type(mode) is not bool:
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        self._args = (mode,)
        self._enter()

    def __call__(self, fn):
        """As a decorator it must not stay switched: undo the switch made on construction; each call
        of the function switches on its own."""
        self._exit()
        return super().__call__(fn)

    def __enter__(self):
        """Switched already, on construction."""

    def _set(self):
        _state.grad_enabled = bool(self._args[0])


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside are inference tensors, which can never be saved for
    backward. ``inference_mode(False)`` switches back to normal mode (grad mode on)."""

    def __new__(cls, mode=True):
        """Anything but a bool is the function to decorate: ``torch.inference_mode(f)``."""
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self._args = (mode,)

    # BEGIN EXERCISE 5
    def _set(self):
        """``inference_mode()``: grad mode off, inference mode on; ``inference_mode(False)``: the reverse."""
        _state.grad_enabled = not self._args[0]
        _state.inference = self._args[0]
    # END EXERCISE 5


class set_multithreading_enabled:
    """torch runs a backward on a worker thread per accelerator unless this switch is off; minigrad's
    backward always runs on the calling thread (as torch's does on the CPU), so the switch is only
    remembered, for code that sets and reads it. As torch's: it takes effect on construction (a call
    works as a function), a block puts back what was in force at construction, and as a decorator
    each call of the function runs with its own copy (``clone``)."""

    def __init__(self, mode):
        self.prev = _state.multithreading_enabled
        _state.multithreading_enabled = self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.multithreading_enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        return _decorate(self.clone, fn)
