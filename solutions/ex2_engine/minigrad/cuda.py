"""``minigrad.cuda``: CUDA is torch's; minigrad runs its ops there when storage lives there."""
import torch


def is_available():
    return torch.cuda.is_available()


def device_count():
    return torch.cuda.device_count()


def manual_seed(seed):
    torch.cuda.manual_seed(seed)
