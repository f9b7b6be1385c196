"""Pictures of the backward graph for the lessons: ``draw(loss)`` and ``saved_state(node)``.

Works with tensors of either library. The graph is walked and laid out with loops, not recursion,
because the graphs the course builds can be deeper than Python's recursion limit.
"""
import itertools

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from minigrad.function import _FREED, Node, SavedTensor

STYLE = {  # what a minigrad node still holds, as fill colour and hatch
    "held": {"facecolor": "#f5a623", "edgecolor": "black", "hatch": None},
    "freed": {"facecolor": "#e4e4e4", "edgecolor": "#8c8c8c", "hatch": "//"},
    "nothing": {"facecolor": "white", "edgecolor": "black", "hatch": None},
}
# torch keeps what a node saved in C++ and shows no such state: its boxes are plain light blue
TORCH_STYLE = {"facecolor": "#dbe9f6", "edgecolor": "black", "hatch": None}


def saved_state(node):
    """'held', 'freed' or 'nothing': what a minigrad node keeps for its backward right now.

    ``BackwardFunction._saved`` has one entry per tensor the op could save: ``None`` (not needed),
    a ``SavedTensor`` (held) or ``_FREED`` (dropped by a backward without retain_graph). Nodes with
    no ``_saved`` (AccumulateGrad) or only ``None`` entries (add, sum) save nothing: a graph made
    only of those can be backpropagated any number of times.
    """
    if not isinstance(node, Node):
        raise TypeError(f"saved_state reads minigrad nodes; got {type(node).__name__} (torch keeps this in C++)")
    saved = getattr(node, "_saved", None) or ()
    if any(s is _FREED for s in saved):
        return "freed"
    if any(isinstance(s, SavedTensor) for s in saved):
        return "held"
    return "nothing"


def _label(node):
    """The node's name as torch prints it, shortened; a leaf's box also shows its tensor's shape."""
    name = node.name().replace("torch::autograd::", "")
    variable = getattr(node, "variable", None)
    return f"{name}\n{list(variable.shape)}" if variable is not None else name


def _walk(roots):
    """Every node below ``roots`` once (a shared node is one node), and each node's depth.

    Depth is the longest path from a root, found in topological order (Kahn's algorithm), so every
    arrow points down even when a node is reached by paths of different lengths.
    """
    nodes, stack = [], list(reversed(roots))  # popped in the order given: first root on the left
    indegree = {id(n): 0 for n in stack}
    while stack:  # 1. discover the nodes, counting the edges into each
        node = stack.pop()
        nodes.append(node)
        for child, _ in reversed(node.next_functions):
            if child is not None:
                if id(child) not in indegree:
                    stack.append(child)
                indegree[id(child)] = indegree.get(id(child), 0) + 1
    depth = {id(n): 0 for n in nodes}
    ready = [n for n in nodes if indegree[id(n)] == 0]
    while ready:  # 2. a node's depth is final once every edge into it has been seen
        node = ready.pop()
        for child, _ in node.next_functions:
            if child is not None:
                depth[id(child)] = max(depth[id(child)], depth[id(node)] + 1)
                indegree[id(child)] -= 1
                if indegree[id(child)] == 0:
                    ready.append(child)
    return nodes, depth


def draw(*tensors, ax=None, title=None):
    """Draw the backward graph(s) below ``tensors``: one box per node, arrows along next_functions.

    Several tensors share one picture, so a subgraph they have in common is drawn once. Minigrad
    boxes are coloured by ``saved_state``: orange = saved tensors held, grey hatched = freed,
    white = saves nothing. Torch boxes are light blue (torch does not show this state). Edges to
    ``None`` (an input that needs no gradient, such as the 2 in ``x * 2``) are not drawn.
    """
    roots = {id(t.grad_fn): t.grad_fn for t in tensors if t.grad_fn is not None}  # each root once, in order
    nodes, depth = _walk(list(roots.values()))
    rows, routes, parents = {}, [], {}  # an edge that skips layers bends through a waypoint in each,
    for node in nodes:                   # so it is routed around the boxes in between, not through them
        rows.setdefault(depth[id(node)], []).append(id(node))
    for node in nodes:
        for k, (child, _) in enumerate(node.next_functions):
            if child is not None:
                ways = [(id(node), k, d) for d in range(depth[id(node)] + 1, depth[id(child)])]
                for way in ways:
                    rows[way[2]].append(way)
                chain = [id(node), *ways, id(child)]
                for up, down in itertools.pairwise(chain):
                    parents.setdefault(down, []).append(up)
                routes.append((node, k, child, chain))
    pos, width = {}, 1.0
    for d in sorted(rows):  # place each box or waypoint under the mean x of its parents: fewer crossings
        row = sorted(rows[d], key=lambda key: sum(pos[p][0] for p in parents.get(key, ())) / max(
            len(parents.get(key, ())), 1))
        sizes = [1.0 if isinstance(key, int) else 0.3 for key in row]
        width, left = max(width, sum(sizes)), -sum(sizes) / 2
        for key, size in zip(row, sizes):
            pos[key], left = (left + size / 2, -d), left + size
    if ax is None:
        _, ax = plt.subplots(figsize=(max(4.0, 2.6 * width), 0.3 + 1.1 * max(len(rows), 1)))
    boxes = {}
    for node in nodes:
        style = STYLE[saved_state(node)] if isinstance(node, Node) else TORCH_STYLE
        boxes[id(node)] = ax.text(*pos[id(node)], _label(node), ha="center", va="center", fontsize=9, zorder=2,
                                  bbox=dict(boxstyle="round,pad=0.4", **style))
    for node, k, child, chain in routes:  # arrows above the boxes: drawn after them, clipped at the boxes
        twins = sum(c is child for c, _ in node.next_functions)  # y * y: two edges to one node, two arcs
        bend = 0.2 * (2 * sum(c is child for c, _ in node.next_functions[:k]) - twins + 1)
        for i, (a, b) in enumerate(itertools.pairwise(chain)):
            last = i == len(chain) - 2
            ax.annotate("", xy=pos[b], xytext=pos[a], zorder=3, arrowprops={
                "arrowstyle": "-|>" if last else "-", "color": "black", "shrinkA": 0, "shrinkB": 0,
                "connectionstyle": f"arc3,rad={bend if len(chain) == 2 else 0}",
                "patchA": boxes[a].get_bbox_patch() if i == 0 else None,
                "patchB": boxes[b].get_bbox_patch() if last else None})
    if any(isinstance(n, Node) for n in nodes):
        ax.legend(handles=[Patch(label=f"saved: {k}", **v) for k, v in STYLE.items()], ncol=3,
                  loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False)
    ax.set_xlim(-width / 2 - 0.1, width / 2 + 0.1)
    ax.set_ylim(-max(rows, default=0) - 0.5, 0.5)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    return ax
