"""``torch.autograd.graph.GradientEdge``: a place in the graph where a gradient arrives — input
``output_nr`` of ``node`` — named without the tensor that led there, so that autograd.grad and
backward can take it as one of their ``inputs`` even once that tensor has moved on (an in-place op
gave it a new grad_fn) or is gone."""
from typing import NamedTuple

from ..function import Node


class GradientEdge(NamedTuple):
    node: Node
    output_nr: int
    ownership_token: Node | None = None
    """torch's way to keep a graph made of C++ nodes alive through a Python node; minigrad's nodes
    are Python objects that ``node`` itself keeps alive: always None."""


def get_gradient_edge(tensor):
    """Where the gradient of ``tensor`` goes: its grad_fn's input ``output_nr``, or its leaf's
    AccumulateGrad. ``autograd.grad(loss, get_gradient_edge(x))`` is ``autograd.grad(loss, x)``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    node, output_nr = tensor._gradient_edge()
    return GradientEdge(node, output_nr)
