"""The ops: each is a Function whose node has torch's name and saves what torch saves.

``forward`` computes on storage (plain torch tensors, no autograd); ``backward`` is written
with minigrad ops, so running it with grad mode on (``create_graph=True``) records a graph of
its own and gives higher-order gradients.

One module per topic: ``arithmetic``, ``pointwise``, ``reductions``, ``linalg``, ``shapes`` (views),
``splits`` (several views at once, stack and cat), ``inplace`` and ``softmax``; the fused ops only
``minigrad.nn`` uses (addmm, losses, GELU, layer norm, embedding, dropout) live beside it, in
``minigrad/nn/functional_ops.py``. Every op here is an attribute of this package, where Tensor's
methods look it up when they run (``ops.Mul.apply``): an exercise's ``minigrad.ops.Mul = Mul``
replaces the reference. Ops built on a part look that part up in their own module when they run (Mv,
Dot and Bmm ``linalg.save_factors``, MeanDim ``reductions.SumDim``), where exercise 1's plug cells
assign the learner's too.
"""
import torch

from .arithmetic import (  # noqa: F401
    Add, AddScalar, AddScaled, Div, DivScalar, FloorDivide, Mul, MulScalar, Neg, Pow, PowScalarBase, PowTensor,
    Reciprocal, Rsub, Sub, SubScalar, SubScaled)
from .inplace import Copy, Fill, FillTensor, Zero  # noqa: F401
from .linalg import Bmm, Dot, LinalgVectorNorm, Mm, Mv, Trace, mat1_grad, mat2_grad  # noqa: F401
from .pointwise import (  # noqa: F401
    Abs, Atan2, Clamp, ClampMax, ClampMin, Clone, Cos, Exp, Log, MaskedFill, Maximum, Minimum, Nextafter, Relu, Round,
    Sgn, Sigmoid, SigmoidBackward, Sin, Sqrt, Tanh, TanhBackward, ThresholdBackward, ToCopy, Where)
from .reductions import (  # noqa: F401
    Max, MaxDim, Mean, MeanDim, Median, MedianDim, Min, MinDim, Nanmedian, NanmedianDim, Prod, ProdDim, Sum, SumDim,
    Unique, Unique2, UniqueConsecutive, UniqueDim, Var, VarMean, _keep_dims, _normalize_dims)
from .shapes import (  # noqa: F401
    Alias, AsStridedInplace, Diagonal, DiagonalBackward, Expand, Gather, Index, IndexPut, IndexPutImpl, Permute, Repeat,
    ReshapeAlias, Reshaping, ScatterAdd, Select, SelectBackward, Slice, SliceBackward, Squeeze, SqueezeDim,
    SqueezeDimInplace, SqueezeDims, SqueezeDimsInplace, SqueezeInplace, T, TInplace, Transpose, TransposeInplace,
    UnsafeView, Unsqueeze, UnsqueezeInplace, View)
from .splits import (  # noqa: F401
    Cat, Chunk, Split, SplitWithSizes, Stack, Unbind, UnsafeChunk, UnsafeSplit, UnsafeSplitWithSizes,
    multi_output_views)
from .softmax import LogSoftmax, LogSoftmaxBackwardData, Softmax, SoftmaxBackwardData  # noqa: F401

aten = torch.ops.aten
"""torch's aten ops, which minigrad's kernels run on storage: selective checkpointing's policies name
them (``torch.ops.aten.sin.default``)."""
