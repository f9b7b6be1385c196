"""Embedding: a table of vectors looked up by index, drawn from N(0, 1) as torch does."""
import torch

from .. import grad_mode
from . import functional as F
from . import init
from .module import Module, Parameter


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                if padding_idx >= num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
            elif padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.weight = Parameter(torch.empty((num_embeddings, embedding_dim), device=device, dtype=dtype))
        init.normal_(self.weight)
        if padding_idx is not None:
            with grad_mode.no_grad():
                self.weight[padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text if self.padding_idx is None else f"{text}, padding_idx={self.padding_idx}"
