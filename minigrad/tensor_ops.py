"""Tensor's ops as methods (``x + y``, ``x.exp()``, ``x.sum()``, ``x.view()``, ``x[i]``, ``x[i] = v``, matmul): each
builds its op with ``ops.<Op>.apply``, the op looked up on ``minigrad.ops`` when called. Also what
torch's Tensor does in Python around them: ``copy.deepcopy(x)``, the removed ``volatile`` flag."""
import copy
import warnings

import torch

from . import autocast_mode, grad_dtypes, grad_mode, indexing, ops, user_warnings

Tensor = None
"""``minigrad.tensor.Tensor``, which inherits TensorOps. This module can't import minigrad.tensor (which
imports it): minigrad.tensor binds it here once the class exists."""


_WRAPPED_NUMBERS = {}


def wrap_number(value, like):
    """A Python number as a 0-dim CPU tensor, as torch wraps ``x * 2`` into ``mul(x, tensor(2))``: on
    the CPU whatever the default device (``with torch.device("cuda")``), since it is kept for reuse.

    Its dtype is the one the op computes in, so the kernel has nothing to cast (a float32 op with a
    float64 scalar costs about twice one with a float32 scalar): a float next to a float32 or float64
    tensor takes that tensor's dtype, which gives torch's values, since torch's kernel casts its double
    to that dtype first; next to float16 and bfloat16, whose ops compute in float32, it stays a double;
    next to an integer tensor it gets the default dtype. Next to a 0-dim tensor it takes that tensor's
    floating dtype: torch's wrapped numbers never promote, but two 0-dim tensors would. The number
    itself is kept (``_number``): ``grad_fn._saved_*`` shows it as torch keeps it, a float as float64.
    """
    dtype = None
    if isinstance(value, float) and like.is_floating_point():
        dtype = like.dtype if like.dtype in _OWN_DTYPES or not like.dim() else torch.float64
    key = (type(value), value, dtype)
    tensor = _WRAPPED_NUMBERS.get(key)
    if tensor is None:
        if len(_WRAPPED_NUMBERS) > 4096:
            _WRAPPED_NUMBERS.clear()
        tensor = _WRAPPED_NUMBERS[key] = Tensor(torch.tensor(value, dtype=dtype, device="cpu"))
        tensor._is_wrapped_number, tensor._number = True, value
    return tensor


_OWN_DTYPES = (torch.float32, torch.float64)
"""The floating dtypes whose ops compute in that dtype (float16's and bfloat16's compute in float32)."""


def to_arguments(args, kwargs):
    """``(dtype, device)`` from ``to``'s arguments as torch reads them (each None where not given): a
    dtype, a device, a tensor (its dtype and device), by position or keyword."""
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        else:
            device = arg
    return dtype, device


def _as_tensor(value, like):
    return value if isinstance(value, Tensor) else wrap_number(value, like._data)


class TensorOps:
    """The methods of Tensor that build an op (``minigrad.ops``) on the tensor; Tensor inherits them."""

    # --- conversion ---------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        dtype, device = to_arguments(args, kwargs)
        dtype = dtype or self.dtype
        device = torch.device(device) if device is not None else self.device
        if dtype == self.dtype and _same_device(device, self.device):
            return self
        return ops.ToCopy.apply(self, dtype, device)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def float(self):
        return self.to(torch.float32)

    def double(self):
        return self.to(torch.float64)

    def int(self):
        return self.to(torch.int32)

    def long(self):
        return self.to(torch.int64)

    def half(self):
        return self.to(torch.float16)

    def bfloat16(self):
        return self.to(torch.bfloat16)

    def bool(self):
        return self.to(torch.bool)

    def type(self, dtype=None, non_blocking=False):
        """``x.type()``: the name of x's legacy type (``'torch.FloatTensor'``). ``x.type(t)``, t a legacy
        type (``torch.cuda.IntTensor``), its name or a dtype: x ``to`` t's dtype, and t's device type when
        it names one (x itself when it is of t already), as torch reads t (its errors too)."""
        if dtype is None:
            return self._data.type()
        like = self._data.new_empty(0).type(getattr(dtype, "_torch_type", dtype), non_blocking)
        return self.to(like.device, like.dtype)

    def type_as(self, other):
        return self.to(other)

    # --- ops ---------------------------------------------------------------------------------
    def __add__(self, other):
        return ops.Add.apply(self, _as_tensor(other, self))

    __radd__ = __add__

    def __sub__(self, other):
        return ops.Sub.apply(self, _as_tensor(other, self))

    def __rsub__(self, other):
        return ops.Rsub.apply(self, other)

    def __mul__(self, other):
        return ops.Mul.apply(self, _as_tensor(other, self))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return ops.Div.apply(self, _as_tensor(other, self))

    def __rtruediv__(self, other):
        return ops.Mul.apply(ops.Reciprocal.apply(self), _as_tensor(other, self))

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            if grad_mode._state.autocast_enabled:
                self, exponent = autocast_mode.cast("pow", self, exponent)
            return ops.PowTensor.apply(self, exponent)
        if grad_mode._state.autocast_enabled:
            self, = autocast_mode.cast("pow", self)
        return ops.Pow.apply(self, exponent)

    def __rpow__(self, base):
        if grad_mode._state.autocast_enabled:
            self, = autocast_mode.cast("pow", self)
        return ops.PowScalarBase.apply(base, self)

    def __neg__(self):
        return ops.Neg.apply(self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    mul, div, pow, neg = __mul__, __truediv__, __pow__, __neg__

    def add(self, other, alpha=1):
        return ops.AddScaled.apply(self, _as_tensor(other, self), alpha) if alpha != 1 else self + other

    def sub(self, other, alpha=1):
        return ops.SubScaled.apply(self, _as_tensor(other, self), alpha) if alpha != 1 else self - other

    def __eq__(self, other):
        return Tensor(self._data == _storage(other))

    def __ne__(self, other):
        return Tensor(self._data != _storage(other))

    def __lt__(self, other):
        return Tensor(self._data < _storage(other))

    def __le__(self, other):
        return Tensor(self._data <= _storage(other))

    def __gt__(self, other):
        return Tensor(self._data > _storage(other))

    def __ge__(self, other):
        return Tensor(self._data >= _storage(other))

    def exp(self):
        if grad_mode._state.autocast_enabled:
            self, = autocast_mode.cast("exp", self)
        return ops.Exp.apply(self)

    def log(self):
        if grad_mode._state.autocast_enabled:
            self, = autocast_mode.cast("log", self)
        return ops.Log.apply(self)

    def sin(self):
        return ops.Sin.apply(self)

    def cos(self):
        return ops.Cos.apply(self)

    def relu(self):
        return ops.Relu.apply(self)

    def relu_(self):
        """In place, as torch's: ReluBackward0 saves the result, that is self after the edit, so a
        later edit of self breaks backward through it (the version check)."""
        return self._inplace(ops.Relu, torch.Tensor.relu_)

    def exp_(self):
        """In place, as torch's: ExpBackward0 saves the result, that is self after the edit."""
        return self._inplace(ops.Exp, torch.Tensor.exp_)

    def sin_(self):
        """In place, as torch's: SinBackward0 saves self before the edit (a copy of it)."""
        return self._inplace(ops.Sin, torch.Tensor.sin_)

    def tanh(self):
        return ops.Tanh.apply(self)

    def sigmoid(self):
        return ops.Sigmoid.apply(self)

    def abs(self):
        return ops.Abs.apply(self)

    def reciprocal(self):
        if grad_mode._state.autocast_enabled:
            self, = autocast_mode.cast("reciprocal", self)
        return ops.Reciprocal.apply(self)

    def clone(self, *, memory_format=torch.preserve_format):
        return ops.Clone.apply(self, memory_format)

    def sum(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Sum.apply(self)
        return ops.SumDim.apply(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        if dim is None:
            return ops.Mean.apply(self)
        return ops.MeanDim.apply(self, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """torch's three forms: ``var(dim, unbiased, keepdim)``, ``var(dim, correction=c, keepdim=k)``
        and ``var(unbiased)``."""
        dim, correction = _variance_args(dim, unbiased, correction)
        return ops.Var.apply(self, dim, correction, keepdim)

    def prod(self, dim=None, keepdim=False):
        if grad_mode._state.autocast_enabled:
            self, = autocast_mode.cast("prod", self)
        if dim is None:
            return ops.Prod.apply(self)
        return ops.ProdDim.apply(self, dim, keepdim)

    def all(self, dim=None, keepdim=False):
        """Whether every element is nonzero (along ``dim``): a bool tensor, outside any graph."""
        return Tensor(self._data.all() if dim is None else self._data.all(dim, keepdim))

    def norm(self, p="fro", dim=None, keepdim=False):
        """torch's rule: the Frobenius norm of up to two dims, and numeric orders, are vector norms."""
        if isinstance(p, str) and (p != "fro" or not (dim is None or isinstance(dim, int) or len(dim) <= 2)):
            raise NotImplementedError("minigrad's norm takes vector norms (numeric p, or 'fro' over at most 2 dims)")
        dim = (dim,) if isinstance(dim, int) else dim
        return ops.LinalgVectorNorm.apply(self, 2 if p == "fro" else p, dim, keepdim)

    def softmax(self, dim):
        return ops.Softmax.apply(self, dim)

    def log_softmax(self, dim):
        return ops.LogSoftmax.apply(self, dim)

    def round(self):
        return ops.Round.apply(self)

    def sqrt(self):
        return ops.Sqrt.apply(self)

    def masked_fill(self, mask, value):
        return ops.MaskedFill.apply(self, mask._data, value)

    def where(self, condition, other):
        """``torch.where(condition, self, other)``."""
        return ops.Where.apply((condition,), self, _as_tensor(other, self))

    def bmm(self, mat2):
        if grad_mode._state.autocast_enabled:
            self, mat2 = autocast_mode.cast("bmm", self, mat2)
        return ops.Bmm.apply(self, mat2)

    def matmul(self, other):
        return matmul(self, other)

    def mm(self, other):
        if grad_mode._state.autocast_enabled:
            self, other = autocast_mode.cast("mm", self, other)
        return ops.Mm.apply(self, other)

    def mv(self, vec):
        if grad_mode._state.autocast_enabled:
            self, vec = autocast_mode.cast("mv", self, vec)
        return ops.Mv.apply(self, vec)

    def dot(self, other):
        if grad_mode._state.autocast_enabled:
            self, other = autocast_mode.cast("dot", self, other)
        return ops.Dot.apply(self, other)

    def t(self):
        if self._data.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self._data.dim()}D")
        return ops.T.apply(self)

    @property
    def T(self):
        """The dims reversed (PermuteBackward0, also for a matrix). On other than 2 dims, torch's own
        deprecation warning (torch warns it once), given again at the caller's line, as torch's is."""
        if self.dim() != 2:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._data.T  # noqa: B018 - torch's warning, in torch's words
            for warning in caught:
                user_warnings.warn(warning.message, warning.category, __file__)
        return ops.Permute.apply(self, tuple(range(self.dim() - 1, -1, -1)))

    def transpose(self, dim0, dim1):
        return ops.Transpose.apply(self, dim0, dim1)

    def transpose_(self, dim0, dim1):
        """``transpose`` in place (TransposeBackward1): ``_inplace_view``."""
        return self._inplace_view(ops.TransposeInplace, "transpose", dim0, dim1)

    def view(self, *shape):
        return ops.View.apply(self, _shape_arg(shape))

    def view_as(self, other):
        """As torch's, which is ``view(other.size())``: a ViewBackward0 node."""
        return self.view(other.shape)

    def resize_(self, *size):
        size = _shape_arg(size)
        return self._resize(lambda data: data.resize_(size))

    def resize_as_(self, other):
        return self._resize(lambda data: data.resize_as_(other._data))

    def _resize(self, resize):
        """torch's resize_: refused for a tensor that requires grad (under no_grad too; not in inference
        mode, where autograd's kernels don't run). The tensor's storage becomes a resized tensor on the
        same memory (its detach() keeps its size, as in torch); when the size changed, this is an
        in-place edit (``_mutate``: a version more, or an inference tensor refused outside inference mode)."""
        if self.requires_grad and not grad_mode.is_inference_mode_enabled():
            raise RuntimeError("cannot resize variables that require grad")
        resized = resize(self._data.new_empty(0).set_(self._data))
        if resized.shape == self.shape:
            self._data = resized
            return self
        return self._mutate(lambda data: setattr(self, "_data", resized))

    def set_(self, source):
        """``x.set_(source)``: x takes source's memory, size and strides, an in-place edit (a version
        more) autograd does not differentiate, so taken only where it records nothing (grad mode off,
        or nothing requires grad). As in torch, a leaf drops its AccumulateGrad: graphs made before
        lead to the old one, which autograd.grad then no longer finds for x."""
        if grad_mode.is_grad_enabled() and (self.requires_grad or source.requires_grad):
            if self.is_leaf and self.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise NotImplementedError("minigrad's set_ records no node: only where autograd records nothing")
        data = self._data.new_empty(0).set_(source._data)
        self._mutate(lambda _: setattr(self, "_data", data))
        self._grad_accumulator = None
        return self

    def data_ptr(self):
        """The address of the tensor's first element: its storage's (views and detached tensors share it)."""
        return self._data.data_ptr()

    def reshape(self, *shape):
        shape = _shape_arg(shape)
        try:
            self._data.view(shape)
        except RuntimeError:
            self._data.reshape(shape)
            return ops.UnsafeView.apply(ops.Clone.apply(self, torch.contiguous_format), shape)
        if not self._data.is_contiguous():
            return ops.ReshapeAlias.apply(self, shape)
        return ops.View.apply(self, shape)

    def contiguous(self, memory_format=torch.contiguous_format):
        if self._data.is_contiguous(memory_format=memory_format):
            return self
        return ops.Clone.apply(self, memory_format)

    def narrow(self, dim, start, length):
        """``length`` entries from ``start`` along ``dim``: a slice (SliceBackward0), as in torch."""
        self._data.narrow(dim, start, length)  # torch's errors for a dim, start or length out of range
        dim = dim % self.dim()
        start %= max(self.shape[dim], 1)
        return ops.Slice.apply(self, dim, slice(start, start + length))

    def select(self, dim, index):
        """Entry ``index`` along ``dim`` (SelectBackward0), as ``self[..., index]`` gives it."""
        self._data.select(dim, index)  # torch's errors for a dim or index out of range
        return ops.Select.apply(self, dim % self.dim(), index)

    def unflatten(self, dim, sizes):
        dim = dim % max(self.dim(), 1)
        return ops.View.apply(self, (*self.shape[:dim], *sizes, *self.shape[dim + 1:]))

    def expand(self, *shape):
        return ops.Expand.apply(self, _shape_arg(shape))

    def unsqueeze(self, dim):
        return ops.Unsqueeze.apply(self, dim)

    def squeeze(self, dim=None):
        if dim is None:
            return ops.Squeeze.apply(self)
        if isinstance(dim, int):
            return ops.SqueezeDim.apply(self, dim)
        return ops.SqueezeDims.apply(self, tuple(dim))

    def unbind(self, dim=0):
        return ops.multi_output_views(ops.Unbind, self, dim)

    def chunk(self, chunks, dim=0):
        return ops.multi_output_views(ops.Chunk, self, chunks, dim)

    def split(self, split_size_or_sections, dim=0):
        """Pieces of one size (SplitBackward0), or of the sizes listed (SplitWithSizesBackward0), as torch's."""
        if isinstance(split_size_or_sections, int):
            return ops.multi_output_views(ops.Split, self, split_size_or_sections, dim)
        return self.split_with_sizes(split_size_or_sections, dim)

    def split_with_sizes(self, split_sizes, dim=0):
        return ops.multi_output_views(ops.SplitWithSizes, self, tuple(split_sizes), dim)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        return ops.Diagonal.apply(self, offset, dim1, dim2)

    def repeat(self, *repeats):
        return ops.Repeat.apply(self, _shape_arg(repeats))

    def __getitem__(self, key):
        """Ints, slices, None and ... become a chain of select/slice/unsqueeze nodes, as in torch; index
        tensors, lists and masks in the key then pick from that view into a new tensor (IndexBackward0,
        not a view). A key that leaves the whole tensor gives a new view all the same: a slice for a
        lone slice (``x[:]``), an alias for a tuple or ``...``, as in torch."""
        out, indices = indexing.take_apart(self, key)
        if indices:
            return ops.Index.apply(out, indices)
        if out is not self:
            return out
        return ops.Slice.apply(self, 0, key) if isinstance(key, slice) else ops.Alias.apply(self)

    def __setitem__(self, key, value):
        """``x[key] = value`` as torch's setitem: an in-place copy into the view the key's ints, slices,
        None and ... pick (x itself when they take it whole: ``x[:] = v``); with index tensors, lists
        or masks in the key, an ``index_put_`` on that view (IndexPutBackward0), of value without its
        leading dims of size 1. A number becomes a 0-dim tensor of x's dtype on x's device, or on
        the CPU for x on CUDA (a CPU scalar, which fills), as in torch."""
        if not isinstance(value, Tensor):
            value = Tensor(torch.tensor(value, dtype=self.dtype, device="cpu" if self.is_cuda else self.device))
        if not (grad_mode._state.grad_enabled and (self.requires_grad or value.requires_grad)):
            self._mutate(torch.Tensor.__setitem__, indexing.storage_key(key), value._data)
            return
        target, indices = indexing.take_apart(self, key)
        shape = list(value.shape)
        while shape and shape[0] == 1:
            shape.pop(0)
        if indices:
            value = value if len(shape) == value.dim() else value.view(shape)
            target._inplace(ops.IndexPut, indexing.index_put_, indices, value, False)
        elif value.shape == target.shape:
            target.copy_(value)
        elif value.dim() == 0 and value.device.type == "cpu":
            target._inplace(ops.FillTensor, torch.Tensor.fill_, value)
        else:
            value = value.view(shape)
            target.copy_(value if value.shape == target.shape else value.expand(target.shape))

    def _is_view(self):
        """Whether this tensor is a view that autograd tracks as one (torch's is_view): not an
        inference tensor's view, which has no autograd metadata at all."""
        return self._view is not None and not self._is_inference

    @property
    def volatile(self):
        """torch's removed flag (grad modes replaced it): always False, with torch's warning."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value):
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                      stacklevel=2)

    _grad_dtype = grad_dtypes.OWN
    grad_dtype = property(grad_dtypes.grad_dtype_of, grad_dtypes.set_grad_dtype,
                          doc="The dtype a leaf's gradient gets: its own by default, or the one set, or None for any.")

    # --- Python protocols -------------------------------------------------------------------
    def __deepcopy__(self, memo):
        """``copy.deepcopy(x)`` as torch's Tensor.__deepcopy__ does it: a leaf only; new memory (tensors
        that shared memory share the copies', through torch's deepcopy of the storage and ``memo``),
        with requires_grad, a deep copy of ``.grad`` and the user's attributes; no hooks (an optimizer
        step registered on ``x`` stays ``x``'s), no view, a version counter of its own, at 1 (torch
        fills the copy with ``set_``, an in-place op)."""
        if self.grad_fn is not None:
            raise RuntimeError(ERR_DEEPCOPY_NON_LEAF)
        if id(self) in memo:
            return memo[id(self)]
        new = Tensor(copy.deepcopy(self._data, memo), requires_grad=self.requires_grad)
        new._version_counter.version = 1
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        for name, value in vars(self).items():
            if name not in _AUTOGRAD_STATE:
                setattr(new, name, copy.deepcopy(value, memo))
        memo[id(self)] = new
        return new


ERR_DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If "
    "you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see "
    "https://github.com/pytorch/pytorch/pull/103001")
_AUTOGRAD_STATE = frozenset((
    "_data", "_requires_grad", "_node", "_output_nr", "_version_counter", "_view", "_is_inference", "_grad",
    "_retains_grad", "_hooks", "_post_accumulate_grad_hooks", "_grad_accumulator", "_is_wrapped_number",
    "_number", "_grad_dtype"))
"""What minigrad keeps in a tensor's attributes (torch in its C++ TensorImpl and AutogradMeta): a deep
copy makes its own; the other attributes are the user's."""


def _storage(value):
    return value._data if isinstance(value, Tensor) else value


def _variance_args(dim, unbiased, correction):
    """var's and var_mean's dim and correction: ``var(True)`` is unbiased, not a dim; the correction is
    1 (unbiased) unless ``unbiased=False`` or ``correction=`` says otherwise."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


def _shape_arg(shape):
    return tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape


def matmul(a, b):
    """torch.matmul with torch's nodes: dot, mv, mm, mm between unsqueeze and squeeze_ for a vector
    on the left, and for a batch on the left of a matrix, mm on the batch folded into rows."""
    if grad_mode._state.autocast_enabled:
        a, b = autocast_mode.cast("matmul", a, b)
    da, db = a.dim(), b.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 2 and db == 2:
        return ops.Mm.apply(a, b)
    if da == 2 and db == 1:
        return ops.Mv.apply(a, b)
    if da == 1 and db == 1:
        return ops.Dot.apply(a, b)
    if da == 1 and db == 2:
        return ops.SqueezeDimInplace.apply(ops.Mm.apply(ops.Unsqueeze.apply(a, 0), b), 0)
    if da > 2 and db == 2:
        rows = ops.Mm.apply(a.reshape(-1, a.shape[-1]), b)
        return ops.UnsafeView.apply(rows, (*a.shape[:-1], b.shape[-1]))
    if da > 2 and db > 2:
        return _batched_matmul(a, b)
    raise NotImplementedError("minigrad's matmul takes 1-D and 2-D tensors, a batch times a matrix, or two batches")


def _batched_matmul(a, b):
    """Batch times batch, as torch: broadcast the batch dims, fold them into one, bmm, unfold."""
    n, p = a.shape[-2], b.shape[-1]
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = batch.numel()
    folded_a = a.expand(*batch, *a.shape[-2:]).reshape(count, *a.shape[-2:])
    folded_b = b.expand(*batch, *b.shape[-2:]).reshape(count, *b.shape[-2:])
    return ops.UnsafeView.apply(ops.Bmm.apply(folded_a, folded_b), (*batch, n, p))


def _same_device(a, b):
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)
