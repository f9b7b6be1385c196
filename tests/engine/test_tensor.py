"""Item 2: the Tensor on torch storage — creation, metadata, conversions and bad input, against torch."""
import copy
import warnings

import pytest
import torch

import minigrad
from coursekit.testing import assert_same, both, outcome

CREATIONS = {
    "tensor": lambda lib, dev: lib.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev),
    "tensor-f64-grad": lambda lib, dev: lib.tensor([1.0, 0.0], dtype=lib.float64, device=dev, requires_grad=True),
    "tensor-int": lambda lib, dev: lib.tensor([1, 0], device=dev),
    "tensor-scalar": lambda lib, dev: lib.tensor(3.5, device=dev),
    "ones": lambda lib, dev: lib.ones(2, 3, device=dev),
    "ones-tuple": lambda lib, dev: lib.ones((2, 3), dtype=lib.float64, device=dev, requires_grad=True),
    "zeros": lambda lib, dev: lib.zeros(4, dtype=lib.int64, device=dev),
    "eye": lambda lib, dev: lib.eye(2, dtype=lib.float64, device=dev, requires_grad=True),
    "arange": lambda lib, dev: lib.arange(5, device=dev),
    "arange-float": lambda lib, dev: lib.arange(0.0, 1.0, 0.25, device=dev, requires_grad=True),
    "full": lambda lib, dev: lib.full((2, 2), 7.0, device=dev),
    "ones_like": lambda lib, dev: lib.ones_like(lib.zeros(2, 3, dtype=lib.float64, device=dev)),
    "zeros_like-grad": lambda lib, dev: lib.zeros_like(lib.ones(3, device=dev), requires_grad=True),
    "rand": lambda lib, dev: (lib.manual_seed(0), lib.rand(3, 2, device=dev))[1],
    "randn": lambda lib, dev: (lib.manual_seed(1), lib.randn(5, dtype=lib.float64, device=dev))[1],
}


def describe(t):
    return {"values": t, "shape": tuple(t.shape), "dtype": str(t.dtype), "device": str(t.device),
            "requires_grad": t.requires_grad, "is_leaf": t.is_leaf, "grad": t.grad, "grad_fn": t.grad_fn,
            "version": t._version, "repr": repr(t), "dim": t.dim(), "numel": t.numel()}


@pytest.mark.parametrize("name", CREATIONS)
def test_creation_matches_torch(name, device):
    assert_same(lambda lib: describe(CREATIONS[name](lib, device)))


def copy_constructed(lib, source):
    """torch.tensor of a tensor: a detached copy, with torch's warning each time, at the caller's line."""
    x = lib.ones(2, requires_grad=True) if source == "a tensor" else [lib.ones(()), lib.zeros(())]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copied = lib.tensor(x, dtype=lib.float64)
    return describe(copied), [(w.category.__name__, str(w.message), w.filename == __file__) for w in caught]


@pytest.mark.parametrize("source", ["a tensor", "a list of 0-dim tensors"])
def test_a_tensor_made_from_tensors_as_torch_makes_it(source):
    assert_same(copy_constructed, source)


def test_random_tensors_draw_the_same_numbers_as_torch():
    """minigrad draws from torch's generator: the same seed gives the same numbers (so lessons agree)."""
    def draw(lib):
        lib.manual_seed(123)
        return [lib.rand(3), lib.randn(2, 2), lib.nn.Linear(3, 2).weight]
    assert_same(draw)


CONVERSIONS = {
    "item": lambda t: t.sum().item(),
    "tolist": lambda t: t.tolist(),
    "numpy-requires-grad": lambda t: t.numpy(),
    "numpy-detached": lambda t: t.detach().numpy().tolist(),
    "to-float32": lambda t: describe(t.to(torch.float32)),
    "to-same": lambda t: t.to(t.dtype) is t,
    "cpu": lambda t: describe(t.cpu()),
    "clone": lambda t: describe(t.clone()),
    "detach": lambda t: describe(t.detach()),
    "float": lambda t: float(t.sum()),
    "item-of-many": lambda t: t.item(),
    "len": lambda t: len(t),
    "size": lambda t: (tuple(t.size()), t.size(0), t.shape[1]),
}


@pytest.mark.parametrize("name", CONVERSIONS)
def test_conversions_match_torch(name):
    assert_same(lambda lib: CONVERSIONS[name](lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)))


LEGACY_TYPES = {
    "int": lambda lib, t: describe(t.int()),
    "long": lambda lib, t: describe(t.long()),
    "half": lambda lib, t: describe(t.half()),
    "bfloat16": lambda lib, t: describe(t.bfloat16()),
    "bool": lambda lib, t: describe(t.bool()),
    "type-name": lambda lib, t: t.type(),
    "type-of-a-legacy-type": lambda lib, t: describe(t.type(lib.FloatTensor)),
    "type-of-a-name": lambda lib, t: describe(t.type("torch.IntTensor")),
    "type-of-a-cuda-name": lambda lib, t: describe(t.type("torch.cuda.FloatTensor")),
    "type-of-a-dtype": lambda lib, t: describe(t.type(lib.float32)),
    "type-of-its-own": lambda lib, t: t.type(t.type()) is t,
    "type-of-a-number": lambda lib, t: t.type(3),
    "type-of-no-type": lambda lib, t: t.type("torch.NoTensor"),
    "type_as": lambda lib, t: describe(t.type_as(lib.zeros(1, dtype=lib.int32))),
    "isinstance": lambda lib, t: [isinstance(t, kind) for kind in (lib.DoubleTensor, lib.FloatTensor,
                                                                   lib.cuda.DoubleTensor, lib.autograd.Variable)],
    "their-dtypes": lambda lib, t: [(kind.dtype, kind.is_cuda) for kind in (lib.ByteTensor, lib.cuda.LongTensor)],
    "made-from-data": lambda lib, t: describe(lib.FloatTensor([1.0, 2.0])),
    "made-empty": lambda lib, t: describe(lib.DoubleTensor()),
}


@pytest.mark.parametrize("name", LEGACY_TYPES)
def test_legacy_types_and_type_match_torch(name, device):
    """torch's legacy types (``torch.FloatTensor``, ...) and ``Tensor.type``, which converts to one
    differentiably (``ToCopyBackward0``), as torch does."""
    assert_same(lambda lib: LEGACY_TYPES[name](
        lib, lib.tensor([[1.0, 2.5], [3.0, 4.0]], dtype=lib.float64, device=device, requires_grad=True)))


VARIABLES = {
    "of-a-leaf": lambda lib: describe(lib.autograd.Variable(lib.ones(2, requires_grad=True))),
    "of-a-result": lambda lib: describe(lib.autograd.Variable(lib.ones(2, requires_grad=True) * 2)),
    "requiring-grad": lambda lib: describe(lib.autograd.Variable(lib.ones(2) * 2, requires_grad=True)),
    "empty": lambda lib: describe(lib.autograd.Variable()),
    "int-requiring-grad": lambda lib: lib.autograd.Variable(lib.arange(3), requires_grad=True),
    "not-a-tensor": lambda lib: lib.autograd.Variable([1.0]),
    "isinstance": lambda lib: [isinstance(lib.ones(1), lib.autograd.Variable), isinstance(1, lib.autograd.Variable),
                               type(lib.autograd.Variable(lib.ones(1))) is lib.Tensor],
}


@pytest.mark.parametrize("name", VARIABLES)
def test_variable_makes_a_tensor_as_torch_does(name):
    """``torch.autograd.Variable(t)`` is ``t.detach()``, a Tensor, that requires grad if asked."""
    assert_same(VARIABLES[name])


def test_variable_shares_its_datas_memory_and_version():
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        v = lib.autograd.Variable(x)
        y = x * x  # saves x
        v.add_(1)
        return [x, v._version, outcome(lambda: y.sum().backward())]
    assert_same(scenario)


def test_to_and_from_cuda_is_differentiable(device):
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.to(device) * 3
        y.cpu().sum().backward()
        return [x.grad, y.grad_fn.next_functions[0][0].name() if device != "cpu" else None, str(y.device)]
    assert_same(scenario)


BAD_INPUT = {
    "int-requires-grad-at-creation": lambda lib: lib.tensor([1, 2], requires_grad=True),
    "int-requires-grad_": lambda lib: lib.ones(3, dtype=lib.int64).requires_grad_(),
    "int-requires-grad-setter": lambda lib: setattr(lib.arange(3), "requires_grad", True),
    "non-leaf-requires-grad-off": lambda lib: (lib.ones(2, requires_grad=True) * 2).requires_grad_(False),
    "shape-mismatch": lambda lib: lib.randn(3) + lib.randn(4),
    "matmul-shapes": lambda lib: lib.randn(3, 2) @ lib.randn(3, 2),
    "dtype-mismatch-dot": lambda lib: lib.randn(3, dtype=lib.float64) @ lib.randn(3),
    "view-bad-size": lambda lib: lib.randn(2, 2).view(3),
    "view-non-contiguous": lambda lib: lib.randn(2, 2).t().view(4),
    "reshape-bad-size": lambda lib: lib.randn(2, 2).reshape(3),
    "dim-out-of-range": lambda lib: lib.randn(2, 2).sum(5),
    "index-out-of-range": lambda lib: lib.randn(2, 2)[5],
    "t-of-3d": lambda lib: lib.randn(2, 3, 4).t(),
    "retain-grad-no-grad": lambda lib: lib.ones(2).retain_grad(),
    "hook-no-grad": lambda lib: lib.ones(2).register_hook(print),
}


@pytest.mark.parametrize("name", BAD_INPUT)
def test_bad_input_raises_torchs_error(name):
    expected, actual = both(BAD_INPUT[name])
    assert expected[0] == "error", expected
    assert actual == expected


@pytest.mark.parametrize("make", [lambda lib: lib.randn(2, device="cuda") + lib.randn(2, device="cpu").sum(dim=0, keepdim=True)],
                         ids=["cuda-plus-cpu"])
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_device_mismatch_raises_torchs_error(make):
    assert_same(make)


def test_devices_and_dtypes_are_torchs():
    assert minigrad.float32 is torch.float32 and minigrad.float64 is torch.float64 and minigrad.int64 is torch.int64
    assert minigrad.device("cpu") == torch.device("cpu")
    assert minigrad.cuda.is_available() == torch.cuda.is_available()


def test_repr_of_every_kind_of_tensor_matches_torch():
    def reprs(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        return [repr(x), repr(x * 2), repr(x.detach()), repr(lib.nn.Parameter(lib.ones(2))), str(x.sum()),
                repr(x.max(0)), f"{x.sum():.2f}"]
    assert_same(reprs)


def test_repr_wraps_the_autograd_suffix_as_torch_does():
    """A suffix that would pass the print width goes on a line of its own, as torch's (on CUDA,
    ``device='cuda:0'`` takes the room: the first case found on a GPU)."""
    def reprs(lib):
        texts = []
        for n in range(1, 14):
            x = lib.full((n,), 1.2345678, dtype=lib.float64, requires_grad=True)
            texts += [repr(x), repr(x * 2), repr(lib.ones(2, n, dtype=lib.float64, requires_grad=True).sum(0))]
        return texts
    assert_same(reprs)


def test_repr_names_the_grad_fn_as_torch_does():
    """Without a namespace (CopySlices, CopyBackwards), and ``<Invalid>`` where the grad_fn cannot be
    made: a view made under no_grad whose memory was then edited."""
    def reprs(lib):
        x = lib.ones(2, requires_grad=True)
        sliced = x.clone()
        sliced[0] = 3.0
        copied = lib.zeros(2)
        copied.copy_(x)
        with lib.no_grad():
            view = x[:]
            view *= 2
        return [repr(sliced), repr(copied), repr(view), view.requires_grad]
    assert_same(reprs)


SETTING_GRAD = {
    "a tensor": lambda lib, x: lib.ones(2, 3),
    "None": lambda lib, x: None,
    "a number": lambda lib, x: 0,
    "itself": lambda lib, x: x,
    "the wrong size": lambda lib, x: lib.ones(3, 2),
    "the wrong dtype": lambda lib, x: lib.ones(2, 3, dtype=lib.float64),
    "the wrong dtype and size": lambda lib, x: lib.ones(2, dtype=lib.int64),
    "the wrong device": lambda lib, x: lib.ones(2, 3, device="meta"),
}


@pytest.mark.parametrize("value", SETTING_GRAD)
def test_setting_grad_is_checked_as_torch_checks_it(value):
    def scenario(lib):
        x = lib.zeros(2, 3, requires_grad=True)
        x.grad = SETTING_GRAD[value](lib, x)
        return x.grad
    assert_same(scenario)


def _float64_gradient(lib):
    class Float64Gradient(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.to(lib.float64)
    return Float64Gradient.apply


GRAD_PATHS = {
    "mul": lambda lib, x: x * 3,
    "to-double": lambda lib, x: x.double(),
    "a-function-giving-float64": lambda lib, x: _float64_gradient(lib)(x),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("path", GRAD_PATHS)
@pytest.mark.parametrize("grad_dtype", ["own", None, "float16", "float64"])
def test_grad_dtype_is_the_dtype_a_leafs_gradient_gets(grad_dtype, path, create_graph):
    """The leaf's own dtype by default; as set (cast in accumulating); None: the gradient as it comes."""
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        if grad_dtype != "own":
            x.grad_dtype = grad_dtype and getattr(lib, grad_dtype)
        for _ in range(2):  # the first gradient, then one accumulated into it
            GRAD_PATHS[path](lib, x).sum().backward(create_graph=create_graph)
        return [x.grad, x.grad.dtype, x.grad_dtype, x.grad.grad_fn]
    assert_same(scenario)


GRAD_DTYPE_ERRORS = {
    "not-a-dtype": lambda lib, x: setattr(x, "grad_dtype", "float16"),
    "of-a-non-leaf": lambda lib, x: (x * 2).grad_dtype,
    "set-on-a-non-leaf": lambda lib, x: setattr(x * 2, "grad_dtype", None),
    "another-than-the-grads": lambda lib, x: (setattr(x, "grad", lib.zeros(2)), setattr(x, "grad_dtype", lib.half)),
    "the-grads": lambda lib, x: (setattr(x, "grad", lib.zeros(2)), setattr(x, "grad_dtype", lib.float32),
                                 x.grad_dtype),
    "assigning-another-grad": lambda lib, x: (setattr(x, "grad_dtype", lib.float64), setattr(x, "grad", lib.zeros(2))),
    "assigning-any-grad": lambda lib, x: (setattr(x, "grad_dtype", None),
                                          setattr(x, "grad", lib.zeros(2, dtype=lib.half)), x.grad),
}


@pytest.mark.parametrize("name", GRAD_DTYPE_ERRORS)
def test_grad_dtype_is_checked_as_torch_checks_it(name):
    assert_same(lambda lib: GRAD_DTYPE_ERRORS[name](lib, lib.tensor([1.0, 2.0], requires_grad=True)))


SETTING_DATA = {
    "a float tensor": lambda lib: lib.tensor(2.0),
    "an integer tensor": lambda lib: lib.tensor(3),
    "not a tensor": lambda lib: [1.0],
}


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("value", SETTING_DATA)
def test_setting_data_is_checked_as_torch_checks_it(value, requires_grad):
    def scenario(lib):
        x = lib.tensor(1.0, requires_grad=requires_grad)
        x.data = SETTING_DATA[value](lib)
        return x, x.requires_grad
    assert_same(scenario)


def test_numpy_of_a_tensor_that_requires_grad_only_with_grad_mode_off():
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            inside = x.numpy().tolist()
        return inside, x.numpy()
    assert_same(scenario)


# --- del, deepcopy, _is_view, all -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["grad", "data", "requires_grad", "_grad_fn", "_backward_hooks", "note"])
def test_deleting_an_attribute_is_allowed_or_refused_as_torch_does(name):
    """``del x.grad`` is ``x.grad = None``; the autograd state torch keeps in C++ can't be deleted; a
    user's attribute can. Either way the tensor still works."""
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        x.note = "mine"
        (x * 2).sum().backward()
        deleted = outcome(delattr, x, name)
        (x * 3).sum().backward()
        return deleted, x.grad, x.requires_grad, x.is_leaf, hasattr(x, "note")
    assert_same(scenario)


def test_deepcopy_copies_a_leaf_as_torch_does():
    """The values, requires_grad, a copy of .grad and the user's attributes; not the hooks (a post-
    accumulate-grad hook that steps an optimizer stays with the original), not the version."""
    def scenario(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.sum().backward()
        x.note = [1]
        x.register_hook(lambda g: g * 10)
        x.register_post_accumulate_grad_hook(lambda t: t.grad.zero_())
        y = copy.deepcopy(x)
        (y * 2).sum().backward()
        return (y, y.grad, y.grad is x.grad, y.note, y.note is x.note, y.requires_grad, y.is_leaf, y._version,
                y.grad_fn, x.grad)
    assert_same(scenario)


def parameter_with_grad_and_attribute(lib):
    p = lib.nn.Parameter(lib.ones(2))
    p.grad, p.note = lib.ones(2), 1
    return p


def inference_tensor(lib):
    with lib.inference_mode():
        return lib.ones(2)


DEEP_COPIES = {
    "a non-leaf": lambda lib: lib.ones(2, requires_grad=True) * 2,
    "a parameter with a grad and an attribute": parameter_with_grad_and_attribute,
    "an inference tensor": inference_tensor,
    "a tensor edited in place": lambda lib: lib.ones(2).add_(1),
}


@pytest.mark.parametrize("what", DEEP_COPIES)
def test_deepcopy_of_other_tensors(what):
    def scenario(lib):
        original = DEEP_COPIES[what](lib)
        y = copy.deepcopy(original)
        return (type(y).__name__, y, y.grad, y.requires_grad, y._version, lib.is_inference(y), hasattr(y, "note"))
    assert_same(scenario)


def test_deepcopy_keeps_tensors_that_share_memory_sharing_it():
    def scenario(lib):
        base = lib.arange(6.0)
        view = base[2:]
        base_copy, view_copy = copy.deepcopy([base, view])
        view_copy[0] = 100.0
        return base, base_copy, view_copy, view_copy._is_view(), view_copy._base is None
    assert_same(scenario)


def views(lib):
    x = lib.ones(2, 3, requires_grad=True)
    plain = lib.ones(2, 3)
    with lib.no_grad():
        no_grad_view = x[0]
    with lib.inference_mode():
        inference = lib.ones(2, 3)
        normal_view_in_inference = plain.view(6)
        inference_view_inside = inference.view(6)
    return {
        "leaf": x, "slice": x[1:], "view": x.view(6), "transpose": x.t(), "non-leaf select": (x * 2)[0],
        "detach": x.detach(), "clone": x.clone(), "reshape copy": x.t().reshape(6), "no_grad view": no_grad_view,
        "view of a plain tensor": plain[0], "view of a view": x[1:][0], "normal view made in inference mode":
        normal_view_in_inference, "inference view inside": inference_view_inside,
        "inference view outside": inference.view(6), "expand": lib.ones(1, 3).expand(2, 3),
    }


def test_is_view_answers_as_torchs():
    """torch's is_view: views autograd tracks; an inference tensor's view is none (it has no autograd
    metadata), a detach or a copy neither."""
    assert_same(lambda lib: {name: t._is_view() for name, t in views(lib).items()})


def test_all_matches_torch():
    def scenario(lib):
        x = lib.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)
        return (x.all(), (x > -1).all(), x.all(1), x.all(0, keepdim=True), x.all(dim=-1), lib.all(x > 0),
                x.all().requires_grad, x.all().dtype, lib.ones(0).all(), outcome(x.all, 2))
    assert_same(scenario)


def test_volatile_is_gone_with_torchs_warnings():
    """``volatile``, which grad modes replaced: reads False and setting it does nothing, each with
    torch's warning, given where the attribute is used."""
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            before = x.volatile
            x.volatile = True
            after = x.volatile
        return before, after, (x * 2).requires_grad, [(w.category.__name__, str(w.message), w.filename == __file__)
                                                       for w in caught]
    assert_same(scenario)


REQUIRES_GRAD_TAKERS = {
    "ones": lambda lib, value: lib.ones(2, requires_grad=value),
    "randn, of several signatures": lambda lib, value: lib.randn(2, requires_grad=value),
    "arange with a dtype": lambda lib, value: lib.arange(3.0, dtype=lib.float64, requires_grad=value),
    "tensor": lambda lib, value: lib.tensor([1.0], requires_grad=value),
    "zeros_like": lambda lib, value: lib.zeros_like(lib.ones(2), requires_grad=value),
    "requires_grad_": lambda lib, value: lib.ones(2).requires_grad_(value),
    "the requires_grad attribute": lambda lib, value: setattr(lib.ones(2), "requires_grad", value),
}


def requires_grad_of_a_type(lib, taker, value):
    made = REQUIRES_GRAD_TAKERS[taker](lib, value)
    return made is None or made.requires_grad


@pytest.mark.parametrize("value", [True, 1, 0, None, "yes", 1.0], ids=repr)
@pytest.mark.parametrize("taker", REQUIRES_GRAD_TAKERS)
def test_requires_grad_must_be_a_bool(taker, value):
    """torch takes only a bool (where it takes None, as no): anything else is refused in its words,
    which for a function of several signatures list the arguments as given."""
    assert_same(requires_grad_of_a_type, taker, value)


def iterated(lib, dims):
    x = lib.ones([2] * dims, requires_grad=True)
    rows = list(x * 2)
    rows[0].sum().backward()
    try:
        rows[1].add_(1)  # an output of a node of several views: refused
    except RuntimeError as error:
        return [row.grad_fn for row in rows], x.grad, error


@pytest.mark.parametrize("dims", [0, 1, 2])
def test_iterating_a_tensor_unbinds_it(dims):
    assert_same(iterated, dims)
