"""Views and in-place edits of them: how torch keeps a view's graph right when its memory changes.

A view shares its base's memory and version counter. An in-place op on a view moves the base onto
a ``CopySlices`` node (``rebase``); any view whose memory was edited since it was made gets a fresh
``grad_fn``, ``AsStridedBackward0`` on its base's current node (``rebuilt_grad_fn``). Both describe
a view by its memory layout (size, stride, offset), as torch does. A view made with grad mode off
cannot take part in this, so torch forbids editing it in place with grad mode on (``check_inplace``).
"""
import torch

from . import releases
from .function import ERR_BACKWARD_TWICE, Function, Node, constant, input_metadata

_CLARIFY = {
    "no_grad": ("with grad mode enabled", "no_grad"),
    "inference": ("in normal mode", "inference_mode"),
}


_MADE_IN_A_FUNCTION = (
    " This view was created inside a custom Function (or because an input was returned as-is) and the autograd "
    "logic to handle view+inplace would override the custom backward associated with the custom Function, leading "
    "to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom "
    "Function.")


_MULTI_OUTPUT = (
    " This view is the output of a function that returns multiple views. Such functions do not allow the output "
    "views to be modified inplace. You should replace the inplace operation by an out-of-place one.")


ERR_DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for "
    "training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() "
    "cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution."
)


def check_detach(tensor):
    """torch refuses ``detach_()`` on a view: a view's grad_fn follows its base (an edit of the base
    gives it a new one, ``rebuilt_grad_fn``), so it can't be taken out of the graph alone."""
    if tensor._view is not None:
        raise RuntimeError(ERR_DETACH_VIEW)


def creation_error(view, indirect):
    """torch's message for a view made with grad mode off that is, or whose memory was, edited in place.
    Creation mode "function": a view a custom Function returned (an input as it is, or a view made in
    its forward, always with grad mode off), recorded on its node or not; "multi_output": one of the views an op
    returned together (unbind, chunk), or a view of one."""
    mode = view._view.creation_mode
    if mode == "multi_output":
        return _multi_output_error(view, indirect)
    in_function = mode == "function"
    if in_function and view._node is not None:  # an output of the Function's node
        edited = "its base or another view of its base has been" if indirect else "is being"
        return f"Output {view._output_nr} of {_named(view._node)} is a view and {edited} modified inplace.{_MADE_IN_A_FUNCTION}"
    if in_function:
        mode = "no_grad"
    enabled, block = _CLARIFY[mode]
    if view._node is None:
        made = f"A view was created in {mode} mode"
    else:
        made = (f"Output {view._output_nr} of {_named(view._node)} is a view of a view which was "
                f"created in {mode} mode")
    edited = (f"its base or another view of its base has been modified inplace {enabled}" if indirect
              else f"is being modified inplace {enabled}")
    if in_function:
        return f"{made} and {edited}.{_MADE_IN_A_FUNCTION}"
    return (f"{made} and {edited}. Given that this use case is ambiguous and error-prone, it is forbidden. "
            f"You can clarify your code by moving both the view and the inplace either both inside the {block} "
            "block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
            "tracked).")


def _multi_output_error(view, indirect):
    edited = "its base or another view of its base has been" if indirect else "is being"
    if view._node is None:
        made = f"A view was created in no_grad mode and {edited} modified inplace with grad mode enabled."
    else:
        made = f"Output {view._output_nr} of {_named(view._node)} is a view and {edited} modified inplace."
    return made + _MULTI_OUTPUT


def _named(node):
    """A view's node as the view errors name it: by its op from torch 2.13 ("Split"), by its name before."""
    name = node.name()
    return name[:name.rindex("Backward")] if releases.SHORT_NODE_NAMES_IN_ERRORS else name


def check_inplace(view):
    """Before an in-place op that autograd records on a view: forbidden if the view was made with grad mode off."""
    if view._view.creation_mode is not None:
        raise RuntimeError(creation_error(view, indirect=False))


def rebuilt_grad_fn(view):
    """The grad_fn of a view whose memory was edited in place since it last looked (torch's
    VariableHooks::grad_fn): AsStridedBackward0 on the base's current node."""
    meta = view._view
    if view._node is None and not meta.base._requires_grad:
        return None
    if meta.creation_mode is not None:
        raise RuntimeError(creation_error(view, indirect=True))
    meta.version = view._version_counter.version
    view._take_history(AsStridedBackward0(meta.base, view), 0)
    return view._node


def rebase(view, node):
    """After ``node`` recorded an in-place op on ``view``, the base's history goes through CopySlices."""
    base = view._view.base
    base._take_history(CopySlices(base._gradient_edge(), node, base, view), 0)


def _geometry(tensor):
    data = tensor._data
    return tuple(data.shape), data.stride(), data.storage_offset()


class AsStrided(Function):
    """The region of a base-shaped tensor that a view covers, described by memory layout (size,
    stride, offset), as torch describes views it has to rebuild."""

    node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, a, base_geometry, view_geometry):
        ctx.geometries = base_geometry, view_geometry
        flat = _flat_buffer(base_geometry, a._data)
        _as_base(flat, base_geometry).copy_(a._data)
        size, stride, offset = view_geometry
        return flat.as_strided(size, stride, offset - base_geometry[2])

    @staticmethod
    def backward(ctx, grad):
        return AsStridedScatter.apply(grad, *ctx.geometries), None, None


class AsStridedView(Function):
    """``a.as_strided(size, stride, offset)``: a view of a's memory, AsStridedBackward0. CopySlices takes
    one of the base-shaped gradient it makes, where the edited view lies."""

    node_name = "AsStridedBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, size, stride, offset):
        ctx.geometries = _geometry(a), (size, stride, offset)
        return a._data.as_strided(size, stride, offset)

    @staticmethod
    def backward(ctx, grad):
        return AsStridedScatter.apply(grad, *ctx.geometries), None, None, None


class AsStridedScatter(Function):
    """A base-shaped gradient holding ``grad`` where the view lies (summed where a view like an
    expand covers an element several times): the backward of a view rebuilt from its layout."""

    @staticmethod
    def forward(ctx, grad, base_geometry, view_geometry):
        ctx.geometries = base_geometry, view_geometry
        flat = _flat_buffer(base_geometry, grad._data)
        flat.index_add_(0, _region_index(flat, base_geometry, view_geometry).reshape(-1), grad._data.reshape(-1))
        return _as_base(flat, base_geometry)

    @staticmethod
    def backward(ctx, grad):
        return AsStrided.apply(grad, *ctx.geometries), None, None


def _flat_buffer(base_geometry, like):
    """Zeroed memory for a tensor laid out like the base (offset 0)."""
    size, stride, _ = base_geometry
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    return torch.zeros(span, dtype=like.dtype, device=like.device)


def _as_base(flat, base_geometry):
    size, stride, _ = base_geometry
    return flat.as_strided(size, stride, 0)


def _region_index(flat, base_geometry, view_geometry):
    """For each element of the view, its position in a flat buffer laid out like the base."""
    size, stride, offset = view_geometry
    return torch.arange(flat.numel(), device=flat.device).as_strided(size, stride, offset - base_geometry[2])


class AsStridedBackward0(Node):
    """The grad_fn a view gets once its memory was edited in place: from the base's current node."""

    def __init__(self, base, view):
        Node.__init__(self)
        self.next_functions = (base._gradient_edge(),)
        self.geometries = _geometry(base), _geometry(view)
        self._input_metadata = (input_metadata(base._data),)

    def apply(self, grads):
        return (AsStridedScatter.apply(grads[0], *self.geometries),)


class CopySlices(Node):
    """The base's node after an in-place op ``fn`` on one of its views (``x[i] = v`` included).

    The base's gradient outside the view passes to the base's previous node; the part inside goes
    through ``fn``, whose other inputs receive their gradients as usual.
    """

    def __init__(self, base_edge, fn, base, view):
        Node.__init__(self)
        self.next_functions = (base_edge,) + fn.next_functions[1:]
        self.fn = fn
        self.geometries = _geometry(base), _geometry(view)
        self._input_metadata = (input_metadata(base._data),) + fn._input_metadata[1:]

    def name(self):
        return "torch::autograd::CopySlices"

    def apply(self, grads):
        """As torch's CopySlices: the gradient copied into memory laid out like the base; ``fn`` run on a
        (contiguous) copy of the part where the view lies, and its gradient for the view written back
        there. Ops of minigrad's, so that under create_graph they are recorded as torch records them
        (CopyBackwards, AsStridedBackward0, CloneBackward0, CopySlices). When ``fn`` gives the view no
        gradient, the base gets none either, as in torch."""
        (grad,) = grads
        if self.fn is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        (size, stride, offset), (view_size, view_stride, view_offset) = self.geometries
        result = constant(grad._data.new_empty_strided(size, stride)).copy_(grad)
        grad_slice = AsStridedView.apply(result, view_size, view_stride, view_offset - offset)
        grads = self.fn.apply([grad_slice.clone(memory_format=torch.contiguous_format)])
        if grads[0] is None:
            return (None,) + tuple(grads[1:])
        grad_slice.copy_(grads[0])
        return (result,) + tuple(grads[1:])

    def _release_saved(self):
        if self.fn is not None:
            self.fn._release_saved()
            self.fn = None
