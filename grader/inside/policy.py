"""The grading policy, as data: what graded code may import, read, write and derive from, each
allowlist written once. The run-time guards (``guards.py``) decide by it, and the static check
(``graded_code.py``) takes the modules graded code may import from it. An exercise's entry of
``POLICIES`` is plain data: grading sends it with the job (``verdicts.compiled``), and staging writes
it beside the exercise's notebook (``POLICY_FILE``) for Validate.
"""
import types

IMPORTS = frozenset("minigrad torch math heapq itertools functools collections typing".split())
"""The modules graded code may import in every exercise (an exercise's ``modules`` add to them; what
it may read of each: ``MODULES``)."""

POLICY_FILE = "policy.json"
"""Beside each staged exercise's notebook: its entry of ``POLICIES``, which ``graded(...)`` applies in
the learner's kernel (coursekit.testing)."""

COMMON_TORCH = frozenset("""
    Tensor Size dtype device float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool long float double
    tensor as_tensor zeros ones full empty zeros_like ones_like full_like empty_like eye arange linspace
    rand randn randint rand_like randn_like manual_seed
    abs exp log log1p expm1 sqrt rsqrt sin cos tanh sigmoid relu neg reciprocal pow square sign clamp clip
    floor ceil round trunc maximum minimum max min sum mean prod cumsum argmax argmin amax amin logsumexp softmax
    log_softmax where masked_fill matmul mm bmm mv dot outer einsum t transpose permute reshape flatten squeeze
    unsqueeze cat stack split chunk broadcast_to broadcast_shapes is_tensor is_floating_point numel
    allclose isclose equal isfinite isnan isinf finfo iinfo promote_types result_type get_default_dtype cuda
""".split())
"""torch's members every exercise may use: its tensor functions, types and dtypes (no autograd, no
loading or compiling code, no private members)."""

TRAINING = ["minigrad.*", "minigrad.nn.*", "minigrad.nn.functional.*", "minigrad.optim.*"]
"""What of minigrad graded code may use where its answer is handed the library (``lib``) to train with:
torch's public API as minigrad has it (tensors, modes, layers, losses, optimizers)."""
SCHEDULE = ("minigrad.optim.optimizer.Optimizer", "param_groups")
"""An optimizer's parameter groups, where a training program changes a learning rate (``group["lr"] *= ...``)."""

POLICIES = {
    # MeanDim (given) runs the learner's SumDim.forward on its own ctx, which keeps SumDim's record
    "ex1_ops": {"records": ["minigrad.ops.reductions.MeanDim._backward_cls", "minigrad.function._ForwardContext"],
                "minigrad": ["minigrad.function.Function", "minigrad.ops._keep_dims", "minigrad.ops._normalize_dims",
                             "minigrad.ops.mat1_grad", "minigrad.ops.mat2_grad"]},
    "ex2_engine": {"minigrad": []},
    "ex3_freeing": {"writes": [("minigrad.function.BackwardFunction", "_saved")],
                    "calls": [("minigrad.function.Node", "_release_saved")],
                    "minigrad": ["minigrad.engine.validate_outputs", "minigrad.function.ERR_BACKWARD_TWICE",
                                 "minigrad.function._FREED"]},
    "ex4_versions": {"writes": [("minigrad.tensor._VersionCounter", "version")],
                     "calls": [("minigrad.tensor.Tensor", "_record_inplace"), ("minigrad.saved_tensors.SavedTensor", "_output")],
                     "minigrad": ["minigrad.function.ERR_MODIFIED", "minigrad.function.SavedTensor",
                                  "minigrad.function.anomaly_hint", "minigrad.function.op_name",
                                  "minigrad.function.tensor_description", "minigrad.grad_mode._state",
                                  "minigrad.grad_mode.is_grad_enabled", "minigrad.grad_mode.is_inference_mode_enabled",
                                  "minigrad.tensor.ERR_INFERENCE_INPLACE", "minigrad.tensor.ERR_LEAF_INPLACE",
                                  "minigrad.tensor.ERR_VIEW_OF_LEAF_INPLACE", "minigrad.tensor.Tensor",
                                  "minigrad.views.check_inplace"]},
    "ex5_grad_modes": {"writes": [("minigrad.grad_mode._State", "grad_enabled"), ("minigrad.grad_mode._State", "inference"),
                                  ("minigrad.grad_mode._Mode", "_was_grad_enabled"),
                                  ("minigrad.grad_mode._Mode", "_was_inference"),
                                  ("minigrad.tensor.Tensor", "_version_counter"),
                                  ("minigrad.tensor.Tensor", "_is_inference")],
                       "records": ["minigrad.grad_mode._Mode"],
                       "calls": [("minigrad.grad_mode._Mode", "_set")],
                       "minigrad": ["minigrad.grad_mode._Mode", "minigrad.grad_mode._state", "minigrad.tensor.Tensor",
                                    *TRAINING]},
    "ex6_training": {"writes": [("minigrad.tensor.Tensor", "grad"), ("minigrad.optim.optimizer.Optimizer", "state"),
                                SCHEDULE],
                     "minigrad": TRAINING},
    "ex7_custom_functions": {"minigrad": ["minigrad.Tensor", "minigrad.autograd.api.grad", "minigrad.autograd.function.Function",
                                          "minigrad.autograd.gradcheck.GradcheckError",
                                          "minigrad.autograd.gradcheck._analytical_jacobians",
                                          "minigrad.autograd.gradcheck._central_difference",
                                          "minigrad.autograd.gradcheck._output_values",
                                          "minigrad.autograd.gradcheck._requiring_grad", "minigrad.function.constant"]},
    "ex8_checkpoint": {"writes": [("minigrad.utils.checkpoint._Holder", "value")],
                       "records": ["minigrad.utils.checkpoint._Frame"],
                       "bases": ["builtins.Exception"],
                       "torch": ["random", "random.fork_rng"],
                       "imports": ["torch._dynamo"],  # Tensor.t's first call imports it (torch._compile)
                       "minigrad": ["minigrad.autograd.graph.saved_tensors_hooks", "minigrad.function.PackedTensor",
                                    "minigrad.function.SavedTensor", "minigrad.function.save",
                                    "minigrad.grad_mode.enable_grad", "minigrad.grad_mode.is_grad_enabled",
                                    "minigrad.tensor.Tensor", "minigrad.utils.checkpoint.CheckpointError",
                                    "minigrad.utils.checkpoint._Frame", "minigrad.utils.checkpoint._Holder",
                                    "minigrad.utils.checkpoint._StopRecomputation",
                                    "minigrad.utils.checkpoint._rng_state", "minigrad.utils.checkpoint._set_rng_state"]},
    "ex9_gpu_kernel": {"modules": ["triton", "triton.language"],
                       "minigrad": ["minigrad.Tensor", "minigrad.function.Function",
                                    "minigrad.kernels.triton_logsumexp.block_size",
                                    "minigrad.kernels.triton_softmax.SoftmaxGrad",
                                    "minigrad.kernels.triton_softmax.softmax_backward"]},
    "ex10_capstone": {"writes": [SCHEDULE], "minigrad": TRAINING},
}
"""What each exercise's parts need beyond the common policy: attributes they must set (``writes``);
private methods of minigrad's they call, bound (``calls``, besides ``CALLS``: an engine frees every
node it ran, ``_inplace`` records through ``_record_inplace``, a mode's ``_enter`` runs its ``_set``);
the classes whose objects a part keeps its own record on (``records``: an object of one may take
attributes of the learner's naming that its class does not define, so that what a part remembers,
and under which name, is the learner's design, while the class's own attributes and methods stay
minigrad's; a grad mode's ``_args``, a frame's ``pack``); bases a learner's class may derive from
besides ``BASES`` (``bases``: exercise 8's early stop may be an exception of the learner's own);
torch members; what torch imports lazily while the checks run, which the grading
server imports before any job (``imports``: the hook refuses an import once learner code runs); the members of minigrad's modules graded code may read or import (``minigrad``: what
its locked cells import and its parts use; ``M.*``: every public member of module ``M`` but its
submodules). Nothing else of minigrad is reachable by name: each trusted function graded code can
reach is one ``tests/grading/test_reachable.py`` lists as reviewed."""

CALLS = (("minigrad.function.Node", "_sequence_nr"),)
"""Private methods of minigrad's graded code may call bound in every exercise (``Guards._private_method``):
``node._sequence_nr()``, torch's name for a read of the node's number (an engine may order by it)."""

BASES = ("minigrad.function.Function",)
"""The classes graded code may derive from, besides ``object`` and its own."""

MODULES = {
    "math": None,  # all its public members: numbers and functions of numbers
    "heapq": None,
    "itertools": None,
    "functools": frozenset("reduce partial cmp_to_key lru_cache cache".split()),
    "collections": frozenset("defaultdict deque Counter OrderedDict".split()),
    "typing": frozenset("Any Optional Union List Tuple Dict Set Sequence Iterable Iterator Callable Mapping".split()),
    "torch": COMMON_TORCH,
    "torch.cuda": frozenset("is_available device_count current_device".split()),
    "triton": frozenset("jit cdiv next_power_of_2 language".split()),
    "triton.language": None,
}
"""The modules graded code may import, with the members it may read (None: any public member)."""

HIDDEN_MINIGRAD = ("minigrad.memory",)
"""minigrad's modules graded code reads nothing of: the ledger the checks measure saved bytes with.
(The course's tools, ``coursekit``, are no module of minigrad's: graded code may not import them.)"""

TENSOR_MEMBERS = frozenset("""
    shape dtype device ndim is_cuda is_leaf T mT data layout itemsize nbytes
    size dim numel stride storage_offset is_contiguous contiguous element_size tolist item is_floating_point
    is_complex
    to cpu cuda float double long int bool half type_as view view_as reshape reshape_as flatten squeeze unsqueeze
    expand expand_as permute transpose t unbind split chunk flip roll repeat narrow select index_select gather
    masked_select masked_fill masked_fill_ where clone copy_ fill_ zero_ new_zeros new_ones new_full new_empty
    new_tensor abs abs_ neg neg_ exp exp_ log log_ log1p expm1 sqrt sqrt_ rsqrt sin cos tanh tanh_ sigmoid
    sigmoid_ relu relu_ reciprocal pow pow_ square sign clamp clamp_ clip floor ceil round trunc frac
    add add_ sub sub_ mul mul_ div div_ true_divide floor_divide remainder fmod addcmul addcmul_ addcdiv addcdiv_
    lerp lerp_ maximum minimum max min amax amin argmax argmin sum mean prod std var norm cumsum cumprod
    logsumexp softmax log_softmax matmul mm bmm mv dot outer eq ne lt le gt ge equal allclose isclose isfinite
    isnan isinf all any nonzero count_nonzero sort argsort topk unique
""".split())
"""What graded code may use of a torch tensor (minigrad's storage): its values, shape and math; no
autograd (``backward``, ``grad``, hooks), no storage, files, numpy or sharing."""

MEMBERS = {
    str: frozenset(name for name in dir(str) if not name.startswith("_") and name not in ("format", "format_map")),
    int: frozenset(name for name in dir(int) if not name.startswith("_")),
    float: frozenset(name for name in dir(float) if not name.startswith("_")),
    bool: frozenset(name for name in dir(bool) if not name.startswith("_")),
    list: frozenset(name for name in dir(list) if not name.startswith("_")),
    tuple: frozenset(("count", "index")),
    dict: frozenset(name for name in dir(dict) if not name.startswith("_")),
    set: frozenset(name for name in dir(set) if not name.startswith("_")),
    frozenset: frozenset(name for name in dir(frozenset) if not name.startswith("_")),
    types.MappingProxyType: frozenset(("copy", "get", "items", "keys", "values")),
    range: frozenset("start stop step count index".split()),
    slice: frozenset("start stop step indices".split()),
}
"""The members graded code may read of plain data's types (a string's ``format`` and ``format_map`` go
through ``_GuardedFormatter``; ``str.format`` itself is not there; a mapping proxy is how graded code
reads a dict minigrad keeps, ``Guards.getattr``)."""

BUILTINS = """
    abs all any bool callable chr dict divmod enumerate filter float format frozenset hash int isinstance
    issubclass iter len list map max min next object ord pow range repr reversed round set slice sorted str sum
    tuple zip property staticmethod classmethod super
    ArithmeticError AssertionError AttributeError Exception IndexError KeyError LookupError NotImplementedError
    OverflowError RuntimeError StopIteration TypeError ValueError ZeroDivisionError NotImplemented Ellipsis
""".split()
"""The builtins graded code may use, besides ``getattr`` and ``hasattr`` (guarded) and ``print`` (``_Print``)."""
