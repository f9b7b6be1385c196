"""minigrad against torch, measured in one run on this machine: ``python bench/engine.py``.

(a) a training step (forward, MSE loss, backward) of an MLP 784-256-10, batch 64, float32;
(b) the same at width 4096, batch 512;
(c) backward through chains of 1e5 and 1e6 nodes;
(d) the step of (a) written with plain ops, as learners and the forum snippets write it:
    ``(x @ w1.t() + b1).relu()``, ``((out - y) ** 2).mean()``;
(e) the cost of one small op, forward and backward: 200 ops on 4-element tensors.
Targets: (a) <= 1.5, (b) <= 1.05, (c) completes and 1e6/1e5 time ratio <= 12, (d) <= 1.4, (e) <= 2.0.
"""
import argparse
import gc
import time

import torch

import minigrad


def mlp_step_timer(lib, width, batch, device):
    lib.manual_seed(0)
    layer1, layer2 = lib.nn.Linear(784, width, device=device), lib.nn.Linear(width, 10, device=device)
    loss_fn = lib.nn.MSELoss()
    x, target = lib.randn(batch, 784, device=device), lib.randn(batch, 10, device=device)

    def step():
        for p in (layer1.weight, layer1.bias, layer2.weight, layer2.bias):
            p.grad = None
        loss = loss_fn(layer2(layer1(x).relu()), target)
        loss.backward()
        if device == "cuda":
            torch.cuda.synchronize()
    return step


def plain_mlp_step_timer(lib, width, batch, device):
    lib.manual_seed(0)
    w1 = (lib.randn(width, 784, device=device) * 0.03).requires_grad_()
    b1 = lib.zeros(width, device=device, requires_grad=True)
    w2 = (lib.randn(10, width, device=device) * 0.06).requires_grad_()
    b2 = lib.zeros(10, device=device, requires_grad=True)
    x, target = lib.randn(batch, 784, device=device), lib.randn(batch, 10, device=device)

    def step():
        for p in (w1, b1, w2, b2):
            p.grad = None
        out = (x @ w1.t() + b1).relu() @ w2.t() + b2
        ((out - target) ** 2).mean().backward()
        if device == "cuda":
            torch.cuda.synchronize()
    return step


SMALL_OPS = 200


def small_ops_timer(lib, width, batch, device):
    """SMALL_OPS ops on 4-element tensors (mul, add, tanh, sub in turn), then backward."""
    lib.manual_seed(0)
    x = lib.randn(4, device=device, requires_grad=True)
    w = lib.randn(4, device=device)

    def step():
        x.grad = None
        y = x
        for _ in range(SMALL_OPS // 4):
            y = (y * w + x).tanh() - w
        y.sum().backward()
        if device == "cuda":
            torch.cuda.synchronize()
    return step


def best_time(step, seconds):
    """The fastest of many repeats: the least disturbed by the rest of the machine."""
    for _ in range(3):
        step()
    best, deadline = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return best


def compare(timer, width, batch, device, seconds):
    times = {}
    for rounds in range(2):  # interleave the libraries so drift in machine speed hits both
        for name, lib in (("torch", torch), ("minigrad", minigrad)):
            t = best_time(timer(lib, width, batch, device), seconds / 2)
            times[name] = min(times.get(name, t), t)
    return times


def chain_backward_time(lib, length):
    """Build y = x*1.0001 + ... as a chain of ``length`` nodes, then time only its backward."""
    x = lib.ones(1, requires_grad=True)
    y = x
    for _ in range(length // 2):
        y = y * 1.0001 + 0.0
    gc.collect()
    start = time.perf_counter()
    y.backward()
    elapsed = time.perf_counter() - start
    del y
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seconds", type=float, default=4.0, help="time spent per MLP measurement")
    parser.add_argument("--quick", action="store_true", help="smaller chains, for a smoke run")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} threads")

    for label, timer, width, batch, target, what in (
            ("(a)", mlp_step_timer, 256, 64, 1.5, "MLP 784-256-10 batch 64, nn.Linear + MSELoss"),
            ("(b)", mlp_step_timer, 4096, 512, 1.05, "MLP 784-4096-10 batch 512, nn.Linear + MSELoss"),
            ("(d)", plain_mlp_step_timer, 256, 64, 1.4, "MLP 784-256-10 batch 64, plain ops"),
            ("(e)", small_ops_timer, None, None, 2.0, f"{SMALL_OPS} small ops, forward + backward")):
        times = compare(timer, width, batch, args.device, args.seconds)
        ratio = times["minigrad"] / times["torch"]
        unit, scale = ("us per op", 1e6 / SMALL_OPS) if label == "(e)" else ("ms", 1e3)
        print(f"{label} {what}: torch {times['torch'] * scale:.3f} {unit}, "
              f"minigrad {times['minigrad'] * scale:.3f} {unit}, ratio {ratio:.2f} (target <= {target})")

    lengths = (10**4, 10**5) if args.quick else (10**5, 10**6)
    chain = {}
    for length in lengths:
        chain[length] = {name: chain_backward_time(lib, length) for name, lib in (("torch", torch), ("minigrad", minigrad))}
        t, m = chain[length]["torch"], chain[length]["minigrad"]
        print(f"(c) chain of {length:.0e} nodes, backward: torch {t:.3f} s, minigrad {m:.3f} s, ratio {m / t:.1f}")
    short, long = lengths
    print(f"(c) minigrad {long:.0e}/{short:.0e} backward time ratio: "
          f"{chain[long]['minigrad'] / chain[short]['minigrad']:.1f} (target <= 12; torch's: "
          f"{chain[long]['torch'] / chain[short]['torch']:.1f})")


if __name__ == "__main__":
    main()
