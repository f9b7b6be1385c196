"""``minigrad.autograd.gradcheck``: backward checked against finite differences, as torch's gradcheck
checks it in its default (slow) mode: the full Jacobian of every output that requires grad with
respect to every input that requires grad, once from central differences and once from backward.

Both Jacobians are plain torch tensors (storage), so a failure prints them exactly as torch does.
Their making and comparing (``_numerical_jacobians``, ``_jacobians_from_backward``,
``_check_jacobians``) is the core the course's exercise 7 has learners write.
``fast_mode`` checks one random projection of each Jacobian instead (see "fast mode" below). torch's
options for what minigrad does not have are left out: forward-mode AD, vmap (batched grads), sparse
(masked) and complex inputs.
"""
import itertools

import torch
from torch.testing import make_tensor

from .. import releases, user_warnings
from ..function import Function, constant
from . import api

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck", "get_numerical_jacobian", "get_analytical_jacobian"]

FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


class GradcheckError(RuntimeError):
    """Error raised by gradcheck and gradgradcheck."""


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_batched_grad=False, fast_mode=False):
    """True when the gradients backward computes for ``func(*inputs)`` match finite differences:
    each Jacobian entry within ``atol + rtol * |numerical|``. Otherwise GradcheckError, naming the
    output and input and showing both Jacobians, or False when not ``raise_exception``.

    The defaults are meant for float64 inputs: in float32, moving an input by ``eps`` changes the
    output by about as much as rounding does. ``nondet_tol`` is how much two backward passes may
    differ; ``check_undefined_grad`` also checks that backward copes with undefined (None) gradients;
    ``fast_mode`` compares v^T J u for random u and v rather than whole Jacobians. Only a
    GradcheckError becomes False: any other error (from ``func``, or about the inputs) is raised.
    ``check_batched_grad`` (vmap over backward) is taken, as torch's tests pass it, but only False.
    """
    if check_batched_grad:
        raise NotImplementedError("minigrad's gradcheck has no vmap: check_batched_grad=True is not supported")
    try:
        return _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol, check_undefined_grad, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_batched_grad=False, fast_mode=False):
    """gradcheck of the first derivatives: the function checked takes the inputs and ``grad_outputs``
    and returns the gradients of ``func``'s outputs (computed with create_graph=True), so backward's
    own backward is checked against finite differences of backward.

    Without ``grad_outputs``, they are random in [-1, 1), drawn as torch draws them (the same seed
    gives the same numbers), and require grad, so the check covers them too.
    """
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        grad_outputs = tuple(_random_grad_output(out, gen_non_contig_grad_outputs)
                             for out in _differentiable_outputs(func(*inputs)))
    else:
        grad_outputs = _as_tuple(grad_outputs)
    count = len(grad_outputs)

    def first_derivatives(*args):
        args, grads = args[:-count], args[-count:]
        outputs = _differentiable_outputs(func(*args))
        derivatives = api.grad(outputs, _requiring_grad(args), grads, retain_graph=True, create_graph=True,
                               allow_unused=True)
        return tuple(d for d in derivatives if d is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode)


# --- deprecated ----------------------------------------------------------------------------------
# torch keeps two Jacobian helpers its gradcheck no longer uses, deprecated (a FutureWarning at each
# call, in torch's words); minigrad makes them of gradcheck's own parts.

def _warn_deprecated(name):
    user_warnings.warn(f"`{name}` was part of PyTorch's private API and not meant to be exposed. We are deprecating "
                       "it and it will be removed in a future version of PyTorch. If you have a specific use for this "
                       "or feature request for this to be a stable API, please file us an issue at "
                       "https://github.com/pytorch/pytorch/issues/new", FutureWarning, __file__, frames=2)


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """The Jacobian of ``fn(inputs)`` (``fn`` takes the inputs as one tuple) from central differences:
    its first floating-point output's, with respect to each tensor of ``target`` (by default the
    inputs) that requires grad. A target is moved where it is, so it must be something ``fn`` reads."""
    _warn_deprecated("get_numerical_jacobian")
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_numerical_jacobian no longer supports values of "
                         "grad_out != 1.0.")
    inputs = _as_tuple(inputs)
    targets = _requiring_grad(_as_tuple(inputs if target is None else target))
    outputs = _as_tuple(fn(inputs))
    first = [k for k, out in enumerate(outputs) if out.is_floating_point()][:1]
    jacobians = _numerical_jacobians(lambda *_: fn(inputs), targets, outputs, first, eps)
    return tuple(constant(per_output[0]) for per_output in jacobians)


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """``output``'s Jacobian with respect to each input that requires grad, from backward, and
    whether a second backward agrees within ``nondet_tol``; then whether every gradient had its
    input's size and dtype: always, as the engine checks each gradient's shape and casts its dtype."""
    _warn_deprecated("get_analytical_jacobian")
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_analytical_jacobian no longer supports values of "
                         "grad_out != 1.0.")
    diff_inputs = _requiring_grad(_as_tuple(inputs))
    first = _jacobians_from_backward(diff_inputs, output)
    second = _jacobians_from_backward(diff_inputs, output)
    return tuple(map(constant, first)), _agree(first, second, nondet_tol), True, True


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, fast_mode):
    """torch's checks, in torch's order: the inputs, the Jacobians (or their projections), then
    backward fed zeros (and, with ``check_undefined_grad``, nothing)."""
    _check_inputs(inputs)
    func_out = _as_tuple(func(*inputs))
    outputs = _differentiable_outputs(func_out)
    if fast_mode:
        _check_fast(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol)
    elif outputs:
        _check_jacobians(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol)
    else:
        _check_no_differentiable_outputs(func, inputs, func_out, eps)
    _check_backward_multiplies_by_grad_output(inputs, outputs)
    if check_undefined_grad:
        _check_undefined_grads(func, inputs, outputs)
    return True


def _check_inputs(inputs):
    """Something must require grad; single precision is too coarse for the default tolerances (a
    warning); an input whose elements share memory (stride 0, as ``expand`` makes) can't be moved
    one element at a time."""
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if not (_is_tensor(inp) and inp.requires_grad):
            continue
        if inp.dtype not in (torch.float64, torch.complex128):
            user_warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or "
                               "complex. This check will likely fail if all the inputs are not of double precision "
                               "floating point or complex. ", UserWarning, __file__)
        if not all(stride > 0 or size <= 1 for stride, size in zip(inp.stride(), inp.shape)):
            raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that "
                               "are non-overlapping to be able to compute the numerical gradients correctly. You "
                               "should call .contiguous on the input before passing it to gradcheck.")
        any_requires_grad = True
    if not any_requires_grad:
        none = "none of them" if releases.GRADCHECK_TYPO_FIXED else "none of the them"
        raise ValueError(f"gradcheck expects at least one input tensor to require gradient, but {none} have "
                         "requires_grad=True.")


# BEGIN EXERCISE 7
def _check_jacobians(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol):
    """Output i's Jacobian with respect to input j must be close to the one from finite differences:
    every entry of the analytical one within ``atol + rtol * |numerical|`` of the numerical one
    (``torch.allclose(analytical, numerical, rtol, atol)``: its rtol scales its second argument).
    Otherwise GradcheckError, in torch's words, naming i and j (both counted among the outputs and
    inputs that require grad) and showing both Jacobians: the first pair that differs, the outputs in
    order and, for each, the inputs in order. An output of another dtype than its input
    (``x.float()``) gives Jacobians of two dtypes: they are compared in the wider one."""
    positions = [k for k, out in enumerate(func_out) if out.requires_grad]
    numerical = _numerical_jacobians(func, inputs, func_out, positions, eps)
    for i, output in enumerate(outputs):
        analytical = _analytical_jacobians(inputs, output, nondet_tol)
        for j, (a, per_output) in enumerate(zip(analytical, numerical)):
            n = per_output[i]
            dtype = torch.promote_types(a.dtype, n.dtype)
            if not torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), rtol, atol):
                raise GradcheckError(f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
# END EXERCISE 7


def _check_no_differentiable_outputs(func, inputs, func_out, eps):
    """No output requires grad, so backward says every gradient is zero: finite differences must agree."""
    positions = [k for k, out in enumerate(func_out) if out.is_floating_point()]
    for per_output in _numerical_jacobians(func, inputs, func_out, positions, eps):
        if any(jacobian.ne(0).any() for jacobian in per_output):
            raise GradcheckError("Numerical gradient for function expected to be zero")


# BEGIN EXERCISE 7
def _numerical_jacobians(func, inputs, func_out, positions, eps):
    """For each input that requires grad, the Jacobians of the outputs at ``positions`` (of
    ``func_out``, what ``func(*inputs)`` returned), one row per element of the input and one column
    per element of the output: row r is (f(x + eps) - f(x - eps)) / (2 * eps) with the input's
    element r (in the order ``reshape(-1)`` lists them) moved by eps, central differences.

    As in torch, ``func`` sees each move through the very tensors it was given, and afterwards every
    input holds what it held, its version counter unmoved; inputs that are not contiguous, and
    outputs that share memory with an input, work too."""
    jacobians = []
    for inp in _requiring_grad(inputs):
        data = inp._data
        per_output = [func_out[k]._data.new_zeros((data.numel(), func_out[k].numel())) for k in positions]
        for row, index in enumerate(itertools.product(*map(range, data.shape))):
            entry = data[index]
            original = entry.clone()
            entry.copy_(original - eps)
            before = _output_values(func, inputs)
            entry.copy_(original + eps)
            after = _output_values(func, inputs)
            entry.copy_(original)
            for jacobian, k in zip(per_output, positions):
                jacobian[row] = _central_difference(before[k], after[k], eps, index)
        jacobians.append(per_output)
    return jacobians
# END EXERCISE 7


def _output_values(func, inputs):
    """Copies: an output may share memory with an input, which moves again before they are used."""
    return [out._data.clone() for out in _as_tuple(func(*inputs))]


def _central_difference(before, after, eps, index=None):
    """The outputs' change, flattened, for a move of one element (at ``index``) or, in fast mode,
    of the whole input (no index)."""
    on_index = f"on index {index} " if index is not None else ""
    if before.shape != after.shape:
        raise AssertionError(f"Expected `func` to return outputs with the same shape when inputs are perturbed "
                             f"{on_index}by {eps}, but got: shapes {before.shape} and {after.shape}.")
    if before.dtype != after.dtype:
        raise AssertionError(f"Expected `func` to return outputs with the same dtype when inputs are perturbed "
                             f"{on_index}by {eps}, but got: dtypes {before.dtype} and {after.dtype}.")
    return ((after - before) / (2 * eps)).reshape(-1)


def _analytical_jacobians(inputs, output, nondet_tol):
    """``output``'s Jacobian with respect to each input that requires grad, from backward. Computed
    twice, as torch does: two backward passes must agree within ``nondet_tol``."""
    diff_inputs = _requiring_grad(inputs)
    first = _jacobians_from_backward(diff_inputs, output)
    second = _jacobians_from_backward(diff_inputs, output)
    _check_reentrant(first, second, nondet_tol)
    return first


def _check_reentrant(first, second, nondet_tol):
    if not _agree(first, second, nondet_tol):
        raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches numerical "
                             f"gradient.The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG)


def _agree(first, second, nondet_tol):
    """Two backward passes' Jacobians differ nowhere by more than ``nondet_tol``."""
    return not any(a.numel() != 0 and (a - b).abs().max() > nondet_tol for a, b in zip(first, second))


# BEGIN EXERCISE 7
def _jacobians_from_backward(inputs, output):
    """``output``'s Jacobian with respect to each input in ``inputs`` (those that require grad), one
    row per element of the input and one column per element of the output, computed by backward
    through ``output``'s graph (which stays usable afterwards). An input backward does not reach has
    a Jacobian of zeros."""
    jacobians = [inp._data.new_zeros((inp.numel(), output.numel())) for inp in inputs]
    for j in range(output.numel()):
        one_hot = output._data.new_zeros(output.numel())
        one_hot[j] = 1.0
        grad_output = constant(one_hot.view(output.shape))
        grads = api.grad([output], inputs, [grad_output], retain_graph=True, allow_unused=True)
        for jacobian, grad in zip(jacobians, grads):
            if grad is not None:
                jacobian[:, j] = grad._data.reshape(-1)
    return jacobians
# END EXERCISE 7


# --- fast mode ---------------------------------------------------------------------------------
# gradcheck's fast mode (``fast_mode=True``), as torch does it for real inputs and outputs: in place
# of each Jacobian J (one backward per output element, two forwards per input element), one number,
# v^T J u, for random unit vectors u (one per input) and v (one per output). Numerically it is v
# dotted with the directional derivative along u, (f(x + eps u) - f(x - eps u)) / (2 eps); from
# backward, backward's gradient for grad_output v dotted with u. Two forwards per input, two
# backwards per output.
#
# u and v come from a fresh ``torch.Generator()`` (so the user's RNG state is untouched, and every
# call draws the same numbers, torch's), in torch's order: the inputs' u, then the outputs' v. atol
# is scaled by sum(u) * sum(v): an elementwise difference of atol everywhere adds up to that much in
# v^T J u. On a mismatch the error also shows both full Jacobians, computed in slow mode.

FAST_FAIL_SLOW_OK_MSG = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_fast_mode=False`
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_fast_mode=False`
""".strip()


def _check_fast(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol):
    """torch's _fast_gradcheck: v^T J u from finite differences and from backward must be close,
    for each input (outer) and output (inner). With no output requiring grad, the directional
    derivatives must be zero (within ``nondet_tol``) instead."""
    diff_inputs = _requiring_grad(inputs)
    all_u, all_v = _random_vectors(diff_inputs, outputs)
    numerical = []
    for inp, u in zip(diff_inputs, all_u):
        floating = [jvp for jvp, out in zip(_numerical_jvps(func, inputs, inp, u, eps), func_out)
                    if out.is_floating_point()]
        numerical.append([(v * jvp).sum() for v, jvp in zip(all_v, floating)])
    if not outputs:
        _check_directional_derivatives_are_zero(func, inputs, diff_inputs, all_u, eps, nondet_tol)
    analytical = [_analytical_vJu(diff_inputs, output, v, all_u, nondet_tol) for output, v in zip(outputs, all_v)]
    for i, per_input in enumerate(numerical):
        for j, n in enumerate(per_input):
            a = analytical[j][i]
            n = n.to(device=a.device)
            scaled_atol = atol * float(all_u[i].sum()) * float(all_v[j].sum())
            dtype = torch.promote_types(a.dtype, n.dtype)
            if not torch.allclose(a.to(dtype), n.to(dtype), rtol, scaled_atol):
                raise GradcheckError(f"Jacobian mismatch for output {j:d} with respect to input {i:d},\n"
                                     f"numerical:{n}\nanalytical:{a}\n"
                                     + _slow_mode_report(func, inputs, outputs, i, j, eps, atol, rtol))


def _random_vectors(diff_inputs, outputs):
    """torch's _make_vectors: u for each input, then v for each output, uniform in [0, 1) in the
    default dtype on the CPU, then in the tensor's dtype and on its device, scaled to norm 1."""
    generator = torch.Generator()

    def unit_vector(tensor):
        vec = torch.rand(tensor.numel(), generator=generator, device="cpu").to(dtype=tensor.dtype,
                                                                                device=tensor.device)
        vec /= vec.norm()
        return vec

    return [unit_vector(inp._data) for inp in diff_inputs], [unit_vector(out._data) for out in outputs]


def _numerical_jvps(func, inputs, inp, u, eps):
    """For each of ``func``'s outputs, flattened, its derivative along u at ``inp`` by central
    differences: ``inp`` moved by -eps u and +eps u, through its storage, then put back."""
    data = inp._data
    delta = eps * u.reshape(data.shape)
    original = data.clone()
    data.copy_(original - delta)
    before = _output_values(func, inputs)
    data.copy_(original + delta)
    after = _output_values(func, inputs)
    data.copy_(original)
    return [_central_difference(b, a, eps) for b, a in zip(before, after)]


def _check_directional_derivatives_are_zero(func, inputs, diff_inputs, all_u, eps, nondet_tol):
    for inp, u in zip(diff_inputs, all_u):
        for jvp in _numerical_jvps(func, inputs, inp, u, eps):
            if jvp.numel() != 0 and jvp.abs().max() > nondet_tol:
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _analytical_vJu(diff_inputs, output, v, all_u, nondet_tol):
    """v^T J u for each input, J being ``output``'s Jacobian: backward fed v, twice (the two must
    agree within ``nondet_tol``), each gradient in its input's dtype (zeros where none comes back),
    dotted with the input's u."""
    first = _vector_jacobian_products(diff_inputs, output, v)
    second = _vector_jacobian_products(diff_inputs, output, v)
    _check_reentrant(first, second, nondet_tol)
    return [vJ.dot(u) for vJ, u in zip(first, all_u)]


def _vector_jacobian_products(diff_inputs, output, v):
    grads = api.grad([output], diff_inputs, [constant(v.reshape(output.shape))], retain_graph=True,
                     allow_unused=True)
    products = [inp._data.new_zeros(inp.numel()) for inp in diff_inputs]
    for product, grad in zip(products, grads):
        if grad is not None:
            product.copy_(grad._data.reshape(-1))
    return products


def _slow_mode_report(func, inputs, outputs, i, j, eps, atol, rtol):
    """torch's _run_slow_mode_and_get_error: the full Jacobians of output j with respect to input i,
    computed as slow mode computes them, and whether slow mode would have passed."""
    numerical = _numerical_jacobians(func, inputs, outputs, range(len(outputs)), eps)[i][j]
    analytical = _analytical_jacobians(inputs, outputs[j], float("inf"))[i]
    max_diff = (numerical - analytical).abs().max()
    report = ("\nThe above quantities relating the numerical and analytical jacobians are computed \n"
              "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
              "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
              f"Numerical:\n {numerical}\n"
              f"Analytical:\n{analytical}\n\n"
              f"The max per-element difference (slow mode) is: {max_diff}.\n")
    if torch.allclose(analytical, numerical, rtol, atol):
        report += FAST_FAIL_SLOW_OK_MSG
    return report


def _check_backward_multiplies_by_grad_output(inputs, outputs):
    """Zero grad_outputs must give zero gradients, of the input's dtype and device."""
    diff_inputs = _requiring_grad(inputs)
    grads = api.grad(outputs, diff_inputs, [_zeros_like(out) for out in outputs], allow_unused=True)
    for grad, inp in zip(grads, diff_inputs):
        if grad is None:
            continue
        if not grad._data.eq(0).all():
            raise GradcheckError("backward not multiplied by grad_output")
        if grad.dtype != inp.dtype:
            raise GradcheckError("grad is incorrect type")
        if grad.device != inp.device:
            raise GradcheckError("grad is incorrect device")


class _UndefinedGrad(Function):
    """torch's UndefinedGrad: a copy of its input whose backward sends no gradient (None) on, so
    that the backward of the op before it is handed an undefined gradient."""

    node_name = "UndefinedGradBackward"

    @staticmethod
    def forward(ctx, x):
        return x._data.clone()

    @staticmethod
    def backward(ctx, grad):
        return None


def _check_undefined_grads(func, inputs, outputs):
    """Backward must cope with outputs that get no gradient: all of them at once and, with several
    outputs, one at a time; the inputs then get None or zeros. Fresh outputs for each try, all made
    before the first backward, as torch makes them."""
    diff_inputs = _requiring_grad(inputs)
    tries = [[_UndefinedGrad.apply(out) for out in _differentiable_outputs(func(*inputs))]]
    if len(tries[0]) > 1:
        for undefined in range(len(outputs)):
            fresh = _differentiable_outputs(func(*inputs))
            tries.append([_UndefinedGrad.apply(out) if k == undefined else out for k, out in enumerate(fresh)])
    for outs in tries:
        try:
            grads = api.grad(outs, diff_inputs, [_zeros_like(out) for out in outs], allow_unused=True)
        except RuntimeError as error:
            _warn_undefined_grad_check()
            raise GradcheckError('Expected backward function to handle undefined output grads. Please look at "Notes '
                                 'about undefined output gradients" in "tools/autograd/derivatives.yaml"') from error
        if any(grad is not None and not grad._data.eq(0).all() for grad in grads):
            _warn_undefined_grad_check()
            raise GradcheckError("Expected all input grads to be undefined or zero when all output grads are undefined "
                                 'or zero. Please look at "Notes about undefined output gradients" in '
                                 '"tools/autograd/derivatives.yaml"')


def _warn_undefined_grad_check():
    user_warnings.warn("Backwards compatibility: New undefined gradient support checking feature is enabled by "
                       "default, but it may break existing callers of this function. If this is true for you, you can "
                       'call this function with "check_undefined_grad=False" to disable the feature', UserWarning,
                       __file__)


def _random_grad_output(output, noncontiguous):
    data = make_tensor(output.shape, dtype=output.dtype, device=output.device, low=-1, high=1,
                       noncontiguous=noncontiguous)
    return constant(data).requires_grad_()


def _zeros_like(tensor):
    return constant(tensor._data.new_zeros(tensor.shape))


def _is_tensor(value):
    """A minigrad Tensor, known by its storage (this package does not import minigrad.tensor)."""
    return isinstance(getattr(value, "_data", None), torch.Tensor)


def _requiring_grad(inputs):
    return [inp for inp in inputs if _is_tensor(inp) and inp.requires_grad]


def _differentiable_outputs(outputs):
    return tuple(out for out in _as_tuple(outputs) if out.requires_grad)


def _as_tuple(value):
    if isinstance(value, tuple):
        return value
    return tuple(value) if isinstance(value, list) else (value,)
