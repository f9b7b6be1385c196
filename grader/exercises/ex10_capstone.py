# %% markdown
# # Exercise 10 — capstone: a training script with lifecycle bugs
#
# *Lessons: all of them; above all `course/03b_retain_graph_and_lifetimes.ipynb`,
# `course/04_inplace_and_versions.ipynb`, `course/05_grad_modes.ipynb`,
# `course/06a_zero_grad_and_step.ipynb` and `course/08_checkpointing.ipynb`.*
#
# A colleague hands you `broken_train`, below: it trains a small recurrent model on a sequence, one
# chunk per step, carrying the model's state from chunk to chunk, and logs each step's training
# and validation loss and how many blocks it processed. It has several bugs in how it treats the
# graph — what is kept, freed, edited, accumulated and run again — and each of them is one a forum
# thread of this course ran into. Some fail loudly, some only waste memory or give wrong numbers.
#
# **The contract.** Write `fixed_train(lib, steps)`: the same model, data, optimizer (SGD, lr 0.05,
# momentum 0.9) and the same computation per step, meant as the colleague meant it:
#
# - each step trains on its own chunk: the gradient of that step's loss alone, with the state
#   coming in from the previous chunk treated as data (truncated backpropagation through time);
# - the features are centred, as the script says, without breaking backward;
# - `log["loss"]` and `log["val_loss"]` hold one number (a Python float) per step, and nothing
#   that is logged keeps a graph alive: after training, no graph keeps anything for backward;
# - `log["block runs"]` counts the blocks processed: one per step;
# - it returns `(log, [inp, cell, head])`, as `broken_train` does.
#
# The graded checks run your `fixed_train` with minigrad and the colleague's intent with PyTorch,
# and compare, in three groups, every step's loss and the trained parameters; the validation losses
# and the block count; and the bytes graphs still keep for backward once training is over
# (minigrad's ledger, `minigrad.memory.saved_bytes()`; torch's through saved-tensor hooks) — for 3
# steps where you can see them, and for a longer run hidden.
#
# **Open:** finding the bugs is the exercise: how many there are, and in which order you hunt them,
# is yours. The course's tools help: run `broken_train(minigrad, 3)` and read the error (then again
# under `minigrad.autograd.detect_anomaly()`, which names the forward line that made the tensor);
# print `minigrad.memory.saved_bytes()` after each step; draw a step's graph
# (`viz.draw(viz.describe(loss))`); count how often the checkpointed block runs.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Look for five things: what the state drags along from one chunk to the next, an in-place edit of
# a tensor a node saved, what the momentum buffer adds up, what the validation log keeps, and a
# side effect inside the checkpointed block.
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `retain_graph=True` silenced an error instead of fixing it: the state carries the previous
# chunk's graph, and every backward ran through all earlier chunks again (their gradients added
# up again too). Detach the state between chunks and drop `retain_graph`. `h -= h.mean(0)` edits
# `sigmoid`'s saved result: write it out of place. Gradients add up across steps unless
# `zero_grad()` runs each step. A validation loss kept as a tensor made with grad mode on keeps
# its whole graph, saved tensors included. Checkpoint runs its block again in backward: a counter
# inside it counts twice.
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# For each step: `optimizer.zero_grad()`; `h = sigmoid(inp(chunk) + state)`; `h = h - h.mean(0)`;
# `state = checkpoint(lib, block, h)` with a block that only computes; count the block outside it;
# the loss; `loss.backward()`; `optimizer.step()`; `state = state.detach()`; log `loss.item()`;
# the validation loss under `no_grad(lib)`, logged with `.item()`.
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

import torch

import minigrad
import minigrad.memory
from coursekit import viz
from coursekit.testing import check, graded

torch.set_num_threads(1)  # tiny tensors: several CPU threads would wait for each other more than they work


def sequence(lib, steps):
    """The data: ``steps`` chunks of 8 sequences of 4 features, their targets, and a validation chunk."""
    lib.manual_seed(1)
    return lib.randn(steps, 8, 4), lib.randn(steps, 8, 1), lib.randn(8, 4), lib.randn(8, 1)


def checkpoint(lib, function, *args):
    """``lib.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)``: graded code may not
    name ``lib.utils`` (torch's ways to load code live there), so it calls this."""
    return lib.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)


def no_grad(lib):
    """``lib.no_grad()``, for graded code, which may not name torch's grad-mode switches."""
    return lib.no_grad()


def recurrent_model(lib):
    """The model: an input layer (4 -> 4), a cell (4 -> 4, tanh) applied to each chunk's features
    with the state, and a head (4 -> 1)."""
    lib.manual_seed(0)
    return lib.nn.Linear(4, 4), lib.nn.Linear(4, 4), lib.nn.Linear(4, 1)


# %% locked broken
def broken_train(lib, steps):
    """Trains the recurrent model one chunk per step, carrying its state from chunk to chunk; logs
    each step's training and validation loss, and how many blocks it processed."""
    inp, cell, head = recurrent_model(lib)
    optimizer = lib.optim.SGD([*inp.parameters(), *cell.parameters(), *head.parameters()], lr=0.05, momentum=0.9)
    chunks, targets, x_val, y_val = sequence(lib, steps)
    state = lib.zeros(8, 4)
    log = {"loss": [], "val_loss": [], "block runs": 0}

    def block(h):
        log["block runs"] += 1
        return cell(h).tanh()

    for step in range(steps):
        h = (inp(chunks[step]) + state).sigmoid()
        h -= h.mean(0)  # centre the features
        state = checkpoint(lib, block, h)  # saves memory
        loss = ((head(state) - targets[step]) ** 2).mean()
        loss.backward(retain_graph=True)  # the second step failed without it
        optimizer.step()
        log["loss"].append(loss.item())
        log["val_loss"].append(((head(cell(inp(x_val).sigmoid()).tanh()) - y_val) ** 2).mean())
    return log, [inp, cell, head]


# %% code
# Run it, read what it says, then use the tools:
# log, modules = broken_train(minigrad, 3)
# %% markdown
# Write `fixed_train`: the colleague's loop as it was meant, without the bugs.
# %% answer fixed_train
def fixed_train(lib, steps):
    """``broken_train`` without its bugs."""
    ### BEGIN SOLUTION
    inp, cell, head = recurrent_model(lib)
    optimizer = lib.optim.SGD([*inp.parameters(), *cell.parameters(), *head.parameters()], lr=0.05, momentum=0.9)
    chunks, targets, x_val, y_val = sequence(lib, steps)
    state = lib.zeros(8, 4)
    log = {"loss": [], "val_loss": [], "block runs": 0}

    def block(h):
        return cell(h).tanh()

    for step in range(steps):
        optimizer.zero_grad()
        h = (inp(chunks[step]) + state).sigmoid()
        h = h - h.mean(0)
        state = checkpoint(lib, block, h)
        log["block runs"] += 1
        loss = ((head(state) - targets[step]) ** 2).mean()
        loss.backward()
        optimizer.step()
        state = state.detach()
        log["loss"].append(loss.item())
        with no_grad(lib):
            log["val_loss"].append(((head(cell(inp(x_val).sigmoid()).tanh()) - y_val) ** 2).mean().item())
    return log, [inp, cell, head]
    ### END SOLUTION
# %% locked check-fixed_train
fixed_train = graded(fixed_train)
# %% tests test-training 2+1
def trained(lib, steps):
    """fixed_train for ``steps`` steps: what it logged, the trained parameters' sums, and the bytes
    graphs still keep for backward once it returned (minigrad's ledger; torch's saved-tensor hooks)."""
    hooks = minigrad.memory.SavedBytes(torch) if lib is torch else None
    gc.collect()  # graphs that died in reference cycles earlier must not leave the count during training
    start = minigrad.memory.saved_bytes()
    with hooks or contextlib.nullcontext():
        log, modules = fixed_train(lib, steps)
        kept = hooks.current if hooks else minigrad.memory.saved_bytes() - start
    return {"losses": log["loss"], "validation losses": log["val_loss"], "block runs": log["block runs"],
            "parameter sums": [p.sum() for module in modules for p in module.parameters()],
            "bytes graphs keep for backward after training": kept}


def training(lib, steps):
    """Each step's loss and the trained parameters."""
    found = trained(lib, steps)
    return {"losses": found["losses"], "parameter sums": found["parameter sums"]}


check("3 steps: losses and parameters", training, 3)
### BEGIN HIDDEN TESTS
check("8 steps: losses and parameters", training, 8)
### END HIDDEN TESTS

# %% tests test-logs 1+1
def logs(lib, steps):
    """What the log holds besides the training losses: the validation losses, the blocks processed."""
    found = trained(lib, steps)
    return {"validation losses": found["validation losses"], "block runs": found["block runs"]}


check("3 steps: the logs", logs, 3)
### BEGIN HIDDEN TESTS
check("8 steps: the logs", logs, 8)
### END HIDDEN TESTS

# %% tests test-memory 1+1
def kept_after_training(lib, steps):
    """The bytes graphs still keep for backward once training is over: none, if nothing logged keeps one."""
    return {"bytes graphs keep for backward after training": trained(lib, steps)["bytes graphs keep for backward after training"]}


check("3 steps: what graphs keep afterwards", kept_after_training, 3)
### BEGIN HIDDEN TESTS
check("8 steps: what graphs keep afterwards", kept_after_training, 8)
### END HIDDEN TESTS
