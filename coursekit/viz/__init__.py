"""Pictures of the backward graph, and backward run one node at a time.

* ``describe(*tensors)``: the graph as plain data (``Graph``) — nodes by torch's name, edges, what
  each node saved and whether it is still alive; the same for a torch graph and a minigrad one.
* ``draw(graph)``: that description drawn with matplotlib (no Graphviz needed).
* ``Stepper(loss)``: minigrad's backward, paused before each node: ``step()`` runs one.
* ``stepper_widget(stepper)``: Next / Run to end buttons over the picture, for notebooks.
"""
from .graph import Edge, Graph, Node, Saved, TensorInfo, describe
from .picture import Progress, draw
from .stepper import Step, Stepper
from .widget import stepper_widget

__all__ = ["Edge", "Graph", "Node", "Progress", "Saved", "Step", "Stepper", "TensorInfo", "describe", "draw",
           "stepper_widget"]
