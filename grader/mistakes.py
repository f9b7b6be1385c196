"""Plausible wrong versions of each exercise's parts, kept as data: each must lose points, on the
test named. ``tests/grading/test_mistakes.py`` grades each with the verdict harness; ``python -m grader
selftest`` grades them as learners' submissions, on the grading machine, through the whole pipeline,
and validates them: each must fail a visible check, so that Validate fails it too. Right versions
in other designs are kept beside them, in ``designs.py``.

``MISTAKES``: exercise -> [(what the learner got wrong, the part's grade_id, text of the reference,
the wrong text that replaces it, a visible test that must fail)]."""
import ast
from pathlib import Path

from .notebooks import cells_of

# Longer texts: parts of the reference and the wrong versions that restructure them.
WALK = """    stack = list(root_nodes)
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
"""
RECURSIVE_WALK = """    seen = set()

    def visit(node):
        for next_node, _ in node.next_functions:
            if next_node is None:
                continue
            dependencies[next_node] = dependencies.get(next_node, 0) + 1
            if next_node not in seen:
                seen.add(next_node)
                visit(next_node)

    for root in root_nodes:
        visit(root)
"""
PUSH_POP = """                heapq.heappush(ready, node)  # ordered by runs_first: newest first

    deliver(roots, root_grads)
    while ready:
        node = heapq.heappop(ready)"""
EXP_SAVE_AND_USE = """        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        \"\"\"The gradient for a, from the saved result.\"\"\"
        (result,) = ctx.saved_tensors
        return grad * result"""
MUL_GRADS = "return (grad * b if b is not None else None, grad * a if a is not None else None)"
RUN_NODE = """    outputs = validate_outputs(node, node.apply(grads))
    if not retain_graph:
        node._release_saved()
    return outputs"""
# exercise 10's fixed script: from the block's function to the step's backward, and the validation
CAPSTONE_LOOP = """    def block_function(h):
        return block(h).tanh()

    for step in range(steps):
        start = step * batch_size % len(y_train)
        x, y = x_train[start:start + batch_size], y_train[start:start + batch_size]
        body_optimizer.zero_grad()
        head_optimizer.zero_grad()

        h = body(x).relu()
        batch_mean = h.mean(0)
        h = h - running_mean
        running_mean = (0.9 * running_mean + 0.1 * batch_mean).detach()
        z = checkpoint(lib, block_function, h)
        log["examples"] += len(h)
        scores = head(z)
        loss = lib.nn.functional.cross_entropy(scores, y)

        loss.backward()
"""
CAPSTONE_COUNT_OUTSIDE = """        z = checkpoint(lib, block_function, h)
        log["examples"] += len(h)
"""
CAPSTONE_VALIDATION = """        with no_grad(lib):
            val_loss, val_accuracy = evaluate(lib, body, block, head, running_mean, x_val, y_val)
        log["loss"].append(loss.item())
        log["accuracy"].append(accuracy(scores, y))
        log["grad_norm"].append(grad_norm)
        log["val_loss"].append(val_loss.item())"""
CAPSTONE_IN_PLACE_DIAGNOSIS = """    ("h -= running_mean edited in place the output that relu saved for its backward",
     "the RuntimeError naming versions, then detect_anomaly naming the relu line"),
"""


def capstone_unchanged():
    """(the reference's body, the colleague's): exercise 10's broken script submitted as the fix,
    unchanged but for its name, read from the spec's locked ``broken`` cell."""
    spec = (Path(__file__).parent / "exercises" / "ex10_capstone.py").read_text()
    cells = {(kind, args[0]): body for kind, args, body in cells_of(spec) if args}
    reference = "\n".join(line for line in cells["answer", "fixed_train"].splitlines()
                          if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    bodies = []
    for text, name in ((reference, "fixed_train"), (cells["locked", "broken"], "broken_train")):
        function = next(node for node in ast.parse(text).body if getattr(node, "name", None) == name)
        lines = text.splitlines()[function.body[1].lineno - 1:function.end_lineno]  # after the docstring
        bodies.append("\n".join(lines))
    return tuple(bodies)


# exercise 6's SGD step: its weight decay and momentum blocks, to swap them
_DECAY = '    if group["weight_decay"] != 0:\n        grad = grad.add(param, alpha=group["weight_decay"])\n'
_MOMENTUM = ('    momentum = group["momentum"]\n    if momentum != 0:\n        state = self.state[param]\n'
             '        buf = state.get("momentum_buffer")\n        if buf is None:\n'
             '            buf = state["momentum_buffer"] = grad.clone().detach()\n        else:\n'
             '            buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])\n'
             '        grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf\n')

# exercise: [(what the learner got wrong, part's grade_id, reference text, wrong text, the test that must fail)]
MISTAKES = {
    "ex1_ops": [
        ("save_factors saves both factors", "save_factors",
         "ctx.save_for_backward(a if need_b else None, b if need_a else None)", "ctx.save_for_backward(a, b)",
         "test-save_factors"),
        ("sum_to sums one leading dimension only", "sum_to", "dims = [*range(lead)]", "dims = [0] if lead else []",
         "test-sum_to"),
        ("Mm's weight gradient laid out contiguously", "Mm", "mat2_grad(grad, a, ctx.mat2_layout) if a",
         "a.t().mm(grad) if a", "test-Mm"),
        ("Exp saves its input", "Exp", "ctx.save_for_backward(result)", "ctx.save_for_backward(a)", "test-Exp"),
        ("SumDim ignores keepdim", "SumDim", "_keep_dims(grad, ctx.dims, ctx.keepdim)",
         "_keep_dims(grad, ctx.dims, False)", "test-SumDim"),
        ("Mul's gradients swapped: grad * a for a", "Mul", MUL_GRADS,
         "return (grad * a if b is not None else None, grad * b if a is not None else None)", "test-Mul-saved"),
        ("save_factors saves the factor that needs a gradient, not the other one", "save_factors",
         "ctx.save_for_backward(a if need_b else None, b if need_a else None)",
         "ctx.save_for_backward(a if need_a else None, b if need_b else None)", "test-Mul-saved"),
        ("Mul's backward computes on storage (plain torch tensors: no double backward)", "Mul", MUL_GRADS,
         "return (grad._data * b._data if b is not None else None, grad._data * a._data if a is not None else None)",
         "test-Mul-saved"),
        ("Exp saves its input and recomputes exp in backward (right values, wrong tensor saved)", "Exp",
         EXP_SAVE_AND_USE, EXP_SAVE_AND_USE.replace("save_for_backward(result)", "save_for_backward(a)").replace(
             "(result,) = ctx.saved_tensors\n        return grad * result",
             "(a,) = ctx.saved_tensors\n        return grad * a.exp()"), "test-Exp"),
        ("Exp saves a recomputed exp(a), not its result", "Exp", "ctx.save_for_backward(result)",
         "ctx.save_for_backward(a._data.exp())", "test-Exp"),
        ("SumDim never puts the summed dims back", "SumDim", "_keep_dims(grad, ctx.dims, ctx.keepdim).expand",
         "grad.expand", "test-SumDim"),
        ("SumDim forgets to expand to the input's shape", "SumDim",
         "_keep_dims(grad, ctx.dims, ctx.keepdim).expand(ctx.shape)", "_keep_dims(grad, ctx.dims, ctx.keepdim)",
         "test-SumDim"),
        ("SumDim keeps negative dims as given", "SumDim", "_normalize_dims(dim, a.dim())",
         "((dim,) if isinstance(dim, int) else tuple(dim))", "test-SumDim"),
        ("sum_to drops the stretched dims (no keepdim)", "sum_to", "grad = grad.sum(dims, keepdim=True)",
         "grad = grad.sum(dims)", "test-sum_to"),
        ("sum_to sums the first len(shape) dims, not the leading extra ones", "sum_to",
         "dims = [*range(lead)]", "dims = [*range(len(shape))]", "test-sum_to"),
        ("sum_to keeps the added dims (no view to the input's shape)", "sum_to",
         "return grad.view(shape) if lead else grad", "return grad", "test-sum_to"),
        ("Mm's gradient for a forgets the transpose", "Mm", "mat1_grad(grad, b, ctx.mat1_layout) if b",
         "grad.mm(b) if b", "test-Mm"),
        ("Mm's gradient for a laid out contiguously", "Mm", "mat1_grad(grad, b, ctx.mat1_layout) if b",
         "grad.mm(b.t()) if b", "test-Mm"),
        ("Mm's two layouts swapped", "Mm", "a._data.stride(), b._data.stride()",
         "b._data.stride(), a._data.stride()", "test-Mm"),
    ],
    "ex2_engine": [
        ("backprop overwrites a buffer", "backprop",
         "buffer[input_nr] = grad if buffer[input_nr] is None else buffer[input_nr] + grad",
         "buffer[input_nr] = grad", "test-shared-node"),
        ("ties broken by id(node)", "backprop", "heapq.heappush(ready, node)",
         "heapq.heappush(ready, (-node._sequence_nr(), id(node), node))", "test-order"),
        ("dependencies counted once per node", "compute_dependencies",
         "dependencies[next_node] = dependencies.get(next_node, 0) + 1", "dependencies[next_node] = 1",
         "test-dependencies"),
        ("compute_dependencies walks recursively", "compute_dependencies", WALK, RECURSIVE_WALK, "test-long-chain"),
        ("compute_dependencies walks below a shared node twice", "compute_dependencies",
         "            if next_node not in seen:\n                seen.add(next_node)\n"
         "                stack.append(next_node)", "            stack.append(next_node)", "test-shared-node"),
        ("backprop runs a node as soon as it is ready, recursively", "backprop",
         "heapq.heappush(ready, node)  # ordered by runs_first: newest first",
         "deliver(node.next_functions, call(node, buffers.pop(node)))", "test-long-chain"),
        ("ready nodes in a queue (first in, first out)", "backprop", PUSH_POP,
         PUSH_POP.replace("heapq.heappush(ready, node)", "ready.append(node)").replace(
             "heapq.heappop(ready)", "ready.pop(0)"), "test-order"),
        ("ready nodes in a stack (last in, first out)", "backprop", PUSH_POP,
         PUSH_POP.replace("heapq.heappush(ready, node)", "ready.append(node)").replace(
             "heapq.heappop(ready)", "ready.pop()"), "test-order"),
        ("oldest node first (the heap's order with the wrong sign)", "backprop", PUSH_POP,
         PUSH_POP.replace("heapq.heappush(ready, node)", "heapq.heappush(ready, (node._sequence_nr(), node))").replace(
             "node = heapq.heappop(ready)", "_, node = heapq.heappop(ready)"), "test-order"),
        ("newest first, ties broken by arrival, not as torch's heap", "backprop", PUSH_POP,
         PUSH_POP.replace("heapq.heappush(ready, node)", "ready.append(node)").replace(
             "node = heapq.heappop(ready)",
             "node = max(ready, key=lambda n: n._sequence_nr())\n        ready.remove(node)"), "test-order"),
        ("the roots' own edges not counted", "backprop",
         "    for node, _ in roots:\n        dependencies[node] = dependencies.get(node, 0) + 1\n", "",
         "test-seed-004"),
        ("a root's count set to 1, not added", "backprop", "dependencies[node] = dependencies.get(node, 0) + 1",
         "dependencies[node] = 1", "test-shared-node"),
        ("an edge that delivers None is skipped, never counted", "backprop",
         "            if grad is not None:\n                buffer[input_nr] = grad if",
         "            if grad is None:\n                continue\n            buffer[input_nr] = grad if",
         "test-shared-node"),
    ],
    "ex3_freeing": [
        ("_release_saved marks unsaved entries freed", "BackwardFunction-_release_saved",
         "tuple(None if s is None else _FREED for s in self._saved)", "tuple(_FREED for s in self._saved)",
         "test-seed-003"),
        ("run_node frees even with retain_graph", "run_node",
         "    if not retain_graph:\n        node._release_saved()", "    node._release_saved()", "test-retain-graph"),
        ("run_node never frees", "run_node",
         "    if not retain_graph:\n        node._release_saved()", "", "test-second-backward"),
        ("_unpack hands out the SavedTensor itself", "BackwardFunction-_unpack", "return saved.unpack(self)",
         "return saved", "test-retain-graph"),
        ("_unpack gives None for a freed entry", "BackwardFunction-_unpack", "raise RuntimeError(ERR_BACKWARD_TWICE)",
         "return None", "test-second-backward"),
        ("_unpack raises its own message", "BackwardFunction-_unpack", "raise RuntimeError(ERR_BACKWARD_TWICE)",
         "raise RuntimeError('saved tensors were freed')", "test-error-message"),
        ("run_node frees only with retain_graph (the condition inverted)", "run_node", "    if not retain_graph:",
         "    if retain_graph:", "test-second-backward"),
        ("run_node frees before running the node", "run_node", RUN_NODE,
         "    if not retain_graph:\n        node._release_saved()\n"
         "    return validate_outputs(node, node.apply(grads))", "test-second-backward"),
        ("run_node frees the next nodes instead of this one", "run_node", "        node._release_saved()",
         "        for next_node, _ in node.next_functions:\n            if next_node is not None:\n"
         "                next_node._release_saved()", "test-second-backward"),
        ("run_node forgets validate_outputs (broadcast gradients not summed)", "run_node",
         "validate_outputs(node, node.apply(grads))", "node.apply(grads)", "test-seed-002"),
        ("_release_saved empties _saved", "BackwardFunction-_release_saved",
         "self._saved = tuple(None if s is None else _FREED for s in self._saved)", "self._saved = ()",
         "test-second-backward"),
        ("_release_saved sets every entry to None", "BackwardFunction-_release_saved",
         "tuple(None if s is None else _FREED for s in self._saved)", "tuple(None for s in self._saved)",
         "test-second-backward"),
        ("_unpack forgets the freed marker", "BackwardFunction-_unpack",
         "    if saved is _FREED:\n        raise RuntimeError(ERR_BACKWARD_TWICE)\n", "", "test-second-backward"),
        ("_unpack forgets entries that were never saved", "BackwardFunction-_unpack",
         "    if saved is None:\n        return None\n", "", "test-second-backward"),
    ],
    "ex5_grad_modes": [
        ("_exit turns grad mode on instead of restoring it", "_Mode-_exit",
         "_state.grad_enabled = self._was_grad_enabled", "_state.grad_enabled = True", "test-nesting"),
        ("_exit leaves inference mode as the block set it", "_Mode-_exit", "_state.inference = self._was_inference",
         "pass", "test-inference-mode"),
        ("_enter remembers the mode after switching", "_Mode-_enter",
         "self._was_grad_enabled = _state.grad_enabled\n    self._was_inference = _state.inference\n    self._set()",
         "self._set()\n    self._was_grad_enabled = _state.grad_enabled\n    self._was_inference = _state.inference",
         "test-nesting"),
        ("_enter remembers on the class, one record for every mode", "_Mode-_enter",
         "self._was_grad_enabled = _state.grad_enabled", "_Mode._was_grad_enabled = _state.grad_enabled",
         "test-nesting"),
        ("inference_mode(False) treated as inference_mode(True)", "inference_mode-_set",
         "_state.grad_enabled = not self._args[0]\n    _state.inference = self._args[0]",
         "_state.grad_enabled = False\n    _state.inference = True", "test-inference-mode"),
        ("inference_mode(False) switches nothing", "inference_mode-_set",
         "_state.grad_enabled = not self._args[0]\n    _state.inference = self._args[0]",
         "if self._args[0]:\n        _state.grad_enabled = False\n        _state.inference = True", "test-inference-mode"),
        ("inference_mode leaves grad mode on", "inference_mode-_set", "_state.grad_enabled = not self._args[0]\n",
         "", "test-inference-mode"),
        ("detach with a version counter of its own", "Tensor-detach",
         "if self._version_counter is not None:\n        out._version_counter = self._version_counter\n", "",
         "test-detach"),
        ("detach copies the memory", "Tensor-detach", "out = Tensor(self._data)", "out = Tensor(self._data.clone())",
         "test-detach"),
        ("detach keeps requires_grad", "Tensor-detach", "out = Tensor(self._data)",
         "out = Tensor(self._data, requires_grad=self._requires_grad)", "test-detach"),
        ("detach forgets the inference flag", "Tensor-detach", "    out._is_inference = self._is_inference\n", "",
         "test-detach"),
        ("detach shares an inference tensor's missing counter", "Tensor-detach",
         "if self._version_counter is not None:\n        out._version_counter = self._version_counter",
         "out._version_counter = self._version_counter", "test-detach"),
        ("train_step fixes the training loss only", "train_step", 'log["val_loss"].append(val_loss.item())',
         'log["val_loss"].append(val_loss)', "test-leak"),
        ("train_step calls detach() for its effect", "train_step", 'log["val_loss"].append(val_loss.item())',
         'val_loss.detach()\n    log["val_loss"].append(val_loss)', "test-leak"),
        ("train_step logs the training loss as a tensor", "train_step", 'log["loss"].append(loss.item())',
         'log["loss"].append(loss)', "test-leak"),
    ],
    "ex4_versions": [
        ("_mutate bumps before the kernel runs", "Tensor-_mutate",
         "    storage_op(self._data, *args)\n    if self._version_counter is None:",
         "    if self._version_counter is not None:\n        self._version_counter.version += 1\n"
         "    storage_op(self._data, *args)\n    if self._version_counter is None:", "test-version-bump"),
        ("_mutate never bumps (only recorded edits do)", "Tensor-_mutate",
         "    else:\n        self._version_counter.version += 1\n", "", "test-version-bump"),
        ("_inplace forgets the bump of a recorded edit", "Tensor-_inplace",
         "    self._record_inplace(function, *args)\n    self._version_counter.version += 1",
         "    self._record_inplace(function, *args)", "test-version-bump"),
        ("unpack compares versions with < (the wrong way round)", "SavedTensor-unpack",
         "self.version_counter.version != self.saved_version", "self.version_counter.version < self.saved_version",
         "test-saved-version"),
        ("unpack checks saved outputs only", "SavedTensor-unpack",
         "    if self.version_counter.version != self.saved_version:",
         "    if self.tensor is not None:\n        return self.tensor\n"
         "    if self.version_counter.version != self.saved_version:", "test-saved-version"),
        ("the message swaps the two versions", "SavedTensor-_raise_modified",
         "version=self.version_counter.version,\n                                           saved=self.saved_version",
         "version=self.saved_version,\n                                           saved=self.version_counter.version",
         "test-error-message"),
        ("the message names the node that saved the tensor, not the one that made it",
         "SavedTensor-_raise_modified", "self.tensor._data, self.tensor.grad_fn, self.tensor._output_nr",
         "self.tensor._data, node, self.tensor._output_nr", "test-error-message"),
        ("the leaf check forgets no_grad (it comes before the recording test)", "Tensor-_inplace",
         "    if not recording:\n",
         "    if self._requires_grad and self.grad_fn is None:\n        raise RuntimeError(ERR_LEAF_INPLACE)\n"
         "    if not recording:\n", "test-leaf"),
        ("the leaf check refuses non-leaves too", "Tensor-_inplace",
         "    if self._requires_grad and self.grad_fn is None:", "    if self._requires_grad:", "test-leaf"),
        ("the leaf check refuses leaves that don't require grad", "Tensor-_inplace",
         "    if self._requires_grad and self.grad_fn is None:", "    if self.grad_fn is None:", "test-leaf"),
        ("recording decided by self alone, not by the arguments", "Tensor-_inplace",
         "self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args))",
         "self.requires_grad)", "test-leaf"),
        ("the message names the node that consumes a saved non-leaf, not the one that made it",
         "SavedTensor-_raise_modified", "self.tensor._data, self.tensor.grad_fn, self.tensor._output_nr",
         "self.tensor._data, node if self.tensor.grad_fn is not None else None, self.tensor._output_nr",
         "test-error-message"),
        ("no check for a view made under no_grad", "Tensor-_check_view_inplace", "    views.check_inplace(self)\n",
         "", "test-leaf"),
        ("the leaf check runs before the view checks", "Tensor-_inplace",
         "    if self._view is not None:\n        self._check_view_inplace()\n"
         "    if self._requires_grad and self.grad_fn is None:\n        raise RuntimeError(ERR_LEAF_INPLACE)\n",
         "    if self._requires_grad and self.grad_fn is None:\n        raise RuntimeError(ERR_LEAF_INPLACE)\n"
         "    if self._view is not None:\n        self._check_view_inplace()\n", "test-leaf"),
        ("_inplace never runs the view checks", "Tensor-_inplace",
         "    if self._view is not None:\n        self._check_view_inplace()\n", "", "test-leaf"),
        ("no view-of-a-leaf check", "Tensor-_check_view_inplace",
         "    if self._view.base._requires_grad and self._view.base.grad_fn is None:\n"
         "        raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)", "", "test-leaf"),
        ("the view-of-a-leaf check before the no_grad-view check (the wrong error wins)", "Tensor-_check_view_inplace",
         "    views.check_inplace(self)\n    if self._view.base._requires_grad and self._view.base.grad_fn is None:\n"
         "        raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)",
         "    if self._view.base._requires_grad and self._view.base.grad_fn is None:\n"
         "        raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)\n    views.check_inplace(self)", "test-leaf"),
    ],
    "ex8_checkpoint": [
        ("the inputs kept as they are, not saved (an in-place edit goes unseen)", "checkpointed_forward",
         "inputs = [save(arg) if isinstance(arg, Tensor) else arg for arg in args]", "inputs = list(args)",
         "test-inputs"),
        ("the body run twice in the forward (once without the hooks, for the output)", "checkpointed_forward",
         "    with saved_tensors_hooks(frame.pack, frame.unpack):\n        return function(*args, **kwargs)",
         "    output = function(*args, **kwargs)\n    with saved_tensors_hooks(frame.pack, frame.unpack):\n"
         "        function(*args, **kwargs)\n    return output", "test-body-runs"),
        ("no shortcut without grad mode", "checkpointed_forward",
         "    if not grad_mode.is_grad_enabled():\n        return function(*args, **kwargs)\n", "",
         "test-memory"),
        ("pack keeps the tensor in the holder: the graph keeps what checkpointing should not", "_Frame-pack", "    holder = _Holder()\n",
         "    holder = _Holder()\n    holder.value = tensor.detach()\n", "test-memory"),
        ("pack does not record the holder", "_Frame-pack", "    self.holders.append(holder)\n", "", "test-gradients"),
        ("unpack recomputes on every unpack", "_Frame-unpack", "    if holder.value is None:\n        self.recompute()",
         "    self.recompute()", "test-body-runs"),
        ("unpack leaves the tensor in the holder: it outlives its backward", "_Frame-unpack",
         "value, holder.value = holder.value, None", "value = holder.value", "test-memory"),
        ("the forward's random state not replayed", "rerun",
         "        if rng is not None:\n            _set_rng_state(rng)\n", "", "test-random"),
        ("the random state replayed without fork_rng (the generator outside is rewound)", "rerun",
         "enabled=rng is not None", "enabled=False", "test-random"),
        ("rerun in backward's grad mode (off: the body saves nothing)", "rerun",
         "enabled=rng is not None), enable_grad():", "enabled=rng is not None):", "test-gradients"),
        ("the holders filled in reverse order", "_Frame-recompute", "holder = self.holders[filled]",
         "holder = self.holders[len(self.holders) - 1 - filled]", "test-gradients"),
        ("no early stop: the whole body runs again, counted at the end", "_Frame-recompute",
         """        filled += 1
        if filled == len(self.holders):
            raise _StopRecomputation
        return kept

    args = [arg.unpack(None) if isinstance(arg, (SavedTensor, PackedTensor)) else arg for arg in self.inputs]
    try:
        with saved_tensors_hooks(fill, lambda kept: kept.value):
            rerun(self.function, args, self.kwargs, self.rng)
    except _StopRecomputation:
        return
    raise CheckpointError(""",
         """        filled += 1
        return kept

    args = [arg.unpack(None) if isinstance(arg, (SavedTensor, PackedTensor)) else arg for arg in self.inputs]
    with saved_tensors_hooks(fill, lambda kept: kept.value):
        rerun(self.function, args, self.kwargs, self.rng)
    if filled != len(self.holders):
        raise CheckpointError(""",
         "test-body-runs"),
        ("a holder the graph freed is filled again (not skipped) in a later recomputation", "_Frame-recompute",
         "        if holder is not None:\n            holder.value = kept.value\n",
         "        holder.value = kept.value\n",
         "test-body-runs"),
        ("the recomputation's stop caught as any Exception: the body's own error is swallowed", "_Frame-recompute",
         "    except _StopRecomputation:\n", "    except Exception:\n", "test-body-runs"),
    ],
    "ex6_training": [
        ("momentum buffer starts at zeros", "SGD-_update", 'state["momentum_buffer"] = grad.clone().detach()',
         'state["momentum_buffer"] = grad.clone().detach() * 0', "test-sgd"),
        ("dampening applied on the first step", "SGD-_update", 'state["momentum_buffer"] = grad.clone().detach()',
         'state["momentum_buffer"] = grad.clone().detach().mul_(1 - group["dampening"])', "test-sgd-options"),
        ("weight decay added after momentum", "SGD-_update", _DECAY + _MOMENTUM, _MOMENTUM + _DECAY, "test-sgd-options"),
        ("sign error: the step climbs the gradient", "SGD-_update", 'param.add_(grad, alpha=-group["lr"])',
         'param.add_(grad, alpha=group["lr"])', "test-sgd"),
        ("lr applied twice", "SGD-_update", 'param.add_(grad, alpha=-group["lr"])',
         'param.add_(grad * group["lr"], alpha=-group["lr"])', "test-sgd"),
        ("the parameter rebound, not updated in place", "SGD-_update", 'param.add_(grad, alpha=-group["lr"])',
         'param = param.add(grad, alpha=-group["lr"])', "test-sgd"),
        ("Nesterov ignored", "SGD-_update", 'grad.add(buf, alpha=momentum) if group["nesterov"] else buf', "buf",
         "test-sgd-options"),
        ("the momentum buffer is the gradient itself, not a copy", "SGD-_update",
         'state["momentum_buffer"] = grad.clone().detach()', 'state["momentum_buffer"] = grad', "test-sgd-in-place"),
        ("zero_grad zeros when it should set None", "Optimizer-zero_grad", "param.grad = None", "grad.zero_()",
         "test-zero-grad"),
        ("zero_grad makes a new zero tensor", "Optimizer-zero_grad", "grad.zero_()", "param.grad = grad * 0",
         "test-zero-grad"),
        ("zero_grad forgets parameters without a gradient", "Optimizer-zero_grad",
         "if grad is None:\n                continue\n            ", "", "test-zero-grad"),
        ("zero_grad zeroes the first group only", "Optimizer-zero_grad", "for group in self.param_groups:",
         "for group in self.param_groups[:1]:", "test-zero-grad"),
        ("fit: zero_grad between backward and step", "fit",
         "optimizer.zero_grad()\n            loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])"
         "\n            loss.backward()\n",
         "loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])"
         "\n            loss.backward()\n            optimizer.zero_grad()\n", "test-fit"),
        ("fit: losses kept as tensors", "fit", "losses.append(loss.item())", "losses.append(loss)", "test-fit"),
        ("fit: the last, smaller batch dropped", "fit", "range(0, len(y), batch_size)",
         "range(0, len(y) - batch_size + 1, batch_size)", "test-fit"),
        ("settings: too few epochs for 95%", "settings", "EPOCHS = 10", "EPOCHS = 3", "test-target"),
        ("fixed_fit zeroes the head only", "fixed_fit", "body.zero_grad()\n        head.zero_grad()",
         "head.zero_grad()", "test-fixed"),
        ("weight decay added into the gradient in place (param.grad edited)", "SGD-_update",
         'grad = grad.add(param, alpha=group["weight_decay"])', 'grad = grad.add_(param, alpha=group["weight_decay"])',
         "test-sgd-in-place"),
    ],
    "ex7_custom_functions": [
        ("one-sided differences", "_numerical_jacobians",
         "entry.copy_(original - eps)\n            before = _output_values(func, inputs)\n"
         "            entry.copy_(original + eps)\n            after = _output_values(func, inputs)\n"
         "            entry.copy_(original)\n            for jacobian, k in zip(per_output, positions):\n"
         "                jacobian[row] = _central_difference(before[k], after[k], eps, index)",
         "before = _output_values(func, inputs)\n"
         "            entry.copy_(original + eps)\n            after = _output_values(func, inputs)\n"
         "            entry.copy_(original)\n            for jacobian, k in zip(per_output, positions):\n"
         "                jacobian[row] = ((after[k] - before[k]) / eps).reshape(-1)", "test-numerical"),
        ("the moved element is not put back", "_numerical_jacobians", "            entry.copy_(original)\n", "",
         "test-numerical"),
        ("the elements moved in a copy of the storage", "_numerical_jacobians", "data = inp._data",
         "data = inp._data.clone()", "test-numerical"),
        ("Jacobians for every tensor input, not only those requiring grad", "_numerical_jacobians",
         "for inp in _requiring_grad(inputs):", "for inp in [i for i in inputs if isinstance(i, minigrad.Tensor)]:",
         "test-mismatch-message"),
        ("elements walked through reshape(-1), a copy when not contiguous", "_numerical_jacobians",
         "entry = data[index]", "entry = data.reshape(-1)[row]", "test-numerical"),
        ("a grad_output of ones instead of one-hot", "_jacobians_from_backward", "one_hot[j] = 1.0",
         "one_hot.fill_(1.0)", "test-analytical"),
        ("backward's gradient written as row j (the Jacobian transposed)", "_jacobians_from_backward",
         "jacobian[:, j] = grad._data.reshape(-1)", "jacobian[j] = grad._data.reshape(-1)", "test-analytical"),
        ("no retain_graph for the next column", "_jacobians_from_backward", "retain_graph=True, allow_unused=True",
         "allow_unused=True", "test-analytical"),
        ("no allow_unused for an input backward does not reach", "_jacobians_from_backward",
         "retain_graph=True, allow_unused=True", "retain_graph=True", "test-analytical"),
        ("absolute tolerance only", "_check_jacobians",
         "torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), rtol, atol)",
         "torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), 0, atol)", "test-wrong-backwards"),
        ("rtol scaled by the analytical Jacobian", "_check_jacobians",
         "torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), rtol, atol)",
         "torch.allclose(n.to(device=a.device, dtype=dtype), a.to(dtype), rtol, atol)", "test-wrong-backwards"),
        ("only the first input checked", "_check_jacobians",
         "enumerate(zip(analytical, numerical))", "enumerate(zip(analytical[:1], numerical[:1]))",
         "test-mismatch-message"),
        ("only the first output checked", "_check_jacobians", "for i, output in enumerate(outputs):",
         "for i, output in enumerate(outputs[:1]):", "test-mismatch-message"),
        ("its own error message", "_check_jacobians",
         'GradcheckError(f"Jacobian mismatch for output {i:d} with respect to input {j:d},\\n"',
         'GradcheckError(f"Jacobian mismatch: output {i:d}, input {j:d}\\n"', "test-mismatch-message"),
        ("log-sum-exp's forward not shifted", "StableLogSumExp",
         "return (x - shift).exp().sum(dim=dim, keepdim=True).log().squeeze(dim) + shift.squeeze(dim)",
         "return x.exp().sum(dim=dim).log()", "test-lse"),
        ("log-sum-exp's backward not shifted", "StableLogSumExp", "shifted = (x - shift).exp()",
         "shifted = x.exp()", "test-lse"),
        ("grad_output not unsqueezed", "StableLogSumExp", "return grad_output.unsqueeze(ctx.dim) * softmax, None",
         "return grad_output * softmax, None", "test-lse"),
        ("softmax normalised over every element", "StableLogSumExp",
         "shifted / shifted.sum(dim=ctx.dim, keepdim=True)", "shifted / shifted.sum()", "test-lse"),
        ("no gradient slot (None) for dim", "StableLogSumExp", "return grad_output.unsqueeze(ctx.dim) * softmax, None",
         "return grad_output.unsqueeze(ctx.dim) * softmax", "test-lse"),
        ("infinite rows shifted by their max (the tutorial's nan)", "StableLogSumExp",
         "        shift = shift.masked_fill(shift.abs() == math.inf, 0)\n", "", "test-lse"),
        ("only -inf rows shifted by 0", "StableLogSumExp", "shift.masked_fill(shift.abs() == math.inf, 0)",
         "shift.masked_fill(shift == -math.inf, 0)", "test-lse"),
        ("the straight-through estimator returns None", "StraightThroughEstimator", "return grad_output, None",
         "return None, None", "test-ste"),
        ("the straight-through estimator returns zeros", "StraightThroughEstimator", "return grad_output, None",
         "return grad_output * 0, None", "test-ste"),
        ("the straight-through estimator rounds in backward too", "StraightThroughEstimator",
         "return grad_output, None", "return grad_output.mul(255).round().div(255), None", "test-ste"),
        ("2 ** num_bits steps", "StraightThroughEstimator", "scale = 2 ** num_bits - 1", "scale = 2 ** num_bits",
         "test-ste"),
    ],
    "ex9_gpu_kernel": [
        ("the max reads the padding as 0", "softmax_kernel", ', other=float("-inf")))', "))", "test-softmax_kernel"),
        ("the sum counts the padding", "softmax_kernel",
         'x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))',
         "x = tl.load(x_row + start + columns, mask=start + columns < n)", "test-softmax_kernel"),
        ("no max shift", "softmax_kernel", "shift = tl.max(top, 0)", "shift = 0.0", "test-softmax_kernel"),
        ("a row starts at x_ptr + row (no row stride)", "softmax_kernel",
         "x_row, out_row = x_ptr + row * n, out_ptr + row * n", "x_row, out_row = x_ptr + row, out_ptr + row * n",
         "test-softmax_kernel"),
        ("the sum's block loop stops a column early", "softmax_kernel",
         "x_ptr.dtype.element_ty)\n    for start in range(0, n, BLOCK):\n        x = tl.load(",
         "x_ptr.dtype.element_ty)\n    for start in range(0, n - 1, BLOCK):\n        x = tl.load(",
         "test-softmax_kernel"),
        ("the backward's sum not weighted by the gradient", "softmax_backward_kernel", "dot += g * y", "dot += y",
         "test-softmax_backward_kernel"),
        ("the backward is the Jacobian's diagonal", "softmax_backward_kernel", "y * (g - dot)", "g * y * (1 - y)",
         "test-softmax_backward_kernel"),
        ("the backward's sum keeps the last block only", "softmax_backward_kernel", "dot += g * y", "dot = g * y",
         "test-softmax_backward_kernel"),
        ("the output is allocated as float32", "Softmax", "out = torch.empty_like(rows)",
         "out = torch.empty(rows.shape, device=rows.device)", "test-Softmax"),
        ("the input is not made contiguous", "Softmax", "rows = data.reshape(-1, data.shape[-1]).contiguous()",
         "rows = data.reshape(-1, data.shape[-1])", "test-Softmax"),
        ("Softmax saves its input", "Softmax", "ctx.save_for_backward(result)", "ctx.save_for_backward(x)",
         "test-Softmax"),
        ("one program for all the rows", "Softmax", "softmax_kernel[(rows.shape[0],)]", "softmax_kernel[(1,)]",
         "test-Softmax"),
        ("the backward runs on storage: no second derivative", "Softmax", "return SoftmaxGrad.apply(grad, result)",
         "return minigrad.Tensor(triton_softmax.softmax_backward(grad._data, result._data))",
         "test-Softmax-graph"),
    ],
    "ex10_capstone": [
        # each planted bug left alone
        ("the validation loss logged as a tensor made with grad mode on (bug left)", "fixed_train",
         CAPSTONE_VALIDATION, CAPSTONE_VALIDATION.replace("        with no_grad(lib):\n            val_loss", "        val_loss")
         .replace("val_loss.item()", "val_loss"), "test-memory"),
        ("the running mean carried without detach, retain_graph=True kept (bug left)", "fixed_train", CAPSTONE_LOOP,
         CAPSTONE_LOOP.replace("(0.9 * running_mean + 0.1 * batch_mean).detach()", "0.9 * running_mean + 0.1 * batch_mean")
         .replace("loss.backward()", "loss.backward(retain_graph=True)"), "test-graph"),
        ("relu's output centred in place (bug left)", "fixed_train", "h = h - running_mean", "h -= running_mean",
         "test-training"),
        ("the examples counted inside the checkpointed block (bug left)", "fixed_train", CAPSTONE_LOOP,
         CAPSTONE_LOOP.replace("        return block(h).tanh()", "        log[\"examples\"] += len(h)\n        return block(h).tanh()")
         .replace(CAPSTONE_COUNT_OUTSIDE, "        z = checkpoint(lib, block_function, h)\n"), "test-logs"),
        ("zero_grad of the head's optimizer only (bug left)", "fixed_train", "        body_optimizer.zero_grad()\n", "",
         "test-training"),
        # half-fixes
        (".detach() called for its effect, retain_graph dropped: the second step's backward fails", "fixed_train",
         "running_mean = (0.9 * running_mean + 0.1 * batch_mean).detach()",
         "running_mean = 0.9 * running_mean + 0.1 * batch_mean\n        running_mean.detach()", "test-training"),
        ("the running mean detached before its update only: each step reaches into the one before", "fixed_train",
         "(0.9 * running_mean + 0.1 * batch_mean).detach()", "0.9 * running_mean.detach() + 0.1 * batch_mean",
         "test-training"),
        ("the running mean detached, retain_graph=True kept: each step's graph held until the next", "fixed_train",
         "loss.backward()", "loss.backward(retain_graph=True)", "test-memory"),
        ("the validation loss evaluated under no_grad, logged as a tensor", "fixed_train",
         'log["val_loss"].append(val_loss.item())', 'log["val_loss"].append(val_loss)', "test-logs"),
        ("the validation loss logged with .item(), evaluated with grad mode on: its graph alive at each report",
         "fixed_train", CAPSTONE_VALIDATION, CAPSTONE_VALIDATION.replace(
             "        with no_grad(lib):\n            val_loss", "        val_loss"), "test-memory"),
        ("zero_grad of the body's optimizer only", "fixed_train", "        head_optimizer.zero_grad()\n", "",
         "test-training"),
        ("zero_grad between backward and step: no gradient left to step with", "fixed_train", CAPSTONE_LOOP,
         CAPSTONE_LOOP.replace("        body_optimizer.zero_grad()\n        head_optimizer.zero_grad()\n", "").replace(
             "        loss.backward()\n",
             "        loss.backward()\n        body_optimizer.zero_grad()\n        head_optimizer.zero_grad()\n"),
         "test-training"),
        ("the count moved after the layer, still inside the checkpointed block", "fixed_train", CAPSTONE_LOOP,
         CAPSTONE_LOOP.replace("        return block(h).tanh()",
                               "        a = block(h)\n        log[\"examples\"] += len(h)\n        return a.tanh()")
         .replace(CAPSTONE_COUNT_OUTSIDE, "        z = checkpoint(lib, block_function, h)\n"), "test-logs"),
        ("the body's features detached before centring: the body gets no gradient", "fixed_train",
         "h = body(x).relu()", "h = body(x).relu().detach()", "test-training"),
        ("the colleague's script submitted unchanged", "fixed_train", *capstone_unchanged(), "test-training"),
        # wrong diagnoses
        ("a bug left out of the diagnoses", "diagnoses", CAPSTONE_IN_PLACE_DIAGNOSIS, "", "test-diagnoses"),
        ("the in-place edit diagnosed with a tool that does not show it", "diagnoses",
         "the RuntimeError naming versions, then detect_anomaly naming the relu line",
         "minigrad.memory.saved_bytes() after each step", "test-diagnoses"),
    ],
}
