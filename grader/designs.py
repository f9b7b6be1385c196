"""Right versions of exercises' parts in another design than the reference's, kept as data: each
must get full marks (``tests/grading/test_mistakes.py``; ``python -m grader selftest``, which also
validates them), so that the contracts and the checks grade what torch does, not how the reference
does it.

``DESIGNS``: exercise -> [(the design, the part's grade_id, text of the reference, the text that
replaces it)]; the entries that name the same design are one version, applied together (a design
may span several parts, or change a part in several places)."""
from .mistakes import WALK

# exercise 2: the walk, and backprop's body after its docstring
BREADTH_FIRST_WALK = """    queue = collections.deque(root_nodes)
    order, seen = [], set(root_nodes)
    while queue:
        node = queue.popleft()
        order.append(node)
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                queue.append(next_node)
    for node in order:
        for next_node, _ in node.next_functions:
            if next_node is not None:
                dependencies[next_node] = dependencies.get(next_node, 0) + 1
"""
BACKPROP = """    dependencies = compute_dependencies([node for node, _ in roots])
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
        deliver(node.next_functions, call(node, buffers.pop(node)))"""
BACKPROP_COUNTING_UP = """    needed = collections.Counter(compute_dependencies([node for node, _ in roots]))
    needed.update(node for node, _ in roots)
    arrived, widths = collections.Counter(), collections.Counter()
    slots = collections.defaultdict(dict)
    ready = []

    def deliver(edges, grads):
        for (node, input_nr), grad in zip(edges, grads):
            if node is None:
                continue
            slot = slots[node]
            widths[node] = max(widths[node], input_nr + 1)
            if grad is not None:
                slot[input_nr] = slot[input_nr] + grad if input_nr in slot else grad
            arrived[node] += 1
            if arrived[node] == needed[node]:
                heapq.heappush(ready, (-node._sequence_nr(), node))

    deliver(roots, root_grads)
    while ready:
        _, node = heapq.heappop(ready)
        slot = slots.pop(node)
        grads = [slot.pop(i, None) for i in range(widths.pop(node))]
        deliver(node.next_functions, call(node, grads))"""
# exercise 4
INPLACE_CHECKS = """    recording = grad_mode._state.grad_enabled and (
        self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args))
    if not recording:
        return self._mutate(storage_op, *(a._data if isinstance(a, Tensor) else a for a in args))
    if self._view is not None:
        self._check_view_inplace()
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError(ERR_LEAF_INPLACE)
"""
INPLACE_LEAF_FIRST = """    view = self._view
    if view is None and grad_mode.is_grad_enabled() and self._requires_grad and self.grad_fn is None:
        raise RuntimeError(ERR_LEAF_INPLACE)  # it requires grad: the edit would be recorded
    involved = [self] + [a for a in args if isinstance(a, Tensor)]
    if not grad_mode.is_grad_enabled() or not any(t.requires_grad for t in involved):
        return self._mutate(storage_op, *[a._data if isinstance(a, Tensor) else a for a in args])
    if view is not None:
        self._check_view_inplace()
        if self._requires_grad and self.grad_fn is None:
            raise RuntimeError(ERR_LEAF_INPLACE)
"""
DESCRIBED = """    if self.tensor is None:
        data, producer, output_nr = self.data, node, self.output_nr
    else:
        data, producer, output_nr = self.tensor._data, self.tensor.grad_fn, self.tensor._output_nr
    described = tensor_description(data)
    if producer is not None:
        described += f", which is output {output_nr} of {op_name(producer)},"
"""
DESCRIBED_AS_REBUILT = """    tensor = self.tensor if self.tensor is not None else self._output(node)
    described = tensor_description(tensor._data)
    if tensor.grad_fn is not None:
        described += f", which is output {tensor._output_nr} of {op_name(tensor.grad_fn)},"
"""
# exercise 6
SGD_UPDATE = """    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    momentum = group["momentum"]
    if momentum != 0:
        state = self.state[param]
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.clone().detach()
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
        grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
    param.add_(grad, alpha=-group["lr"])"""
SGD_UPDATE_BY_OPERATORS = """    direction = -grad if group["maximize"] else grad
    decay, momentum = group["weight_decay"], group["momentum"]
    if decay:
        direction = direction + decay * param
    if momentum:
        state = self.state[param]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = direction.clone()
        else:
            state["momentum_buffer"].mul_(momentum)
            state["momentum_buffer"] += (1 - group["dampening"]) * direction
        buf = state["momentum_buffer"]
        direction = direction + momentum * buf if group["nesterov"] else buf
    param -= group["lr"] * direction"""
# exercise 7
JACOBIAN_COLUMNS = """    jacobians = [inp._data.new_zeros((inp.numel(), output.numel())) for inp in inputs]
    for j in range(output.numel()):
        one_hot = output._data.new_zeros(output.numel())
        one_hot[j] = 1.0
        grad_output = constant(one_hot.view(output.shape))
        grads = api.grad([output], inputs, [grad_output], retain_graph=True, allow_unused=True)
        for jacobian, grad in zip(jacobians, grads):
            if grad is not None:
                jacobian[:, j] = grad._data.reshape(-1)
    return jacobians"""
JACOBIAN_COLUMNS_STACKED = """    columns = [[] for _ in inputs]
    for one_hot in torch.eye(output.numel(), dtype=output.dtype, device=output.device):
        grads = api.grad([output], inputs, [constant(one_hot.reshape(output.shape))], retain_graph=True,
                         allow_unused=True)
        for kept, inp, grad in zip(columns, inputs, grads):
            kept.append(inp._data.new_zeros(inp.numel()) if grad is None else grad._data.reshape(-1))
    return [torch.stack(kept, 1) if kept else inp._data.new_zeros((inp.numel(), 0))
            for kept, inp in zip(columns, inputs)]"""
# exercise 8: the recomputation's count kept on the frame
FRAME_COUNT = [
    ("_Frame-recompute", "    filled = 0\n", "    self.filled = 0\n"),
    ("_Frame-recompute", "        nonlocal filled\n        if filled == len(self.holders):",
     "        if self.filled == len(self.holders):"),
    ("_Frame-recompute", """        holder = self.holders[filled]
        if holder is not None:
            holder.value = kept.value
        filled += 1
        if filled == len(self.holders):""", """        holder = self.holders[self.filled]
        if holder is not None:
            holder.value = kept.value
        self.filled += 1
        if self.filled == len(self.holders):"""),
    ("_Frame-recompute", "recomputation: {filled}.", "recomputation: {self.filled}."),
]
# exercise 9: the forward kernel's max and sum
MAX_THEN_SUM = """    top = tl.full([BLOCK], float("-inf"), x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        top = tl.maximum(top, tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf")))
    shift = tl.max(top, 0)
    total = tl.zeros([BLOCK], x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))
        total += tl.exp(x - shift)
    total = tl.sum(total, 0)
"""
ONLINE_MAX_AND_SUM = """    top = tl.full([BLOCK], float("-inf"), x_ptr.dtype.element_ty)
    total = tl.zeros([BLOCK], x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))
        grown = tl.maximum(top, x)
        rescale = tl.where(grown == float("-inf"), 0.0, tl.exp(top - grown))
        total = total * rescale + tl.where(grown == float("-inf"), 0.0, tl.exp(x - grown))
        top = grown
    shift = tl.max(top, 0)
    total = tl.sum(tl.where(top == float("-inf"), 0.0, total * tl.exp(top - shift)), 0)
"""


def _imports_collections(part, name):
    """A replacement that adds ``import collections`` before the part's definition ``name``."""
    return (part, f"def {name}(", f"import collections\n\n\ndef {name}(")


# exercise: [(the design, part's grade_id, reference text, the other design's text)]; entries with
# the same design are applied together
DESIGNS = {
    "ex1_ops": [
        ("SumDim keeps a's shape with 1 in the summed dims, and reshapes the gradient to it", "SumDim",
         "ctx.shape, ctx.dims, ctx.keepdim = a.shape, _normalize_dims(dim, a.dim()), keepdim",
         "dims = _normalize_dims(dim, a.dim())\n        ctx.shape = a.shape\n"
         "        ctx.kept = [1 if i in dims else n for i, n in enumerate(a.shape)]"),
        ("SumDim keeps a's shape with 1 in the summed dims, and reshapes the gradient to it", "SumDim",
         "return _keep_dims(grad, ctx.dims, ctx.keepdim).expand(ctx.shape), None, None",
         "return grad.reshape(ctx.kept).expand(ctx.shape), None, None"),
        ("sum_to in two sums: the added dims away first, then the stretched ones kept", "sum_to",
         """    if not shape:
        return grad.sum()
    lead = grad.dim() - len(shape)
    dims = [*range(lead)]
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.view(shape) if lead else grad""", """    lead = grad.dim() - len(shape)
    if lead:
        grad = grad.sum(tuple(range(lead)))
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad"""),
    ],
    "ex2_engine": [
        ("compute_dependencies walks breadth first, then counts the edges in a second pass",
         "compute_dependencies", WALK, BREADTH_FIRST_WALK),
        ("compute_dependencies walks breadth first, then counts the edges in a second pass",
         *_imports_collections("compute_dependencies", "compute_dependencies")),
        ("backprop: a heap of (-sequence_nr, node) pairs, arrivals counted up, slots in a dict per node",
         "backprop", BACKPROP, BACKPROP_COUNTING_UP),
        ("backprop: a heap of (-sequence_nr, node) pairs, arrivals counted up, slots in a dict per node",
         *_imports_collections("backprop", "backprop")),
    ],
    "ex3_freeing": [
        ("a freed entry is a class of the learner's own; _unpack checks it first",
         "BackwardFunction-_release_saved", "def _release_saved(self):",
         'class Freed:\n    """What a freed entry of _saved holds."""\n\n\ndef _release_saved(self):'),
        ("a freed entry is a class of the learner's own; _unpack checks it first",
         "BackwardFunction-_release_saved",
         "    if self._saved:\n        self._saved = tuple(None if s is None else _FREED for s in self._saved)",
         "    entries = []\n    for saved in self._saved:\n        entries.append(None if saved is None else Freed)\n"
         "    self._saved = tuple(entries)"),
        ("a freed entry is a class of the learner's own; _unpack checks it first", "BackwardFunction-_unpack",
         "    if saved is None:\n        return None\n"
         "    if saved is _FREED:\n        raise RuntimeError(ERR_BACKWARD_TWICE)\n    return saved.unpack(self)",
         "    if saved is Freed:\n        raise RuntimeError(ERR_BACKWARD_TWICE)\n"
         "    return None if saved is None else saved.unpack(self)"),
    ],
    "ex4_versions": [
        ("_inplace: the leaf check first for a tensor that is no view, the recording test written out",
         "Tensor-_inplace", INPLACE_CHECKS, INPLACE_LEAF_FIRST),
        ("_raise_modified: a saved output rebuilt, then every tensor described alike",
         "SavedTensor-_raise_modified", DESCRIBED, DESCRIBED_AS_REBUILT),
    ],
    "ex5_grad_modes": [
        ("_enter keeps both switches as one pair, under a name of its own", "_Mode-_enter",
         "    self._was_grad_enabled = _state.grad_enabled\n    self._was_inference = _state.inference\n",
         "    self._outer = (_state.grad_enabled, _state.inference)\n"),
        ("_enter keeps both switches as one pair, under a name of its own", "_Mode-_exit",
         "    _state.grad_enabled = self._was_grad_enabled\n    _state.inference = self._was_inference",
         "    _state.grad_enabled, _state.inference = self._outer"),
        ("train_step logs float(...), and validates on a detached output", "train_step",
         'log["loss"].append(loss.item())', 'log["loss"].append(float(loss))'),
        ("train_step logs float(...), and validates on a detached output", "train_step",
         '    val_loss = lib.nn.functional.mse_loss(model(x_val), y_val)\n    log["val_loss"].append(val_loss.item())',
         '    log["val_loss"].append(float(lib.nn.functional.mse_loss(model(x_val).detach(), y_val)))'),
    ],
    "ex6_training": [
        ("SGD._update written with * and +, the buffer read back from the state", "SGD-_update", SGD_UPDATE,
         SGD_UPDATE_BY_OPERATORS),
        ("fit forgets the gradients after each step, not before", "fit",
         "            optimizer.zero_grad()\n"
         "            loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])\n"
         "            loss.backward()\n            optimizer.step()\n",
         "            loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])\n"
         "            loss.backward()\n            optimizer.step()\n            optimizer.zero_grad()\n"),
    ],
    "ex7_custom_functions": [
        ("_jacobians_from_backward: the rows of an identity as grad_outputs, the columns stacked at the end",
         "_jacobians_from_backward", JACOBIAN_COLUMNS, JACOBIAN_COLUMNS_STACKED),
        ("_numerical_jacobians: each element's index worked out from its number", "_numerical_jacobians",
         "        for row, index in enumerate(itertools.product(*map(range, data.shape))):\n",
         "        for row in range(data.numel()):\n            index, rest = [], row\n"
         "            for size in reversed(data.shape):\n                rest, position = divmod(rest, size)\n"
         "                index.insert(0, position)\n            index = tuple(index)\n"),
    ],
    "ex8_checkpoint": [
        *(("recompute counts the holders it filled on the frame", *case) for case in FRAME_COUNT),
        ("recompute: positions from an iterator, an early stop of its own (an Exception subclass)",
         "_Frame-recompute", "def recompute(self):",
         'class Refilled(Exception):\n    """Every holder is filled: the rest of the body need not run again."""\n\n\n'
         "def recompute(self):"),
        ("recompute: positions from an iterator, an early stop of its own (an Exception subclass)",
         "_Frame-recompute", "    filled = 0\n", "    positions = iter(range(len(self.holders)))\n    filled = 0\n"),
        ("recompute: positions from an iterator, an early stop of its own (an Exception subclass)",
         "_Frame-recompute", "        if filled == len(self.holders):\n            raise CheckpointError",
         "        position = next(positions, None)\n        if position is None:\n            raise CheckpointError"),
        ("recompute: positions from an iterator, an early stop of its own (an Exception subclass)",
         "_Frame-recompute", """        holder = self.holders[filled]
        if holder is not None:
            holder.value = kept.value
        filled += 1
        if filled == len(self.holders):
            raise _StopRecomputation""", """        holder = self.holders[position]
        if holder is not None:
            holder.value = kept.value
        filled = position + 1
        if filled == len(self.holders):
            raise Refilled"""),
        ("recompute: positions from an iterator, an early stop of its own (an Exception subclass)",
         "_Frame-recompute", "    except _StopRecomputation:", "    except Refilled:"),
    ],
    "ex10_capstone": [
        ("the running mean made from a detached batch mean; the gradients forgotten after each step",
         "fixed_train", "        batch_mean = h.mean(0)\n", "        batch_mean = h.detach().mean(0)\n"),
        ("the running mean made from a detached batch mean; the gradients forgotten after each step",
         "fixed_train", "        running_mean = (0.9 * running_mean + 0.1 * batch_mean).detach()\n",
         "        running_mean = 0.9 * running_mean + 0.1 * batch_mean\n"),
        ("the running mean made from a detached batch mean; the gradients forgotten after each step",
         "fixed_train", "        body_optimizer.zero_grad()\n        head_optimizer.zero_grad()\n\n", "\n"),
        ("the running mean made from a detached batch mean; the gradients forgotten after each step",
         "fixed_train", "        head_optimizer.step()\n",
         "        head_optimizer.step()\n        for optimizer in (body_optimizer, head_optimizer):\n"
         "            optimizer.zero_grad()\n"),
    ],
    "ex9_gpu_kernel": [
        ("softmax_kernel in two passes: a running max, the sum rescaled as it grows", "softmax_kernel",
         MAX_THEN_SUM, ONLINE_MAX_AND_SUM),
    ],
}


def versions(exercise):
    """{design: [(part, reference text, its text), ...]}: ``exercise``'s designs, each one's entries together."""
    found = {}
    for design, *replacement in DESIGNS.get(exercise, []):
        found.setdefault(design, []).append(tuple(replacement))
    return found
