"""minigrad against torch and the Python autograd engines a learner could pick, in one run:
``python bench/peers.py``. The peers are the ``peers`` extra (MINIGRAD_EXTRAS=peers ./run, or
``pip install micrograd autograd mygrad``): karpathy's micrograd (scalars), HIPS autograd and mygrad.

Each engine runs each workload in its own idiom, on one thread, and gets a ratio against torch
(time / torch's time; below 1 is faster than torch):
  small ops  200 ops ``y = tanh(y*w + x) - w`` on 4 elements, forward + backward (micrograd: on 4
             scalars, with the tanh of its lecture: its engine has none);
  MLP        784-256-10, batch 64, float32: forward, MSE loss, backward (torch and minigrad:
             nn.Linear + MSELoss; the others: plain ops on arrays);
  views      40 in-place edits of views of an 8x8 tensor (a row times w, a column plus one, in
             turn), then backward;
  chain      backward alone through a chain of 1e5 nodes ``y = y*1.0001 + 0.0``.
A workload an engine cannot run prints n/a and why, in a word. The header names the minigrad measured:
``PYTHONPATH=/opt/minigrad-hub/lessons/lib`` measures the build the hub's lessons import, compiled where
a module holds a learner's part (hub/setup.sh).
"""
import os

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[variable] = "1"  # before numpy or torch loads a BLAS: every engine on one thread

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
from engine import SMALL_OPS, best_time, mlp_step_timer, small_ops_timer  # noqa: E402

import minigrad  # noqa: E402

torch.set_num_threads(1)
VIEW_EDITS = 40


def stepped(step):
    """A workload timed as the fastest of many repeats of one step, for ``seconds``."""
    return lambda seconds: best_time(step, seconds)


def once(build_then_backward):
    """A workload whose backward is long enough to time alone (the chain): each try builds the graph
    afresh and times its backward once; the fastest of the tries that fit in ``seconds`` (one at least:
    a single try's time moves by a third from run to run)."""
    def sample(seconds):
        best, deadline = math.inf, time.perf_counter() + seconds
        while best == math.inf or time.perf_counter() < deadline:
            backward = build_then_backward()
            gc.collect()
            start = time.perf_counter()
            backward()
            best = min(best, time.perf_counter() - start)
        return best
    return sample


def edit_views(y, w):
    for i in range(VIEW_EDITS // 2):
        row = y[i % 8]
        row *= w
        column = y[:, i % 8]
        column += 1.0


# torch and minigrad: the same code, `lib` being either.

def torch_views(lib):
    lib.manual_seed(0)
    x, w = lib.randn(8, 8, requires_grad=True), lib.randn(8)

    def step():
        x.grad = None
        y = x * 1.0  # not a leaf, so its views may be edited in place
        edit_views(y, w)
        (y * y).sum().backward()
    return stepped(step)


def torch_chain(lib, length):
    def build():
        y = lib.ones(1, requires_grad=True)
        for _ in range(length // 2):
            y = y * 1.0001 + 0.0
        return y.backward
    return once(build)


def torch_like(lib, length):
    return {"small ops": lambda: stepped(small_ops_timer(lib, None, None, "cpu")),
            "MLP": lambda: stepped(mlp_step_timer(lib, 256, 64, "cpu")),
            "views": lambda: torch_views(lib),
            "chain": lambda: torch_chain(lib, length)}


# karpathy's micrograd: Value scalars.

def micrograd_small_ops():
    from micrograd.engine import Value

    def tanh(v):  # as the micrograd lecture writes it
        t = math.tanh(v.data)
        out = Value(t, (v,), "tanh")

        def _backward():
            v.grad += (1 - t * t) * out.grad
        out._backward = _backward
        return out

    rng = random.Random(0)
    x = [Value(rng.gauss(0, 1)) for _ in range(4)]
    w = [rng.gauss(0, 1) for _ in range(4)]

    def step():
        for v in x:
            v.grad = 0
        y = x
        for _ in range(SMALL_OPS // 4):
            y = [tanh(yi * wi + xi) - wi for yi, wi, xi in zip(y, w, x)]
        sum(y).backward()
    return stepped(step)


def micrograd(length):
    return {"small ops": micrograd_small_ops,
            "MLP": "n/a (slow)",  # 784*256*64 multiplications, each a Value: about 1e7 nodes a step
            "views": "n/a (scalars)",
            "chain": "n/a (recursion)"}  # its backward sorts the graph recursively: RecursionError


# HIPS autograd: functions of numpy arrays, differentiated by grad / make_vjp.

def hips_small_ops():
    import autograd.numpy as np
    from autograd import grad

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(4, dtype=np.float32), rng.standard_normal(4, dtype=np.float32)

    def f(x):
        y = x
        for _ in range(SMALL_OPS // 4):
            y = np.tanh(y * w + x) - w
        return np.sum(y)
    df = grad(f)
    return stepped(lambda: df(x))


def mlp_arrays(np):
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.standard_normal(shape, dtype=np.float32)  # noqa: E731
    params = [normal(256, 784) * 0.03, np.zeros(256, np.float32), normal(10, 256) * 0.06, np.zeros(10, np.float32)]
    return params, normal(64, 784), normal(64, 10)


def hips_mlp():
    import autograd.numpy as np
    from autograd import grad

    params, x, target = mlp_arrays(np)

    def loss(params):
        w1, b1, w2, b2 = params
        out = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
        return np.mean((out - target) ** 2)
    dloss = grad(loss)
    return stepped(lambda: dloss(params))


def hips_chain(length):
    import numpy as np
    from autograd import make_vjp

    def f(y):
        for _ in range(length // 2):
            y = y * 1.0001 + 0.0
        return y

    def build():
        vjp, _ = make_vjp(f)(np.ones(1, np.float32))
        return lambda: vjp(np.ones(1, np.float32))
    return once(build)


def hips(length):
    return {"small ops": hips_small_ops, "MLP": hips_mlp,
            "views": "n/a (immutable)",  # arrays it traces cannot be assigned to
            "chain": lambda: hips_chain(length)}


# mygrad: Tensors on numpy; backward replaces .grad (nothing to clear).

def mygrad_small_ops():
    import mygrad as mg
    import numpy as np

    rng = np.random.default_rng(0)
    x, w = mg.tensor(rng.standard_normal(4, dtype=np.float32)), rng.standard_normal(4, dtype=np.float32)

    def step():
        y = x
        for _ in range(SMALL_OPS // 4):
            y = mg.tanh(y * w + x) - w
        y.sum().backward()
    return stepped(step)


def mygrad_mlp():
    import mygrad as mg
    import numpy as np
    from mygrad.nnet.activations import relu

    arrays, x, target = mlp_arrays(np)
    w1, b1, w2, b2 = (mg.tensor(a) for a in arrays)

    def step():
        out = relu(x @ w1.T + b1) @ w2.T + b2
        mg.mean((out - target) ** 2).backward()
    return stepped(step)


def mygrad_views():
    import mygrad as mg
    import numpy as np

    rng = np.random.default_rng(0)
    x, w = mg.tensor(rng.standard_normal((8, 8), dtype=np.float32)), rng.standard_normal(8, dtype=np.float32)

    def step():
        y = x * 1.0
        edit_views(y, w)
        (y * y).sum().backward()
    return stepped(step)


def mygrad_chain(length):
    import mygrad as mg

    def build():
        y = mg.tensor([1.0], dtype="float32")
        for _ in range(length // 2):
            y = y * 1.0001 + 0.0
        return y.backward
    return once(build)


def mygrad(length):
    return {"small ops": mygrad_small_ops, "MLP": mygrad_mlp, "views": mygrad_views,
            "chain": lambda: mygrad_chain(length)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent per engine and timed workload")
    parser.add_argument("--chain", type=int, default=10**5, help="nodes in the chain")
    parser.add_argument("--no-peers", action="store_true", help="torch and minigrad only")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, best of {args.seconds} s per cell")
    compiled = [name for name, module in sys.modules.items()
                if name.startswith("minigrad.") and (getattr(module, "__file__", None) or "").endswith(".so")]
    print(f"minigrad from {os.path.dirname(minigrad.__file__)}" + (f", {len(compiled)} of its modules compiled (the "
                                                                  "hub's lessons build)" if compiled else ""))

    engines = {"torch": torch_like(torch, args.chain), "minigrad": torch_like(minigrad, args.chain)}
    for name, workloads in ([] if args.no_peers else
                            [("micrograd", micrograd), ("HIPS autograd", hips), ("mygrad", mygrad)]):
        module = name.split()[-1]
        if importlib.util.find_spec(module) is None:
            print(f"{name}: not installed: pip install {module}")
        else:
            engines[name] = workloads(args.chain)

    # The engines take turns (passes), so that drift in machine speed hits them all; the chain, each of
    # whose tries is one backward, in five turns of a try or more each, since one try moves by a third.
    rows = [("small ops", f"{SMALL_OPS} small ops, per op", SMALL_OPS, 1e6, "us", 2),
            ("MLP", "MLP 784-256-10 batch 64", 1, 1e3, "ms", 2),
            ("views", f"{VIEW_EDITS} view edits, per edit", VIEW_EDITS, 1e6, "us", 2),
            ("chain", f"chain of {args.chain:,} nodes, backward", 1, 1, "s", 5)]
    table = [["workload", "torch", *list(engines)[1:]]]
    for key, label, count, scale, unit, passes in rows:
        samplers = {name: workloads[key]() for name, workloads in engines.items()
                    if not isinstance(workloads[key], str)}
        times = {}
        for _ in range(passes):
            for name, sample in samplers.items():
                times[name] = min(times.get(name, math.inf), sample(args.seconds / passes))
        torch_time = times["torch"]
        table.append([label, f"{torch_time / count * scale:.3g} {unit}"] +
                     [f"{times[name] / torch_time:.2f}x" if name in times else workloads[key]
                      for name, workloads in list(engines.items())[1:]])

    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


if __name__ == "__main__":
    main()
