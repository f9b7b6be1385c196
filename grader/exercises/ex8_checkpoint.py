# %% markdown
# # Exercise 8 — gradient checkpointing (non-reentrant)
#
# *Lesson: `course/08_checkpointing.ipynb`.*
#
# `minigrad.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)` runs `function` so
# that its graph keeps only the inputs; backward runs the function again to get the rest. You write
# it the way torch's non-reentrant checkpoint works: with saved-tensor hooks.
#
# ### The contract
#
# Your checkpoint must do what `torch.utils.checkpoint.checkpoint(function, *args,
# use_reentrant=False)` does. The graded tests run each scenario with torch's and with yours, and
# compare what they see:
#
# * **The same results** (`test-gradients`). The output and every gradient equal those without
#   checkpointing: one small body, a stack of six checkpointed blocks, and (hidden) `autograd.grad`
#   through a checkpoint, a number and a keyword argument passed to the body, a body that returns two
#   tensors, two checkpointed transformer blocks.
# * **The body runs again, and no more than it must** (`test-body-runs`). It runs once in the
#   forward and once more in each backward that reaches it; the rerun stops as soon as it has made
#   every tensor backward needs, so the body's lines after its last saved tensor do not run again.
#   With `retain_graph=True`, each backward runs it once more. Hidden: under `no_grad` or
#   `inference_mode` the body just runs, once; in a chain of three checkpoints each body runs once
#   more; a body that saves nothing is not run again.
# * **The same random numbers** (`test-random`). The rerun draws what the forward drew
#   (`torch.rand` in the body, `nn.Dropout`), and the generator outside goes on as if the body had
#   run once. Hidden: with `preserve_rng_state=False` the rerun draws anew, from wherever the
#   generator is.
# * **Less memory** (`test-memory`). The bytes the graphs keep for backward, at their peak in a
#   training step of eight blocks and right after the forward of three, are torch's. Hidden: under
#   `no_grad` nothing is kept; after backward nothing the rerun made is still alive (with the garbage
#   collector off); three backward passes through one checkpoint.
# * **Errors** (`test-inputs`, `test-mismatch`). An input of the body (or, hidden, a weight) edited
#   in place after the forward makes backward fail, as for any saved tensor. A rerun that saves fewer
#   tensors than the forward raises `CheckpointError`.
#
# The tests count the runs with a counter in the body (a side effect, like a `print`). They measure
# torch's bytes through its saved-tensor hooks (`memory.SavedBytes(torch)`), yours by
# `minigrad.memory`.
#
# ### What you write
#
# Five pieces of `minigrad.utils.checkpoint` (each stub keeps its signature and docstring):
#
# * `checkpointed_forward(function, args, kwargs, preserve_rng_state)`: what `checkpoint(...,
#   use_reentrant=False)` calls; it returns the body's output.
# * `_Frame.pack(self, tensor)`: the pack hook in force while the body runs in the forward: the
#   graph keeps what it returns in place of `tensor`.
# * `_Frame.unpack(self, holder)`: the unpack hook: it gets back what `pack` returned, and returns the
#   tensor backward needs.
# * `_Frame.recompute(self)`: runs the body again, for `unpack`.
# * `rerun(function, args, kwargs, rng)`: runs a body again as a backward needs it (`recompute`
#   calls it, and so does the backward of torch's other checkpoint, the reentrant one).
#
# A `_Frame` is the memory of one checkpointed call, given: `_Frame(function, inputs, kwargs, rng)`
# keeps its arguments as attributes of the same names. The setup imports what the reference is
# built from (`save`, `saved_tensors_hooks`, `enable_grad`, the random state's helpers, a few of the
# frame's own); each part's Hint 2 says what they are.
#
# ### What is yours to decide
#
# Parts 2 and 4 are open: what the forward's graph keeps in place of each tensor, how the rerun
# finds where each tensor it makes must go, what the rerun's own graph keeps, and how the rerun
# stops. Any choice that meets the contract passes. Three limits come from grading, not from torch:
#
# * of minigrad's objects, graded code sets only attributes of a frame (any but its methods) and
#   the `value` of the setup's holders (`_Holder`);
# * a class in graded code derives only from `object`, from your own classes, from `Exception` or
#   from minigrad's `Function`;
# * if the rerun runs the body under saved-tensor hooks of your own, what their pack hook returns
#   must not be a tensor, nor a list or tuple holding one: `minigrad.memory` counts every tensor a
#   graph saves, while torch's measure never sees the rerun's own graph, so the memory tests would
#   differ. Wrap such a tensor in an object (a holder).
#
# Each part below says what it must do. Its hints open on demand: a nudge, then the idea, then the
# pseudocode.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code"). The names below are all
# you need.
# %% locked setup
import gc
import warnings
import weakref

import torch

import minigrad
from minigrad import grad_mode, memory
from minigrad.autograd.graph import saved_tensors_hooks
from minigrad.function import PackedTensor, SavedTensor, save
from minigrad.grad_mode import enable_grad
from minigrad.tensor import Tensor
from coursekit.testing import check, graded, outcome
from minigrad.utils.checkpoint import (CheckpointError, _Frame, _Holder, _StopRecomputation, _rng_state,
                                       _set_rng_state)


def checkpointed(lib, function, *args, **kwargs):
    """``lib.utils.checkpoint.checkpoint``, non-reentrant (torch's, or minigrad's: yours)."""
    return lib.utils.checkpoint.checkpoint(function, *args, use_reentrant=False, **kwargs)


def peak_saved(lib, step):
    """The most bytes the graphs of ``step()`` kept for backward at once, and what they keep after
    it: torch's measured through its saved-tensor hooks, minigrad's by its own record."""
    if lib is torch:
        with memory.SavedBytes(torch) as saved:
            step()
        return {"peak": saved.peak, "after": saved.current}
    gc.collect()  # graphs that died in reference cycles earlier must not leave the count during the step
    memory.reset_peak()
    base = memory.saved_bytes()
    step()
    return {"peak": memory.peak_saved_bytes() - base, "after": memory.saved_bytes() - base}

# %% markdown
# ## Part 1 — `checkpointed_forward`
#
# `checkpointed_forward(function, args, kwargs, preserve_rng_state)` runs the body **once** and
# returns its output. Under grad mode, it leaves behind everything a later rerun needs: the body, its
# inputs, its keyword arguments and, unless `preserve_rng_state` is false, the random state the body
# starts from. An input edited in place after the forward must make backward fail. Without grad mode
# nothing is saved, so nothing needs to be rerun.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Which hooks must be in force while the body runs, and who answers them? And what happens to a
# tensor you keep in a plain list when someone later edits it in place?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# A `_Frame` is the memory of one checkpointed call: make one, and run the body with its `pack` and
# `unpack` as the saved-tensor hooks (`saved_tensors_hooks(pack, unpack)`). Keep each tensor input
# **saved** (`save(tensor)`, a `SavedTensor`), not as it is: a saved tensor records its version, so
# the version check catches an input edited in place after the forward. Take the random state
# (`_rng_state(args)`: the CPU's, and the CUDA devices' the inputs are on) before the body draws
# anything.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. Without grad mode (`grad_mode.is_grad_enabled()` is false): return `function(*args, **kwargs)`.
# 2. `inputs`: the arguments, each tensor replaced by `save(tensor)`, the others kept as they are.
# 3. `rng`: `_rng_state(args)`, or `None` when `preserve_rng_state` is false.
# 4. Make the frame: `_Frame(function, inputs, kwargs, rng)`.
# 5. With `saved_tensors_hooks(...)` in force, given the frame's `pack` and `unpack`, run the body
#    once and return its output.
#
# </details>
# %% part checkpointed_forward
# %% locked plug-checkpointed_forward
checkpointed_forward = graded(checkpointed_forward)
minigrad.utils.checkpoint.checkpointed_forward = checkpointed_forward
# %% markdown
# ## Part 2 — `_Frame.pack` (open)
#
# The pack hook: while the body runs in the forward, each tensor an op saves for backward comes here,
# and the graph keeps what `pack` returns **instead of the tensor**. What it returns must not keep
# the tensor alive (that is the memory checkpointing saves), and `unpack`, given it back, must find
# the tensor once the rerun has made it again. What the object is, and what the frame remembers of
# it, are up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# `unpack` gets back exactly what `pack` returned. What would you like to find there, once the rerun
# has run?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Hand out an empty box: the setup's `_Holder()` is one (its `.value` is `None` until something is
# put in it). The rerun saves the same tensors in the same order as the forward, so the rerun's k-th
# saved tensor goes into the k-th box handed out: record each box, in order. Every frame has
# `self.holders` for that, an empty `_Holders` (`append`, `len`, `self.holders[i]`): it holds each
# box weakly, so recording one does not keep it alive once the graph drops it (`self.holders[i]` is
# then `None`), and a box the graph dropped is not filled again.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. Make an empty `_Holder()` (its `.value` is `None`).
# 2. Append it to `self.holders`: the holders in the order they were handed out;
#    `self.holders[i]` is `None` once the graph let go of that one.
# 3. Return it.
#
# </details>
# %% part _Frame.pack
# %% locked plug-pack
pack = graded(pack)
minigrad.utils.checkpoint._Frame.pack = pack
# %% markdown
# ## Part 3 — `_Frame.unpack`
#
# The unpack hook: backward needs the tensor `pack` stood in for. Return it. The body reruns once in
# each backward that unpacks, however many tensors that backward unpacks: the first unpack of a
# backward has the body rerun, the others of the same backward use what that rerun made. Once handed
# out, the tensor must not stay with what `pack` returned: the graph would keep it alive, and the
# next backward (after `retain_graph=True`) would not rerun.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Count the reruns in `test-body-runs`: one per backward, however many tensors that backward unpacks.
# What tells `unpack` that this backward has not rerun the body yet?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# An empty holder means: nothing rerun yet in this backward. Rerun (`self.recompute()`: it fills
# every holder), then take the tensor out of the holder and leave it empty behind you.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. If the holder's `.value` is `None`: recompute (it fills every holder).
# 2. Take `holder.value`, then set `holder.value = None`, so the graph does not keep the tensor and
#    the next backward recomputes again.
# 3. Return the tensor you took.
#
# </details>
# %% part _Frame.unpack
# %% locked plug-unpack
unpack = graded(unpack)
minigrad.utils.checkpoint._Frame.unpack = unpack
# %% markdown
# ## Part 4 — `_Frame.recompute` (open) and `rerun`
#
# Run `self.function` again on the saved inputs and `self.kwargs`, through
# `rerun(self.function, inputs, self.kwargs, self.rng)` (grad mode on, the forward's random numbers:
# you write it next), and make again, for `unpack`, the tensors the forward's graph saved: the rerun
# saves the same tensors in the same order as the forward, and each goes to `unpack` detached (the
# rerun's own graph is thrown away). The rerun must:
#
# * see the inputs as they were saved, or fail if one was edited in place since;
# * stop as soon as it has made the last tensor the forward saved: the rest of the body must not
#   run again;
# * raise `CheckpointError` if the body ends before that (torch's message says how many tensors each
#   run saved), or saves more tensors than the forward did.
#
# How you find where each tensor goes, what the rerun's own graph keeps (see the limits above), and
# how you stop the body are yours to decide.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# The body saves its tensors through whatever saved-tensor hooks are in force. What if, during the
# rerun, those hooks were yours, and different from the forward's? And how can code inside a hook make
# the rest of the body stop?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Put your own pair of hooks in force for the rerun. The pack hook sees the rerun's saved tensors one
# by one, in the forward's order: the k-th goes, detached, into holder k (or nowhere, when the graph
# has let go of holder k: `self.holders[k]` is `None`), and the rerun's graph gets a holder of its
# own to keep. Count them with a local (`nonlocal` in the hook), an attribute of the frame, or an
# iterator over the positions. When the last holder is filled, raise an exception from the pack hook
# and catch it around the body: it unwinds the body. The setup's `_StopRecomputation` is one that
# nothing else raises (a class of your own, derived from `Exception`, works too).
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. The inputs: `saved.unpack(None)` for each one that was saved (a `SavedTensor`, or a
#    `PackedTensor` when hooks were in force at the forward; it gives the tensor back, or raises if
#    it was edited in place); the others as they are.
# 2. Run `rerun(self.function, inputs, self.kwargs, self.rng)` with:
#    - **its own saved-tensor hooks**: the pack hook fills the next holder, in order (unless it is
#      `None`), with the tensor **detached** (one that does not require grad can go in as it is),
#      and returns a new `_Holder` with that tensor in it; the unpack hook is
#      `lambda kept: kept.value`;
#    - **an early stop**: once the last holder is filled, raise `_StopRecomputation` from the pack
#      hook, and catch it around the body.
# 3. If the body finishes without filling every holder, or saves more tensors than the forward did,
#    raise `CheckpointError`.
#
# </details>
# %% part _Frame.recompute
# %% locked plug-recompute
recompute = graded(recompute)
minigrad.utils.checkpoint._Frame.recompute = recompute
# %% markdown
# ### `rerun`
#
# `rerun(function, args, kwargs, rng)` runs `function(*args, **kwargs)` again and returns what it
# returns, as a backward needs it:
#
# * with grad mode on: backward runs with grad mode off, and a body run without grad mode saves
#   nothing;
# * drawing the forward's random numbers: `rng` is the state `_rng_state` took before the forward
#   (or `None`: then the generator is used as it is); the generator outside is left as it was found.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Setting the generator's state back is easy; the difficulty is what it leaves behind. After the
# backward, where should the generator be, and what would setting its state have done to it?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `torch.random.fork_rng` saves the generators' states on entry and puts them back on exit; inside
# it, set the forward's state (`_set_rng_state(rng)`), and run the body with grad mode on
# (`enable_grad()`). `rng[1]` lists the CUDA devices whose generators it holds.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Inside `torch.random.fork_rng(devices=..., enabled=...)` (with `rng` `None`: no devices and
#   `enabled=False`) and `enable_grad()`:
#   - if `rng` is not `None`: `_set_rng_state(rng)`;
#   - return `function(*args, **kwargs)`.
#
# </details>
# %% part rerun
# %% locked plug-rerun
rerun = graded(rerun)
minigrad.utils.checkpoint.rerun = rerun
# %% code
# Try it:
# x = minigrad.ones(2, requires_grad=True)
# y = minigrad.utils.checkpoint.checkpoint(lambda x: (x.exp() * x).sum(), x, use_reentrant=False)
# y.backward(); x.grad
# %% tests test-gradients 2+1 checkpointed_forward _Frame.pack _Frame.unpack _Frame.recompute rerun
def body_of(lib, runs, ends):
    """A small body with saved tensors that counts how often it starts and how often it reaches its
    last line (side effects, as a print would be)."""
    def body(x, w):
        runs.append("start")
        h = (x @ w).tanh()
        out = (h * h.exp()).sum(dim=1)
        ends.append("end")
        return out
    return body


def same_gradients(lib):
    """The body checkpointed and not: values and gradients, and their largest difference."""
    results = {}
    for mode in ("checkpointed", "plain"):
        lib.manual_seed(0)
        x = lib.randn(3, 4, requires_grad=True)
        w = lib.randn(4, 5, requires_grad=True)
        body = body_of(lib, [], [])
        out = checkpointed(lib, body, x, w) if mode == "checkpointed" else body(x, w)
        out.sum().backward()
        results[mode] = (out, x.grad, w.grad)
    difference = max((a - b).abs().max().item() for a, b in zip(results["checkpointed"], results["plain"]))
    return {"out": results["checkpointed"][0], "x.grad": results["checkpointed"][1],
            "w.grad": results["checkpointed"][2], "largest difference from no checkpoint": difference}


def deep_model(lib, checkpointed_blocks, depth=6, width=8):
    """A stack of blocks, each one checkpointed or not; the gradients of every parameter."""
    lib.manual_seed(0)
    layers = [lib.nn.Linear(width, width) for _ in range(depth)]
    h = lib.randn(4, width)
    for layer in layers:
        def block(h, layer=layer):
            return (layer(h).tanh() * 2).exp()
        h = checkpointed(lib, block, h) if checkpointed_blocks else block(h)
    h.mean().backward()
    return [(layer.weight.grad, layer.bias.grad) for layer in layers]


check("one checkpointed body, same gradients as without", same_gradients)
check("six checkpointed blocks, every parameter's gradient", deep_model, True)
### BEGIN HIDDEN TESTS


def through_autograd_grad(lib):
    lib.manual_seed(0)
    x = lib.randn(3, 4, requires_grad=True)
    w = lib.randn(4, 5, requires_grad=True)
    out = checkpointed(lib, body_of(lib, [], []), x, w).sum()
    return lib.autograd.grad(out, (x, w))


def keyword_and_number_arguments(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = checkpointed(lib, lambda x, power, scale: (x.exp() ** power * scale).sum(), x, 2, scale=3.0)
    out.backward()
    return out, x.grad


def tuple_output(lib):
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    first, second = checkpointed(lib, lambda x: (x.exp(), (x * x).tanh()), x)
    (first * second).sum().backward()
    return first, second, x.grad


def small_transformer(lib):
    """The tutorial's transformer block (attention, feed-forward, layer norms), two of them, each
    checkpointed, at small sizes: the gradients equal those without checkpointing, and their norms
    torch's (to rounding: minigrad's attention is torch's ops one by one, torch's is fused)."""
    nn = lib.nn
    lib.manual_seed(0)
    blocks = []
    for _ in range(2):
        attn = nn.MultiheadAttention(8, 2, batch_first=True)
        ffn = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))
        norm1, norm2 = nn.LayerNorm(8), nn.LayerNorm(8)

        def block(x, attn=attn, ffn=ffn, norm1=norm1, norm2=norm2):
            x = norm1(x + attn(x, x, x)[0])
            return norm2(x + ffn(x))
        blocks.append((block, attn))
    x = lib.randn(2, 5, 8)
    target = lib.randn(2, 5, 8)
    grads = {}
    for mode in ("checkpointed", "plain"):
        h = x
        for block, _ in blocks:
            h = checkpointed(lib, block, h) if mode == "checkpointed" else block(h)
        grads[mode] = lib.autograd.grad((h * target).sum(), [attn.in_proj_weight for _, attn in blocks])
    difference = max((a - b).abs().max().item() for a, b in zip(grads["checkpointed"], grads["plain"]))
    return {"largest difference from no checkpoint": difference,
            "gradient norms": [round(g.norm().item(), 3) for g in grads["checkpointed"]]}


check("autograd.grad through a checkpoint", through_autograd_grad)
check("a number and a keyword argument reach the body", keyword_and_number_arguments)
check("a body that returns two tensors", tuple_output)
check("two checkpointed transformer blocks", small_transformer)
### END HIDDEN TESTS

# %% tests test-body-runs 2+1 checkpointed_forward _Frame.pack _Frame.unpack _Frame.recompute rerun
def body_runs(lib):
    """How often the body starts after the forward and after the backward, and how often it reaches
    its last line (after the last tensor it saves)."""
    runs, ends = [], []
    x = lib.ones(3, 4, requires_grad=True)
    w = lib.ones(4, 5, requires_grad=True)
    out = checkpointed(lib, body_of(lib, runs, ends), x, w)
    after_forward = len(runs)
    out.sum().backward()
    return {"starts after forward": after_forward, "starts after backward": len(runs), "ends": len(ends)}


def retained(lib):
    """retain_graph=True: each backward recomputes."""
    runs = []
    x = lib.ones(2, 4, requires_grad=True)
    w = lib.ones(4, 3, requires_grad=True)
    out = checkpointed(lib, body_of(lib, runs, []), x, w).sum()
    out.backward(retain_graph=True)
    after_first = len(runs)
    out.backward()
    return {"starts after one backward": after_first, "after two": len(runs), "x.grad": x.grad}


def outputs_one_at_a_time(lib):
    """A body with two outputs, backpropagated one backward at a time: each backward recomputes for
    itself; the third recomputes when the first one has already freed what it used (exp's result)."""
    runs = []
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    first, second = checkpointed(lib, lambda x: (runs.append(1), x.exp(), (x * x).tanh())[1:], x)
    first.sum().backward()
    after_first = len(runs)
    second.sum().backward(retain_graph=True)
    after_second = len(runs)
    return {"starts after each backward": [after_first, after_second],
            "third backward": outcome(second.sum().backward), "starts after it": len(runs), "x.grad": x.grad}


def fails_when_run_again(lib):
    """A body that raises when it runs a second time (it expects to run once): the recomputation in
    backward raises that error, as it is."""
    runs = []

    def body(x):
        runs.append(1)
        if len(runs) > 1:
            raise ValueError("the body ran again")
        return x.exp().sum()

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = checkpointed(lib, body, x)
    return {"backward": outcome(out.backward), "starts": len(runs)}


def under_no_grad(lib):
    runs = []
    x = lib.ones(2, 4, requires_grad=True)
    with lib.no_grad():
        out = checkpointed(lib, body_of(lib, runs, []), x, lib.ones(4, 3))
    return out, out.requires_grad, len(runs)


check("a counter in the body: forward, backward, early stop", body_runs)
check("two backward passes (retain_graph=True)", retained)
check("two outputs, backpropagated one at a time", outputs_one_at_a_time)
check("a body that fails when it runs again", fails_when_run_again, message=True)
check("under no_grad the body just runs", under_no_grad)
### BEGIN HIDDEN TESTS


def under_inference_mode(lib):
    runs = []
    with lib.inference_mode():
        x = lib.ones(2, 4)
        out = checkpointed(lib, body_of(lib, runs, []), x, lib.ones(4, 3))
    return out, len(runs)


def chain_of_three(lib):
    runs = {0: [], 1: [], 2: []}
    x = lib.ones(2, 4, requires_grad=True)
    w = lib.ones(4, 4) * 0.1
    h = x
    for i in range(3):
        h = checkpointed(lib, lambda h, w, i=i: (runs[i].append(1), (h @ w).tanh())[1], h, w)
    h.sum().backward()
    return [len(runs[i]) for i in range(3)], x.grad


def saves_nothing(lib):
    """A body whose ops save nothing leaves no holder: nothing to recompute."""
    runs = []
    x = lib.ones(3, requires_grad=True)
    out = checkpointed(lib, lambda x: (runs.append(1), (x + 1).sum())[1], x)
    out.backward()
    return len(runs), x.grad


check("under inference_mode the body just runs", under_inference_mode)
check("three checkpoints in a chain: each body once more", chain_of_three)
check("a body that saves nothing is not run again", saves_nothing)
### END HIDDEN TESTS

# %% tests test-random 2+1 checkpointed_forward _Frame.pack _Frame.unpack _Frame.recompute rerun
def random_in_the_body(lib):
    """torch.rand in the body: the recomputation must draw the same numbers, and the generator outside
    must go on as if the body had run once."""
    lib.manual_seed(0)
    x = lib.randn(3, 4, requires_grad=True)

    def body(x):
        noise = lib.rand(3, 4)
        return (x * noise).exp().sum()

    out = checkpointed(lib, body, x)
    after_forward = lib.rand(2)
    out.backward()
    after_backward = lib.rand(2)
    return {"out": out, "x.grad": x.grad, "drawn after forward": after_forward, "after backward": after_backward}


def dropout_block(lib, checkpoint_it):
    """nn.Dropout in a checkpointed block: the same mask in the recomputation, so the same gradients
    as without checkpointing."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(6, 6)
    drop = lib.nn.Dropout(0.5)
    x = lib.randn(4, 6, requires_grad=True)

    def block(h):
        return drop(layer(h)).tanh()

    out = checkpointed(lib, block, x) if checkpoint_it else block(x)
    (out * out).sum().backward()
    return x.grad, layer.weight.grad


check("torch.rand in the body", random_in_the_body)
check("dropout in a checkpointed block", dropout_block, True)
### BEGIN HIDDEN TESTS


def not_preserved(lib):
    """preserve_rng_state=False: the recomputation draws anew, from wherever the generator is."""
    lib.manual_seed(0)
    x = lib.randn(3, requires_grad=True)
    out = lib.utils.checkpoint.checkpoint(lambda x: (x * lib.rand(3)).exp().sum(), x, use_reentrant=False,
                                          preserve_rng_state=False)
    lib.manual_seed(5)
    out.backward()
    return out, x.grad, lib.rand(2)


check("preserve_rng_state=False", not_preserved)
### END HIDDEN TESTS

# %% tests test-memory 2+1 checkpointed_forward _Frame.pack _Frame.unpack _Frame.recompute rerun
def deep_step(lib, checkpoint_blocks, depth=8, width=64, batch=16):
    """One training step of eight blocks, each checkpointed or not."""
    lib.manual_seed(0)
    layers = [lib.nn.Linear(width, width) for _ in range(depth)]
    x = lib.randn(batch, width, requires_grad=True)

    def step():
        h = x
        for layer in layers:
            def block(h, layer=layer):
                return (layer(h).tanh() * 2).exp()
            h = checkpointed(lib, block, h) if checkpoint_blocks else block(h)
        h.sum().backward()
    return step


def peak_drop(lib):
    """The bytes a step's graph keeps for backward, at most, with and without checkpointing."""
    plain = peak_saved(lib, deep_step(lib, False))
    kept = peak_saved(lib, deep_step(lib, True))
    return {"plain": plain, "checkpointed": kept, "drop": round(1 - kept["peak"] / plain["peak"], 3)}


def after_forward(lib):
    """What a checkpointed stack keeps right after its forward: its inputs, nothing more."""
    measured = {}

    def forward_only():
        lib.manual_seed(0)
        x = lib.randn(16, 32, requires_grad=True)
        w = lib.randn(32, 32, requires_grad=True)
        h = x
        for _ in range(3):
            h = checkpointed(lib, lambda h, w: (h @ w).tanh().exp(), h, w)
        measured["result"] = h
    return peak_saved(lib, forward_only)


def recomputed_tensors_freed(lib):
    """After backward, nothing the recomputation made is still alive (no reference cycle keeps it:
    the garbage collector is off while this runs)."""
    made = []

    def body(x):
        h = x.exp()
        made.append(weakref.ref(h))
        return (h * h.tanh()).sum()

    gc.disable()
    try:
        x = lib.ones(3, requires_grad=True)
        out = checkpointed(lib, body, x)
        out.backward()
        return {"bodies run": len(made), "their tensors still alive": sum(ref() is not None for ref in made)}
    finally:
        gc.enable()


def no_grad_keeps_nothing(lib):
    def step():
        x = lib.randn(8, 8, requires_grad=True)
        with lib.no_grad():
            checkpointed(lib, lambda x: (x @ x).exp(), x)
    return peak_saved(lib, step)


def alive(lib):
    """The bytes of storage alive (LiveBytes: every storage an op makes, torch's or minigrad's) after
    three checkpointed blocks' forward, after a backward that retains the graph, and after another
    one: what the blocks made in between is not kept, neither after the forward nor after the
    backward that took it."""
    lib.manual_seed(0)
    layers = [lib.nn.Linear(32, 32) for _ in range(3)]
    x = lib.randn(8, 32, requires_grad=True)
    gc.collect()
    with memory.LiveBytes() as live:
        h = x
        for layer in layers:
            h = checkpointed(lib, lambda h, layer=layer: (layer(h).tanh() * 2).exp(), h)
        after_forward = live.current
        h.sum().backward(retain_graph=True)
        after_retained = live.current
        h.sum().backward()
        return {"after the forward": after_forward, "after a backward with retain_graph=True": after_retained,
                "after another": live.current}


check("the peak of a step of eight blocks, with and without checkpointing", peak_drop)
check("what three checkpointed blocks keep after the forward", after_forward)
check("the recomputed tensors are freed after backward", recomputed_tensors_freed)
check("under no_grad nothing is kept", no_grad_keeps_nothing)
check("bytes alive after the forward and after each backward", alive)
### BEGIN HIDDEN TESTS


def retained_twice(lib):
    """retain_graph=True twice, then a last backward: the graph keeps its inputs until the last one."""
    def step():
        x = lib.randn(8, 16, requires_grad=True)
        w = lib.randn(16, 16, requires_grad=True)
        out = checkpointed(lib, lambda x, w: (x @ w).tanh().exp().sum(), x, w)
        out.backward(retain_graph=True)
        out.backward(retain_graph=True)
        out.backward()
    return peak_saved(lib, step)


check("three backward passes through one checkpoint", retained_twice)
### END HIDDEN TESTS

# %% tests test-inputs 1+1 checkpointed_forward _Frame.pack _Frame.unpack _Frame.recompute
def input_edited_in_place(lib):
    """An input of the body edited in place after the forward: the recomputation would see other
    numbers, so backward refuses, as for any saved tensor."""
    x = lib.ones(2, 4, requires_grad=True)
    a = x * 2
    w = lib.ones(4, 3)
    out = checkpointed(lib, body_of(lib, [], []), a, w).sum()
    with lib.no_grad():
        a.add_(1)
    return outcome(out.backward), x.grad


check("an input edited in place after the forward", input_edited_in_place)
### BEGIN HIDDEN TESTS


def weight_edited_in_place(lib):
    x = lib.ones(2, 4, requires_grad=True)
    w = lib.ones(4, 3, requires_grad=True)
    out = checkpointed(lib, body_of(lib, [], []), x, w).sum()
    with lib.no_grad():
        w.mul_(2)
    return outcome(out.backward), x.grad


check("a weight edited in place after the forward", weight_edited_in_place)
### END HIDDEN TESTS

# %% tests test-mismatch 1 checkpointed_forward _Frame.pack _Frame.unpack _Frame.recompute rerun
def different_recomputation(lib):
    """A body whose recomputation saves fewer tensors than its forward did."""
    calls = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    def body(x):
        calls.append(1)
        return x.exp().exp().sum() if len(calls) == 1 else x.sum() * 1.0

    out = checkpointed(lib, body, x)
    return outcome(out.backward), len(calls)


check("a recomputation that saves fewer tensors than the forward", different_recomputation)
