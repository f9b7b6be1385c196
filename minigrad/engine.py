"""The backward engine: runs the graph's nodes in torch's order, without recursion.

1. Count, for every node reachable from the roots, how many edges point at it (its dependencies).
2. A node is ready when all its dependencies have delivered their gradient; ready nodes wait in
   a priority queue and the newest (highest sequence number) runs first, as in torch.
3. Running a node turns the gradient of its output into gradients for its inputs, which are
   summed into the input buffers of the next nodes. Then, unless ``retain_graph``, the node's
   saved tensors are released.
"""
import heapq

from . import grad_mode


def compute_dependencies(root_nodes):
    """How many edges point at each node reachable from ``root_nodes`` (iteratively, not recursively)."""
    dependencies = {}
    stack = list(root_nodes)
    seen = set(stack)
    while stack:
        node = stack.pop()
        for next_node, _ in node.next_functions:
            if next_node is None:
                continue
            dependencies[next_node] = dependencies.get(next_node, 0) + 1
            if next_node not in seen:
                seen.add(next_node)
                stack.append(next_node)
    return dependencies


def nodes_leading_to(root_nodes, targets):
    """The nodes from which some target node can be reached: only those need to run for autograd.grad."""
    needed = set(targets)
    stack = [(node, False) for node in root_nodes]
    seen = set()
    while stack:
        node, children_done = stack.pop()
        if children_done:
            if any(n in needed for n, _ in node.next_functions):
                needed.add(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((n, False) for n, _ in node.next_functions if n is not None and n not in seen)
    return needed


def _call_pre_hooks(node, grads):
    """Tensor hooks first (a hook may replace the gradient), then retain_grad's, as torch orders them."""
    hooks, retains = node._tensor_pre_hooks, node._retains_grad_hooks
    grads = list(grads)
    for output_nr, grad in enumerate(grads):
        if grad is None:
            continue
        for hook in (hooks or {}).get(output_nr, ()):
            result = hook(grad)
            if result is not None:
                grads[output_nr] = grad = result
        if retains and output_nr in retains:
            retains[output_nr](grad)
    return grads


def run_backward(roots, root_grads, retain_graph, create_graph, captures=None):
    """Backpropagate ``root_grads`` from the edges ``roots``.

    ``captures`` maps edges (node, input_nr) to the list where autograd.grad wants their gradient;
    with captures, only nodes leading to them run, and AccumulateGrad nodes are not run at all.
    """
    from .function import AccumulateGrad

    root_nodes = [node for node, _ in roots]
    dependencies = compute_dependencies(root_nodes)
    for node in root_nodes:
        dependencies[node] = dependencies.get(node, 0) + 1
    needed = None if captures is None else nodes_leading_to(root_nodes, {n for n, _ in captures})
    buffers = {}
    ready = []

    def deliver(edges, grads):
        """Sum each gradient into its node's input buffer; queue a node once all its inputs are in."""
        for (node, input_nr), grad in zip(edges, grads):
            if node is None:
                continue
            buffer = buffers.get(node)
            if buffer is None:
                buffer = buffers[node] = [None] * (input_nr + 1)
            elif len(buffer) <= input_nr:
                buffer.extend([None] * (input_nr + 1 - len(buffer)))
            if grad is not None:
                buffer[input_nr] = grad if buffer[input_nr] is None else buffer[input_nr] + grad
            remaining = dependencies[node] - 1
            dependencies[node] = remaining
            if remaining == 0:
                heapq.heappush(ready, (-node._sequence_nr, id(node), node))

    def run(node, grads):
        """Apply the node, free what it saved (unless retain_graph), pass its gradients on."""
        if any(g is not None for g in grads):
            outputs = node.apply(*grads)
            if not retain_graph:
                node._release_saved()
        else:
            outputs = (None,) * len(node.next_functions)
        deliver(node.next_functions, outputs)

    state = grad_mode._state
    previous = state.grad_enabled
    state.grad_enabled = create_graph
    try:
        deliver(roots, root_grads)
        while ready:
            node = heapq.heappop(ready)[2]
            grads = buffers.pop(node)
            if node._tensor_pre_hooks or node._retains_grad_hooks:
                grads = _call_pre_hooks(node, grads)
            if captures is not None:
                for input_nr, grad in enumerate(grads):
                    slot = captures.get((node, input_nr))
                    if slot is not None:
                        slot.append(grad)
                if node not in needed or type(node) is AccumulateGrad:
                    continue
            run(node, grads)
    finally:
        state.grad_enabled = previous
