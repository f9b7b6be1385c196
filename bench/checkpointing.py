"""Unit 8's verdicts at the tutorial's own size, measured with an allocator: ``python bench/checkpointing.py``.

The tutorial's ``CheckpointedTransformer`` ("Memory profile comparison (12 layers, d_model=512,
seq_len=512, batch=32)": ~24 GB plain, ~8 GB checkpointed, "~30% more compute for ~60% less
memory"), the model of course/08_checkpointing.ipynb at full size: vocabulary 50,000, 8 heads, loss
``out.sum()`` as in the tutorial's demo. For 1, 2, 6 and 12 blocks and each placement of the
checkpoints (none, each block as the tutorial does, each half-block, each pair of blocks) it prints
the peak of one training step above what was allocated before it (weights, their gradients from a
warm-up step, the batch) and the time of a step (best of 3 after the warm-up):

- on CUDA, ``torch.cuda.max_memory_allocated`` (the real allocator; torch, and minigrad for the
  tutorial's 12 blocks), and the clock;
- anywhere, ``minigrad.memory.LiveBytes`` on torch's ``meta`` device: every tensor storage alive,
  counted as an allocator counts them, with no data behind them (what lesson 08 can run on any
  machine), with ``--meta-batch`` sequences (default 32, the tutorial's).

``--sizes small`` runs the lesson's toy size (8 × 16 tokens, d_model 32, vocabulary 64) instead.
"""
import argparse
import time

import torch

import minigrad
from minigrad import memory

SIZES = {"tutorial": dict(d_model=512, nhead=8, vocab=50000, seq_len=512),
         "small": dict(d_model=32, nhead=2, vocab=64, seq_len=16)}
BOUNDARIES = (None, "block", "halves", "pairs")


def checkpoint(lib, body, *args):
    return lib.utils.checkpoint.checkpoint(body, *args, use_reentrant=False)


def tutorial_transformer(lib, n_layers, boundaries, device, d_model, nhead, vocab, seq_len, batch):
    """The tutorial's CheckpointedTransformer, as lesson 08 writes it (``boundaries``: None, "block",
    "halves" or "pairs"), on ``device``, and a batch of token ids."""
    nn = lib.nn

    class TransformerBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
            self.ffn = nn.Sequential(nn.Linear(d_model, d_model * 4), nn.GELU(), nn.Linear(d_model * 4, d_model))
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)

        def attention(self, x):
            attn_out, _ = self.attn(x, x, x)
            return self.norm1(x + attn_out)

        def feed_forward(self, x):
            return self.norm2(x + self.ffn(x))

        def forward(self, x):
            if boundaries == "halves":
                return checkpoint(lib, self.feed_forward, checkpoint(lib, self.attention, x))
            return self.feed_forward(self.attention(x))

    class CheckpointedTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, d_model)
            self.layers = nn.ModuleList([TransformerBlock() for _ in range(n_layers)])
            self.output_proj = nn.Linear(d_model, vocab)

        def forward(self, x):
            x = self.embedding(x)
            if boundaries == "pairs":
                for first, second in zip(self.layers[::2], self.layers[1::2]):
                    x = checkpoint(lib, lambda h, first=first, second=second: second(first(h)), x)
            else:
                for layer in self.layers:
                    x = checkpoint(lib, layer, x) if boundaries == "block" else layer(x)
            return self.output_proj(x)

    lib.manual_seed(0)
    model = CheckpointedTransformer().to(device)
    return model, lib.randint(0, vocab, (batch, seq_len), device=device)


def on_cuda(lib, n_layers, boundaries, size, batch):
    """(peak bytes of a step above what was allocated before it, seconds per step)."""
    model, tokens = tutorial_transformer(lib, n_layers, boundaries, "cuda", batch=batch, **size)
    model(tokens).sum().backward()  # warm-up: the gradients exist from now on, as in training
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        model(tokens).sum().backward()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated() - before
    del model, tokens
    torch.cuda.empty_cache()
    return peak, min(times)


def on_meta(lib, n_layers, boundaries, size, batch):
    """The peak bytes alive during a step above those alive before it (LiveBytes, meta device)."""
    with memory.LiveBytes("meta") as live:
        model, tokens = tutorial_transformer(lib, n_layers, boundaries, "meta", batch=batch, **size)
        live.reset_peak()
        before = live.current
        model(tokens).sum().backward()
        return live.peak - before


def table(title, measure, depths):
    print(f"\n{title}")
    print(f"{'blocks':>6}  " + "  ".join(f"{str(b):>22}" for b in BOUNDARIES))
    for n_layers in depths:
        figures = {}
        for boundaries in BOUNDARIES:
            if boundaries == "pairs" and n_layers % 2:
                continue
            figures[boundaries] = measure(n_layers, boundaries)
        plain = figures[None][0]
        cells = []
        for boundaries in BOUNDARIES:
            if boundaries not in figures:
                cells.append(f"{'-':>22}")
                continue
            peak, seconds = figures[boundaries]
            change = "" if boundaries is None else f" {peak / plain - 1:+.0%}"
            clock = "" if seconds is None else f" {seconds * 1000:.0f}ms"
            cells.append(f"{peak / 2**20:,.1f}M{change}{clock}".rjust(22))
        print(f"{n_layers:>6}  " + "  ".join(cells))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", choices=sorted(SIZES), default="tutorial")
    parser.add_argument("--meta-batch", type=int, default=32, help="sequences per batch on the meta device")
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2, 6, 12])
    args = parser.parse_args()
    size = SIZES[args.sizes]
    batch = 32 if args.sizes == "tutorial" else 8
    print(f"torch {torch.__version__}; the tutorial's transformer, {size}, loss out.sum(); per step: "
          "the peak above what was allocated before it (MiB), the change against no checkpoint, the time")
    if torch.cuda.is_available():
        name = torch.cuda.get_device_name()
        table(f"torch on {name}, torch.cuda.max_memory_allocated, batch {batch}",
              lambda n, b: on_cuda(torch, n, b, size, batch), args.depths)
        minigrad_depth = max(args.depths)
        table(f"minigrad on {name}, the same counter", lambda n, b: on_cuda(minigrad, n, b, size, batch), [minigrad_depth])
    table(f"torch on the meta device, LiveBytes (no time), batch {args.meta_batch}",
          lambda n, b: (on_meta(torch, n, b, size, args.meta_batch), None), args.depths)


if __name__ == "__main__":
    main()
