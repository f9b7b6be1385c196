"""Every callable graded code can reach, reviewed (issue 36, item 1): from each exercise's graded
namespace (the modules its policy lets it import, minigrad's members it lists), breadth-first to
depth 3 through the attribute paths the guards allow (module members, class attributes, attributes
of the objects minigrad keeps at module level), each callable found must be in ``REVIEWED`` with the
reason it cannot act for the learner: take a name or a foreign ``self`` and write what the guards
would deny. A new reachable callable fails here until someone reviews it. The walk runs the guards
themselves (``Guards._readable``, ``getattr``), so what it reaches is what graded code reaches.
Besides modules, the walk starts from what minigrad makes at run time and hands graded code (a
sample graph: tensors, nodes, a saved tensor, the ctx of a learner's Function)."""
import collections
import fnmatch
import importlib
import sys
import types

import pytest

from grader.inside import guards, kernel_process
from grader.inside.policy import POLICIES

DEPTH = 3

PURE = "computes on the values it is given; takes no name, writes no attribute"
REVIEWED = {
    # plain data and the standard library's allowed members
    "builtins.str.*": PURE, "builtins.int.*": PURE, "builtins.float.*": PURE, "builtins.bool.*": PURE,
    "builtins.tuple.*": PURE, "builtins.slice.*": PURE,
    "math.*": "numbers and functions of numbers",
    "itertools.*": "iterators over what they are given: call only what graded code passes them",
    "_heapq.*": "order the items of a list graded code may write anyway (items, no attributes)",
    "heapq.*": "order the items of a list graded code may write anyway (items, no attributes)",
    "_functools.*": "call only what they are given, through the guards where graded code's",
    "functools.*": "wrap what they are given: the wrapper copies the wrapped function's names onto itself only",
    "collections.*": "containers: items only, which graded code may write anyway",
    "typing.*": "type markers (not get_type_hints, which evaluates strings)",
    # torch: COMMON_TORCH and the policy's torch members
    "torch._VariableFunctionsClass.*": "torch's tensor functions: new tensors from values; no name, no attribute write",
    "torch.functional.*": "torch's tensor functions written in Python (einsum, split, broadcast_shapes): " + PURE,
    "torch.Tensor": "torch's tensor class: graded code reads only TENSOR_MEMBERS of its objects, nothing of "
                    "the class; no learner class derives from it",
    "torch.Size": PURE, "torch.dtype": PURE, "torch.device": PURE, "torch.finfo": PURE, "torch.iinfo": PURE,
    "torch.get_default_dtype": PURE, "torch.is_tensor": PURE,
    "torch.random.manual_seed": "seeds torch's generator, as the exercise's checks do before each scenario",
    "torch.random.fork_rng": "exercise 8: saves and restores torch's generator state around a block",
    "torch.cuda.*": "whether and which CUDA device there is: reads, writes nothing",
    # Triton's language (exercise 9): kernel code the static kernel allowlist checks
    "triton.language.*": "Triton's kernel language: builds kernel values, takes no attribute name",
    "triton.language.*.*": "Triton's kernel language (core, math, random, standard), as above",
    "triton._C.libtriton.ir.PROPAGATE_NAN": "an enum value of Triton's IR",
    "triton.runtime.interpreter.InterpretedFunction": "a `tl` function Triton's interpreter wraps (tl.argmax): called "
                                                      "outside a kernel, it would compile that function's text, which "
                                                      "the audit hook refuses; graded code reads none of its attributes",
    "triton.cdiv": PURE, "triton.next_power_of_2": PURE,
    "grader.inside.kernel_process.Kernels.jit": "triton.jit in the grading process (harness.serve): a Kernel "
                                                "holding the function and its text, which the static kernel check "
                                                "allowed; takes a function only, writes nothing",
    # minigrad, what POLICIES' "minigrad" lists
    "minigrad.tensor.Tensor": "makes a tensor of its own from values; learner classes may not derive from it",
    "minigrad.tensor_ops.matmul": "torch.matmul: a new tensor from two tensors",
    "minigrad.*": "torch.<op>(input, ...): refuses an input that is not a minigrad Tensor (minigrad._function), "
                  "then runs input.<op>(...): a new tensor; add, sub, mul, div and the unary pointwise ops "
                  "(sin, exp, ...) with out=t write t's values instead",
    "minigrad.creation.*": "torch's factories (tensor, zeros, ...): a new tensor from values",
    "minigrad.creation._*factory.<locals>.create": "torch's factories (arange, ones_like, ...), as above",
    "minigrad.autograd.anomaly_mode.is_anomaly_*": "reads the anomaly switch",
    "minigrad.grad_mode.is_*": "reads the grad mode",
    "minigrad.grad_mode.enable_grad": "a grad mode (context manager): sets minigrad's own switch to a fixed value",
    "minigrad.grad_mode.no_grad": "a grad mode (context manager): sets minigrad's own switch to a fixed value",
    "minigrad.grad_mode.inference_mode": "a grad mode (context manager): sets minigrad's own switches to fixed values",
    "minigrad.grad_mode.set_grad_enabled": "a grad mode: sets minigrad's own switch to the bool it is given",
    "minigrad.autocast_mode.autocast": "autocast (context manager, decorator): sets minigrad's own autocast switches "
                                       "to the device type and dtype it is given, put back at exit; as a decorator "
                                       "calls only the function it is given",
    "minigrad.autocast_mode.is_autocast_*": "reads autocast's switches",
    "minigrad.autocast_mode.get_autocast_dtype": "reads autocast's dtype (torch's default where none is set)",
    "minigrad.grad_mode._Mode": "exercise 5: the grad modes' base, whose parts the learner writes",
    "minigrad.function.Function": "the base of the learner's Functions: its apply makes the ctx, a new node",
    "minigrad.function.Function.apply": "classmethod: runs forward on a ctx it makes for that class",
    "minigrad.function.Function.*": "static forward, backward, setup_context, read through a learner's Function "
                                    "(a minigrad Function's are denied): they only raise NotImplementedError",
    "minigrad.function.constant": "a tensor that requires no grad, from a value",
    "minigrad.saved_tensors.SavedTensor": "makes a saved tensor of its own (exercise 4's part unpacks it)",
    "minigrad.saved_tensors.PackedTensor": "makes a packed tensor of its own",
    "minigrad.saved_tensors.save": "a SavedTensor for a tensor: reads the tensor, writes on the new object only",
    "minigrad.saved_tensors.anomaly_hint": "text about a node: reads only",
    "minigrad.saved_tensors.op_name": "text about a node: reads only",
    "minigrad.saved_tensors.tensor_description": "text about a tensor: reads only",
    "minigrad.engine.validate_outputs": "checks a node's gradients against its inputs: reads, returns new tensors",
    "minigrad.views.check_inplace": "raises if an in-place edit of the tensor is not allowed: reads only",
    "minigrad.ops.linalg.mat1_grad": "exercise 1: a gradient from tensors' values",
    "minigrad.ops.linalg.mat2_grad": "exercise 1: a gradient from tensors' values",
    "minigrad.ops.reductions._keep_dims": "exercise 1: a shape from a shape",
    "minigrad.ops.reductions._normalize_dims": "exercise 1: dims from dims",
    "minigrad.autograd.api.grad": "exercise 7: torch.autograd.grad, runs backward on the graph it is given",
    "minigrad.autograd.gradcheck.gradcheck": "exercise 7: compares gradients numerically: runs the function it is given",
    "minigrad.autograd.graph.saved_tensors_hooks": "exercise 8: hooks (the learner's) around saving, set on minigrad's "
                                                   "own hook stack",
    "minigrad.utils.checkpoint.*": "exercise 8: checkpoint's frame, holder and errors, made new; rng state read "
                                   "from and set into torch's generator",
    "minigrad.utils.checkpoint_options.CheckpointError": "exercise 8: checkpoint's error (defined beside the "
                                                         "options that raise it too), a RuntimeError made new",
    "minigrad.nn.functional.*": "losses and activations: new tensors from tensors",
    "minigrad.nn.activation.*": "modules of their own (no learner class derives from Module)",
    "minigrad.nn.loss.*": "modules of their own",
    "minigrad.nn.linear.Linear": "a module of its own",
    "minigrad.nn.container.*": "modules of their own",
    "minigrad.nn.dropout.Dropout": "a module of its own",
    "minigrad.nn.normalization.LayerNorm": "a module of its own",
    "minigrad.nn.sparse.Embedding": "a module of its own",
    "minigrad.nn.attention.MultiheadAttention": "a module of its own",
    "minigrad.nn.module.Module": "a module of its own; registering refuses a foreign self and any name "
                                 "that is not new (Module._check_name); its methods are read bound only",
    "minigrad.nn.module.Parameter": "a tensor of its own",
    "minigrad.optim.*.*": "optimizers of their own, over the parameters they are given (writes: those tensors' values)",
    # bound to the objects minigrad makes at run time (sample_graph)
    "torch.Tensor.*": "TENSOR_MEMBERS bound to a torch tensor graded code holds: new tensors, or that "
                      "tensor's values in place",
    "torch._tensor.Tensor.*": "TENSOR_MEMBERS written in Python (norm, split, unique), bound likewise",
    "torch.Size.*": PURE, "builtins.dict.*": "a dict's own items",
    "weakref.ReferenceType": "a leaf's weak reference to its accumulator node: called, returns that node",
    "minigrad.tensor_ops.TensorOps.*": "torch's tensor ops bound to a tensor: a new tensor, recorded as torch records it",
    "minigrad.tensor_ops.TensorOps.transpose_": "torch's in-place Tensor API bound to a tensor graded code holds: "
                                                "that tensor's sizes, as torch lets any code change them",
    "minigrad.tensor_ops.TensorOps.resize_": "the same: that tensor's sizes",
    "minigrad.tensor_ops.TensorOps.resize_as_": "the same: that tensor's sizes",
    "minigrad.tensor_more_ops.MoreTensorOps.*": "torch's tensor ops bound to a tensor: a new tensor (values and "
                                                "indices, integers, bools), recorded as torch records it",
    "minigrad.tensor_more_ops.MoreTensorOps.t_": "as transpose_: that tensor's sizes and strides on its own memory",
    "minigrad.tensor_more_ops.MoreTensorOps.squeeze_": "the same",
    "minigrad.tensor_more_ops.MoreTensorOps.unsqueeze_": "the same",
    "minigrad.tensor_more_ops.MoreTensorOps.swapdims_": "the same (swapaxes_ is its other name)",
    "minigrad.tensor_more_ops.MoreTensorOps.as_strided_": "the same: sizes, strides and offset within that tensor's "
                                                          "memory, whose bounds torch checks",
    "minigrad.tensor_more_ops.isin": "torch.isin on the values given: a new bool tensor; " + PURE,
    "minigrad.tensor_more_ops.searchsorted": "torch.searchsorted on the values given: a new integer tensor; " + PURE,
    "minigrad.tensor_more_ops.bucketize": "torch.bucketize on the values given: a new integer tensor; " + PURE,
    "minigrad.function.*Backward*": "a node: called, runs its own backward on the gradients given, as the engine does",
    "minigrad.function.Node._sequence_nr": "CALLS, torch's node._sequence_nr(): reads the node's number",
    "minigrad.function.BackwardFunction.recording": "classmethod of a node class (apply's way to make the node, "
                                                    "as calling the class makes one): a new node with an edge to "
                                                    "each given tensor's grad_fn, attached to no tensor; no forward "
                                                    "runs; graded code writes to it only as to that class's ctx",
    "minigrad.function.BackwardFunction._release_saved": "exercise 3's calls (its engine frees each node it ran): "
                                                         "drops the saved tensors of the node it is bound to; "
                                                         "graded, it is the learner's own part",
    "minigrad.kernels.triton_logsumexp.block_size": PURE,
    "minigrad.kernels.triton_softmax.softmax_backward": "exercise 9's backward kernel launched on the storage it is "
                                                        "given, into a new tensor; takes no name, writes no attribute",
    "minigrad.kernels.triton_softmax.SoftmaxGrad": "a Function: apply makes a node of its own; its statics are denied",
    "minigrad.ops.*.*": "an op's Function, a node's _forward_cls: apply makes a node of its own; its static forward, "
                        "backward and setup_context, which take any ctx, are denied (Guards._trusted_function)",
    "minigrad.saved_tensors.SavedTensor.unpack": "the saved tensor, or a new one rebuilt from the saved values with "
                                                 "the node given as grad_fn (_output): writes the new tensor only",
    "minigrad.saved_tensors.SavedTensor._output": "exercise 4's calls (unpack's path): a new tensor, as unpack",
    "minigrad.saved_tensors.SavedTensor.storages": "reads what memory the entry keeps",
    "minigrad.tensor.Tensor._record_inplace": "exercise 4's calls (_inplace's path): records an in-place edit of the "
                                              "tensor it is bound to (a view: and its base) with one of minigrad's "
                                              "in-place ops, refusing any other function",
    "minigrad.function.AccumulateGrad.apply": "a leaf's node: called, accumulates the gradient given into its "
                                              "leaf's .grad, as backward() does",
    "minigrad.function.*.name": "torch's node.name(): reads the node's name",
    "minigrad.views.*.name": "torch's node.name(): reads the node's name",
    "minigrad.views.AsStridedBackward0": "a view's node: called, runs its own backward on the gradients given, as "
                                        "the engine does",
    "minigrad.views.CopySlices": "the node of a base edited through a view: as AsStridedBackward0",
    "minigrad.views.*.apply": "as the node itself",
    "minigrad.function.Node._release_saved": "exercise 3's calls (its engine frees each node it ran): drops what "
                                             "the node it is bound to saved",
    "minigrad.views.CopySlices._release_saved": "exercise 3's calls, as Node._release_saved",
    "minigrad.utils.hooks.RemovableHandle.remove": "torch's handle.remove(): unregisters the hook the handle was "
                                                   "made for (graded code holds only the handles its own "
                                                   "register_hook calls return)",
    "builtins.frozenset.*": PURE,
    "minigrad.grad_mode.no_grad._set": "exercise 5's calls (a mode's _enter runs its _set): sets the grad mode that "
                                       "mode object stands for",
    # where an exercise trains (policy.TRAINING): torch's nn and optim API, bound to what graded code holds
    "minigrad.nn.module.Module.*": "torch's Module API bound to a module graded code holds: reads it, or changes "
                                   "that module's own parameters, buffers and flags as torch lets any code "
                                   "(register_parameter, register_buffer and add_module take a new name on a "
                                   "Module only, as torch's)",
    "minigrad.nn.linear.Linear.*": "as Module's: Linear's forward, its repr, its parameters' reset",
    "minigrad.optim.optimizer.Optimizer.*": "torch's optimizer API bound to an optimizer graded code holds: steps "
                                            "and zeroes the parameters it was given, adds a group of them",
    "collections.defaultdict.*": "exercise 6's optimizer state, which its part keeps (policy writes: Optimizer.state): "
                                 "a dict of the parameters' entries",
    "builtins.dict": "that state's default_factory: makes a new dict",
    "builtins.list.*": "an optimizer's parameter groups, where the exercise trains (policy.SCHEDULE): the training "
                       "program's to change, as torch lets it (a learning rate); any other list minigrad keeps "
                       "reaches graded code frozen (guards._frozen)",
    "builtins.mappingproxy.*": "reads a dict minigrad keeps, as graded code gets it: read-only (guards._frozen)",
    "grader.inside.guards.Scale": "the sample's learner Function (made by Guards.metaclass)",
    f"{__name__}.sample_graph.<locals>.*": "the sample's learner Function's forward and backward",
}
for _name in ("add_ sub_ mul_ div_ fill_ zero_ copy_ normal_ uniform_ requires_grad_ detach_ retain_grad "
              "register_hook register_post_accumulate_grad_hook backward detach to cpu cuda float double item "
              "tolist numpy numel dim size stride is_contiguous is_floating_point is_inference new_ones new_zeros").split():
    REVIEWED[f"minigrad.tensor.Tensor.{_name}"] = "torch's Tensor API bound to a tensor graded code holds: that " \
                                                 "tensor's values and flags, as torch lets any code change them"
for _name in "Double Float Half Long Int Byte Bool".split():
    REVIEWED[f"minigrad.{_name}Tensor"] = "a legacy tensor type (minigrad.legacy_types): called, a new tensor from " \
                                          "sizes or values; isinstance reads a tensor's dtype and device"
    REVIEWED[f"torch.{_name}Tensor"] = "the torch type a legacy type stands for (its _torch_type): as the legacy type"
for _name in "apply name save_for_backward mark_dirty mark_non_differentiable set_materialize_grads".split():
    REVIEWED[f"minigrad.function.BackwardFunction.{_name}"] = "torch's ctx API, bound to a node"
REVIEWED.update({f"minigrad.function.Node.{name}": "torch's Node API, bound to a node"
                 for name in ("register_hook", "register_prehook")})
REVIEWED["minigrad.saved_tensors.RawSaved.register_hooks"] = (
    "torch's SavedTensor API (grad_fn._raw_saved_*), bound to one entry a node saved: hooks on it, as a node's "
    "register_hook puts hooks on the node")

def reviewed(name, patterns):
    """Whether a pattern matches ``name``, its ``*`` standing for one part of the dotted name (so
    ``minigrad.*`` is minigrad's own members, not everything in its submodules)."""
    return any(fnmatch.fnmatchcase(name, pattern) and name.count(".") == pattern.count(".") for pattern in patterns)


def qualified(value):
    """Where a callable is defined: its module and qualified name (a bound method's function's; a
    builtin method's, by the type of the object it is bound to)."""
    owner = getattr(value, "__self__", None)
    if isinstance(value, types.BuiltinMethodType) and owner is not None and not isinstance(owner, types.ModuleType):
        kind = owner if isinstance(owner, type) else type(owner)
        return f"{kind.__module__}.{kind.__qualname__}.{value.__name__}"
    function = getattr(value, "__func__", value)
    module = getattr(function, "__module__", None) or getattr(getattr(function, "__objclass__", None), "__module__", None) \
        or type(function).__module__
    return f"{module}.{getattr(function, '__qualname__', type(function).__qualname__)}"


def sample_graph(guarded, policy):
    """Objects minigrad makes at run time that graded code is handed: a leaf and the torch tensor it
    keeps, an op's output, its node, the leaf's AccumulateGrad and a saved tensor of it, a view, its
    node and one edited in place, a hook's handle, a grad mode, the output of a learner's Function
    (made as graded code makes its classes, ``Guards.metaclass``) and its ctx; and where the exercise
    trains (``policy.TRAINING``), a layer, its parameter and an optimizer."""
    import minigrad

    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    def backward(ctx, grad):
        return grad * 2

    scale = guarded.metaclass("Scale", (minigrad.function.Function,),
                              {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    leaf = minigrad.tensor([[1.0, 2.0]], requires_grad=True)
    product, scaled, view = leaf * leaf, scale.apply(leaf), leaf[:, :1]
    edited = leaf.clone()[:, :1].mul_(2)
    samples = [leaf, leaf._data, product, product.grad_fn, product.grad_fn.next_functions[0][0],
               product.grad_fn._saved[0], scaled, scaled.grad_fn, view, view.grad_fn, edited, edited.grad_fn,
               leaf.register_hook(lambda grad: grad), minigrad.no_grad()]
    if "minigrad.nn.*" in policy["minigrad"]:
        layer = minigrad.nn.Linear(2, 1)
        samples += [layer, layer.weight, minigrad.optim.SGD(layer.parameters(), lr=0.1)]
    return samples


def reachable(exercise, monkeypatch):
    """{qualified name: the path graded code reaches it by} of each callable reachable in ``exercise``."""
    def report(*args):
        pass

    guarded = guards.Guards(POLICIES[exercise], report, set(), sys._getframe)
    for member in POLICIES[exercise]["minigrad"]:  # the modules graded code may import, imported or not by now
        importlib.import_module(member.removesuffix(".*") if member.endswith(".*") else member.rsplit(".", 1)[0])
    if "triton" in POLICIES[exercise].get("modules", []):  # jit as the grading process has it (harness.serve)
        import triton

        monkeypatch.setattr(triton, "jit", kernel_process.Kernels(None, None).jit)
    queue = collections.deque((obj, 0) for obj in sample_graph(guarded, POLICIES[exercise]))
    for name in sorted(guarded._allowed_imports | set(guarded._modules)):
        try:
            guarded.import_(name)
        except guards.Denied:
            continue
        queue.append((importlib.import_module(name), 0))
    seen, found = set(), {}
    while queue:
        obj, level = queue.popleft()
        if id(obj) in seen or level == DEPTH:
            continue
        seen.add(id(obj))
        for name in sorted(dir(obj)):
            if not guarded._readable(obj, name):
                continue
            try:
                value = guarded.getattr(obj, name)
            except (guards.Denied, AttributeError, RuntimeError):  # RuntimeError: a property this object has no value for (a 1-d tensor's mT)
                continue
            if callable(value):
                found.setdefault(qualified(value), f"{guards._describe(obj)}.{name}")
            queue.append((value, level + 1))
    return found


@pytest.mark.parametrize("exercise", sorted(POLICIES))
def test_every_callable_graded_code_reaches_is_reviewed(exercise, monkeypatch):
    found = reachable(exercise, monkeypatch)
    unreviewed = {name: path for name, path in found.items() if not reviewed(name, REVIEWED)}
    assert not unreviewed, f"reachable from {exercise}'s graded code, not reviewed in REVIEWED: {unreviewed}"


def test_every_exercise_has_its_minigrad_members():
    """Each exercise names what of minigrad its graded code may reach (an exercise without an entry
    would reach none of it)."""
    assert sorted(POLICIES) == sorted(f"ex{n}_" + name for n, name in [
        (1, "ops"), (2, "engine"), (3, "freeing"), (4, "versions"), (5, "grad_modes"), (6, "training"),
        (7, "custom_functions"), (8, "checkpoint"), (9, "gpu_kernel"), (10, "capstone")])
    assert all("minigrad" in policy for policy in POLICIES.values())


class Learners:
    """An object of a learner's class: minigrad's registering would have written anything on it."""


def denied(exercise, *read):
    """What the guards report when graded code reads ``obj.name`` (``read``) under ``exercise``'s policy."""
    reports = []
    guarded = guards.Guards(POLICIES[exercise], lambda *args: reports.append(args[:2]), set(), sys._getframe)
    with pytest.raises(guards.Denied):
        guarded.getattr(*read)
    return reports


def test_a_method_of_minigrad_read_unbound_is_denied():
    """``Module.register_parameter(obj, "__class__", cls)``, called unbound, would set any name on any
    object; so would ``minigrad.detach(obj)`` treat any object as a tensor. A class's methods and a
    method kept under a module's name are not graded code's to read."""
    import minigrad

    assert denied("ex10_capstone", minigrad.nn.Module, "register_parameter") == [
        ("read", "Module.register_parameter")]
    assert denied("ex10_capstone", minigrad.Tensor, "add") == [("read", "Tensor.add")]
    assert denied("ex3_freeing", minigrad, "nn") == [("read", "minigrad.nn")]  # beyond what exercise 3 needs


@pytest.mark.parametrize("call", ["register_parameter", "register_buffer", "add_module"])
def test_registering_refuses_a_foreign_self_and_a_name_that_is_not_new(call):
    """The deputy itself: minigrad's Module writes only a new name on a Module, as torch's does."""
    import minigrad

    value = minigrad.nn.Linear(1, 1) if call == "add_module" else None
    with pytest.raises(TypeError, match="on a Module, not on a Learners"):
        getattr(minigrad.nn.Module, call)(Learners(), "note", value)
    for name in ("__class__", "forward", "training"):
        with pytest.raises(KeyError, match=f"attribute '{name}' already exists"):
            getattr(minigrad.nn.Linear(1, 1), call)(name, value)


@pytest.mark.parametrize("call", [lambda lib: lib.detach(Learners()), lambda lib: lib.sum(Learners()),
                                  lambda lib: lib.equal(lib.ones(1), Learners())], ids=["detach", "sum", "equal"])
def test_torch_functions_refuse_an_object_that_is_not_a_tensor_as_torch_does(call):
    """``minigrad.detach`` was ``Tensor.detach``: given any object, it treated it as a tensor."""
    import torch

    import minigrad

    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError) as ours:
        call(minigrad)
    assert str(ours.value) == str(theirs.value)
    assert minigrad.add(minigrad.tensor([1.0]), 2).tolist() == [3.0]
