"""MultiheadAttention, computed as torch's ``F.multi_head_attention_forward`` does when it returns the
attention weights (need_weights=True): the same ops in the same order, so the graph, the values and
the initial parameters (from the same seed) are torch's."""
import math

import torch

from .. import releases
from . import functional as F
from . import init
from .linear import NonDynamicallyQuantizableLinear
from .module import Module, Parameter


class MultiheadAttention(Module):
    """Self-attention (query, key and value one tensor) on batches, without masks, with torch's packed projection.
    Parameters and their order are torch's: in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False, device=None, dtype=None):
        super().__init__()
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.in_proj_weight = Parameter(torch.empty((3 * embed_dim, embed_dim), device=device, dtype=dtype))
        if bias:
            self.in_proj_bias = Parameter(torch.empty(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        """After out_proj drew its Linear initialisation: xavier for in_proj_weight, zeros for the biases."""
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, need_weights=True, average_attn_weights=True):
        if not need_weights:
            raise NotImplementedError("minigrad's MultiheadAttention computes the attention weights: need_weights=True")
        if query.dim() != 3:
            raise NotImplementedError("minigrad's MultiheadAttention takes batched (3-D) input")
        if not (query is key and key is value):
            raise NotImplementedError("minigrad's MultiheadAttention is self-attention: query, key and value "
                                      "must be the same tensor")
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]}")
        output, weights = self._attention(query.transpose(1, 0) if self.batch_first else query, average_attn_weights)
        return (output.transpose(1, 0) if self.batch_first else output), weights

    def _attention(self, x, average_attn_weights):
        """On a sequence-first (L, N, E) input."""
        length, bsz, embed_dim = x.shape
        heads, head_dim = self.num_heads, self.head_dim
        q, k, v = self._in_projection(x)
        q = q.view(length, bsz * heads, head_dim).transpose(0, 1)
        k = k.view(length, bsz * heads, head_dim).transpose(0, 1)
        v = v.view(length, bsz * heads, head_dim).transpose(0, 1)
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        weights = F.softmax(q_scaled.bmm(k.transpose(-2, -1)), dim=-1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout)
        output = weights.bmm(v).transpose(0, 1)  # a copy into rows (an UnsafeView of it from torch 2.13)
        if releases.RESHAPE_OF_A_COPY_IS_UNSAFE_VIEW:
            output = output.reshape(length * bsz, embed_dim)
        else:
            output = output.contiguous().view(length * bsz, embed_dim)
        output = self.out_proj(output).view(length, bsz, embed_dim)
        weights = weights.view(bsz, heads, length, length)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return output, weights

    def _in_projection(self, x):
        """One linear for the three projections (torch's _in_projection_packed for self-attention), its
        (..., 3, E) result split by select."""
        projected = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        projected = projected.unflatten(-1, (3, self.embed_dim)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return projected[0], projected[1], projected[2]
