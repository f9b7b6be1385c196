"""``torch.autograd.Variable``, the old name of Tensor. torch keeps it for old code, where
``Variable(t)`` returns a Tensor and ``isinstance(x, Variable)`` is ``isinstance(x, Tensor)``, and for
its engine handle: ``Variable._execution_engine.queue_callback(fn)`` is how code running inside a
backward (a hook, a custom Function's backward) asks for ``fn()`` once that backward's last node has run."""
from .. import creation, grad_mode
from ..tensor import Tensor


class _ImperativeEngine:
    """torch's ``_EngineBase`` as Python sees it: the running backward's entry point for callbacks."""

    def queue_callback(self, callback):
        task = grad_mode._state.graph_task
        if task is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        task.queue_callback(callback)


class VariableMeta(type):
    """``isinstance(x, Variable)`` is ``isinstance(x, Tensor)``, as torch's VariableMeta answers."""

    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """``Variable(data=None, requires_grad=False)`` returns a Tensor, as torch's does (``THPVariable_pynew``,
    torch/csrc/autograd/python_legacy_variable.cpp): ``data.detach()`` (the same memory and version
    counter, out of the graph), or an empty one of the default dtype, that requires grad if asked.
    torch's deprecated ``volatile``, ``_grad_fn`` and ``name`` arguments are not minigrad's."""

    _execution_engine = _ImperativeEngine()

    def __new__(cls, data=None, requires_grad=False):
        if data is None:
            var = creation.empty(0)
        elif isinstance(data, Tensor):
            var = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad and not (var._data.is_floating_point() or var._data.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        var._requires_grad = bool(requires_grad)
        return var
