"""What a training step keeps for backward, minigrad against torch, measured in one run:
``python bench/memory.py``.

minigrad's peak comes from its own record (``minigrad.memory.peak_saved_bytes``); torch's is measured
through ``torch.autograd.graph.saved_tensors_hooks`` (``minigrad.memory.SavedBytes``), which see the
same thing: each saved storage once, while a graph holds it. Models, each with and without
gradient checkpointing of every block (``torch.utils.checkpoint``, non-reentrant):
(a) the MLP 784-256-10 of bench/engine.py (a), batch 64, one block per layer;
(b) a deeper one: 16 blocks of Linear(512, 512) + tanh + a residual, batch 128.
Targets: minigrad/torch = 1.00 everywhere; with checkpointing, (b) keeps at least 50 % less.
"""
import torch

import minigrad
from minigrad import memory


def model(lib, widths, residual):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(n, m) for n, m in zip(widths, widths[1:])]

    def block(layer):
        return (lambda h: h + layer(h).tanh()) if residual else (lambda h: layer(h).relu())
    return [block(layer) for layer in layers]


def peak(lib, blocks, batch, width, checkpointed):
    """The most bytes the step's graph held at once: forward, loss, backward."""
    lib.manual_seed(1)
    x = lib.randn(batch, width)

    def step():
        h = x
        for block in blocks:
            h = lib.utils.checkpoint.checkpoint(block, h, use_reentrant=False) if checkpointed else block(h)
        (h ** 2).mean().backward()

    if lib is torch:
        with memory.SavedBytes(torch) as saved:
            step()
        return saved.peak
    memory.reset_peak()
    base = memory.saved_bytes()
    step()
    return memory.peak_saved_bytes() - base


def main():
    print(f"torch {torch.__version__}: peak bytes saved for backward in one training step")
    cases = (("(a) MLP 784-256-10, batch 64", [784, 256, 10], False, 64),
             ("(b) 16 residual blocks of 512, batch 128", [512] * 17, True, 128))
    for label, widths, residual, batch in cases:
        peaks = {}
        for checkpointed in (False, True):
            for lib in (torch, minigrad):
                peaks[lib.__name__, checkpointed] = peak(lib, model(lib, widths, residual), batch, widths[0], checkpointed)
            mine, theirs = peaks["minigrad", checkpointed], peaks["torch", checkpointed]
            print(f"{label}, {'checkpointed' if checkpointed else 'plain':12s}: torch {theirs / 2**20:7.2f} MiB, "
                  f"minigrad {mine / 2**20:7.2f} MiB, ratio {mine / theirs:.2f} (target 1.00)")
        saving = 1 - peaks["minigrad", True] / peaks["minigrad", False]
        print(f"{label}: checkpointing keeps {saving:.0%} less" + (" (target >= 50 %)" if residual else ""))


if __name__ == "__main__":
    main()
