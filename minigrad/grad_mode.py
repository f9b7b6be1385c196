"""Autograd's switches: grad modes (whether ops record the backward graph) and the saved-tensor
hooks in force, thread-local as in torch; anomaly detection, global as in torch."""
import functools
import threading


class _State(threading.local):
    grad_enabled = True
    inference = False
    saved_tensors_hooks = ()
    """The stack of (pack, unpack) pairs of ``autograd.graph.saved_tensors_hooks``; the last applies."""


_state = _State()


class _Anomaly:
    """``autograd.detect_anomaly``: nodes remember where the forward made them; ``check_nan`` makes
    backward fail at the first node that returns NaN."""

    enabled = False
    check_nan = True


anomaly = _Anomaly()


def is_grad_enabled():
    return _state.grad_enabled


def is_inference_mode_enabled():
    return _state.inference


class _Mode:
    """Context manager that is also a decorator, like torch's grad-mode classes."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args = ()

    def __enter__(self):
        self._saved = (_state.grad_enabled, _state.inference)
        self._set()

    def __exit__(self, *exc):
        _state.grad_enabled, _state.inference = self._saved


class no_grad(_Mode):
    def _set(self):
        _state.grad_enabled = False


class enable_grad(_Mode):
    def _set(self):
        _state.grad_enabled = True


class set_grad_enabled(_Mode):
    """Takes effect on construction (torch.set_grad_enabled(False) works as a call) and undoes it on exit."""

    def __init__(self, mode):
        self._args = (mode,)
        self._saved = (_state.grad_enabled, _state.inference)
        _state.grad_enabled = bool(mode)

    def __call__(self, fn):
        _state.grad_enabled, _state.inference = self._saved
        return super().__call__(fn)

    def __enter__(self):
        pass


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside can never be saved for backward."""

    def __init__(self, mode=True):
        self._args = (mode,)

    def _set(self):
        _state.grad_enabled = not self._args[0]
        _state.inference = self._args[0]
