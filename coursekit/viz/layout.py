"""Where the boxes of a graph picture go: a layered drawing (Sugiyama's method, kept small).

1. Layers: a node sits one layer below its lowest parent (the longest path from a root), so every
   arrow points down, even to a node reached by paths of different lengths.
2. An edge that skips layers passes through a waypoint in each layer it crosses, so it is routed
   between the boxes there, not through them.
3. Order within a layer: a few sweeps sorting each layer by the mean position of its neighbours
   in the layer above (then below); the order with the fewest crossings is kept.
4. x positions: each box as near the mean x of its neighbours as the boxes beside it allow (the
   closest positions that keep the order and the gaps: isotonic regression, by pooling adjacent
   violators), alternately downwards and upwards.

Sizes are in inches; y grows downwards from the top of the first layer. Loops, not recursion.
"""
from dataclasses import dataclass

GAP_X = 0.3
"""Between two boxes of a layer; a waypoint needs less."""
WAYPOINT_GAP = 0.12
GAP_Y = 0.5
"""Between layers: room for the arrows."""
SWEEPS = 8
"""Ordering sweeps (alternately down and up); then PULLS sweeps placing boxes near their neighbours."""
PULLS = 4


@dataclass(frozen=True)
class Layout:
    """``x[i]``: the centre of box i, ``top[i]``: its top. ``routes[k]``: the points edge k passes,
    from a port on its source's bottom to one on its target's top; in between, pairs of points
    where it enters and leaves each layer it crosses (a straight run past the boxes there)."""

    x: tuple
    top: tuple
    routes: tuple
    width: float
    height: float


def layered(sizes, edges):
    """Lay out boxes of ``sizes`` ((width, height) each) joined by ``edges`` ((source, target) each)."""
    n = len(sizes)
    layer = _layers(n, edges)
    rows = [[] for _ in range(max(layer, default=-1) + 1)]
    for i in range(n):
        rows[layer[i]].append(i)
    widths = [w for w, _ in sizes]
    up, down = [[] for _ in range(n)], [[] for _ in range(n)]
    chains = []  # per edge: source, its waypoints, target
    for source, target in edges:
        chain = [source]
        for r in range(layer[source] + 1, layer[target]):
            waypoint = len(widths)
            widths.append(0.0)
            up.append([])
            down.append([])
            rows[r].append(waypoint)
            chain.append(waypoint)
        chain.append(target)
        for a, b in zip(chain, chain[1:]):
            down[a].append(b)
            up[b].append(a)
        chains.append(chain)
    rows = _order(rows, up, down)
    x = _positions(rows, widths, up, down, n)
    heights = [max((sizes[i][1] for i in row if i < n), default=0.0) for row in rows]
    row_top = [0.0]
    for height in heights[:-1]:
        row_top.append(row_top[-1] + height + GAP_Y)
    top = [row_top[layer[i]] for i in range(n)]
    left = min((x[i] - widths[i] / 2 for i in range(len(widths))), default=0.0)
    x = [v - left for v in x]
    routes = _routes(chains, x, top, sizes, layer, row_top, heights)
    width = max((x[i] + widths[i] / 2 for i in range(len(widths))), default=0.0)
    return Layout(tuple(x[:n]), tuple(top), tuple(routes), width, row_top[-1] + heights[-1] if rows else 0.0)


def _layers(n, edges):
    """Longest path from a root, in topological order (Kahn's algorithm)."""
    children, indegree = [[] for _ in range(n)], [0] * n
    for source, target in edges:
        children[source].append(target)
        indegree[target] += 1
    layer = [0] * n
    placed = [i for i in range(n) if indegree[i] == 0]  # every edge into them seen: their layer is final
    while placed:
        node = placed.pop()
        for child in children[node]:
            layer[child] = max(layer[child], layer[node] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                placed.append(child)
    return layer


def _order(rows, up, down):
    """Barycentre sweeps, down then up; the rows with the fewest crossings win (first best kept)."""
    rows = [list(row) for row in rows]
    best, fewest = [list(row) for row in rows], _crossings(rows, down)
    for sweep in range(SWEEPS):
        downwards = sweep % 2 == 0
        indices = range(1, len(rows)) if downwards else range(len(rows) - 2, -1, -1)
        for r in indices:
            neighbours, fixed = (up, rows[r - 1]) if downwards else (down, rows[r + 1])
            where = {item: k for k, item in enumerate(fixed)}
            here = {item: k for k, item in enumerate(rows[r])}
            rows[r].sort(key=lambda item: _mean([where[v] for v in neighbours[item]], here[item]))
        count = _crossings(rows, down)
        if count < fewest:
            best, fewest = [list(row) for row in rows], count
    return best


def _crossings(rows, down):
    total = 0
    for upper, lower in zip(rows, rows[1:]):
        where = {item: k for k, item in enumerate(lower)}
        segments = [(a, where[b]) for a, item in enumerate(upper) for b in down[item]]
        total += sum(1 for i, (a1, b1) in enumerate(segments) for a2, b2 in segments[i + 1:]
                     if (a1 - a2) * (b1 - b2) < 0)
    return total


def _positions(rows, widths, up, down, n):
    """x of every box and waypoint: packed first, then pulled towards its neighbours."""
    x = [0.0] * len(widths)
    for row in rows:
        for item, value in zip(row, _place([0.0] * len(row), _gaps(row, widths, n))):
            x[item] = value
    for sweep in range(PULLS):
        downwards = sweep % 2 == 0
        for row in (rows[1:] if downwards else rows[-2::-1]):
            neighbours = up if downwards else down
            desired = [_mean([x[v] for v in neighbours[item]], x[item]) for item in row]
            for item, value in zip(row, _place(desired, _gaps(row, widths, n))):
                x[item] = value
    return x


def _gaps(row, widths, n):
    return [(widths[a] + widths[b]) / 2 + (GAP_X if a < n and b < n else WAYPOINT_GAP)
            for a, b in zip(row, row[1:])]


def _place(desired, gaps):
    """The positions closest to ``desired`` (least squares) that keep the order and at least ``gaps``
    between neighbours: with ``y_i = x_i - (sum of the gaps before i)`` the constraint is y
    non-decreasing, and the best y is the isotonic regression of the shifted targets."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks = []  # [sum of targets, count]: runs of items that end up with one y
    for target in (d - o for d, o in zip(desired, offsets)):
        blocks.append([target, 1])
        while len(blocks) > 1 and blocks[-2][0] * blocks[-1][1] > blocks[-1][0] * blocks[-2][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    ys = [total / count for total, count in blocks for _ in range(count)]
    return [y + o for y, o in zip(ys, offsets)]


def _routes(chains, x, top, sizes, layer, row_top, heights):
    """The points of every edge. Ports are spread along a box's bottom (and top) in the order of
    where their edges go, so edges leave (and reach) a box side by side, without crossing there."""
    out_ports = _ports(chains, x, sizes, lambda chain: (chain[0], x[chain[1]]))
    in_ports = _ports(chains, x, sizes, lambda chain: (chain[-1], x[chain[-2]]))
    routes = []
    for k, chain in enumerate(chains):
        source, target = chain[0], chain[-1]
        points = [(out_ports[k], top[source] + sizes[source][1])]
        for r, waypoint in enumerate(chain[1:-1], start=layer[source] + 1):
            points += [(x[waypoint], row_top[r]), (x[waypoint], row_top[r] + heights[r])]
        points.append((in_ports[k], top[target]))
        routes.append(tuple(points))
    return routes


def _ports(chains, x, sizes, end):
    """Per edge, the x where it touches the box ``end(chain)[0]``, ordered by ``end(chain)[1]``."""
    by_box = {}
    for k, chain in enumerate(chains):
        box, toward = end(chain)
        by_box.setdefault(box, []).append((toward, k))
    ports = [0.0] * len(chains)
    for box, group in by_box.items():
        group.sort()
        step = min(0.25, (sizes[box][0] * 0.8) / max(len(group) - 1, 1))
        for j, (_, k) in enumerate(group):
            ports[k] = x[box] + (j - (len(group) - 1) / 2) * step
    return ports


def _mean(values, default):
    return sum(values) / len(values) if values else default
