"""Making tensors: torch's creation functions, with minigrad's requires_grad on top."""
import torch

from . import grad_mode, user_warnings
from .tensor import Tensor


def _made(torch_fn, args, kwargs):
    """``torch_fn(*args, **kwargs)`` and whether the tensor requires grad. A ``requires_grad`` that is
    a bool is minigrad's (torch's autograd records nothing); any other goes to torch's parser with the
    other keywords as given, which refuses it in its words (or, where it takes None, makes a tensor
    that does not require grad)."""
    requires_grad = kwargs.get("requires_grad", False)
    if type(requires_grad) is bool:
        kwargs.pop("requires_grad", None)
        return torch_fn(*args, **kwargs), requires_grad
    data = torch_fn(*args, **kwargs)
    return data.detach(), data.requires_grad


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


COPY_CONSTRUCT = ("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                  "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).")
"""torch's warning, each time ``torch.tensor`` is given a tensor (its words in torch 2.11 and 2.13)."""


def tensor(data, dtype=None, device=None, requires_grad=False):
    data = _storage_of(data)
    if isinstance(data, torch.Tensor):
        user_warnings.warn(COPY_CONSTRUCT, UserWarning, __file__)
        storage = data.detach().clone()
    else:
        storage, requires_grad = _made(torch.tensor, (data,), {"dtype": dtype, "device": device,
                                                               "requires_grad": requires_grad})
    return _new(storage.to(dtype=dtype, device=device), requires_grad)


def _factory(torch_fn):
    def create(*size, **kwargs):  # the keywords as given: torch's errors list them so
        return _new(*_made(torch_fn, size, kwargs))
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
        keywords = {"dtype": dtype, "device": device, "requires_grad": requires_grad}
        return _new(*_made(torch_fn, (input._data,), keywords))
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
