"""Tensor: a torch.Tensor for the numbers (storage, on any device) plus minigrad's autograd state."""
import re
import weakref

import torch

from . import (function, grad_dtypes, grad_mode, indexing, ops, saved_tensors, tensor_more_ops, tensor_ops,
               user_warnings, views)
from .tensor_more_ops import MaxResult, MoreTensorOps  # noqa: F401 (re-exported)
from .tensor_ops import TensorOps, _as_tensor, matmul, wrap_number  # noqa: F401 (re-exported)
from .autograd import api as autograd_api  # the module, not the package, whose Variable imports Tensor
from .utils.hooks import RemovableHandle

ERR_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
ERR_VIEW_OF_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
ERR_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal "
    "tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.")
WARN_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
    "for more information."
)


def _refused(message):
    """A property's deleter for what torch keeps in C++ (``del x.data``): refused in torch's words."""
    def delete(tensor):
        raise RuntimeError(message)
    return delete


class _VersionCounter:
    """Shared by a tensor, its views and its detach(); every in-place op bumps it. Most tensors are
    never edited in place: they read the class's 0, and only a bump gives a counter its own number."""

    version = 0


class _ViewMeta:
    """What a view knows besides its memory (torch's DifferentiableViewMeta): its ``base``, the
    ``version`` of the shared counter when its grad_fn was last right (an in-place edit since then
    means the grad_fn must be rebuilt), and ``creation_mode`` — "no_grad" or "inference" for a view
    made with grad mode off (autograd cannot follow in-place edits of it), "function" for one a custom
    Function made and returned (or an input it returned), else None."""

    __slots__ = ("base", "version", "creation_mode")

    def __init__(self, base, version, creation_mode):
        self.base, self.version, self.creation_mode = base, version, creation_mode


class Tensor(TensorOps, MoreTensorOps):
    __array_priority__ = 1000

    # What few tensors have (torch keeps it in AutogradMeta, made when first needed): the view
    # metadata, inference mode, a gradient, hooks, the leaf's AccumulateGrad. A tensor that gets one
    # sets its own; the others read these defaults, and creating a tensor stays cheap.
    _view = None
    _is_inference = False
    _grad = None
    _retains_grad = False
    _hooks = None
    _post_accumulate_grad_hooks = None
    _grad_accumulator = None
    _is_wrapped_number = False
    """A Python number in an op (``x * 2``): saved-tensor hooks and minigrad.memory never see it, as in torch."""
    _backward_hooks_dict = None

    def __init__(self, data, requires_grad=False, grad_fn=None, output_nr=0):
        self._data = data
        self._requires_grad = requires_grad or grad_fn is not None
        self._node = grad_fn
        self._output_nr = output_nr
        self._version_counter = _VersionCounter()
        self._view = None  # set on every tensor all the same: read by every op, faster than the class's default

    # --- metadata ----------------------------------------------------------------------------
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    device = property(lambda self: self._data.device)
    is_cuda = property(lambda self: self._data.is_cuda)
    ndim = property(lambda self: self._data.dim())
    is_leaf = property(lambda self: self.grad_fn is None)
    retains_grad = property(lambda self: self._retains_grad)
    output_nr = property(lambda self: self._output_nr)

    def size(self, dim=None):
        return self._data.size() if dim is None else self._data.size(dim)

    def dim(self):
        return self._data.dim()

    def stride(self, dim=None):
        return self._data.stride() if dim is None else self._data.stride(dim)

    def is_contiguous(self):
        return self._data.is_contiguous()

    def numel(self):
        return self._data.numel()

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        """The tensor's rows, as torch's ``__iter__`` makes them: ``unbind(0)`` (each an output of an
        UnbindBackward0, not a SelectBackward0); a 0-dim tensor has none."""
        if self._data.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def is_floating_point(self):
        return self._data.is_floating_point()

    def is_inference(self):
        return self._is_inference

    @property
    def _version(self):
        if self._version_counter is None:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._version_counter.version

    # --- autograd state ----------------------------------------------------------------------
    @property
    def grad_fn(self):
        """The node that made this tensor. A view whose memory was edited in place since it was made
        gets a fresh one, AsStridedBackward0 on its base's current node, as in torch."""
        view = self._view
        if view is not None and view.version is not None and view.version != self._version_counter.version:
            return views.rebuilt_grad_fn(self)
        return self._node

    @property
    def _base(self):
        return None if self._view is None else self._view.base

    def _is_view(self):
        return self._view is not None

    def _become_view_of(self, source, modes=None):
        """Make this new tensor a view of ``source``: the same version counter and base. Made with grad
        mode off (or from such a view) it has no grad_fn, and requires grad only as its base does
        (``requires_grad``). ``modes``: this thread's grad modes (``grad_mode._state.__dict__``), where
        the caller holds them already (Function.apply), else read here."""
        self._version_counter = counter = source._version_counter
        self._is_inference = source._is_inference
        outer = source._view
        if outer is not None and outer.creation_mode is not None:
            mode = outer.creation_mode
        else:
            modes = grad_mode._state.__dict__ if modes is None else modes
            mode = None if modes["grad_enabled"] else "inference" if modes["inference"] else "no_grad"
        self._view = _ViewMeta(source if outer is None else outer.base,
                               None if counter is None else counter.version, mode)

    @property
    def requires_grad(self):
        """Whether autograd records ops on this tensor. A view asks its base, now (torch's
        DifferentiableViewMeta::requires_grad): a view made before its base required grad requires
        grad too, though no gradient reaches it or through it. An inference tensor's view never does."""
        if self._requires_grad:
            return True
        view = self._view
        return view is not None and view.base._requires_grad and not self._is_inference

    @requires_grad.setter
    def requires_grad(self, value):
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if value and not self._data.is_floating_point():
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self.requires_grad_(value)

    requires_grad = requires_grad.deleter(_refused("requires_grad must be a bool"))
    # What else torch keeps in C++ under a name of its own: deleting it is refused in torch's words.
    _grad_fn = property(lambda self: self.grad_fn, None,
                        _refused("Deletion of _grad_fn not allowed. Detach tensor instead!"))
    _backward_hooks = property(lambda self: self._backward_hooks_dict,
                               lambda self, hooks: setattr(self, "_backward_hooks_dict", hooks),
                               _refused("Deletion of _backwards_hooks not allowed!"))
    """torch's dict of a tensor's hooks (``register_hook`` keeps minigrad's in ``_hooks``): kept, never called."""

    def requires_grad_(self, requires_grad=True):
        if type(requires_grad) is not bool:
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type(requires_grad).__name__}")
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a "
                    "computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if requires_grad and not self._data.is_floating_point():
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = requires_grad
        return self

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad:
            user_warnings.warn(WARN_NON_LEAF_GRAD, UserWarning, __file__)
        return self._grad

    @grad.setter
    def grad(self, value):
        """Checked as torch checks it (THPVariable_set_grad): a tensor (or None), not the tensor
        itself, of its dtype, device and size."""
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self):
        """``del x.grad`` is ``x.grad = None``, as in torch."""
        self.grad = None

    def _gradient_edge(self):
        """Where a gradient for this tensor goes: its grad_fn, or its leaf's AccumulateGrad."""
        grad_fn = self._node if self._view is None else self.grad_fn
        if grad_fn is not None:
            return (grad_fn, self._output_nr)
        if not self._requires_grad or (self._view is not None and self._view.creation_mode is not None):
            return (None, 0)  # a view made with grad mode off passes no gradient on, as in torch
        accumulator = self._grad_accumulator and self._grad_accumulator()
        if accumulator is None:
            accumulator = function.AccumulateGrad(self)
            self._grad_accumulator = weakref.ref(accumulator)
        return (accumulator, 0)

    def new_ones(self, size):
        """Ones of ``size`` with this tensor's dtype and device."""
        return Tensor(self._data.new_ones(size))

    def new_zeros(self, size):
        """Zeros of ``size`` with this tensor's dtype and device (autograd.grad's materialized gradients)."""
        return Tensor(self._data.new_zeros(size))

    # BEGIN EXERCISE 5
    def detach(self):
        """A new tensor out of the graph (no grad_fn, requires_grad False) on the same memory, sharing
        the version counter too: an in-place edit of either is seen by graphs that saved the other.
        The detach of an inference tensor is an inference tensor."""
        out = Tensor(self._data)
        if self._version_counter is not None:
            out._version_counter = self._version_counter
        # BEGIN NEW IN EXERCISE 5
        out._is_inference = self._is_inference
        # END NEW IN EXERCISE 5
        return out
    # END EXERCISE 5

    def detach_(self):
        """Out of the graph in place; refused on a view (``views.check_detach``), as in torch."""
        views.check_detach(self)
        saved_tensors.detached_in_place |= self._node is not None
        self._node = None
        self._requires_grad = False
        return self

    @property
    def data(self):
        """The same memory with no autograd and a version counter of its own (in-place edits go unseen)."""
        return Tensor(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self.requires_grad and not (value._data.is_floating_point() or value._data.is_complex()):
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data = value._data

    data = data.deleter(_refused("Deleting tensor data is not allowed. Delete tensor instead!"))

    def retain_grad(self):
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains_grad:
            return
        self._retains_grad = True
        ref = weakref.ref(self)
        node, output_nr = self.grad_fn, self._output_nr

        def retain(grad):  # torch's: a contiguous copy, then sums, recorded under create_graph as torch's are
            tensor = ref()
            if tensor is not None:
                tensor._grad = (grad.clone(memory_format=torch.contiguous_format) if tensor._grad is None
                                else tensor._grad + grad)

        if node._retains_grad_hooks is None:
            node._retains_grad_hooks, node._has_pre_hooks = {}, True
        node._retains_grad_hooks[output_nr] = retain

    def _take_history(self, node, output_nr):
        """Make output ``output_nr`` of ``node`` this tensor's grad_fn: an in-place op (or a view's
        rebuilt grad_fn) moved its history there. retain_grad's hook moves along, so the gradient of
        the newest version is the one retained; other hooks stay with the version they were
        registered on (torch's update_tensor_hooks_on_new_gradfn)."""
        old, old_output_nr = self._node, self._output_nr
        self._node, self._output_nr, self._requires_grad = node, output_nr, True
        retain = self._retains_grad and old is not None and (old._retains_grad_hooks or {}).pop(old_output_nr, None)
        if retain:
            if node._retains_grad_hooks is None:
                node._retains_grad_hooks, node._has_pre_hooks = {}, True
            node._retains_grad_hooks[output_nr] = retain

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after backward accumulated a gradient into this leaf's ``.grad``
        (where an optimizer can step, in backward); it must return None."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = []
        self._post_accumulate_grad_hooks.append(hook)
        return RemovableHandle(self._post_accumulate_grad_hooks, hook)

    def register_hook(self, hook):
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            node = self.grad_fn
            if node._tensor_pre_hooks is None:
                node._tensor_pre_hooks, node._has_pre_hooks = {}, True
            hooks = node._tensor_pre_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None, **unexpected):
        """``unexpected``: refused in Python's words, which name the method ("Tensor.backward()"), as
        torch's are, also where minigrad is compiled (Cython's name the function alone): unit 3 shows
        torch's refusal of the old ``retain_variables=True`` next to minigrad's."""
        if unexpected:
            raise TypeError(f"Tensor.backward() got an unexpected keyword argument {next(iter(unexpected))!r}")
        autograd_api.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # --- conversion --------------------------------------------------------------------------
    def item(self):
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def numpy(self):
        if self.requires_grad and grad_mode._state.grad_enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._data.numpy()

    def __float__(self):
        if self.requires_grad:
            user_warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                               "behavior.\nConsider using tensor.detach() first.", UserWarning, __file__)
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __bool__(self):
        return bool(self._data)

    def __index__(self):
        return self._data.__index__()

    def __repr__(self):
        """As torch's: the grad_fn's name without its namespace (``CopySlices``), or ``<Invalid>``
        where asking for the grad_fn fails (a view made with grad mode off, its memory edited since)."""
        text = repr(self._data)
        try:
            grad_fn = self.grad_fn
        except RuntimeError:
            return _add_suffix(text, "grad_fn=<Invalid>")
        if grad_fn is not None:
            return _add_suffix(text, f"grad_fn=<{grad_fn.name().rsplit('::', 1)[-1]}>")
        if self.requires_grad:
            return _add_suffix(text, "requires_grad=True")
        return text

    def __format__(self, spec):
        return self._data.__format__(spec) if self.dim() == 0 else repr(self)

    __hash__ = object.__hash__

    # --- in-place ---------------------------------------------------------------------------
    # BEGIN EXERCISE 4
    def _inplace(self, function, storage_op, *args):
        """Run ``function`` on self in place (``add_``, ``mul_``, ``x[i] = v``, ...), ``storage_op``
        being its kernel on storage. Autograd records the edit when grad mode is on and self or a
        tensor among ``args`` requires grad; otherwise it is a plain edit (``_mutate``). A recorded
        edit of a view must pass the view's checks (``_check_view_inplace``, which custom Functions'
        dirty views share); one of a leaf that requires grad is refused (torch's error): the leaf
        would take a grad_fn and stop being the leaf whose gradient you asked for. A recorded edit is
        recorded (``_record_inplace``), and the version goes up by one, as after a plain edit."""
        recording = grad_mode._state.grad_enabled and (
            self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args))
        if not recording:
            return self._mutate(storage_op, *(a._data if isinstance(a, Tensor) else a for a in args))
        if self._view is not None:
            self._check_view_inplace()
        # BEGIN NEW IN EXERCISE 4
        if self._requires_grad and self.grad_fn is None:
            raise RuntimeError(ERR_LEAF_INPLACE)
        # END NEW IN EXERCISE 4
        self._record_inplace(function, *args)
        # BEGIN NEW IN EXERCISE 4
        self._version_counter.version += 1
        # END NEW IN EXERCISE 4
        return self
    # END EXERCISE 4

    # BEGIN EXERCISE 4
    def _check_view_inplace(self):
        """Refuse a recorded in-place edit of self, a view, as torch does, in its order: of a view
        made under no_grad (``views.check_inplace``), then of a view of a leaf that requires grad (the
        leaf would take a grad_fn through the view). In-place ops run it (``_inplace``), and so do
        custom Functions that mark a view dirty (``_edited_in_place_by``)."""
        views.check_inplace(self)
        # BEGIN NEW IN EXERCISE 4
        if self._view.base._requires_grad and self._view.base.grad_fn is None:
            raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)
        # END NEW IN EXERCISE 4
    # END EXERCISE 4

    def _record_inplace(self, function, *args):
        """Apply ``function`` to self and take its result in place: self moves onto the new node
        (torch's rebase); when self is a view, its base moves onto a CopySlices node that routes the
        view's part of the gradient through ``function``, one of minigrad's in-place ops: anything
        else (a learner's object, whose ``apply`` could hand back any node) is refused."""
        in_place_view = function in (ops.TransposeInplace, ops.TInplace, ops.SqueezeInplace, ops.SqueezeDimInplace,
                                     ops.SqueezeDimsInplace, ops.UnsqueezeInplace, ops.AsStridedInplace)
        if not in_place_view and function not in (ops.Add, ops.AddScaled, ops.Sub, ops.SubScaled, ops.Mul, ops.Div,
                                                  ops.Zero, ops.Fill, ops.Copy, ops.FillTensor, ops.Relu, ops.Exp,
                                                  ops.Sin, ops.IndexPut, ops.Abs, ops.Clamp, ops.MaskedFill,
                                                  ops.ScatterAdd, ops.FloorDivide):
            raise TypeError("_record_inplace records minigrad's in-place ops only")
        source = self._recorded_copy() if function.inplace_saves_self else self
        result = function.apply(source, *args)
        if in_place_view:  # the same memory, new sizes and strides: a view's base keeps its node
            self._data = result._data
            self._take_history(result._node, 0)
            return
        self._data.copy_(result._data)
        if self._version_counter is None:  # an inference tensor: edited, then refused (grad mode is off inside)
            raise RuntimeError(ERR_INFERENCE_INPLACE)
        saved_tensors.saved_output_is(result._node, self, self._version_counter.version + 1)
        if self._view is None:
            self._take_history(result._node, 0)
        else:
            views.rebase(self, result._node)

    # BEGIN EXERCISE 4
    def _mutate(self, storage_op, *args):
        """Edit the storage in place where autograd records nothing (grad mode off, or nothing
        requires grad; optimizers' updates, nn.init): ``storage_op(self._data, *args)`` edits it,
        and the version goes up by one (as in torch, an edit whose kernel fails changes nothing).
        An inference tensor has no version counter: editing it is refused outside inference mode
        (as in torch, the values have changed when it raises)."""
        storage_op(self._data, *args)
        # BEGIN NEW IN EXERCISE 4
        if self._version_counter is None:
            if not grad_mode.is_inference_mode_enabled():
                raise RuntimeError(ERR_INFERENCE_INPLACE)
        else:
            self._version_counter.version += 1
        # END NEW IN EXERCISE 4
        return self
    # END EXERCISE 4

    def _edited_in_place_by(self, node):
        """This view was edited in place by ``node``, a custom Function that marked it dirty: as after
        an in-place op on a view, its base moves onto a CopySlices node, after the same checks."""
        self._check_view_inplace()
        views.rebase(self, node)

    def _recorded_copy(self):
        """A copy of self's values that keeps self's place in the graph, for ops that save ``self``."""
        copy = Tensor(self._data.clone(), self._requires_grad, self.grad_fn, self._output_nr)
        copy._grad_accumulator = self._grad_accumulator
        return copy

    def add_(self, other, alpha=1):
        if alpha != 1:
            return self._inplace(ops.AddScaled, _add_scaled_, _as_tensor(other, self), alpha)
        return self._inplace(ops.Add, torch.Tensor.add_, _as_tensor(other, self))

    def sub_(self, other, alpha=1):
        if alpha != 1:
            return self._inplace(ops.SubScaled, _sub_scaled_, _as_tensor(other, self), alpha)
        return self._inplace(ops.Sub, torch.Tensor.sub_, _as_tensor(other, self))

    def mul_(self, other):
        return self._inplace(ops.Mul, torch.Tensor.mul_, _as_tensor(other, self))

    def div_(self, other):
        return self._inplace(ops.Div, torch.Tensor.div_, _as_tensor(other, self))

    def zero_(self):
        return self._inplace(ops.Zero, torch.Tensor.zero_)

    def fill_(self, value):
        return self._inplace(ops.Fill, torch.Tensor.fill_, value)

    def copy_(self, source):
        return self._inplace(ops.Copy, torch.Tensor.copy_, _as_tensor(source, self))

    __iadd__, __isub__, __imul__, __itruediv__ = add_, sub_, mul_, div_

    def uniform_(self, a=0.0, b=1.0):
        return self._fill_random(torch.Tensor.uniform_, a, b)

    def normal_(self, mean=0.0, std=1.0):
        return self._fill_random(torch.Tensor.normal_, mean, std)

    def _fill_random(self, storage_op, *args):
        """Random in-place fills, used to initialise parameters under no_grad (as nn.init does)."""
        if grad_mode._state.grad_enabled and self.requires_grad:
            if self.grad_fn is None:
                raise RuntimeError(ERR_LEAF_INPLACE)
            raise NotImplementedError("minigrad does not record random fills of tensors that require grad")
        return self._mutate(storage_op, *args)


# TensorOps' (and MoreTensorOps') methods and indexing make Tensors and tell them from numbers. tensor_ops.py and indexing.py
# can't import this module (this module imports them): they get the class here, now that it exists.
tensor_ops.Tensor = tensor_more_ops.Tensor = indexing.Tensor = Tensor


def _add_suffix(text, suffix):
    """torch's repr ``text`` (``tensor(...)``) with one more suffix, placed as torch places its
    suffixes (``torch._tensor_str._add_suffixes``): on the last line while it stays within the print
    width, else on a line of its own. torch counts a last line that holds data 2 characters longer
    than it is, one that a suffix began exactly."""
    head = text[:-1]
    last_line = head[head.rfind("\n") + 1:]
    last_line_len = len(last_line) + (0 if re.match(r" {7}[a-z_]+=", last_line) else 2)
    if last_line_len + len(suffix) + 2 > torch._tensor_str.PRINT_OPTS.linewidth:
        return f"{head},\n{' ' * len('tensor(')}{suffix})"
    return f"{head}, {suffix})"


def _add_scaled_(data, other, alpha):
    """The storage op of ``add_(other, alpha=k)`` (torch takes alpha by keyword only)."""
    return data.add_(other, alpha=alpha)


def _sub_scaled_(data, other, alpha):
    """The storage op of ``sub_(other, alpha=k)``: it takes the k that SubScaled, the op recorded
    in its place, takes (and negates itself)."""
    return data.sub_(other, alpha=alpha)


def _check_grad(tensor, grad):
    if not isinstance(grad, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    data, grad_data, expected = tensor._data, grad._data, grad_dtypes.expected(tensor)
    if expected is not None and grad_data.dtype != expected:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad_dtypes.type_meta_name(grad_data.dtype)}' "
            f"to a tensor with grad_dtype '{grad_dtypes.scalar_type_name(expected)}'. The gradient must match "
            "the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute "
            "with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
            "tensor and its gradient may break downstream systems that assume they match.")
    if grad_data.device.type != data.device.type:
        raise RuntimeError(f"attempting to assign a gradient with device type '{grad_data.device.type}' to a tensor "
                           f"with device type '{data.device.type}'. Please ensure that the gradient and the tensor are "
                           "on the same device")
    if grad_data.get_device() != data.get_device():
        raise RuntimeError(f"attempting to assign a gradient located on device with index '{grad_data.get_device()}' "
                           f"to a tensor located on device with index '{data.get_device()}'. Please ensure that the "
                           "gradient and the tensor are on the same device")
    if grad_data.shape != data.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(grad_data.shape)}' to a tensor of size "
                           f"'{list(data.shape)}'. Please ensure that the gradient and the tensor are the same size")

