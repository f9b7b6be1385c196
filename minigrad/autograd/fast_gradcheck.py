"""gradcheck's fast mode (``fast_mode=True``), as torch does it for real inputs and outputs: in place
of each Jacobian J (one backward per output element, two forwards per input element), one number,
v^T J u, for random unit vectors u (one per input) and v (one per output). Numerically it is v
dotted with the directional derivative along u, (f(x + eps u) - f(x - eps u)) / (2 eps); from
backward, backward's gradient for grad_output v dotted with u. Two forwards per input, two
backwards per output.

u and v come from a fresh ``torch.Generator()`` (so the user's RNG state is untouched, and every
call draws the same numbers, torch's), in torch's order: the inputs' u, then the outputs' v. atol
is scaled by sum(u) * sum(v): an elementwise difference of atol everywhere adds up to that much in
v^T J u. On a mismatch the error also shows both full Jacobians, computed in slow mode.
"""
import torch

from ..function import constant
from . import api
from .gradcheck import (GradcheckError, _analytical_jacobians, _as_tuple, _central_difference, _check_reentrant,
                        _numerical_jacobians, _output_values, _requiring_grad)

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


def check_fast(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol):
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
