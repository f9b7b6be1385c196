"""backward() and grad(): what torch.autograd checks and prepares before the engine runs."""
import warnings
from collections.abc import Mapping

import torch

from .. import engine, function, releases
from ..function import GraphRoot, constant
from .gradient_edge import GradientEdge, output_metadata

__all__ = ["backward", "grad", "prepare_backward"]


def _as_tuple(value):
    """A tensor or an iterable of them (torch takes both) as a tuple; a GradientEdge, a named tuple, is
    one. Anything else is taken as an iterable, as in torch (a number: "'float' object is not iterable")."""
    if value is None:
        return ()
    return (value,) if isinstance(value, (function.Tensor, GradientEdge)) else tuple(value)


def _input_edges(inputs, retain_grad=False):
    """Where the gradient of each of ``inputs`` arrives: a tensor's edge, or a GradientEdge as given.
    A tensor must require grad; with ``retain_grad`` (backward's inputs) it retains its grad."""
    edges = []
    for tensor in inputs:
        if isinstance(tensor, GradientEdge):
            edges.append((tensor.node, tensor.output_nr))
            continue
        if not isinstance(tensor, function.Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(tensor).__name__}")
        if retain_grad:
            tensor.retain_grad()
        if not tensor._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edges.append(tensor._gradient_edge())
    return edges


def _make_grads(outputs, grad_outputs):
    """The gradient each output starts with: ones like a one-element output (as torch's ``ones_like``), else
    the caller's."""
    grads = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if grad is not None and not isinstance(grad, function.Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(grad).__name__}")
        if isinstance(out, GradientEdge):
            grads.append(_edge_grad(out, grad, i))
            continue
        if grad is None:
            if out._requires_grad:
                if out._data.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                grad = constant(torch.ones_like(out._data))
        elif grad.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and "
                               f"output[{i}] has a shape of {out.shape}.")
        grads.append(grad)
    if len(grads) != len(outputs):  # (paired as zip pairs them: torch's engine then refuses too few)
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    return grads


def _edge_grad(edge, grad, i):
    """The gradient a GradientEdge among the outputs starts with, as for a tensor of the shape, dtype
    and device get_gradient_edge saw."""
    shape, dtype, device = output_metadata(edge, i)
    if grad is None:
        if shape.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return constant(torch.ones(shape, dtype=dtype, device=device))
    if grad.shape != shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and "
                           f"output[{i}] has a shape of {shape}.")
    return grad


def _validated(outputs, grads, given):
    """The gradients backward starts from, checked as torch's engine checks them (as any node's,
    ``engine.validate_outputs``): each the caller ``given`` cast to its output's dtype (a float32
    gradient for a float64 output), and on its output's device, where a 0-dim one is moved (a CPU
    ``tensor(1.)`` for a loss on CUDA), and any other is refused. Those ``_make_grads`` made are
    like their outputs already."""
    moved = list(grads)
    for i, (out, grad, given_grad) in enumerate(zip(outputs, grads, given)):
        if given_grad is None:
            continue
        if isinstance(out, GradientEdge):
            _, dtype, device = output_metadata(out, i)
        else:
            dtype, device = out._data.dtype, out._data.device
        if grad._data.dtype != dtype:
            moved[i] = grad = grad.to(dtype)
        if grad._data.device != device:
            if grad.dim():
                raise RuntimeError(f"invalid gradient at index {i} - expected device {device} but got {grad.device}")
            moved[i] = grad.to(device)
    return moved


def _inputs_tuple(inputs, caller):
    """``inputs`` as torch takes them: a tensor, a sequence of tensors, or a dict of them (its values;
    before torch 2.13 a dict is a sequence of its keys, and refused unless empty)."""
    if type(inputs) is dict and inputs and not releases.DICT_INPUTS:
        raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                           f"{type(next(iter(inputs), None)).__name__}")
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{caller}()` must be a dict, not {type(inputs).__name__}. Other "
                        "Mapping types are not supported.")
    return _as_tuple(inputs)


def _from_one_root(roots, grads):
    """The roots and their gradients as the engine takes them: where a node is among the roots more
    than once, one GraphRoot leading to them all, as torch's engine starts."""
    if len(roots) == 1 or len({node for node, _ in roots}) == len(roots):  # (one root can't repeat)
        return roots, grads
    return [(GraphRoot(roots), 0)], [grads]


def _roots(outputs):
    """The edges backward starts from, checked as torch checks them: ``requires_grad`` as a view answers
    it (its base's, now), then an edge to a node: a view whose base came to require grad by an in-place
    op gets its grad_fn then; one whose memory was not edited has none, and is refused."""
    edges = []
    for i, out in enumerate(outputs):
        if isinstance(out, GradientEdge):
            edges.append((out.node, out.output_nr))
            continue
        edge = out._gradient_edge() if out.requires_grad else (None, 0)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(edge)
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate into ``.grad`` of the leaves the gradients of ``tensors`` (torch.autograd.backward).

    With ``inputs``, into theirs only: a non-leaf among them retains its grad from now on, as in
    torch; the engine runs only the nodes that lead to them; one the graph does not reach keeps
    its ``.grad`` as it was."""
    if inputs is not None:
        inputs = _inputs_tuple(inputs, "backward")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    roots, grads, retain_graph = prepare_backward(tensors, grad_tensors, retain_graph, create_graph)
    if inputs is not None:
        inputs = _input_edges(inputs, retain_grad=True)
    if create_graph:
        _warn_create_graph_once()  # as torch's engine warns once it has checked the roots, at this line
    engine.run_backward(roots, grads, retain_graph, create_graph, inputs=inputs)


def prepare_backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """What backward() hands the engine, checked as torch checks it: the root edges (one GraphRoot
    where a node repeats among them), the gradient each starts with, and retain_graph (by default
    create_graph). coursekit.viz's Stepper runs the same backward one node at a time, so it prepares
    it here too."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, grad_tensors)
    return (*_from_one_root(_roots(tensors), _validated(tensors, grads, grad_tensors)), retain_graph)


_warned_create_graph = []


def _warn_create_graph_once():
    """torch's TORCH_WARN_ONCE: once per process, or every time while ``torch.set_warn_always(True)``
    is in force (minigrad's is torch's flag), and a warning given then does not use up the once. At the
    line of backward that calls it, as torch's is at the line of its own Python that runs its engine."""
    always = torch.is_warn_always_enabled()
    if always or not _warned_create_graph:
        if not always:
            _warned_create_graph.append(True)
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
            "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
            "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters "
            "to None after use to break the cycle and avoid the leak.", UserWarning, stacklevel=2)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is left alone.

    An input the graph does not reach is an error unless ``allow_unused`` (its gradient: None), or
    ``materialize_grads`` (zeros; it implies allow_unused). A dict of inputs gives a dict back.
    ``only_inputs`` is ignored, with torch's warning; ``is_grads_batched`` (torch's vmap) is refused."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    keys = inputs.keys() if type(inputs) is dict else None
    inputs = _inputs_tuple(inputs, "grad")
    if not inputs and releases.GRAD_REFUSES_EMPTY_INPUTS_FIRST:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", FutureWarning,
                      stacklevel=2)
    if is_grads_batched:
        raise NotImplementedError("minigrad's autograd.grad has no vmap: is_grads_batched=True is not supported")
    grad_outputs = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)
    roots, grads = _from_one_root(_roots(outputs), _validated(outputs, grads, grad_outputs))
    captures = {}
    slots = []
    for edge in _input_edges(inputs):
        slot = captures.setdefault(edge, [])
        slots.append(slot)
    if not inputs:  # before torch 2.13, the engine's check, after the roots and their gradients
        raise ValueError("grad requires non-empty inputs.")
    engine.run_backward(roots, grads, retain_graph, create_graph, captures)
    results = []
    for i, slot in enumerate(slots):
        value = slot[0] if slot else None
        if value is None and not allow_unused:
            which = f"The differentiated Tensor at index {i}" if releases.UNUSED_INPUT_BY_INDEX else \
                "One of the differentiated Tensors"
            raise RuntimeError(f"{which} appears to not have been used in the graph. Set allow_unused=True if "
                               "this is the desired behavior.")
        if value is not None and not create_graph:
            value = value.detach()
        if value is None and materialize_grads:
            if isinstance(inputs[i], GradientEdge):
                raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
            zeros = torch.zeros_like(inputs[i]._data, requires_grad=create_graph)  # torch's parser checks the flag
            value = constant(zeros.detach()).requires_grad_(zeros.requires_grad)
        results.append(value)
    return tuple(results) if keys is None else dict(zip(keys, results))
