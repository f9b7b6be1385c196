"""The backward graph as plain data: what a picture shows, and what tests compare between libraries.

``describe`` reads a graph through the interface torch and minigrad share — ``next_functions``,
``name()``, ``variable`` on a leaf's AccumulateGrad, saved tensors as ``grad_fn._saved_<name>`` —
so a torch graph and a minigrad graph of the same code give equal descriptions. A saved tensor is
freed (or was modified in place) exactly when reading it raises torch's RuntimeError.
"""
from collections import deque
from dataclasses import dataclass

import torch

from minigrad.tensor import Tensor

SMALL = 6
"""Tensors of at most this many numbers have their values in the description (the rest: shape only)."""

ERR_FREED = "backward through the graph a second time"
ERR_MODIFIED = "modified by an inplace operation"


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple
    dtype: str
    nbytes: int
    values: list | None
    """The numbers (nested lists) of a small tensor; None for one with more than SMALL."""


@dataclass(frozen=True)
class Saved:
    """One tensor a node saved for its backward: ``state`` is "alive", "freed" (by a backward without
    retain_graph) or "modified" (edited in place since: backward through this node would fail).
    Only an alive tensor can be read, so ``tensor`` is None for the others."""

    name: str
    state: str
    tensor: TensorInfo | None


@dataclass(frozen=True)
class Node:
    """A node of the backward graph. ``kind`` is "leaf" for the AccumulateGrad behind a leaf tensor
    (``variable``: that tensor, ``grad``: its .grad) and "op" for the rest; ``label`` is the name the
    caller gave the node's tensor, if any."""

    id: int
    name: str
    kind: str
    label: str | None
    saved: tuple
    variable: TensorInfo | None
    grad: TensorInfo | None


@dataclass(frozen=True)
class Edge:
    """``source.next_functions[slot] == (target, input_nr)``: the gradient of the source's input
    number ``slot`` goes to the target's output number ``input_nr``."""

    source: int
    slot: int
    target: int
    input_nr: int


@dataclass(frozen=True)
class Graph:
    nodes: tuple
    edges: tuple
    roots: tuple

    def incoming(self, node_id):
        """The edges into a node: more than one and the engine sums their gradients (a shared node)."""
        return tuple(edge for edge in self.edges if edge.target == node_id)


def walk(root_nodes):
    """Every node reachable from ``root_nodes``, each once, in breadth-first order (without
    recursion: graphs can be deeper than Python's recursion limit). The order gives the ids, so
    the same code run with torch and with minigrad numbers its nodes alike."""
    order, seen = [], set()
    queue = deque(root_nodes)
    while queue:
        node = queue.popleft()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        queue.extend(child for child, _ in node.next_functions)
    return order


def describe(*roots, names=None):
    """The backward graph below ``roots`` — tensors of either library, or nodes — as a ``Graph``.

    Several roots share one description, so a subgraph they have in common appears once, with an
    edge from each. ``names`` maps names to tensors (``{"t": t, "loss": loss}``), as the picture
    should call them: a leaf's AccumulateGrad is labelled with its tensor's name, any other
    tensor's ``grad_fn`` with that tensor's.
    """
    root_nodes = [getattr(root, "grad_fn", root) for root in roots]
    return describe_nodes(walk(root_nodes), [n for n in root_nodes if n is not None], names)


def describe_nodes(nodes, root_nodes, names=None):
    """The description of ``nodes`` (as ``walk`` lists them: their positions are their ids)."""
    ids = {node: i for i, node in enumerate(nodes)}
    labels = _labels(names or {})
    described, edges = [], []
    for i, node in enumerate(nodes):
        variable = getattr(node, "variable", None)
        key = id(variable) if variable is not None else id(node)
        described.append(Node(i, node.name(), "leaf" if variable is not None else "op", labels.get(key),
                              saved_entries(node), None if variable is None else tensor_info(variable),
                              None if variable is None else _grad(variable)))
        edges.extend(Edge(i, slot, ids[child], input_nr)
                     for slot, (child, input_nr) in enumerate(node.next_functions) if child is not None)
    return Graph(tuple(described), tuple(edges), tuple(dict.fromkeys(ids[n] for n in root_nodes)))


def _labels(names):
    """id of the object a picture labels (a leaf tensor, or a non-leaf tensor's grad_fn) -> its name."""
    labels = {}
    for name, tensor in names.items():
        key = id(tensor) if tensor.grad_fn is None else id(tensor.grad_fn)
        labels[key] = f"{labels[key]}, {name}" if key in labels else name
    return labels


def _grad(variable):
    grad = variable.grad
    return None if grad is None else tensor_info(grad)


def tensor_info(tensor):
    """Shape, dtype, size in bytes and (for a small tensor) the values; ``tolist`` is for display only."""
    values = tensor.detach().tolist() if tensor.numel() <= SMALL else None
    return TensorInfo(tuple(tensor.shape), str(tensor.dtype).removeprefix("torch."),
                      tensor.numel() * tensor.dtype.itemsize, values)


def saved_entries(node):
    """What ``node`` saved for backward, one ``Saved`` per tensor, by name (a saved list of tensors
    gives one per element while alive; once freed torch no longer says how many there were: one)."""
    entries = []
    for name in _saved_names(node):
        try:
            value = getattr(node, name)
        except RuntimeError as error:
            entries.append(Saved(name.removeprefix("_saved_"), _broken_state(error), None))
            continue
        if _is_tensor(value):
            entries.append(Saved(name.removeprefix("_saved_"), "alive", tensor_info(value)))
        elif isinstance(value, (tuple, list)) and value and all(_is_tensor(v) for v in value):
            entries.extend(Saved(f"{name.removeprefix('_saved_')}[{i}]", "alive", tensor_info(v))
                           for i, v in enumerate(value))
    return tuple(entries)


def _saved_names(node):
    """The attributes through which a node shows what it saved: torch's nodes list theirs
    (``_saved_self``...) in ``dir``; minigrad's answer to the same names, which their Function lists
    in ``saved_names``, one per entry of ``_saved``. Custom Functions of both libraries name no
    entries and have ``saved_tensors``."""
    forward_cls = getattr(node, "_forward_cls", None)
    names = getattr(forward_cls, "saved_names", None)
    if names is None:
        names = [attr.removeprefix("_saved_") for attr in dir(node) if attr.startswith("_saved_")]
    else:
        names = names[:len(node._saved)]
    if names:  # in torch's order: dir's, alphabetical
        return [f"_saved_{name}" for name in sorted(names)]
    return ["saved_tensors"] if "saved_tensors" in dir(node) else []  # hasattr would read it: it may raise


def _broken_state(error):
    message = str(error)
    if ERR_FREED in message:
        return "freed"
    if ERR_MODIFIED in message:
        return "modified"
    raise error


def _is_tensor(value):
    return isinstance(value, (torch.Tensor, Tensor))
