"""minigrad against torch, measured in one run on this machine: ``python bench/engine.py``.

(a) a training step (forward, MSE loss, backward) of an MLP 784-256-10, batch 64, float32;
(b) the same at width 4096, batch 512;
(c) backward through chains of 1e5 and 1e6 nodes.
Targets (issue 2): (a) <= 1.5, (b) <= 1.05, (c) completes and 1e6/1e5 time ratio <= 12.
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


def compare_mlp(width, batch, device, seconds):
    times = {}
    for rounds in range(2):  # interleave the libraries so drift in machine speed hits both
        for name, lib in (("torch", torch), ("minigrad", minigrad)):
            t = best_time(mlp_step_timer(lib, width, batch, device), seconds / 2)
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

    for label, width, batch, target in (("(a)", 256, 64, 1.5), ("(b)", 4096, 512, 1.05)):
        times = compare_mlp(width, batch, args.device, args.seconds)
        ratio = times["minigrad"] / times["torch"]
        print(f"{label} MLP 784-{width}-10 batch {batch}: torch {times['torch'] * 1e3:.3f} ms, "
              f"minigrad {times['minigrad'] * 1e3:.3f} ms, ratio {ratio:.2f} (target <= {target})")

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
