"""``torch.autograd.graph.GradientEdge``: a place in the graph where a gradient arrives — input
``output_nr`` of ``node`` — named without the tensor that led there, so that autograd.grad and
backward can take it as one of their ``inputs`` even once that tensor has moved on (an in-place op
gave it a new grad_fn) or is gone; and as what they differentiate, a root, where the edge is one
``get_gradient_edge`` made (``output_metadata``)."""
import weakref
from typing import NamedTuple

from ..function import Node


class GradientEdge(NamedTuple):
    node: Node
    output_nr: int
    ownership_token: Node | None = None
    """torch's way to keep a graph made of C++ nodes alive through a Python node; minigrad's nodes
    are Python objects that ``node`` itself keeps alive: always None."""


_SEEN = weakref.WeakKeyDictionary()
"""node -> {output_nr: (shape, dtype, device)} of the tensors get_gradient_edge was given. A root's
gradient is made and checked against these; torch reads them off the node (``node._input_metadata``),
and minigrad's nodes do not keep them, so the cost falls on get_gradient_edge rather than every op."""


def get_gradient_edge(tensor):
    """Where the gradient of ``tensor`` goes: its grad_fn's input ``output_nr``, or its leaf's
    AccumulateGrad. ``autograd.grad(loss, get_gradient_edge(x))`` is ``autograd.grad(loss, x)``, and
    ``autograd.backward(get_gradient_edge(y))`` is ``autograd.backward(y)``, even once y is gone."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    node, output_nr = tensor._gradient_edge()
    _SEEN.setdefault(node, {})[output_nr] = (tensor.shape, tensor.dtype, tensor.device)
    return GradientEdge(node, output_nr)


def output_metadata(edge, index):
    """The shape, dtype and device of the tensor whose gradient ``edge`` (output ``index`` of
    backward or autograd.grad) receives, as get_gradient_edge saw it."""
    seen = _SEEN.get(edge.node, {}).get(edge.output_nr)
    if seen is None:
        raise NotImplementedError(f"output {index} is a GradientEdge that get_gradient_edge did not make: minigrad's "
                                  "nodes keep nothing of their outputs, so it differentiates only those")
    return seen
