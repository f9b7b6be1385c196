"""``torch.autograd.Variable``, the old name of Tensor, which torch keeps for its engine handle:
``Variable._execution_engine.queue_callback(fn)`` is how code running inside a backward (a hook, a
custom Function's backward) asks for ``fn()`` once that backward's last node has run."""
from .. import grad_mode


class _ImperativeEngine:
    """torch's ``_EngineBase`` as Python sees it: the running backward's entry point for callbacks."""

    def queue_callback(self, callback):
        task = grad_mode._state.graph_task
        if task is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        task.queue_callback(callback)


class Variable:
    """Only the engine handle: ``Variable(tensor)``, torch's deprecated way to make a tensor, is not minigrad's."""

    _execution_engine = _ImperativeEngine()
