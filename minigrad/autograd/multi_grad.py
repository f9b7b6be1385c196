"""``torch.autograd.graph.register_multi_grad_hook``: one hook for the gradients of several tensors,
called once per backward, built as torch builds it from ordinary tensor hooks that ask the running
backward (``grad_mode._state.graph_task``) what it will run."""
import functools
import weakref

from .. import grad_mode
from ..utils.hooks import RemovableHandle

MODES = ("all", "any")


class _MultiHandle(RemovableHandle):
    """The handles of the tensor hooks behind one multi-grad hook: ``remove()`` removes them all."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``mode="all"``: ``fn(grads)`` once the gradients of all the tensors this backward computes have
    arrived, one per tensor, None for those it does not compute (a tensor outside the graph, or not
    needed for backward's ``inputs=``). ``mode="any"``: ``fn(grad)`` with the first gradient to arrive.
    Each backward counts for itself (concurrent ones in several threads too); a backward that fails
    midway leaves no trace on the next."""
    if mode not in MODES:
        raise ValueError(f"Expects mode to be one of {MODES} but got {mode}")
    if mode == "any":
        hook = _first_of_each_backward(fn)
        return _MultiHandle(tuple(t.register_hook(hook) for t in tensors if t.requires_grad))
    nodes = [t._gradient_edge()[0] for t in tensors]  # kept alive: a leaf's AccumulateGrad is held weakly
    if None in nodes:
        raise AssertionError("Expected gradient function to be set")
    arrived = weakref.WeakKeyDictionary()  # each running backward: the gradients so far, one slot per tensor

    def hook_for(index):
        def hook(grad):
            task = grad_mode._state.graph_task
            if task not in arrived:
                arrived[task] = ([None] * len(nodes), sum(map(task.will_execute, nodes)), [0])
            grads, expected, count = arrived[task]
            grads[index] = grad
            count[0] += 1
            if count[0] == expected:
                del arrived[task]
                fn(grads)
        return hook

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))


def _first_of_each_backward(fn):
    called_in = weakref.WeakSet()

    @functools.wraps(fn)
    def hook(grad):
        task = grad_mode._state.graph_task
        if task not in called_in:
            called_in.add(task)
            fn(grad)
    return hook
