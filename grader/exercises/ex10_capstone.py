# %% markdown
# # Exercise 10 — capstone: a colleague's training script
#
# *Lessons: all of them; above all `course/03b_retain_graph_and_lifetimes.ipynb`,
# `course/04_inplace_and_versions.ipynb`, `course/05_grad_modes.ipynb`,
# `course/06a_zero_grad_and_step.ipynb` and `course/08_checkpointing.ipynb`.*
#
# A colleague hands you `broken_train`, below: about a hundred lines that train a small classifier
# on scikit-learn's digits (8x8 images of handwritten digits), log how training goes, and evaluate
# the model. The model is three layers: a body (64 pixels -> 32 features, ReLU) whose features are
# centred by their running mean, a block (32 -> 32, tanh) under gradient checkpointing to save
# memory, and a head (32 -> 10 scores). The body and the block learn at half the head's rate,
# through two SGD optimizers with momentum, and the learning rates halve every 20 steps. After each
# step the script logs the training loss and accuracy, the gradients' norm, the validation loss and
# accuracy and how many examples went through the block, then calls `report(step, loss, log)`, its
# progress line; after training, the accuracy on the test images.
#
# The script has **five bugs** in how it treats the graph: what is kept, carried, edited,
# accumulated and run again. Each is one that a forum thread of this course ran into. One fails
# loudly; the others waste memory, slow training down or give wrong numbers without a word, and
# each shows a symptom that one of the course's tools exposes.
#
# ### The contract
#
# **1. `fixed_train(lib, steps, batch_size=50, seed=0, report=progress)`**: the colleague's script
# as it was meant. The same data (`digits(lib)`), model (`make_model(lib, seed)`), optimizers (SGD
# with momentum 0.9: the body and the block at lr 0.05, the head at 0.1, both halved after every
# 20 steps by `decay`), batches (`x_train[start:start + batch_size]`, `start = step * batch_size %
# 1400`) and the same computation per step, with:
#
# - each step's update driven by the gradient of that step's loss alone, for every parameter;
# - the body's features centred by the running mean of the earlier batches' features (zeros at
#   first), which each step then updates with its own batch's mean (0.9 of the old, 0.1 of the
#   new). A running statistic is data: no gradient flows into it, nor through it to earlier steps;
# - one Python float per step in `log["loss"]`, `log["accuracy"]` (the step's batch, as the model
#   scored it for that loss), `log["grad_norm"]` (the norm of all the gradients the optimizers step
#   with), `log["val_loss"]` and `log["val_accuracy"]` (`evaluate`'s, for the model after the
#   step's update); in `log["examples"]`, the training examples that went through the block,
#   `batch_size` per step; after training, `log["test_accuracy"]` (`evaluate`'s, on the test
#   images) and `log["best_val_accuracy"]`;
# - after each step's log entries, `report(step, loss, log)`, with the loss tensor that the step ran
#   backward on. At that moment no graph holds anything for backward: the step's backward freed what
#   its graph saved, and nothing logged, carried or evaluated keeps a graph alive;
# - it returns `(log, [body, block, head])`, as `broken_train` does.
#
# **2. `DIAGNOSES`**: for each of the five bugs, what was wrong and which of the course's tools
# showed it (Part 2, after `fixed_train`).
#
# The graded checks run your `fixed_train` with minigrad and the fixed script with PyTorch, for 10
# steps of 50 images where you can see them (hidden: 40 steps of 100, another seed), and compare:
# the trained parameters and every step's loss (`test-training`); the logs (`test-logs`); at each
# `report`, the bytes that graphs hold for backward (`test-memory`: minigrad's ledger,
# `minigrad.memory.saved_bytes()`; torch's through saved-tensor hooks) and how many nodes the
# step's graph has below its loss, compared with the first step's (`test-graph`). Then they grade
# your diagnoses by their key words (`test-diagnoses`).
#
# **Open:** finding the bugs is the exercise, and in which order you hunt them is yours. Measure
# rather than read: every figure that changes from step to step where the contract says it should
# not is a symptom.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Run it and read what it raises, then run it again under `minigrad.autograd.detect_anomaly()`.
# Then measure each step instead of reading code: pass your own `report`, one that prints
# `minigrad.memory.saved_bytes()` and `len(viz.describe(loss).nodes)`, and draw a step's graph
# (`viz.draw(viz.describe(loss))`) at the first step and at the fifth. Count how often each function
# of the script runs. Print the log, and ask of each entry what it holds.
# </details>
#
# <details><summary>Hint 2 — the idea, symptom by symptom</summary>
#
# - **An error naming versions**: something edited in place a tensor that a node saved for its
#   backward (anomaly mode names the forward line that made it). Write that edit out of place.
# - **Bytes held after each step that grow every step**: something kept from each step holds a graph
#   that never ran backward. Log numbers (`.item()`), and evaluate under `no_grad(lib)`.
# - **A graph that grows every step**: a value carried from step to step drags every earlier step's
#   graph along, and backward runs through all of them; `retain_graph=True` silenced the error that
#   said so ("backward through the graph a second time"). Detach what is carried, and drop
#   `retain_graph` (left in, it keeps each step's graph, saved tensors included, until the next).
# - **A count twice what it should be**: checkpoint runs its function again in backward, up to the
#   last tensor it saves. Keep side effects out of the checkpointed function.
# - **Gradients larger than one batch's**: `.grad` adds up until something zeroes it, and each
#   optimizer zeroes only its own parameters.
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# The colleague's script, with each step as: `zero_grad()` of both optimizers; `h = body(x).relu()`
# and the batch's mean of `h`; `h = h - running_mean`; the new running mean, detached;
# `z = checkpoint(lib, block_function, h)` with a block function that only computes; `len(h)` added
# to `log["examples"]` outside it; the scores and the loss; `loss.backward()` (no `retain_graph`);
# the gradients' norm; both optimizers' `step()` and the decay; `evaluate(...)` under `no_grad(lib)`;
# the log entries, `loss.item()` and `val_loss.item()` among them; `report(step, loss, log)`.
# </details>
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd (`lib.no_grad`, `lib.utils`: the setup's `no_grad(lib)` and `checkpoint(lib, ...)` stand
# in for them), files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such
# construct ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import contextlib
import gc
import importlib.util
from pathlib import Path

import numpy
import torch

import minigrad
import minigrad.memory
from coursekit import viz
from coursekit.testing import check, graded
from coursekit.viz.graph import walk

torch.set_num_threads(1)  # tiny tensors: several CPU threads would wait for each other more than they work

# scikit-learn's digits, what sklearn.datasets.load_digits() returns: 1797 images of 8x8 pixels (0 to 16)
# and their labels, read from the file scikit-learn ships (without importing scikit-learn: 1.5 s saved).
_sklearn = Path(importlib.util.find_spec("sklearn").submodule_search_locations[0])
_digits = numpy.loadtxt(_sklearn / "datasets" / "data" / "digits.csv.gz", delimiter=",")
_order = numpy.random.RandomState(0).permutation(len(_digits))  # shuffled once, the same way every time
IMAGES, LABELS = _digits[_order, :-1] / 16.0, _digits[_order, -1].astype(numpy.int64)


def digits(lib):
    """1400 images to train on, 200 to validate on and 197 to test on: (x_train, y_train, x_val, y_val,
    x_test, y_test), float64 images (one row of 64 pixels each) and int64 labels."""
    parts = [(0, 1400), (1400, 1600), (1600, len(IMAGES))]
    return tuple(tensor for start, end in parts for tensor in (
        lib.tensor(IMAGES[start:end], dtype=lib.float64), lib.tensor(LABELS[start:end])))


def checkpoint(lib, function, *args):
    """``lib.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)``: graded code may not
    name ``lib.utils`` (torch's ways to load code live there), so it calls this."""
    return lib.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)


def no_grad(lib):
    """``lib.no_grad()``, for graded code, which may not name torch's grad-mode switches."""
    return lib.no_grad()


def progress(step, loss, log):
    """The colleague's progress line, every 10 steps."""
    if step % 10 == 0:
        print(f"step {step:3d}: loss {log['loss'][-1]:.4f}, validation accuracy {log['val_accuracy'][-1]:.3f}")


# %% locked broken
def make_model(lib, seed):
    """The body (64 pixels -> 32 features), the block (32 -> 32) and the head (32 -> 10 scores):
    torch's initial weights for manual_seed(seed), in float64."""
    lib.manual_seed(seed)
    return lib.nn.Linear(64, 32).double(), lib.nn.Linear(32, 32).double(), lib.nn.Linear(32, 10).double()


def accuracy(scores, y):
    """The fraction of rows whose highest score is their label."""
    return (scores.argmax(dim=1) == y).double().mean().item()


def evaluate(lib, body, block, head, running_mean, x, y):
    """The model's loss and accuracy on ``(x, y)``, as it is now."""
    h = body(x).relu() - running_mean
    scores = head(block(h).tanh())
    return lib.nn.functional.cross_entropy(scores, y), accuracy(scores, y)


def decay(optimizers, factor):
    """Multiplies the learning rate of every parameter group of ``optimizers`` by ``factor``."""
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            group["lr"] *= factor


def broken_train(lib, steps, batch_size=50, seed=0, report=progress):
    """Trains the digits classifier for ``steps`` steps of ``batch_size`` images, in order, halving
    the learning rates every 20 steps. After each step it logs the training loss and accuracy, the
    gradients' norm, the validation loss and accuracy and the examples the block processed, then
    calls ``report(step, loss, log)``. Returns the log and the three layers."""
    x_train, y_train, x_val, y_val, x_test, y_test = digits(lib)
    body, block, head = make_model(lib, seed)
    # fine-tuning: the body and the block learn at half the head's rate
    body_optimizer = lib.optim.SGD([*body.parameters(), *block.parameters()], lr=0.05, momentum=0.9)
    head_optimizer = lib.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    parameters = [*body.parameters(), *block.parameters(), *head.parameters()]
    running_mean = lib.zeros(32, dtype=lib.float64)  # the features' mean over the recent batches
    log = {"loss": [], "accuracy": [], "grad_norm": [], "val_loss": [], "val_accuracy": [], "examples": 0}

    def block_function(h):
        log["examples"] += len(h)  # throughput
        return block(h).tanh()

    for step in range(steps):
        start = step * batch_size % len(y_train)
        x, y = x_train[start:start + batch_size], y_train[start:start + batch_size]
        head_optimizer.zero_grad()

        h = body(x).relu()
        batch_mean = h.mean(0)
        h -= running_mean  # centre the features
        running_mean = 0.9 * running_mean + 0.1 * batch_mean
        z = checkpoint(lib, block_function, h)  # recomputed in backward: saves memory
        scores = head(z)
        loss = lib.nn.functional.cross_entropy(scores, y)

        loss.backward(retain_graph=True)  # the second step failed without it
        grad_norm = sum((p.grad ** 2).sum().item() for p in parameters) ** 0.5
        body_optimizer.step()
        head_optimizer.step()
        if (step + 1) % 20 == 0:
            decay([body_optimizer, head_optimizer], 0.5)

        val_loss, val_accuracy = evaluate(lib, body, block, head, running_mean, x_val, y_val)
        log["loss"].append(loss.item())
        log["accuracy"].append(accuracy(scores, y))
        log["grad_norm"].append(grad_norm)
        log["val_loss"].append(val_loss)
        log["val_accuracy"].append(val_accuracy)
        report(step, loss, log)

    log["test_accuracy"] = evaluate(lib, body, block, head, running_mean, x_test, y_test)[1]
    log["best_val_accuracy"] = max(log["val_accuracy"], default=None)
    return log, [body, block, head]


# %% code
# Run it, read what it says, then use the tools:
# log, layers = broken_train(minigrad, 10)
# %% markdown
# ## Part 1 — the fixed script
#
# Write `fixed_train`: the colleague's script as it was meant (the contract above), without the
# bugs. Keep its signature: the checks call it with their own `report`.
# %% answer fixed_train
def fixed_train(lib, steps, batch_size=50, seed=0, report=progress):
    """``broken_train`` without its bugs."""
    ### BEGIN SOLUTION
    x_train, y_train, x_val, y_val, x_test, y_test = digits(lib)
    body, block, head = make_model(lib, seed)
    body_optimizer = lib.optim.SGD([*body.parameters(), *block.parameters()], lr=0.05, momentum=0.9)
    head_optimizer = lib.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    parameters = [*body.parameters(), *block.parameters(), *head.parameters()]
    running_mean = lib.zeros(32, dtype=lib.float64)
    log = {"loss": [], "accuracy": [], "grad_norm": [], "val_loss": [], "val_accuracy": [], "examples": 0}

    def block_function(h):
        return block(h).tanh()

    for step in range(steps):
        start = step * batch_size % len(y_train)
        x, y = x_train[start:start + batch_size], y_train[start:start + batch_size]
        body_optimizer.zero_grad()
        head_optimizer.zero_grad()

        h = body(x).relu()
        batch_mean = h.mean(0)
        h = h - running_mean
        running_mean = (0.9 * running_mean + 0.1 * batch_mean).detach()
        z = checkpoint(lib, block_function, h)
        log["examples"] += len(h)
        scores = head(z)
        loss = lib.nn.functional.cross_entropy(scores, y)

        loss.backward()
        grad_norm = sum((p.grad ** 2).sum().item() for p in parameters) ** 0.5
        body_optimizer.step()
        head_optimizer.step()
        if (step + 1) % 20 == 0:
            decay([body_optimizer, head_optimizer], 0.5)

        with no_grad(lib):
            val_loss, val_accuracy = evaluate(lib, body, block, head, running_mean, x_val, y_val)
        log["loss"].append(loss.item())
        log["accuracy"].append(accuracy(scores, y))
        log["grad_norm"].append(grad_norm)
        log["val_loss"].append(val_loss.item())
        log["val_accuracy"].append(val_accuracy)
        report(step, loss, log)

    with no_grad(lib):
        log["test_accuracy"] = evaluate(lib, body, block, head, running_mean, x_test, y_test)[1]
    log["best_val_accuracy"] = max(log["val_accuracy"], default=None)
    return log, [body, block, head]
    ### END SOLUTION
# %% locked check-fixed_train
fixed_train = graded(fixed_train)
# %% tests test-training 2+1 from-reference fixed_train
def trained(lib, steps, batch_size, seed):
    """fixed_train for ``steps`` steps of ``batch_size``, measured at each report: the bytes graphs
    hold for backward (minigrad's ledger; torch's saved-tensor hooks) and the nodes below the loss.

    torch's side of these checks is the fixed script (read from the reference's results in
    Validate, run by the grader when grading), which edits no saved tensor in place: the hooks
    change nothing of what torch does there. Around the colleague's script they would: torch checks
    no version of a tensor a hook packed, so its in-place error would not be raised."""
    hooks = minigrad.memory.SavedBytes(torch) if lib is torch else None
    start = minigrad.memory.saved_bytes()
    held, nodes = [], []

    def measure(step, loss, log):
        held.append(hooks.current if hooks else minigrad.memory.saved_bytes() - start)
        nodes.append(len(walk([loss.grad_fn])))

    collecting = gc.isenabled()
    gc.disable()  # what is held is what references hold: no collection of earlier garbage moves the count
    try:
        with hooks or contextlib.nullcontext():
            log, layers = fixed_train(lib, steps, batch_size=batch_size, seed=seed, report=measure)
    finally:
        if collecting:
            gc.enable()
    return {"log": log, "parameter sums": [p.sum() for layer in layers for p in layer.parameters()],
            "bytes held for backward at each report": held, "nodes below each step's loss": nodes}


def training(lib, steps, batch_size, seed):
    """The trained parameters (their sums: whole tensors would not fit on a screen), and every step's loss."""
    found = trained(lib, steps, batch_size, seed)
    return {"parameter sums": found["parameter sums"], "losses": found["log"]["loss"]}


check("10 steps of 50: trained parameters and losses", training, 10, 50, 0)
### BEGIN HIDDEN TESTS
check("40 steps of 100, seed 1: trained parameters and losses", training, 40, 100, 1)
### END HIDDEN TESTS

# %% tests test-logs 1+1 from-reference fixed_train
def logs(lib, steps, batch_size, seed):
    """What the log holds besides the training losses."""
    log = trained(lib, steps, batch_size, seed)["log"]
    return {key: log.get(key, "(nothing)") for key in ("examples", "grad_norm", "accuracy", "val_loss", "val_accuracy",
                                                       "test_accuracy", "best_val_accuracy")}


check("10 steps of 50: the logs", logs, 10, 50, 0)
### BEGIN HIDDEN TESTS
check("40 steps of 100, seed 1: the logs", logs, 40, 100, 1)
### END HIDDEN TESTS

# %% tests test-memory 1+1 from-reference fixed_train
def held(lib, steps, batch_size, seed):
    """At each report, the bytes that graphs hold for backward: none, once a step is over."""
    return {"bytes held for backward at each report": trained(lib, steps, batch_size, seed)[
        "bytes held for backward at each report"]}


check("10 steps of 50: bytes held at each report", held, 10, 50, 0)
### BEGIN HIDDEN TESTS
check("40 steps of 100, seed 1: bytes held at each report", held, 40, 100, 1)
### END HIDDEN TESTS

# %% tests test-graph 1+1 from-reference fixed_train
def graph_growth(lib, steps, batch_size, seed):
    """At each report, the nodes of the step's graph, below its loss: as many at every step as at
    the first (how many depends on how you write the step; that it does not grow, on what it carries)."""
    first, *later = trained(lib, steps, batch_size, seed)["nodes below each step's loss"] or [0]
    return {"the first step's loss has a graph": first > 0,
            "nodes below each later step's loss, beyond the first step's": [count - first for count in later]}


check("10 steps of 50: the size of each step's graph", graph_growth, 10, 50, 0)
### BEGIN HIDDEN TESTS
check("40 steps of 100, seed 1: the size of each step's graph", graph_growth, 40, 100, 1)
### END HIDDEN TESTS

# %% markdown
# ## Part 2 — the diagnoses
#
# For each of the five bugs, say in a few words what was wrong (the cause, or what it did) and which
# of the course's tools showed it to you: the error and its message, anomaly mode
# (`detect_anomaly`), a tensor's `_version`, the saved-bytes ledger (`minigrad.memory.saved_bytes()`,
# `SavedBytes`, `LiveBytes`), a picture of the graph (`viz.draw(viz.describe(loss))`, `grad_fn`,
# `next_functions`), the backward stepper, counting a function's runs, the gradients (`p.grad`,
# their norm) or the losses.
#
# `DIAGNOSES` is a list of `(what was wrong, the tool that showed it)` pairs of strings, one pair
# per bug, in any order, written out as a literal (grading keeps only literal constants). Each pair
# is graded by its key words, leniently: the words this course uses for that bug (its cause or its
# symptom), and a tool that shows it. One bug per pair: a pair that names nearly every bug names
# none. Validate compares the hashes of your words with the hashes of the accepted ones, so the
# notebook does not show which words count.
# %% answer diagnoses
# DIAGNOSES: one (what was wrong, the tool that showed it) pair of strings per bug.
### BEGIN SOLUTION
DIAGNOSES = [
    ("the validation loss was logged as a tensor computed with grad mode on: each step's validation "
     "graph stayed alive, with everything its nodes saved",
     "minigrad.memory.saved_bytes() in report: the bytes held grew every step"),
    ("the running mean was not detached, so each step's graph reached every earlier step's graph; "
     "retain_graph=True silenced the error instead of fixing it",
     "a picture of the loss's graph, viz.draw(viz.describe(loss)): more nodes every step"),
    ("h -= running_mean edited in place the output that relu saved for its backward",
     "the RuntimeError naming versions, then detect_anomaly naming the relu line"),
    ("the examples counter inside the checkpointed block ran again when backward recomputed the block",
     "counting the block function's runs: two per step"),
    ("only the head's optimizer called zero_grad: the body's and the block's gradients added up from "
     "step to step",
     "the gradients' norm, log['grad_norm'], growing"),
]
### END SOLUTION
# %% tests test-diagnoses 2+1 from-reference diagnoses
import hashlib
import re

# The key words each bug is known by (its cause or its symptom) and the tools that show it, as
# salted SHA-256 hashes, so that the notebook does not print them: the check compares the hashes of
# your words with these. The tradeoff: hashing a list of words would find which ones count; what it
# finds is words, not a diagnosis, and a pair that names nearly every bug counts for none.
SALT = "minigrad ex10 diagnoses: "
HASHED_KEY_WORDS = [  # per bug: (what it was, a tool that shows it), each hash a key word's
    ("001fa882bb9b 2a5d72c42ebd 2b553ee9e2dd 2dc4d005b15f 4b0579baf563 4b8df5f1ef82 63d97371708e "
     "6c366f523cdd 7494bac0710c 7e7f4bae04cd 892ef37a2ca0 94b2a16f1e5c 9580a0f3e5ad 9a0a0c96e585",
     "012580ca5b62 167eb9289802 1ff146131942 47afb0c80f88 81dcbf47d0bf 887089fccb18 a747095df2be "
     "ab566623a6df b2e68309193f bd1957b70a6f e02cd6c725ad e3326a0014df f3aa97f233cd"),
    ("09e459ea12e2 189d057de72a 21c1459d4568 3279bbe01eec 484cf43c2ee6 4d1782ed23e2 570f33f1ef21 "
     "5c8ad7a80ad1 60062615cd03 6331c3b73dd2 6787724149ec 685cdbb279b2 8d14ff36b5b2 8e87ff0ac17c "
     "99bcc9129a23 9fca9a5e5c37 a0dbdbb80d29 b5eb88b3c3b4 c1671635ac0d c6798d415b25 d1a1b66a13d3 "
     "d333a372a0d6 d9c0ac568027 fa7b150429b6",
     "012580ca5b62 04e90086f5ed 0daac7a72eb1 167eb9289802 1ff146131942 3edd0c32ba13 47afb0c80f88 "
     "66dcebd1b35c 77efb7ab3630 81dcbf47d0bf 887089fccb18 8f4592b514f3 9fca9a5e5c37 a747095df2be "
     "ab566623a6df b2e68309193f bd1957b70a6f c407cdd2c4c9 d2bfcbfccc0a e02cd6c725ad eb3d05411e1f "
     "ec58a2e3bb10 f3aa97f233cd"),
    ("061ae73d0895 1bf520a498fc 236a44d9b8df 23b4064e845f 23c7c77ddcdf 299aff21681a 30c3c0b3f31c "
     "362228caab19 593fc895b3cf 627e26694ae5 6dd825c7ed26 771e936f230b 7c3428fcaeea 7ef98da543bb "
     "974ba8099906 a65d3cb94570 a7213b71df4d ade1518e2f19 b33bb8e29f0f b84690d6c1a9 c37b2e43dba9 "
     "d6b4fafcc590 dc2eeb97e206 f8ee8cab536b ff0bfcfbc8f1",
     "04e90086f5ed 05f1e7731bfc 236a44d9b8df 3e0dc38603eb 3edd0c32ba13 593fc895b3cf 7c2bee1dbeca "
     "7c3428fcaeea e2f16a5fbee5"),
    ("012cb6b83b64 06688f8b4a89 178f6773350e 1e4c53f34daf 1f049ca62673 2b6d33daf61a 2fc9c9080a82 "
     "3be512214583 477729ee579b 4c76c2638354 594e5a7d6c7e 62b919b6c0ef 7b930888d796 8e7707578f72 "
     "944150ffb979 a9f6c8b93585 ad4a8bc54918 b28bd35829a0 c834e5e0bde2 ca5fe81c33c4 e6bd418055f1 "
     "ef101f69a087 f0986e93a352 f2a36ba5bc3e f9add547f7c6",
     "2b6d33daf61a 2fc9c9080a82 316665bea92b 3d10e9b0a4fc 3f99fb6e3d4a 5e1b0350db09 68546d9c770f "
     "83c2bacbc427 8e7707578f72 8f4592b514f3 b28bd35829a0 c13fea382cb5 f0986e93a352"),
    ("1c0ba32df8d3 2a4de45f56f4 2b820bea50f4 37ca4e5f8fb2 42bc1594ca0f 4c628531b625 542229de5e94 "
     "6ae142de06bf 7720c9c87477 7bd959ad3f4e 84a322bfedda 8545b0d8a4dc 9ce1df35569e b0ba5d83c7db "
     "c11015d14c19 c3e37f5fc84e c5088c7dd2f3 c9631c4c2c9d e972afdd0559 f5432d8ca092 fe85f60079d4",
     "05f4ad967d3e 1b51fc3c945d 2ca2258ae8e6 3faf15c24d92 45466519f709 5e1b0350db09 68546d9c770f "
     "805a35e2c5db 91891b657517 c4e5852e810a ccb66d5267e4 d7dd73dfe6a1 e771f0edee46 f4c86ad3371c"),
]


def words(text):
    """The words of ``text`` in lower case, the parts of each snake_case name, and each two words in a row."""
    tokens = re.findall(r"[a-z0-9_]+", text.lower())
    return {*tokens, *(part for token in tokens for part in token.split("_") if part),
            *(" ".join(pair) for pair in zip(tokens, tokens[1:]))}


def hashed(text):
    """The salted hashes of ``text``'s words."""
    return {hashlib.sha256((SALT + word).encode()).hexdigest()[:12] for word in words(text)}


def most_matched(options):
    """The most bugs that distinct pairs name, ``options[i]`` being the bugs pair i may name (a
    maximum matching, found by augmenting paths)."""
    owner = {}

    def place(pair, tried):
        for bug in options[pair]:
            if bug not in tried:
                tried.add(bug)
                if bug not in owner or place(owner[bug], tried):
                    owner[bug] = pair
                    return True
        return False
    return sum(place(pair, set()) for pair in range(len(options)))


def diagnosed(lib, key_words, seen=hashed):
    """How many of the five bugs ``DIAGNOSES`` names (one pair per bug: what was wrong), and how
    many of those with a tool that shows that bug. ``lib`` plays no part: torch's side is the
    reference's diagnoses."""
    if not (isinstance(DIAGNOSES, (list, tuple)) and 0 < len(DIAGNOSES) <= 8 and all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)
            for pair in DIAGNOSES)):
        return "DIAGNOSES is not a list of at most 8 (what was wrong, the tool that showed it) pairs of strings"
    accepted = [[set(group.split()) if isinstance(group, str) else group for group in bug] for bug in key_words]
    named, with_tool = [], []
    for what, tool in DIAGNOSES:
        bugs = [bug for bug, (names, _) in enumerate(accepted) if names & seen(what)]
        bugs = bugs if len(bugs) < 4 else []
        named.append(bugs)
        with_tool.append([bug for bug in bugs if accepted[bug][1] & seen(tool)])
    return {"bugs your DIAGNOSES name": most_matched(named),
            "of them, with a tool that shows the bug": most_matched(with_tool)}


check("your DIAGNOSES", diagnosed, HASHED_KEY_WORDS)
### BEGIN HIDDEN TESTS
KEY_WORDS = [  # per bug: (what it was, a tool that shows it); HASHED_KEY_WORDS holds their hashes
    # the validation loss logged as a tensor, its graph kept
    ({"validation", "val", "val_loss", "evaluate", "evaluation", "eval", "evaluating", "logged", "logging",
      "leak", "leaks", "leaked", "leaking", "item"},
     {"memory", "saved_bytes", "savedbytes", "bytes", "ledger", "livebytes", "grad_fn", "requires_grad", "graph",
      "picture", "viz", "describe", "draw"}),
    # the running mean carried without detach, retain_graph=True hiding it
    ({"running", "running_mean", "detach", "detached", "detaching", "carried", "carries", "carry", "carrying",
      "retain_graph", "retain", "retained", "retaining", "history", "across steps", "previous step",
      "previous steps", "earlier step", "earlier steps", "graph grows", "grows", "growing", "grew", "second time"},
     {"viz", "draw", "describe", "picture", "pictures", "graph", "nodes", "node", "next_functions", "grad_fn",
      "stepper", "memory", "saved_bytes", "savedbytes", "bytes", "ledger", "livebytes", "error", "runtimeerror",
      "second time", "time", "timing", "slower"}),
    # relu's saved output edited in place
    ({"in place", "inplace", "in_place", "version", "versions", "_version", "modified", "modifies", "modify",
      "edited", "edits", "edit", "mutated", "mutates", "overwrote", "overwrites", "overwritten", "relu",
      "centre", "center", "centred", "centered", "centring", "centering", "sub_"},
     {"error", "runtimeerror", "message", "traceback", "anomaly", "detect_anomaly", "_version", "version",
      "versions"}),
    # a side effect in the checkpointed block, run again in backward
    ({"checkpoint", "checkpointed", "checkpointing", "recompute", "recomputes", "recomputed", "recomputation",
      "recomputing", "twice", "double", "doubled", "side effect", "side effects", "counter", "count", "counted",
      "counts", "examples", "block", "block_function", "rerun", "reruns", "re run", "runs again", "ran again"},
     {"count", "counter", "counting", "counted", "counts", "print", "printed", "printing", "runs", "stepper",
      "log", "logs", "examples"}),
    # zero_grad of one optimizer only: the others' gradients add up
    ({"zero_grad", "zero", "zeroed", "zeroes", "zeros", "zeroing", "accumulate", "accumulates", "accumulated",
      "accumulating", "accumulation", "add up", "adds up", "added up", "adding up", "sum up", "summed",
      "optimizer", "optimizers", "body_optimizer", "head_optimizer"},
     {"grad", "grads", "gradient", "gradients", "norm", "norms", "grad_norm", "loss", "losses", "compare",
      "compared", "comparing", "print", "printed"}),
]
check("your DIAGNOSES, by the key words themselves", diagnosed, KEY_WORDS, words)
### END HIDDEN TESTS
