"""What a training step keeps for backward, minigrad against torch, measured in one run:
``python bench/memory.py``.

minigrad's peak comes from its own record (``minigrad.memory.peak_saved_bytes``); torch's is measured
through ``torch.autograd.graph.saved_tensors_hooks`` (``minigrad.memory.SavedBytes``), which see the
same thing: each saved storage once, while a graph holds it. Models, each with and without
gradient checkpointing of every block (``torch.utils.checkpoint``, non-reentrant):
(a) the MLP 784-256-10 of bench/engine.py (a), batch 64, one block per layer;
(b) a deeper one: 16 blocks of Linear(512, 512) + tanh + a residual, batch 128.
Targets: minigrad/torch = 1.00 everywhere; with checkpointing, (b) keeps at least 50 % less.

Then every byte alive during backward (issue 23), as an allocator counts it: the forum's net, 12
layers of ``h = tanh(h @ w)`` with 1 MiB activations, plain and checkpointed per layer, and (a)
and (b). ``minigrad.memory.LiveBytes`` counts the storages alive before backward, at its peak and
after, for both libraries, on CUDA when there is one and else on torch's ``meta`` device (CUDA's
stand-in: the same bytes, no data); with CUDA, torch.cuda's own counters too (memory_allocated,
max_memory_allocated), after a warm-up run of each library. Target: the same bytes as torch.
"""
import torch

import minigrad
from minigrad import memory


def model(lib, widths, residual, device="cpu"):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(n, m).to(device) for n, m in zip(widths, widths[1:])]

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


def tanh_chain(lib, device, checkpointed, layers=12, width=512):
    lib.manual_seed(0)
    weights = [lib.randn(width, width, device=device, requires_grad=True) for _ in range(layers)]
    h = lib.randn(width, width, device=device)
    for w in weights:
        body = (lambda h, w=w: lib.tanh(h @ w))
        h = lib.utils.checkpoint.checkpoint(body, h, use_reentrant=False) if checkpointed else body(h)
    return weights, h.sum()


def step_of(widths, residual, batch):
    def build(lib, device, checkpointed):
        blocks = model(lib, widths, residual, device)
        lib.manual_seed(1)
        h = x = lib.randn(batch, widths[0], device=device)
        for block in blocks:
            h = lib.utils.checkpoint.checkpoint(block, h, use_reentrant=False) if checkpointed else block(h)
        return blocks, x, (h ** 2).mean()
    return build


def alive_around_backward(lib, device, build, checkpointed):
    """Bytes alive on ``device`` (LiveBytes): before backward, the most during it, after it."""
    with memory.LiveBytes(device) as live:
        kept = build(lib, device, checkpointed)
        before = live.current
        live.reset_peak()
        kept[-1].backward()
        return before, live.peak, live.current


def cuda_around_backward(lib, build, checkpointed):
    """The same three figures from torch.cuda's allocator."""
    kept = build(lib, "cuda", checkpointed)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    kept[-1].backward()
    torch.cuda.synchronize()
    return before, torch.cuda.max_memory_allocated(), torch.cuda.memory_allocated()


def mib(figures):
    return "/".join(f"{f / 2**20:.2f}" for f in figures)


def backward_peaks():
    device = "cuda" if torch.cuda.is_available() else "meta"
    print(f"\nbytes alive before / at the peak of / after backward (MiB), LiveBytes on {device}"
          + (", then torch.cuda's allocator" if device == "cuda" else " (no CUDA: its stand-in)"))
    cases = (("12 layers of tanh(h @ w), 1 MiB activations", tanh_chain),
             ("(a) MLP 784-256-10, batch 64", step_of([784, 256, 10], False, 64)),
             ("(b) 16 residual blocks of 512, batch 128", step_of([512] * 17, True, 128)))
    for label, build in cases:
        for checkpointed in (False, True):
            kind = "checkpointed" if checkpointed else "plain"
            figures = {lib: alive_around_backward(lib, device, build, checkpointed) for lib in (torch, minigrad)}
            print(f"{label}, {kind:12s}: torch {mib(figures[torch])}, minigrad {mib(figures[minigrad])}, "
                  f"same: {figures[torch] == figures[minigrad]}")
            if device == "cuda":
                for lib in (torch, minigrad):
                    cuda_around_backward(lib, build, checkpointed)  # warm-up: cuBLAS's workspace per thread
                figures = {lib: cuda_around_backward(lib, build, checkpointed) for lib in (torch, minigrad)}
                print(f"{label}, {kind:12s}: torch.cuda.memory_allocated torch {mib(figures[torch])}, "
                      f"minigrad {mib(figures[minigrad])}, same: {figures[torch] == figures[minigrad]}")


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
    backward_peaks()


if __name__ == "__main__":
    main()
