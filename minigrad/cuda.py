"""``minigrad.cuda``: CUDA is torch's; minigrad runs its ops there when storage lives there."""
import torch

from . import legacy_types


def is_available():
    return torch.cuda.is_available()


def is_bf16_supported(including_emulation=True):
    return torch.cuda.is_bf16_supported(including_emulation)


def device_count():
    return torch.cuda.device_count()


def manual_seed(seed):
    torch.cuda.manual_seed(seed)


# torch.cuda.FloatTensor and the other legacy types of CUDA tensors.
globals().update(legacy_types.types_of(torch.cuda, __name__))
