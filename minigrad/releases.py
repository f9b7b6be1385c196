"""What minigrad copies from the installed torch where torch's releases differ.

minigrad reproduces torch word for word — error texts, reprs, node names, what is saved — and some
of those change between releases. The course supports torch 2.11 to 2.13 (CI runs the tests and
the lessons on 2.11 and 2.13; each difference below was checked on 2.11, 2.12 and 2.13): each flag
is what the installed release does, named by the release that brought the change.
"""
import torch

RELEASE = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
SUPPORTED = ((2, 11), (2, 13))
"""The releases minigrad follows, first and last: outside them it may word things differently."""
FOLLOWED = SUPPORTED[0] <= RELEASE <= SUPPORTED[1]

SHORT_NODE_NAMES_IN_ERRORS = RELEASE >= (2, 13)
"""The version and view errors name a node by its op ("output 0 of Exp"); before, by its name
("output 0 of ExpBackward0")."""

INPUT_RETURNED_AS_IS_SAYS_AN = RELEASE >= (2, 13)
"""The error for saving, with setup_context, an input returned as it is starts "An input"; before, "A input"."""

UNUSED_INPUT_BY_INDEX = RELEASE >= (2, 13)
"""autograd.grad's error for an unused input names its index ("The differentiated Tensor at index
1 appears ..."); before: "One of the differentiated Tensors appears ..."."""

GRADCHECK_TYPO_FIXED = RELEASE >= (2, 13)
"""gradcheck's error for inputs that need no gradient reads "none of them"; before, "none of the them"."""

CTX_OWNS_NODE = RELEASE >= (2, 13)
"""A custom Function's ctx keeps its node; before, it held it weakly, and once the graph let go of the
node the ctx refuses its saved tensors, edges, name, hooks... (``minigrad.graph_owned``; checked on 2.11
and 2.13 only)."""

APPLY_TAKES_KEYWORDS = RELEASE >= (2, 13)
"""``Function.apply`` takes keyword arguments (inputs too); before: "apply() takes no keyword arguments"."""

RESHAPE_OF_A_COPY_IS_UNSAFE_VIEW = RELEASE >= (2, 13)
"""MultiheadAttention reshapes its heads' output (a contiguous copy) into an UnsafeViewBackward0;
before, it viewed it (ViewBackward0)."""

PACK_HOOK_ERROR_SAYS_CANNOT = RELEASE >= (2, 13)
"""The error for a pack hook that edits its input in place says "cannot be modified"; before, "can not"."""

DICT_INPUTS = RELEASE >= (2, 13)
"""``backward`` and ``autograd.grad`` take their ``inputs`` as a dict (grad then returns a dict);
before, a dict is iterated as any sequence, and its first key refused."""

GRAD_REFUSES_EMPTY_INPUTS_FIRST = RELEASE >= (2, 13)
"""``autograd.grad`` with no inputs raises RuntimeError "`inputs` argument to `grad()` cannot be empty."
before anything else; before, its engine raised ValueError "grad requires non-empty inputs." once the
outputs and their gradients had been checked (checked on 2.11 and 2.13 only)."""

LAYER_NORM_REPR_SHOWS_BIAS = RELEASE >= (2, 12)
"""``repr(nn.LayerNorm(...))`` ends with "bias=True"."""

CHECKPOINT_SAVES_A_PLACEHOLDER = RELEASE < (2, 12)
"""Non-reentrant checkpoint saves its inputs with an empty placeholder tensor before them (2.11's
``_NoopSaveInputs``: the outer saved-tensor hooks pack one tensor more); from 2.12 the inputs alone."""

CHECKPOINT_TIP_NAMES_COMPILE = RELEASE >= (2, 12)
"""The tip that ends checkpoint's errors goes on about torch.compile's dynamic shapes."""

NEXTAFTER_HAS_A_DERIVATIVE = RELEASE >= (2, 13)
"""nextafter's gradient is grad for its input (0 where it equals the other) and zeros for the other;
before, backward through it raises "the derivative for 'nextafter' is not implemented." (checked on
2.11 and 2.13 only)."""

AUTOCAST_DECORATES_ONLY_CALLABLES = RELEASE >= (2, 13)
"""``autocast(...)(f)`` refuses an ``f`` that is not callable (TypeError); 2.11 wraps anything (checked on
2.11 and 2.13 only)."""
