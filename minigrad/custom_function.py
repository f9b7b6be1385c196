"""What ``Function.apply`` makes of the outputs of a user's forward, as torch's custom_function.cpp
(``_process_backward_mode_ad``) does: which output gets the node, which is a view of an input,
which is an input changed in place (``ctx.mark_dirty``), which has no gradient
(``ctx.mark_non_differentiable``); and torch's checks of ``mark_dirty``, word for word.

Imported by function.py, which assigns ``Tensor`` here once it exists (as for saved_tensors.py).
"""
import functools
import inspect
import warnings

import torch

from . import grad_mode, graph_owned, releases

Tensor = None
"""minigrad's Tensor, assigned by function.py (importing it here would close a second cycle)."""

ERR_DIRTY_NOT_INPUT = ("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                       "mutated should be passed to ctx.mark_dirty().")
ERR_DIRTY_NOT_RETURNED = ("Some elements marked as dirty during the forward method were not returned as output. The "
                          "inputs that are modified inplace must all be outputs of the Function.")
ERR_DIRTY_VIEW_OF_MANY = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return "
    "more than one Tensor. This is not supported by the current autograd engine. You should either make sure "
    "the input is not a view (using .clone() for example) or make your Function only return one Tensor "
    "(potentially splitting it into two Functions: one doing the inplace that returns a single Tensor and a "
    "second one that does the other operations). You can ask on the forum https://discuss.pytorch.org/ if you "
    "need help to do this change.")
ERR_INPUT_RETURNED_AS_IS_SAVED = (
    f"{'An' if releases.INPUT_RETURNED_AS_IS_SAYS_AN else 'A'} input that has been returned as-is as output is being "
    "saved for backward. This is not supported if you override setup_context. You should return and save a view "
    "of the input instead, e.g. with x.view_as(x) or setup ctx inside the forward function itself.")
ERR_SAVED_ACCESSED_TWICE = (
    "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set on the "
    "autograd.Function. Either access saved_tensors only once, or set clear_saved_tensors_on_access=False.")


class OutputInfo:
    """What backward needs to know of one tensor output: zeros of its shape replace a missing gradient."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, data):
        self.shape, self.dtype, self.device = data.shape, data.dtype, data.device


def wrap_outputs(ctx, record, inputs, out):
    """The outputs of a Function whose forward returned minigrad tensors or a tuple: each tensor
    output gets the node as grad_fn (``output_nr``: its position), unless marked non-differentiable;
    a tensor marked dirty is itself the output (moved onto the node, as an in-place op moves it, its
    base onto a CopySlices node when it is a view); an input returned as it is comes back as a view
    of it (saved as the input itself); a view made in forward comes back as it is (a differentiable
    one with the node as grad_fn); an output with no gradient as ``_without_history`` makes it;
    other values pass through.
    As in torch, a view among the outputs may not be edited in place ("function", or "multi_output"
    where the Function has several differentiable outputs: ``views.creation_error``).

    Every tensor marked dirty has its version bumped first, returned or not (torch's ``_mark_dirty``),
    and must be among the outputs. The node of a Function with ``clear_saved_tensors_on_access``
    becomes its ``_clearing`` kind, as torch reads that flag: at each apply."""
    outputs = out if isinstance(out, tuple) else (out,)
    dirty = {id(t): t for t in ctx._dirty}.values()
    ctx._dirty = ()  # torch lets go of them here too: a view marked dirty and its node would hold each other
    for tensor in dirty:
        if tensor._version_counter is not None:  # an inference tensor has none to bump
            tensor._version_counter.version += 1
    results, infos, saved_as, differentiable_outputs = [], [], [], 0
    for output_nr, value in enumerate(outputs):
        if isinstance(value, torch.Tensor):  # storage an op of minigrad's returned: a new tensor of this mode
            value = Tensor(value)
            if grad_mode._state.inference:
                value._is_inference, value._version_counter = True, None
        if not isinstance(value, Tensor):
            results.append(value)
            infos.append(None)
            continue
        dirty_view = False
        is_input = any(value is i for i in inputs)
        is_dirty = any(value is d for d in dirty)
        differentiable = record and not any(value is n for n in ctx._non_differentiable)
        first = next(i for i, earlier in enumerate(outputs) if earlier is outputs[output_nr])
        if first < output_nr and (is_dirty or not is_input):
            result = results[first]  # the same tensor twice is one output, in the last place, as in torch
            # (but an input returned twice as it is comes back as two aliases, one per place)
        elif not differentiable:
            result = _without_history(ctx, value, is_input, is_dirty)
        elif is_dirty:
            dirty_view = _check_dirty(value, is_input, len(outputs))
            result = value
        elif is_input:
            _check_not_saved_by_setup_context(ctx, value)
            result = _alias(value)
        elif value._view is not None:
            result = value  # a view made in forward stays one (torch's IN_CUSTOM_FUNCTION views)
            if value._version_counter is not None:  # torch's set_gradient_edge: the node is right for now
                value._view.version = value._version_counter.version
        elif value._node is not None:
            result = Tensor(value._data)
            result._version_counter = value._version_counter
        else:
            result = value
        if result._view is not None and not (is_input and is_dirty):
            result._view.creation_mode = "function"
        differentiable_outputs += differentiable
        if dirty_view:
            result._edited_in_place_by(ctx)
        elif differentiable:
            result._node, result._output_nr, result._requires_grad = ctx, output_nr, True
        results.append(result)
        infos.append(OutputInfo(result._data))
        if record and (not is_input or is_dirty):  # an input returned as it is is saved as it is, not its alias
            saved_as.append((outputs[output_nr], result, dirty_view or result._node is ctx))
    if not all(any(tensor is output for output in outputs) for tensor in dirty):
        raise RuntimeError(ERR_DIRTY_NOT_RETURNED)
    if differentiable_outputs > 1:  # then none of the views among the outputs may be edited in place
        for result in results:
            if isinstance(result, Tensor) and result._view is not None:
                result._view.creation_mode = "multi_output"
    if record:
        if ctx._forward_cls.clear_saved_tensors_on_access:
            ctx.__class__ = _clearing(type(ctx))
        if len(outputs) > 1 or ctx._non_differentiable:
            ctx._outputs = infos
        if ctx._to_save:
            ctx._save(saved_as)
        if isinstance(ctx, graph_owned.GraphOwned):
            graph_owned.outputs_made(ctx, results)
    return tuple(results) if isinstance(out, tuple) else results[0]


def _without_history(ctx, value, is_input, is_dirty):
    """An output that gets no gradient (marked non-differentiable, or nothing records), as torch makes
    it: an input comes back detached, or, when it needs no grad, as an alias (unless changed in place);
    any other tensor that is not a view loses its history; a view stays as it is (made from a tensor
    that requires grad, it still does, as a view made under no_grad)."""
    if not value.requires_grad:
        if not is_input or is_dirty:
            return value
        _check_not_saved_by_setup_context(ctx, value)
        return _alias(value)
    if value._view is not None and not is_input:
        return value
    if is_input or value._node is not None:
        result = Tensor(value._data)
        result._version_counter, result._is_inference = value._version_counter, value._is_inference
        return result
    value._requires_grad = False  # a leaf that requires grad, returned by forward: torch's detach_()
    return value


def _alias(tensor):
    """An input returned as it is comes back as a new view of it (torch's ``view_as(self)``), which can
    take the node as its grad_fn without changing the input (of an inference tensor: an inference
    tensor, which is no view)."""
    result = Tensor(tensor._data)
    if tensor._is_inference:
        result._is_inference, result._version_counter = True, None
    else:
        result._become_view_of(tensor)
    return result


def _check_not_saved_by_setup_context(ctx, tensor):
    """torch refuses to save an input returned as it is when setup_context saved it (it would have to
    save the alias that forward never saw)."""
    if ctx._forward_cls._separate_setup and any(tensor is t for t in ctx._to_save or ()):
        raise RuntimeError(ERR_INPUT_RETURNED_AS_IS_SAVED)


def _check_dirty(tensor, is_input, output_count):
    """A tensor a recorded Function changed in place, checked as torch checks it: not a leaf that
    requires grad; an input (a view that is not one is refused, anything else is only warned about);
    a view only of a Function with one output. Whether it is such a view, which the edit rebases as
    an in-place op's view (``Tensor._edited_in_place_by``)."""
    # A leaf. Not ``tensor.grad_fn``: on a view edited in forward, that would rebuild the view's node
    # on its base's node of now, which the rebase below is about to replace.
    if tensor.requires_grad and tensor._node is None and tensor._view is None:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    view = tensor._view
    if not is_input:
        if view is not None:
            raise RuntimeError(ERR_DIRTY_NOT_INPUT)
        warnings.warn(ERR_DIRTY_NOT_INPUT)
    if view is None:
        return False
    if output_count > 1:
        raise RuntimeError(ERR_DIRTY_VIEW_OF_MANY)
    return True


def _saved_tensors_once(node):
    """``saved_tensors`` of the node of a Function with ``clear_saved_tensors_on_access``: the first
    (in backward, or ``grad_fn.saved_tensors``) lets go of what the node saved, so that a tensor dies
    with backward's last reference to it rather than with the node; a second is refused, as in torch."""
    if node._accessed:
        raise RuntimeError(ERR_SAVED_ACCESSED_TWICE)
    tensors = tuple(map(node._unpack, node._saved))
    node._saved, node._accessed = (), True
    return tensors


@functools.cache
def _clearing(node_cls):
    """``node_cls`` with ``_saved_tensors_once`` for ``saved_tensors``, under the same name: a class of
    its own, so that every other node's ``saved_tensors`` stays as it is, with no check."""
    return type(node_cls.__name__, (node_cls,), {"saved_tensors": property(_saved_tensors_once), "_accessed": False})


def with_defaults(forward, args, kwargs):
    """The arguments as forward would see them, defaults included (torch binds them for the
    setup_context form, so that ``inputs`` and ``needs_input_grad`` cover every parameter)."""
    bound = inspect.signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args
