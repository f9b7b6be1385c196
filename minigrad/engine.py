"""The backward engine: runs the graph's nodes in torch's order, without recursion.

1. Count, for every node reachable from the roots, how many edges point at it (its dependencies).
2. A node is ready when all its dependencies have delivered their gradient; ready nodes wait in
   a priority queue and the newest (highest sequence number) runs first, as in torch.
3. Running a node turns the gradient of its output into gradients for its inputs, which are
   summed into the input buffers of the next nodes.

``backprop`` does 1-3 for any way of "running a node"; ``run_backward`` decides what running
means: hooks, autograd.grad's captures, then ``run_node``: ``node.apply`` and freeing what the
node saved. An ``observer`` given to ``run_backward`` is handed each node as it is about to run
(coursekit.viz's Stepper pauses the real backward there, one node at a time).
"""
import heapq
import sys
import threading

import torch

from . import broadcast, grad_mode, user_warnings

Tensor = None
"""minigrad's Tensor, assigned by function.py (which imports this module) once it exists."""


def runs_first(node, other):
    """The engine's order, torch's ``CompareNodeTaskTime``: of two ready nodes, the newer (higher
    ``_sequence_nr()``) runs first. Nodes compare with it (it is ``Node.__lt__``), so the ready queue
    is a heap of the nodes themselves (smallest first), and nodes with equal numbers (two leaves'
    AccumulateGrad) come out of it in the order torch's binary heap gives them. (It reads the number
    ``_sequence_nr()`` returns, ``_sequence_number``: the heap compares often, a method call costs.)"""
    return node._sequence_number > other._sequence_number


# BEGIN EXERCISE 2
def compute_dependencies(root_nodes):
    """How many edges point at each node reachable from ``root_nodes`` (a node no edge points at is
    not there). A chain far deeper than Python's recursion limit (a million nodes) must work."""
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
# END EXERCISE 2


# BEGIN EXERCISE 2
def backprop(roots, root_grads, call):
    """Send ``root_grads`` into the edges ``roots`` and run every node they reach, once, in torch's order.

    ``call(node, grads)`` runs a node on a list of the gradients of its outputs (one per
    ``input_nr``, None where none arrived; it may take them out of the list: the engine keeps no
    reference to it) and returns one gradient (or None) per edge in ``node.next_functions``. A node
    runs once the gradients from all edges pointing at it have arrived, summed; among ready nodes
    the newest (highest ``_sequence_nr()``) runs first, and nodes with equal numbers in the order of
    torch's ready queue, a binary heap ordered by ``runs_first``.
    """
    dependencies = compute_dependencies([node for node, _ in roots])
    for node, _ in roots:
        dependencies[node] = dependencies.get(node, 0) + 1
    buffers = {}
    ready = []

    def deliver(edges, grads):
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
            dependencies[node] -= 1
            if dependencies[node] == 0:
                heapq.heappush(ready, node)  # ordered by runs_first: newest first

    deliver(roots, root_grads)
    while ready:
        node = heapq.heappop(ready)
        # The buffer is popped and handed over: the engine keeps no reference to the gradients, so
        # a node that is their last holder may keep one instead of copying it (AccumulateGrad).
        deliver(node.next_functions, call(node, buffers.pop(node)))
# END EXERCISE 2


def nodes_leading_to(root_nodes, targets):
    """The nodes from which some target node can be reached: only those need to run for autograd.grad
    (a target itself runs only if it leads to another target, as in torch)."""
    needed = set()
    stack = [(node, False) for node in root_nodes]
    seen = set()
    while stack:
        node, children_done = stack.pop()
        if children_done:
            if any(n in needed or n in targets for n, _ in node.next_functions):
                needed.add(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((n, False) for n, _ in node.next_functions if n is not None and n not in seen)
    return needed


def _call_tensor_pre_hooks(node, grads):
    """The hooks of the tensors the node made (a hook may replace the gradient), then retain_grad's,
    which sees what they made of it. Each list of hooks as it was when the node started: a hook
    that removes another does not keep it from running this time, as in torch. A tensor that got
    no gradient has its hooks called with None (gradcheck's check of undefined gradients counts on
    it), and they may not make one up. The list is changed in place, and returned."""
    hooks, retains = node._tensor_pre_hooks, node._retains_grad_hooks
    if hooks:  # (the engine's list stops at the last output a gradient reached)
        grads.extend([None] * (max(hooks) + 1 - len(grads)))
    for output_nr, grad in enumerate(grads):
        for hook in tuple((hooks or {}).get(output_nr, ())):
            result = hook(grad)
            if result is not None and result is not grad:
                grads[output_nr] = grad = checked_hook_result(hook, grad, result)
        if grad is None:
            continue
        if retains and output_nr in retains:
            retains[output_nr](grad)
    return grads


def _call_pre_hooks(node, grads):
    """Tensor hooks and retain_grad's first, then the node's own pre-hooks (``register_prehook``),
    as torch orders them. What they make of the gradients goes into the engine's list itself, which
    the node takes its gradients from: a copy would leave them in the list, which a compiled caller
    still holds, and AccumulateGrad would copy a gradient it could keep."""
    if node._tensor_pre_hooks or node._retains_grad_hooks:
        _call_tensor_pre_hooks(node, grads)
    hooked = grads
    for hook in tuple(node._pre_hooks or ()):
        hooked = tuple(hooked)
        result = hook(hooked)
        if result is not None and result is not hooked:
            hooked = _checked_hook_results(hook, hooked, result)
    if hooked is not grads:
        grads[:] = hooked
    return grads


def _call_post_hooks(node, grad_inputs, grad_outputs):
    """The node's ``register_hook`` hooks: ``hook(grad_inputs, grad_outputs)`` may replace grad_inputs."""
    grad_inputs = tuple(grad_inputs)
    for hook in tuple(node._post_hooks):
        result = hook(grad_inputs, grad_outputs)
        if result is not None and result is not grad_inputs:
            grad_inputs = _checked_hook_results(hook, grad_inputs, result)
    return grad_inputs


def _checked_hook_results(hook, grads, results):
    """What a node's hook returned in place of its tuple of ``grads``, checked as torch's
    ``check_result`` checks it: a tuple of as many, each None (no gradient) or as ``checked_hook_result``
    accepts."""
    if not isinstance(results, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(results).__name__}'")
    if len(results) != len(grads):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                           f"(got {len(results)}, but expected {len(grads)})")
    for grad, result in zip(grads, results):
        if result is not None:
            checked_hook_result(hook, grad, result)
    return results


def checked_hook_result(hook, grad, result):
    """``result``, what a hook returned in place of ``grad``, checked as torch's ``check_single_result``:
    it may not make up a missing gradient, and must be a tensor of the same type, device and size."""
    if grad is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    before, after = grad._data, result._data
    if (before.dtype, before.device.type, before.layout) != (after.dtype, after.device.type, after.layout):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was {_type_name(before)} "
                           f"got {_type_name(after)})")
    if before.shape != after.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return result


def _hook_name(hook):
    """A hook as torch's errors name it: its ``__name__`` (a lambda's is "<lambda>"), else "<unknown>"."""
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


_LEGACY_TYPES = ("Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double")


def _type_name(data):
    """A tensor's type as torch's ``toString`` writes it: "torch.FloatTensor" and "torch.cuda.FloatTensor"
    for the eight legacy types on the CPU and CUDA, else device and scalar type ("CPUBFloat16Type",
    "MetaFloatType")."""
    scalar, device = torch.empty(0, dtype=data.dtype).type()[len("torch."):-len("Tensor")], data.device.type
    if scalar in _LEGACY_TYPES and device in ("cpu", "cuda"):
        return f"torch.{'cuda.' if device == 'cuda' else ''}{scalar}Tensor"
    return f"{ {'cpu': 'CPU', 'cuda': 'CUDA'}.get(device, device.capitalize())}{scalar}Type"


def _anomaly_report(node):
    """What torch's anomaly mode adds to an error in backward, one warning each: where the failing
    node was made, then where each node whose backward made it (its "parent_") was made. A warning
    that raises (warnings turned into errors) is printed to stderr instead, as torch does, so the
    error in backward is the one raised."""
    metadata, is_parent = node.metadata, False
    while True:
        trace = metadata.get("traceback_")
        if trace is None:
            message = (f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                       "anomaly during forward pass for more information.")
        elif is_parent:
            message = (f"\n\nPrevious calculation was induced by {node.name()}. Traceback of forward call that "
                       f"induced the previous calculation:\n{''.join(trace)}")
        else:
            message = (f"Error detected in {node.name()}. Traceback of forward call that caused the "
                       f"error:\n{''.join(trace)}")
        try:
            # blamed on the line that ran the engine (autograd/api.py's), as torch's on its own
            user_warnings.warn(message, UserWarning, __file__, frames=5)
        except Warning:
            print(message, file=sys.stderr)
        node = metadata.get("parent_")
        if node is None:
            return
        metadata, is_parent = node.metadata, True


def _check_nan(node, grads):
    for index, grad in enumerate(grads):
        if grad is not None and torch.isnan(grad._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")


def _all_none(grads):
    """Whether no gradient reached a node (compared by identity: ``None in grads`` would compare tensors)."""
    for grad in grads:
        if grad is not None:
            return False
    return True


def validate_outputs(node, grads):
    """Check what a node returned, as torch's engine does: one gradient per edge, each like its input
    in shape, dtype and device; one that is not is made so, or refused (``_conformed``)."""
    if len(grads) != len(node.next_functions):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(node.next_functions)}, got {len(grads)})")
    checked = grads
    for index, metadata in enumerate(node._input_metadata):  # none for a GraphRoot
        grad = grads[index]
        if grad is None or metadata is None:  # None: an input that needs no gradient (no edge), as torch skips it
            continue
        shape, dtype, device = metadata
        data = grad._data
        if data.shape != shape or data.dtype != dtype or data.device != device:
            if checked is grads:
                checked = list(grads)
            checked[index] = _conformed(node, index, grad)
    return checked


def _conformed(node, index, grad):
    """The gradient at ``index`` made like its input: reduced to the input's shape (``sum_to``) where it
    is shaped like a broadcast of it, cast to the input's dtype (but for a leaf whose grad_dtype was
    set: its AccumulateGrad casts), and, if 0-dim, moved to the input's device: a CPU scalar in an op
    on CUDA gets its gradient on the CPU, as in torch. Any other gradient is refused, in torch's words."""
    (shape, dtype, device), valid = node._input_metadata[index], grad
    if grad._data.shape != shape:
        if not broadcast.expandable(shape, grad.shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - got "
                               f"{list(grad.shape)} but expected shape compatible with {list(shape)}")
        valid = broadcast.sum_to(grad, shape)
    if valid._data.dtype != dtype and not getattr(node.next_functions[index][0], "_casts_own_input", False):
        valid = valid.to(dtype)  # (getattr: an edge may lead to no node)
    if valid._data.device != device:
        if valid.dim():
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - "
                               f"expected device {device} but got {valid.device}")
        valid = valid.to(device)
    return valid


# BEGIN EXERCISE 3
def run_node(node, grads, retain_graph):
    """Run ``node`` on the gradients of its outputs and return its checked gradients, one per edge.
    Then, unless ``retain_graph``, free what it saved: right after it ran, as torch does, so the
    memory goes as early as possible, and a backward that fails later has already freed it."""
    outputs = validate_outputs(node, node.apply(grads))
    # BEGIN NEW IN EXERCISE 3
    if not retain_graph:
        node._release_saved()
    # END NEW IN EXERCISE 3
    return outputs
# END EXERCISE 3


def run_node_observed(node, grads, retain_graph):
    """``run_node`` for a node with post hooks, or under anomaly mode (which reports where a failing
    node was made, and with ``check_nan`` fails at the first NaN gradient)."""
    grad_outputs = tuple(grads)
    state = grad_mode._state
    running, state.running_node = state.running_node, node
    try:
        outputs = run_node(node, grads, retain_graph)
        if grad_mode.anomaly.enabled and grad_mode.anomaly.check_nan:
            _check_nan(node, outputs)
    except Exception:
        if grad_mode.anomaly.enabled:
            _anomaly_report(node)
        raise
    finally:
        state.running_node = running
    return _call_post_hooks(node, outputs, grad_outputs) if node._post_hooks else outputs


class GraphTask:
    """One run of the engine (torch's GraphTask), ``grad_mode._state.graph_task`` while it runs: what
    code called from inside a backward (hooks, a custom backward) may ask of it or hand it."""

    def __init__(self, roots, captured):
        self.roots, self.captured = roots, captured
        self.needed = None
        """The nodes that run where only part of the graph does (``run_backward``), else None."""
        self.final_callbacks = []
        self._nodes_in_graph = None

    def queue_callback(self, callback):
        """``Variable._execution_engine.queue_callback``: run ``callback()`` once every node has run."""
        self.final_callbacks.append(callback)

    def run_final_callbacks(self):
        """In the order they were queued, those a callback queues included; the first error stops them."""
        for callback in self.final_callbacks:
            callback()

    def will_execute(self, node):
        """torch's ``_will_engine_execute_node``: whether ``node`` is in this graph (reachable from its
        roots) and, where only part of it runs (autograd.grad, backward's ``inputs=``), among the
        nodes that run or whose gradient is captured. A captured leaf is refused, as in torch."""
        if self._nodes_in_graph is None:
            roots = [n for n, _ in self.roots if n is not None]
            self._nodes_in_graph = set(compute_dependencies(roots)) | set(roots)
        if node not in self._nodes_in_graph:
            return False
        if self.needed is None:
            return True
        if node in self.captured and all(n is None for n, _ in node.next_functions):
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently "
                               "running autograd.grad(). This is currently not supported.")
        return node in self.needed or node in self.captured


def run_backward(roots, root_grads, retain_graph, create_graph, captures=None, observer=None, inputs=None):
    """Backpropagate ``root_grads`` from the edges ``roots`` (what backward() and autograd.grad run).

    ``captures`` maps edges (node, input_nr) to the list where autograd.grad wants their gradient;
    ``inputs`` lists the edges backward(inputs=...) accumulates into. With either, only the nodes
    that lead to one of those edges run, and those of ``inputs`` themselves (torch's exec_info). A
    captured node that need not run gets its tensor hooks called (not its own pre-hooks) and its
    gradient captured; a node that runs has it captured as it arrived, before any hook, as in
    torch. Any other node is passed by: no hook, no gradient.

    ``observer(node, grads, run)``, when given, is called in place of running each node, in the
    engine's order: ``grads`` is the list of gradients the node is handed (running it may empty the
    list: copy what you keep), ``run()`` runs the node as without an observer (hooks, freeing
    included) and returns its gradients for ``node.next_functions``; the observer returns what
    ``run()`` returned. It watches the one engine loop, ``backprop``, rather than copying it.
    """
    targets = needed = None
    if captures is not None or inputs is not None:
        targets = {n for n, _ in (captures if captures is not None else inputs)}

    def call(node, grads):
        # Each node runs under the saved-tensor hooks in force when backward started, as in torch (its
        # ThreadLocalStateGuard): hooks an unpack hook entered or left end with the node.
        if modes["saved_tensors_hooks"] is not hooks:
            modes["saved_tensors_hooks"] = hooks
        if needed is not None and node not in needed:
            if captures is not None and node in targets:
                if node._tensor_pre_hooks or node._retains_grad_hooks:
                    grads = _call_tensor_pre_hooks(node, grads)
                _capture(captures, node, grads)
            return (None,) * len(node.next_functions)
        if captures is not None and node in targets:
            _capture(captures, node, grads)
        if node._has_pre_hooks:
            grads = _call_pre_hooks(node, grads)
        if grads[0] is None and _all_none(grads):  # (most nodes get one gradient: a call only where it is None)
            # No gradient reached it, so it has none to give. torch calls it anyway, and frees
            # what it saved all the same: that memory is not kept until the graph dies.
            if not retain_graph:
                node._release_saved()
            return (None,) * len(node.next_functions)
        if node._post_hooks or grad_mode.anomaly.enabled:
            return run_node_observed(node, grads, retain_graph)
        return run_node(node, grads, retain_graph)

    modes = vars(grad_mode._state)  # this thread's autograd state (see _State)
    hooks = modes["saved_tensors_hooks"]
    reentrant = modes["graph_task"] is not None
    if reentrant and modes["reentrant_depth"] >= MAX_DEPTH:
        return _on_fresh_thread(run_backward, roots, root_grads, retain_graph, create_graph, captures, observer,
                                inputs)
    previous = modes["grad_enabled"], modes["graph_task"], modes["checkpoint_valid"], modes["reentrant_depth"], hooks
    task = GraphTask(roots, targets if captures is not None else ())
    modes["grad_enabled"], modes["graph_task"] = create_graph, task
    modes["checkpoint_valid"] = previous[2] and targets is None
    modes["reentrant_depth"] += reentrant
    try:
        if targets is not None:  # walked once the task is set: a node it reaches is the task's (graph_owned)
            needed = task.needed = nodes_leading_to([n for n, _ in roots], targets)
            if inputs is not None:
                needed |= targets
        backprop(roots, root_grads, call if observer is None else _observed(observer, call))
        task.run_final_callbacks()
    finally:
        (modes["grad_enabled"], modes["graph_task"], modes["checkpoint_valid"], modes["reentrant_depth"],
         modes["saved_tensors_hooks"]) = previous


def _capture(captures, node, grads):
    """autograd.grad's capture: each gradient the node is handed, into the list its edge maps to."""
    for input_nr, grad in enumerate(grads):
        slot = captures.get((node, input_nr))
        if slot is not None:
            slot.append(grad)


def _observed(observer, call):
    """``call`` as ``run_backward``'s observer sees it (a function of its own, not a closure of
    run_backward's: where minigrad is compiled, closures of one function share one scope, and one
    that held another would keep both, and the gradients they reach, alive until a collection)."""
    def observed(node, grads):
        return observer(node, grads, lambda: call(node, grads))
    return observed


MAX_DEPTH = 60
"""torch's engine (engine.h's MAX_DEPTH): a backward called inside a node's backward (reentrant) runs
on the calling thread's stack, up to this many deep; the next one runs on a fresh thread, whose
stack is empty, while the caller waits. So 2000 nested backwards stay within Python's recursion limit
on every thread (some 8 frames each: 60 deep is under 500)."""


def _on_fresh_thread(fn, *args):
    """``fn(*args)`` on a new thread with this thread's autograd state (grad mode, saved-tensor hooks,
    the running backward; torch's thread-local state travels with its graph task), depth 0; the
    caller waits, and gets its result or its error."""
    state, outcome = dict(vars(grad_mode._state)), {}

    def run():
        vars(grad_mode._state).update(state, reentrant_depth=0)
        try:
            outcome["result"] = fn(*args)
        except BaseException as error:  # handed to the waiting caller, which raises it
            outcome["error"] = error

    thread = threading.Thread(target=run, name="minigrad reentrant backward")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
