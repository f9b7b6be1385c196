"""Dropout: zeroes elements at random while training, and is the identity in eval mode."""
from . import functional as F
from .module import Module


class Dropout(Module):
    def __init__(self, p=0.5):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace=False"
