"""Making tensors: torch's creation functions, with minigrad's requires_grad on top."""
import torch

from . import grad_mode
from .tensor import Tensor


def _new(data, requires_grad):
    if requires_grad and not (data.is_floating_point() or data.is_complex()):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    out = Tensor(data, requires_grad=requires_grad)
    if grad_mode._state.inference:
        out._is_inference, out._version_counter = True, None
    return out


def _storage_of(data):
    """Nested lists of minigrad tensors or numbers become plain data torch.tensor understands."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_storage_of(d) for d in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad=False):
    data = _storage_of(data)
    storage = data.detach().clone() if isinstance(data, torch.Tensor) else torch.tensor(data, dtype=dtype, device=device)
    return _new(storage.to(dtype=dtype, device=device), requires_grad)


def _factory(torch_fn):
    def create(*size, dtype=None, device=None, requires_grad=False, **kwargs):
        return _new(torch_fn(*size, dtype=dtype, device=device, **kwargs), requires_grad)
    create.__name__ = torch_fn.__name__
    create.__doc__ = f"torch.{torch_fn.__name__}, returning a minigrad Tensor."
    return create


ones = _factory(torch.ones)
zeros = _factory(torch.zeros)
empty = _factory(torch.empty)
eye = _factory(torch.eye)
arange = _factory(torch.arange)
linspace = _factory(torch.linspace)
full = _factory(torch.full)
rand = _factory(torch.rand)
randn = _factory(torch.randn)
randint = _factory(torch.randint)
randperm = _factory(torch.randperm)


def _like_factory(torch_fn):
    def create(input, dtype=None, device=None, requires_grad=False):
        return _new(torch_fn(input._data, dtype=dtype, device=device), requires_grad)
    create.__name__ = torch_fn.__name__
    create.__doc__ = f"torch.{torch_fn.__name__}, returning a minigrad Tensor."
    return create


ones_like = _like_factory(torch.ones_like)
zeros_like = _like_factory(torch.zeros_like)
rand_like = _like_factory(torch.rand_like)
randn_like = _like_factory(torch.randn_like)


def manual_seed(seed):
    """Seeds torch's generator, which minigrad's random tensors draw from: same seed, same numbers as torch."""
    return torch.manual_seed(seed)
