"""``minigrad.nn.utils``: gradient clipping, computed on the gradients' storage with torch's kernels
and formulas (the same numbers), in place: each clipped gradient's version goes up, as in torch."""
import types
import warnings

import torch

from ..tensor import Tensor


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale all gradients by min(1, max_norm / (total_norm + 1e-6)); return the total norm, the norm of
    the gradients' norms (as if they were one vector)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = _total_norm([g._data for g in grads], float(norm_type), error_if_nonfinite)
    if grads:
        coefficient = torch.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for grad in grads:
            grad._mutate(torch.Tensor.mul_, coefficient.to(grad.device))
    return Tensor(total_norm)


def _total_norm(grads, norm_type, error_if_nonfinite):
    if not grads:
        return torch.tensor(0.0)
    groups = {}
    for grad in grads:
        groups.setdefault((grad.device, grad.dtype), []).append(grad)
    norms = [norm for group in groups.values() for norm in torch._foreach_norm(group, norm_type)]
    first_device = grads[0].device
    total_norm = torch.linalg.vector_norm(torch.stack([norm.to(first_device) for norm in norms]), norm_type)
    if error_if_nonfinite and (total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return total_norm


def clip_grad_value_(parameters, clip_value):
    """Clamp every gradient into [-clip_value, clip_value]: a clamp_min then a clamp_max, as torch's foreach path."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    for parameter in parameters:
        grad = parameter.grad
        if grad is not None:
            grad._mutate(torch.Tensor.clamp_min_, -clip_value)
            grad._mutate(torch.Tensor.clamp_max_, clip_value)
