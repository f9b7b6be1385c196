"""A ``Graph`` description drawn with matplotlib: one box per node, arrows along ``next_functions``.

The roots are on top, the leaves at the bottom (``layout.layered``). A box is a small table: the
node's name (torch's), then a row per tensor it saved — orange while alive, grey and hatched once
freed, red if edited in place since — and, for a leaf's AccumulateGrad, the leaf's values and
``.grad`` when small. A node that more than one edge reaches (a shared subgraph: the engine sums its
gradients) has a purple border and says so. A ``Progress`` (from a ``Stepper``) adds the backward
under way: the turn each node ran in, the node that fires next and what it receives, the gradient
each edge has carried, the tensors the last step freed, the node that failed.

The boxes' text is drawn as outlines of a monospace font (``TextPath``): its size is exact in
inches, whatever the dpi or the axes, so each box's size follows from its text before anything is
drawn, and a picture scaled into a small axes keeps its text inside the boxes.
"""
from collections import Counter
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyArrowPatch, Patch, PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D

from .layout import layered

EM = 8.0 / 72
"""The box text's size in inches (8 points in a picture drawn on its own figure)."""
ADVANCE = 0.602
"""The advance of one character of DejaVu Sans Mono, in ems."""
CHAR = ADVANCE * EM
ROW = 1.25 * EM + 0.05
PAD_X = 0.07
MARGIN, TITLE, LEGEND = 0.25, 0.35, 0.55
CAPTION = 0.22
"""Room under the title for the line that says what the backward under way does next."""
LABEL_FONT = 7.0
"""Points of a gradient's label on an edge."""
CLEAR = 0.04
"""The least room between a gradient's label and a box or another label."""
FONTS = {False: FontProperties(family="DejaVu Sans Mono"),
         True: FontProperties(family="DejaVu Sans Mono", weight="bold")}

COLOURS = {
    "op": "#dbe9f6", "leaf": "#d5efcf", "alive": "#f5b041", "freed": "#ececec", "modified": "#f1948a",
    "nothing": "white", "shared": "#7d3c98", "next": "#c0392b", "sent": "#1f5fbf", "edge": "#333333",
    "turn": "#2c3e50",
}
SAVED_LABELS = {"alive": "saved tensor alive", "freed": "saved tensor freed", "modified": "saved, edited in place"}


@dataclass(frozen=True)
class Progress:
    """What a picture shows of a backward under way. ``ran``: node id -> its turn (1 first);
    ``next``: the node that fires next (None when none will) and ``received``: the gradients it
    will receive (``TensorInfo`` or None each); ``sent``: (source id, slot) -> the gradient
    that edge carried; ``just_freed``: (node id, saved name) the last step freed; ``failed``: the
    node whose error ended the backward, or None."""

    ran: dict
    next: int | None
    received: tuple
    sent: dict
    just_freed: frozenset
    failed: int | None


@dataclass(frozen=True)
class _Row:
    text: str
    fill: str
    hatch: str | None = None
    colour: str = "black"
    bold: bool = False
    key: tuple | None = None
    """(node id, saved name) for a saved tensor's row."""


def draw(graph, ax=None, title=None, progress=None, at_least=None):
    """Draw ``graph`` (a ``Graph`` from ``describe``) on ``ax``, or on a new figure sized to fit it.

    On a given ``ax`` the picture is scaled to fit. ``at_least`` (node id -> (width, height)) keeps
    boxes at least that big, so that a picture redrawn as a backward runs keeps its layout (a
    ``Stepper`` passes the largest sizes it has drawn). Returns the axes.
    """
    incoming = Counter(edge.target for edge in graph.edges)
    rows = [_rows(node, incoming[node.id]) for node in graph.nodes]
    sizes = [_size(node_rows) for node_rows in rows]
    if at_least:
        sizes = [(max(w, at_least[i][0]), max(h, at_least[i][1])) if i in at_least else (w, h)
                 for i, (w, h) in enumerate(sizes)]
    layout = layered(sizes, [(edge.source, edge.target) for edge in graph.edges])
    width = max(layout.width, 6.0) + 2 * MARGIN
    heading = TITLE + (CAPTION if progress else 0.0)
    height = layout.height + heading + LEGEND + 2 * MARGIN
    if ax is None:
        ax = plt.figure(figsize=(width, height)).add_axes((0, 0, 1, 1))
    figure_width, figure_height = ax.figure.get_size_inches()
    box = ax.get_position()
    scale = min(box.width * figure_width / width, box.height * figure_height / height)
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_aspect("equal", adjustable="box")
    ax.axis("off")
    left, top = MARGIN + (width - 2 * MARGIN - layout.width) / 2, MARGIN + heading
    taken = []  # rectangles (x0, y0, x1, y1) a gradient's label must not cover
    for node, node_rows, (w, h), x, y in zip(graph.nodes, rows, sizes, layout.x, layout.top):
        x, y = left + x - w / 2, top + y
        _box(ax, node, node_rows, (x, y, w, h), incoming[node.id] > 1, progress, scale)
        taken.append((x, y, x + w, y + h))
    sent = progress.sent if progress else {}
    labels = []
    for edge, route in zip(graph.edges, layout.routes):
        segments = _segments([(left + px, top + py) for px, py in route])
        carried = (edge.source, edge.slot) in sent
        _arrow(ax, segments, COLOURS["sent"] if carried else COLOURS["edge"], (1.6 if carried else 0.9) * scale,
               scale)
        if carried:
            labels.append((segments, _tensor_text(sent[(edge.source, edge.slot)])))
    for segments, text in sorted(labels, key=lambda label: len(label[0])):  # short edges have fewer spots: first
        _gradient_label(ax, segments, text, taken, scale)
    if title:
        ax.text(width / 2, MARGIN, title, ha="center", va="top", fontsize=10 * scale)
    if progress:
        ax.text(width / 2, MARGIN + TITLE, _caption(graph, progress), ha="center", va="bottom",
                family="DejaVu Sans Mono", fontsize=8 * scale, color=COLOURS["next"], fontweight="bold")
    _legend(ax, graph, progress, scale)
    return ax


def box_sizes(graph):
    """node id -> (width, height) of its box, in inches at scale 1."""
    incoming = Counter(edge.target for edge in graph.edges)
    return {node.id: _size(_rows(node, incoming[node.id])) for node in graph.nodes}


def _rows(node, incoming):
    """The lines of a node's box; ``incoming``: how many edges reach it."""
    rows = [_Row(node.name.removeprefix("torch::autograd::"), COLOURS[node.kind], bold=True)]
    if node.label:
        rows.append(_Row(f"leaf {node.label}" if node.kind == "leaf" else f"{node.label}.grad_fn", COLOURS[node.kind]))
    if incoming > 1:
        rows.append(_Row(f"◆ shared: {incoming} edges in", "white", colour=COLOURS["shared"], bold=True))
    if node.kind == "leaf":
        rows.append(_Row(f"value {_tensor_text(node.variable)}", COLOURS["leaf"]))
        rows.append(_Row(f"grad  {_tensor_text(node.grad)}", COLOURS["leaf"]))
    for saved in node.saved:
        key = (node.id, saved.name)
        if saved.state == "freed":
            rows.append(_Row(f"{saved.name}: freed", COLOURS["freed"], "////", "#444444", key=key))
        elif saved.state == "modified":
            rows.append(_Row(f"{saved.name}: edited in place since", COLOURS["modified"], key=key))
        else:
            rows.append(_Row(f"{saved.name}: {_tensor_text(saved.tensor, nbytes=True)}", COLOURS["alive"], key=key))
    if node.kind == "op" and not node.saved:
        rows.append(_Row("saves nothing", COLOURS["nothing"], colour="#555555"))
    return rows


def _size(rows):
    return max(len(row.text) for row in rows) * CHAR + 2 * PAD_X, len(rows) * ROW


def _tensor_text(info, nbytes=False):
    """A tensor in a few characters: its values when small, else its shape; then dtype (and bytes)."""
    if info is None:
        return "None"
    shape = "[" + ", ".join(map(str, info.shape)) + "]"
    text = shape if info.values is None else _values(info.values)
    dtype = info.dtype.replace("float", "f").replace("int", "i")
    if nbytes:
        return f"{shape} {dtype} {info.nbytes} B" + ("" if info.values is None else f" = {text}")
    return f"{text} {dtype}"


def _values(values):
    if isinstance(values, list):
        return "[" + ", ".join(_values(v) for v in values) + "]"
    return f"{values:.3g}" if isinstance(values, float) else str(values)


def _box(ax, node, rows, bounds, shared, progress, scale):
    x, y, w, h = bounds
    just_freed = progress.just_freed if progress else frozenset()
    for k, row in enumerate(rows):
        top = y + k * ROW
        ax.add_patch(Rectangle((x, top), w, ROW, facecolor=row.fill, hatch=row.hatch, edgecolor="#aaaaaa",
                               linewidth=0.4 * scale, zorder=2))
        _text(ax, x + PAD_X, top + (ROW - 1.25 * EM) / 2 + 0.95 * EM, row.text, row.colour, row.bold)
        if row.key in just_freed:
            ax.add_patch(Rectangle((x, top), w, ROW, fill=False, edgecolor=COLOURS["next"], linewidth=2 * scale,
                                   zorder=5))
    colour, linewidth = "black", 1.0
    if shared:
        colour, linewidth = COLOURS["shared"], 2.4
    if progress and node.id in (progress.next, progress.failed):
        colour, linewidth = COLOURS["next"], 3.0
    ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor=colour, linewidth=linewidth * scale, zorder=5))
    badge = None
    if progress and node.id in progress.ran:
        badge = str(progress.ran[node.id]), COLOURS["turn"]
    elif progress and progress.next == node.id:
        badge = "▶", COLOURS["next"]
    elif progress and progress.failed == node.id:
        badge = "✗", COLOURS["next"]
    if badge:
        ax.text(x - 0.04, y + ROW / 2, badge[0], ha="right", va="center", fontsize=8 * scale, color="white",
                fontweight="bold", zorder=6, bbox={"boxstyle": "circle,pad=0.2", "facecolor": badge[1],
                                                   "edgecolor": "none"})


def _caption(graph, progress):
    """The backward in words: what fires next and the gradients it receives (what its edges carried,
    summed), or where it failed."""
    def named(node_id):
        node = graph.nodes[node_id]
        return node.name.removeprefix("torch::autograd::") + (f" ({node.label})" if node.label else "")

    if progress.failed is not None:
        return f"✗ {named(progress.failed)} failed: backward stopped there"
    if progress.next is None:
        return f"backward finished: {len(progress.ran)} nodes ran"
    return f"▶ fires next: {named(progress.next)}, receiving {', '.join(map(_tensor_text, progress.received))}"


def _text(ax, x, baseline, text, colour, bold):
    """``text`` as filled glyph outlines, its baseline at ``baseline`` (the y axis points down here)."""
    path = TextPath((0, 0), text, size=EM, prop=FONTS[bold])
    flipped = Affine2D().scale(1, -1).translate(x, baseline).transform_path(path)
    ax.add_patch(PathPatch(flipped, facecolor=colour, edgecolor="none", zorder=4))


def _segments(points):
    """A route's pieces: S-curves ("curve") between layers, straight runs ("line") past the boxes
    of the layers it crosses, alternately (``Layout.routes``)."""
    return [("line" if k % 2 else "curve", a, b) for k, (a, b) in enumerate(zip(points, points[1:]))]


def _point(segment, t):
    """The point at ``t`` (0 to 1) along a segment: a cubic Bézier whose ends leave and arrive vertically."""
    kind, (ax_, ay), (bx, by) = segment
    if kind == "line":
        return ax_ + t * (bx - ax_), ay + t * (by - ay)
    u = 1 - t
    return (u ** 3 + 3 * u * u * t) * ax_ + (3 * u * t * t + t ** 3) * bx, ay + (3 * u * t * t + t ** 3) * (by - ay)


def _arrow(ax, segments, colour, linewidth, scale):
    vertices, codes = [segments[0][1]], [Path.MOVETO]
    for kind, a, b in segments:
        if kind == "line":
            vertices.append(b)
            codes.append(Path.LINETO)
        else:
            middle = (a[1] + b[1]) / 2
            vertices += [(a[0], middle), (b[0], middle), b]
            codes += [Path.CURVE4] * 3
    ax.add_patch(FancyArrowPatch(path=Path(vertices, codes), arrowstyle="-|>", mutation_scale=10 * scale,
                                 color=colour, linewidth=linewidth, zorder=3))


def _gradient_label(ax, segments, text, taken, scale):
    """The gradient an edge carried, written on the edge where it covers no box and no other label:
    the first free spot, trying the straight runs past other layers' boxes first (the curves between
    layers are where the other labels go), the middle of the edge before its ends."""
    em = LABEL_FONT / 72
    width, height = (len(text) + 0.6) * ADVANCE * em, 1.6 * em  # its pad included
    middle = (len(segments) - 1) / 2
    order = sorted(range(len(segments)), key=lambda k: (segments[k][0] == "curve", abs(k - middle)))
    spots = [_point(segments[k], t) for k in order for t in (0.5, 0.3, 0.7, 0.15, 0.85)]
    rectangles = [(x - width / 2, y - height / 2, x + width / 2, y + height / 2) for x, y in spots]
    free = [k for k, (a, b, c, d) in enumerate(rectangles)
            if not any(a < c2 + CLEAR and a2 < c + CLEAR and b < d2 + CLEAR and b2 < d + CLEAR
                       for a2, b2, c2, d2 in taken)]
    k = free[0] if free else 0
    taken.append(rectangles[k])
    x, y = spots[k]
    ax.text(x, y, text, ha="center", va="center", fontsize=LABEL_FONT * scale, color=COLOURS["sent"],
            family="DejaVu Sans Mono", zorder=7, bbox={"boxstyle": "round,pad=0.15", "facecolor": "white",
                                                       "edgecolor": COLOURS["sent"], "linewidth": 0.6 * scale})


def _legend(ax, graph, progress, scale):
    states = {saved.state for node in graph.nodes for saved in node.saved} | {"alive", "freed"}
    handles = [Patch(facecolor=COLOURS["op"], edgecolor="black", label="node (torch's name)"),
               Patch(facecolor=COLOURS["leaf"], edgecolor="black", label="leaf's AccumulateGrad")]
    handles += [Patch(facecolor=COLOURS[state], edgecolor="#999999", hatch="////" if state == "freed" else None,
                      label=label) for state, label in SAVED_LABELS.items() if state in states]
    handles.append(Patch(facecolor="white", edgecolor=COLOURS["shared"], linewidth=2,
                         label="shared: gradients summed"))
    if progress:
        handles += [Patch(facecolor=COLOURS["turn"], label="ran, in this turn"),
                    Patch(facecolor="white", edgecolor=COLOURS["next"], linewidth=2, label="fires next / freed now"),
                    Patch(facecolor=COLOURS["sent"], label="edge that carried a gradient")]
    ax.legend(handles=handles, loc="lower center", ncol=4, fontsize=7.5 * scale, frameon=False,
              handlelength=1.6, columnspacing=1.2)
