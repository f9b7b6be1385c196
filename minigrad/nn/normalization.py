"""LayerNorm: normalise over the last dims, then scale and shift (ones and zeros at first, as torch)."""
import torch

from .. import releases
from . import functional as F
from .module import Module, Parameter


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(torch.ones(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(torch.zeros(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        text = f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        return text + f", bias={self.bias is not None}" if releases.LAYER_NORM_REPR_SHOWS_BIAS else text
