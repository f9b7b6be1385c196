"""gradcheck and gradgradcheck (issue 9, item 2): each scenario runs with torch and with minigrad and
must come out the same, passing (True), failing quietly (False), or with the same error, message and
warnings."""
import importlib
import sys
import warnings

import pytest

import minigrad

from coursekit.testing import blamed, both, outcome


def double(lib, *shape, requires_grad=True):
    return lib.randn(*shape, dtype=lib.float64, requires_grad=requires_grad)


def with_warnings(fn, *args, **kwargs):
    """What ``fn(*args, **kwargs)`` did (its result or error, as plain data) and the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = outcome(lambda: fn(*args, **kwargs))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


def same(scenario, *args):
    """Both libraries' plain results, asserted equal; torch's is returned, to say what was expected."""
    expected, actual = both(scenario, *args)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    return expected


def failed_with(result, error, first_line):
    return result[0] == "error" and result[1] == error and result[2].split("\n")[0] == first_line


# --- what gradcheck passes ------------------------------------------------------------------------

FIRST_ORDER = {
    "exp": lambda lib: (lambda x: x.exp(), (double(lib, 3),)),
    "tanh of a product": lambda lib: (lambda x, y: (x * y).tanh(), (double(lib, 2, 3), double(lib, 2, 3))),
    "mul with broadcasting": lambda lib: (lambda a, b: a * b, (double(lib, 2, 3), double(lib, 3))),
    "matmul": lambda lib: (lambda a, b: a @ b, (double(lib, 2, 3), double(lib, 3, 4))),
    "sum over a dim": lambda lib: (lambda x: x.sum(1), (double(lib, 2, 3),)),
    "composition": lambda lib: (lambda a, b, c: (a @ b).tanh().sum(0, keepdim=True) * c.exp(),
                                (double(lib, 2, 3), double(lib, 3, 4), double(lib, 4))),
    "non-tensor arguments": lambda lib: (lambda x, dim, scale: (x * scale).sum(dim), (double(lib, 2, 3), 1, 2.5)),
    "an input that does not require grad": lambda lib: (lambda x, w: (x * w).sigmoid(),
                                                        (double(lib, 3), double(lib, 3, requires_grad=False))),
    "several outputs": lambda lib: (lambda x, y: (x * y, x.exp(), (x + y).sum()), (double(lib, 3), double(lib, 3))),
    "an integer output (max's indices)": lambda lib: (lambda x: x.max(dim=1), (double(lib, 2, 3),)),
    "a view of the input": lambda lib: (lambda x: x.t()[1], (double(lib, 2, 3),)),
    "one tensor, not a tuple": lambda lib: (lambda x: x.log(), double(lib, 3).exp().detach().requires_grad_()),
}


def first_order(lib, name, fast_mode=False):
    lib.manual_seed(0)
    func, inputs = FIRST_ORDER[name](lib)
    return with_warnings(lib.autograd.gradcheck, func, inputs, fast_mode=fast_mode)


@pytest.mark.parametrize("name", FIRST_ORDER)
def test_gradcheck_passes_on_ops_and_compositions(name):
    assert same(first_order, name) == (True, [])


def stable_logsumexp(lib):
    """The tutorial's StableLogSumExp, word for word."""
    class StableLogSumExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, dim):
            ctx.dim = dim
            max_val = x.max(dim=dim, keepdim=True).values
            shifted = x - max_val
            exp_sum = shifted.exp().sum(dim=dim, keepdim=True)
            ctx.save_for_backward(x, max_val)
            return max_val.squeeze(dim) + exp_sum.log().squeeze(dim)

        @staticmethod
        def backward(ctx, grad_output):
            x, max_val = ctx.saved_tensors
            dim = ctx.dim
            shifted = (x - max_val).exp()
            softmax = shifted / shifted.sum(dim=dim, keepdim=True)
            return grad_output.unsqueeze(dim) * softmax, None
    return StableLogSumExp


def logsumexp_checked(lib):
    lib.manual_seed(0)
    x = lib.randn(4, 8, dtype=lib.float64, requires_grad=True)
    return lib.autograd.gradcheck(stable_logsumexp(lib).apply, (x, 1), eps=1e-6, atol=1e-4)


def test_the_tutorials_stable_logsumexp_passes():
    assert same(logsumexp_checked) is True


def inputs_after_gradcheck(lib):
    """gradcheck moves the inputs' elements and puts them back; it accumulates no .grad."""
    lib.manual_seed(0)
    x = double(lib, 2, 3)
    before = x.detach().clone()
    lib.autograd.gradcheck(lambda x: x.exp() * x, (x,))
    return lib.equal(x.detach(), before), x.grad, x._version, x.requires_grad, x.grad_fn


def test_gradcheck_leaves_its_inputs_as_they_were():
    assert same(inputs_after_gradcheck) == (True, None, 0, True, None)


def on_device(lib, device):
    """Storage on the device: the inputs are perturbed there, and the Jacobians made and printed there."""
    lib.manual_seed(0)
    x = lib.randn(2, 3, dtype=lib.float64, device=device, requires_grad=True)
    wrong = square(lib, WRONG_BACKWARDS["forgotten factor"])
    return (lib.autograd.gradcheck(lambda x: (x @ x.t()).tanh(), (x,)),
            lib.autograd.gradgradcheck(lambda x: x.exp() * x, (x,)),
            outcome(lib.autograd.gradcheck, wrong.apply, (x,)))


def test_gradcheck_and_gradgradcheck_on_a_device(device):
    passed, passed_twice, failed = same(on_device, device)
    assert passed is True and passed_twice is True
    assert failed_with(failed, "GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")


# --- what gradcheck catches -----------------------------------------------------------------------

def square(lib, backward_formula):
    """x * x with the backward ``backward_formula(x, grad_output)``."""
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return backward_formula(x, grad_output)
    return Square


WRONG_BACKWARDS = {
    "wrong sign": lambda x, g: -2 * x * g,
    "forgotten factor": lambda x, g: x * g,
}


def wrong_backward(lib, name, raise_exception):
    lib.manual_seed(0)
    x = double(lib, 2, 3)
    return lib.autograd.gradcheck(square(lib, WRONG_BACKWARDS[name]).apply, (x,), raise_exception=raise_exception)


@pytest.mark.parametrize("name", WRONG_BACKWARDS)
def test_a_wrong_backward_is_caught(name):
    """The same GradcheckError, numerical and analytical Jacobians included; False when asked not to raise."""
    assert failed_with(same(wrong_backward, name, True), "GradcheckError",
                       "Jacobian mismatch for output 0 with respect to input 0,")
    assert same(wrong_backward, name, False) is False


def mismatch_in_second_output(lib):
    """Outputs and inputs are counted among those that require grad: w doesn't, max's indices don't.
    (The integer output comes last: before a float output, torch's own gradcheck fails with an IndexError.)"""
    lib.manual_seed(0)
    w, x = double(lib, 3, requires_grad=False), double(lib, 3)
    wrong = square(lib, WRONG_BACKWARDS["forgotten factor"])
    return lib.autograd.gradcheck(lambda w, x: (x.exp(), wrong.apply(x) * w, *x.max(dim=0)), (w, x))


def test_the_message_names_the_output_and_input_that_differ():
    assert failed_with(same(mismatch_in_second_output), "GradcheckError",
                       "Jacobian mismatch for output 1 with respect to input 0,")


def gradcheck_error_class(lib):
    module = importlib.import_module(f"{lib.__name__}.autograd.gradcheck")
    try:
        wrong_backward(lib, "wrong sign", True)
    except RuntimeError as error:
        return type(error).__name__, type(error) is module.GradcheckError, module.GradcheckError.__mro__[1:]


def test_gradcheck_error_is_a_runtime_error_found_where_torch_has_it():
    """``from torch.autograd.gradcheck import GradcheckError`` (the module, not the function
    ``torch.autograd.gradcheck``) names the class of the error."""
    assert same(gradcheck_error_class) == ("GradcheckError", True, (RuntimeError, Exception, BaseException, object))


QUANTIZERS = {
    "rounding": pytest.param(lambda x, scale: x.mul(scale).round().div(scale), marks=pytest.mark.skipif(
        not hasattr(minigrad.Tensor, "round"), reason="minigrad.Tensor has no round yet")),
    "thresholding": lambda x, scale: (x > 0).to(x.dtype) / scale,
}


def straight_through(lib, quantize):
    """A straight-through estimator: forward quantizes (piecewise constant, so finite differences see
    zero), backward passes the gradient on unchanged. gradcheck fails it, by design."""
    class StraightThrough(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            return quantize(x, scale)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    lib.manual_seed(0)
    x = double(lib, 2, 3)
    return lib.autograd.gradcheck(StraightThrough.apply, (x, 4.0))


@pytest.mark.parametrize("quantize", QUANTIZERS.values(), ids=QUANTIZERS.keys())
def test_a_straight_through_estimator_fails_by_design(quantize):
    assert failed_with(same(straight_through, quantize), "GradcheckError",
                       "Jacobian mismatch for output 0 with respect to input 0,")


def single_precision(lib):
    """float32 inputs that require grad get a warning (one that doesn't, none); the default tolerances
    are meant for float64, and here the check fails."""
    lib.manual_seed(0)
    x, w = lib.randn(3, requires_grad=True), lib.randn(3)
    return with_warnings(lib.autograd.gradcheck, lambda x, w: (x * w).exp(), (x, w))


def test_single_precision_inputs_get_torchs_warning():
    _, caught = same(single_precision)
    assert caught == [("UserWarning", "Input #0 requires gradient and is not a double precision floating point or "
                       "complex. This check will likely fail if all the inputs are not of double precision floating "
                       "point or complex. ")]


def single_precision_blamed(lib):
    """Where the warning points: at gradcheck's own line that checks the inputs, as torch's."""
    x = lib.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.autograd.gradcheck(lambda x: x * 2, (x,), raise_exception=False)
    return [blamed(w, __file__, sys.modules[lib.autograd.gradcheck.__module__]) for w in caught]


def test_the_single_precision_warning_points_at_gradchecks_line():
    assert same(single_precision_blamed) == ["library"]


def drifting(lib, nondet_tol, fast_mode=False):
    """A backward whose numbers change a little with every call: not reentrant, unless nondet_tol allows it."""
    calls = []

    class Drifting(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            calls.append(None)
            return grad_output * (2 + len(calls) * 1e-9)

    lib.manual_seed(0)
    return lib.autograd.gradcheck(Drifting.apply, (double(lib, 3),), nondet_tol=nondet_tol, fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_backward_must_be_reentrant_within_nondet_tol(fast_mode):
    assert failed_with(same(drifting, 0.0, fast_mode), "GradcheckError",
                       "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                       "times gives different values, although analytical gradient matches numerical gradient.The "
                       "tolerance for nondeterminism was 0.0.")
    assert same(drifting, 1e-6, fast_mode) is True


def ignores_grad_output(lib):
    """Right Jacobian, but a zero grad_output gives a gradient of ones."""
    backward = square(lib, lambda x, g: 2 * x * g if g.abs().sum() > 0 else lib.ones_like(g))
    lib.manual_seed(0)
    return lib.autograd.gradcheck(backward.apply, (double(lib, 3),))


def test_backward_must_be_multiplied_by_grad_output():
    assert failed_with(same(ignores_grad_output), "GradcheckError", "backward not multiplied by grad_output")


def handles_none(lib, x, g1, g2):
    grad = lib.zeros_like(x)
    if g1 is not None:
        grad = grad + g1 * 2
    if g2 is not None:
        grad = grad + g2 * 3
    return grad


def makes_up_a_gradient(lib, x, g1, g2):
    """Right whenever a nonzero gradient arrives; when the one that arrives is zero (or none does), ones."""
    if (g1 is None or g2 is None) and not any(g is not None and g.abs().sum() > 0 for g in (g1, g2)):
        return lib.ones_like(x)
    return handles_none(lib, x, g1, g2)


UNDEFINED_GRADS = {
    "handled": handles_none,
    "assumed defined": lambda lib, x, g1, g2: g1 * 2 + g2 * 3,
    "made up": makes_up_a_gradient,
}


def undefined_grads(lib, name, check_undefined_grad, fast_mode):
    """Two outputs, grads not materialized: backward gets None for an output that got no gradient
    (the Jacobian of one output, too, is computed with none for the other)."""
    formula = UNDEFINED_GRADS[name]

    class Split(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            x, = ctx.saved_tensors
            return formula(lib, x, g1, g2)

    lib.manual_seed(0)
    return with_warnings(lib.autograd.gradcheck, Split.apply, (double(lib, 3),),
                         check_undefined_grad=check_undefined_grad, fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("check_undefined_grad", [True, False])
@pytest.mark.parametrize("name", UNDEFINED_GRADS)
def test_undefined_grads(name, check_undefined_grad, fast_mode):
    result, caught = same(undefined_grads, name, check_undefined_grad, fast_mode)
    if name == "made up" and check_undefined_grad:
        assert failed_with(result, "GradcheckError", "Expected all input grads to be undefined or zero when all "
                           'output grads are undefined or zero. Please look at "Notes about undefined output '
                           'gradients" in "tools/autograd/derivatives.yaml"')
        assert [category for category, _ in caught] == ["UserWarning"]
    elif name == "assumed defined":
        assert result[:2] == ("error", "TypeError")
    else:
        assert (result, caught) == (True, [])


BAD_INPUTS = {
    "nothing requires grad": (lambda lib: (double(lib, 3, requires_grad=False), 2.0), "ValueError"),
    "an expanded input": (lambda lib: (double(lib, 3, requires_grad=False).expand(2, 3).requires_grad_(), 2.0),
                          "RuntimeError"),
}


def bad_inputs(lib, name):
    lib.manual_seed(0)
    make_inputs, _ = BAD_INPUTS[name]
    return lib.autograd.gradcheck(lambda x, k: x * k, make_inputs(lib))


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_inputs_get_torchs_error(name):
    assert same(bad_inputs, name)[:2] == ("error", BAD_INPUTS[name][1])


# --- fast mode -----------------------------------------------------------------------------------
# v^T J u for random unit vectors u and v in place of whole Jacobians. The vectors come from a fresh
# generator, so each call draws torch's numbers: a failure's message, projections included, is
# torch's character for character.

@pytest.mark.parametrize("name", FIRST_ORDER)
def test_fast_mode_passes_on_ops_and_compositions(name):
    assert same(first_order, name, True) == (True, [])


def wrong_backwards_fast(lib, name):
    lib.manual_seed(0)
    x = double(lib, 2, 3)
    wrong = square(lib, WRONG_BACKWARDS[name])
    return (outcome(lambda: lib.autograd.gradcheck(wrong.apply, (x,), fast_mode=True)),
            lib.autograd.gradcheck(wrong.apply, (x,), fast_mode=True, raise_exception=False))


@pytest.mark.parametrize("name", WRONG_BACKWARDS)
def test_fast_mode_catches_a_wrong_backward(name):
    """The projections, then both Jacobians as slow mode computes them."""
    failed, quiet = same(wrong_backwards_fast, name)
    assert failed_with(failed, "GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")
    assert "Below, we recompute numerical and analytical jacobians in slow mode" in failed[2] and quiet is False


def mismatches_fast(lib):
    """Several inputs and outputs, one pair wrong: fast mode goes through inputs, then outputs."""
    lib.manual_seed(0)
    w, x, y = double(lib, 3, requires_grad=False), double(lib, 3), double(lib, 3)
    wrong = square(lib, WRONG_BACKWARDS["forgotten factor"])
    return lib.autograd.gradcheck(lambda w, x, y: (x * y, wrong.apply(x) * w, *x.max(dim=0)), (w, x, y),
                                  fast_mode=True)


def test_fast_mode_names_the_output_and_input_that_differ():
    assert failed_with(same(mismatches_fast), "GradcheckError",
                       "Jacobian mismatch for output 1 with respect to input 0,")


def overstated(lib):
    """x * c, c = [100, -100, 100], with a backward 0.09% too large on every entry: each Jacobian entry
    is within rtol, but their signs differ, so the errors add up in v^T J u while the values cancel."""
    c = lib.tensor([100.0, -100.0, 100.0], dtype=lib.float64)

    class Overstated(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * c

        @staticmethod
        def backward(ctx, grad):
            return grad * c + 0.0009 * grad * c.abs()

    x = lib.ones(3, dtype=lib.float64, requires_grad=True)
    return (lib.autograd.gradcheck(Overstated.apply, (x,)),
            outcome(lambda: lib.autograd.gradcheck(Overstated.apply, (x,), fast_mode=True)))


def test_fast_mode_says_when_slow_mode_would_have_passed():
    slow, fast = same(overstated)
    assert slow is True
    assert failed_with(fast, "GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")
    assert fast[2].endswith("module_test entry to have `gradcheck_fast_mode=False`")


def draws_after_gradcheck(lib, fast_mode):
    lib.manual_seed(0)
    lib.autograd.gradcheck(lambda x: x.exp(), (double(lib, 3),), fast_mode=fast_mode)
    return lib.rand(3)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_leaves_the_global_generator_alone(fast_mode):
    """Fast mode's vectors come from a generator of its own: the user's random numbers go on as in
    torch, as if gradcheck had drawn none."""
    def draws_alone(lib):
        lib.manual_seed(0)
        double(lib, 3)
        return lib.rand(3)
    assert same(draws_after_gradcheck, fast_mode) == same(draws_alone)


def barely_moving(lib, fast_mode, nondet_tol):
    """An output that needs no grad but moves (by 1e-9 per unit of x): slow mode wants its
    Jacobian exactly zero; fast mode, its directional derivative within nondet_tol."""
    lib.manual_seed(0)
    return lib.autograd.gradcheck(lambda x: (x * 1e-9).detach(), (double(lib, 3),), fast_mode=fast_mode,
                                  nondet_tol=nondet_tol)


@pytest.mark.parametrize("fast_mode, nondet_tol", [(False, 1e-6), (True, 0.0), (True, 1e-6)])
def test_outputs_that_need_no_grad_must_not_move(fast_mode, nondet_tol):
    result = same(barely_moving, fast_mode, nondet_tol)
    if fast_mode and nondet_tol:
        assert result is True
    else:
        assert failed_with(result, "GradcheckError", "Numerical gradient for function expected to be zero")


def shape_depends_on_values(lib, fast_mode):
    """An output whose shape changes when x moves up: the error says by how much, and where (slow mode)."""
    lib.manual_seed(0)
    x = double(lib, 3)
    at = x.detach().sum().item()
    return lib.autograd.gradcheck(lambda t: t * 2 if t.sum().item() > at else (t * 2)[:2], (x,),
                                  fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_an_output_shape_that_depends_on_values_is_an_assertion_error(fast_mode):
    result = same(shape_depends_on_values, fast_mode)
    assert result[:2] == ("error", "AssertionError")


def not_a_gradcheck_error(lib, fast_mode):
    """raise_exception=False turns only a GradcheckError into False."""
    def raises(x):
        raise RuntimeError("Not a GradcheckError!")
    return lib.autograd.gradcheck(raises, (double(lib, 3),), fast_mode=fast_mode, raise_exception=False)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_raise_exception_false_lets_other_errors_through(fast_mode):
    assert same(not_a_gradcheck_error, fast_mode) == ("error", "RuntimeError", "Not a GradcheckError!")


# --- gradgradcheck --------------------------------------------------------------------------------

def cube(lib, backward_formula, once_differentiable=False):
    """x ** 3 with the backward ``backward_formula(x, grad_output)``, marked once_differentiable or not."""
    mark = lib.autograd.function.once_differentiable if once_differentiable else (lambda backward: backward)

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @mark
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return backward_formula(x, grad_output)
    return Cube


SECOND_ORDER = {
    "exp": lambda lib: (lambda x: x.exp(), (double(lib, 3),)),
    "tanh times sigmoid": lambda lib: (lambda x: x.tanh() * x.sigmoid(), (double(lib, 2, 3),)),
    "mul with broadcasting": lambda lib: (lambda a, b: a * b, (double(lib, 2, 3), double(lib, 3))),
    "matmul then sum over a dim": lambda lib: (lambda a, b: (a @ b).sum(0), (double(lib, 2, 3), double(lib, 3, 2))),
    "power and division": lambda lib: (lambda x, y: x ** 3 / y, (double(lib, 3), double(lib, 3).exp())),
    "several outputs": lambda lib: (lambda x, y: (x * y, (x * x).sum()), (double(lib, 3), double(lib, 3))),
    "a custom Function with a differentiable backward": lambda lib: (
        cube(lib, lambda x, g: 3 * x ** 2 * g).apply, (double(lib, 3),)),
    "the tutorial's stable logsumexp": lambda lib: (stable_logsumexp(lib).apply, (double(lib, 2, 3), 1)),
}


def second_order(lib, name, noncontiguous=False):
    lib.manual_seed(0)
    func, inputs = SECOND_ORDER[name](lib)
    return with_warnings(lib.autograd.gradgradcheck, func, inputs, gen_non_contig_grad_outputs=noncontiguous)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck_passes_on_correct_double_backward(name):
    assert same(second_order, name) == (True, [])


def test_gradgradcheck_makes_non_contiguous_grad_outputs_when_asked():
    assert same(second_order, "mul with broadcasting", True) == (True, [])


def given_grad_outputs(lib):
    """grad_outputs given, one not requiring grad: only the inputs (and grad_outputs) that require grad are checked."""
    lib.manual_seed(0)
    x, y = double(lib, 2, 3), double(lib, 3)
    g, h = double(lib, 2, 3, requires_grad=False), double(lib, 3)
    return lib.autograd.gradgradcheck(lambda x, y: ((x * y).tanh(), y.exp()), (x, y), (g, h))


def test_gradgradcheck_takes_grad_outputs():
    assert same(given_grad_outputs) is True


SECOND_ORDER_WRONG = {
    "once_differentiable": lambda lib: cube(lib, lambda x, g: 3 * x ** 2 * g, once_differentiable=True),
    "backward detaches x": lambda lib: cube(lib, lambda x, g: 3 * x.detach() ** 2 * g),
}


def wrong_double_backward(lib, name, fast_mode):
    """First derivatives right, second ones wrong: gradcheck passes, gradgradcheck fails."""
    lib.manual_seed(0)
    x = double(lib, 3)
    function = SECOND_ORDER_WRONG[name](lib)
    return (outcome(lambda: lib.autograd.gradcheck(function.apply, (x,), fast_mode=fast_mode)),
            outcome(lambda: lib.autograd.gradgradcheck(function.apply, (x,), fast_mode=fast_mode)),
            outcome(lambda: lib.autograd.gradgradcheck(function.apply, (x,), raise_exception=False,
                                                       fast_mode=fast_mode)))


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("name", SECOND_ORDER_WRONG)
def test_gradgradcheck_catches_a_wrong_double_backward(name, fast_mode):
    first, second, quiet = same(wrong_double_backward, name, fast_mode)
    assert first is True and quiet is False
    assert failed_with(second, "GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")


# --- torch's deprecated Jacobian helpers ----------------------------------------------------------

def deprecated_jacobians(lib):
    """get_numerical_jacobian: the first output's, for the targets that require grad (inputs given as
    a list); get_analytical_jacobian: zeros for an input backward does not reach, a non-tensor input
    skipped. Each with its FutureWarning."""
    module = importlib.import_module(f"{lib.__name__}.autograd.gradcheck")
    lib.manual_seed(0)
    x, y, w = double(lib, 2), double(lib, 3), double(lib, 2, requires_grad=False)

    def fn(inputs):
        a, b, c = inputs
        return a * c + 2 * a.sum() * b.exp().sum(), a.exp()

    numerical = with_warnings(module.get_numerical_jacobian, fn, [x, y, w], target=(w, y), eps=1e-6)
    analytical = with_warnings(module.get_analytical_jacobian, (x, 2.0, y), x.exp() * w)
    return numerical, analytical


def test_deprecated_jacobian_helpers():
    numerical, analytical = same(deprecated_jacobians)
    assert numerical[1][0][0] == "FutureWarning" and analytical[0][1:] == (True, True, True)
