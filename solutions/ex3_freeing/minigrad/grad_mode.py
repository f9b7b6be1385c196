"""Grad modes: whether ops record the backward graph. Thread-local, as in torch."""
import functools
import threading


class _State(threading.local):
    grad_enabled = True
    inference = False


_state = _State()


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
