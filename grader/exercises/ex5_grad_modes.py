# %% markdown
# # Exercise 5 — grad modes, `detach`, and a leak you measure
#
# *Lesson: `course/05_grad_modes.ipynb`.*
#
# Whether an op records the backward graph depends on two switches that minigrad keeps in
# `_state` (one per thread, as torch's): `_state.grad_enabled` (grad mode) and `_state.inference`
# (inference mode). Every grad-mode class is a `_Mode`: `with mode:` calls `mode._enter()`, and when
# the block ends, however it ends, `mode._exit()`; each mode's `_set()` switches to what it stands
# for (`no_grad`'s sets `_state.grad_enabled = False`). As a decorator (`@minigrad.no_grad()`), a
# mode runs each call of the function in a fresh mode made from `self._args` (what it was made with).
#
# **The contract.** What torch does, and your minigrad must do:
#
# - inside `no_grad` ops record nothing; `enable_grad` switches recording back on;
#   `set_grad_enabled(mode)` switches when it is made, so it works as a plain call too, and as a
#   decorator it must not stay switched; `inference_mode()` turns grad mode off and inference mode
#   on (what is made inside is an inference tensor), `inference_mode(False)` the reverse;
# - blocks nest: leaving a block puts back the modes that were in force when it was entered, even
#   when an exception leaves it. Leaving `no_grad` inside another `no_grad` leaves grad mode
#   **off**;
# - `t.detach()` is a new tensor on the same memory, out of the graph, sharing `t`'s version
#   counter (an edit of either is seen by graphs that saved the other) and its inference flag;
# - a training step that logs its losses keeps no graph alive once it is over.
#
# You write, keeping each stub's signature and docstring: `_Mode._enter(self)` and
# `_Mode._exit(self)`, `inference_mode._set(self)`, `Tensor.detach(self)` and
# `train_step(lib, model, batch, log)`. The grader lets your code set only these attributes of
# minigrad's objects: `_state.grad_enabled` and `_state.inference`; on a mode object (not its
# class), attributes of your own naming, any that `_Mode` does not define itself (not `_args`, not
# its methods); a tensor's `_version_counter` and `_is_inference`.
#
# The graded checks run the same code with PyTorch and with your minigrad and compare what each
# recorded: `no_grad` and what comes after it, nested blocks of every kind, a block left by an
# exception, `@no_grad()` on a recursive function, `nn.Linear` made under `no_grad`, one `no_grad`
# object entered twice, the tutorial's backward on a loss computed under `no_grad` (seed 004, its
# error word for word); `set_grad_enabled` as a call, a block and a decorator; `inference_mode`
# inside and outside other modes, as a decorator, an inference tensor used after the block, and
# version counters in inference mode; `detach()` (its flags, an in-place edit through it,
# `x.detach() * x`, a leaf's detach, an inference tensor's detach); and the leak, graded by
# **measuring** the bytes that graphs keep for backward after each step
# (`minigrad.memory.saved_bytes()`; torch's through its saved-tensor hooks), not by reading your
# code.
#
# **Open:** Part 4, the leak. Finding what the given step keeps, and how you stop it, is yours:
# the checks compare only what is logged, the bytes kept after each step and the trained
# parameters. Each part has three hints, folded: open them one at a time, only when you need them.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd — which includes grad-mode switches such as `torch.no_grad()` —, files, `sys`/`os`,
# `exec`/`eval` or dunder attributes; Validate names any such construct ("not graded: `import os`
# at ... line 2 is not allowed in graded code").
# %% locked setup
import contextlib
import gc

import torch

import minigrad
import minigrad.memory
from minigrad.grad_mode import _Mode, _state
from minigrad.tensor import Tensor
from coursekit.testing import check, graded, outcome


def modes(lib):
    """The two switches, now."""
    return {"grad mode": lib.is_grad_enabled(), "inference mode": lib.is_inference_mode_enabled()}


def flags(tensor):
    """What a tensor says about the graph."""
    return {"requires_grad": tensor.requires_grad, "grad_fn": tensor.grad_fn, "is_leaf": tensor.is_leaf}


def normal_mode():
    """Grad mode on, inference mode off, whatever an earlier check left switched: each test cell
    grades what it is about."""
    _state.grad_enabled, _state.inference = True, False

# %% markdown
# ## Part 1 — entering and leaving a mode
# `_enter` switches to this mode (with `self._set()`), and `_exit` puts back what was in force
# before: both switches, grad mode and inference mode. `set_grad_enabled` runs your `_enter` when
# it is made and your `_exit` when it is used as a decorator.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Should `_exit` switch grad mode on? Think of `no_grad` inside `no_grad`, and of `enable_grad`
# inside `no_grad`.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `_exit` cannot know what to put back unless `_enter` wrote it down. Remember both switches as
# they are on entry, on `self`, under names of your own (say `self._was_grad_enabled` and
# `self._was_inference`, or one pair): each mode object keeps its own record, so blocks nest, and a
# decorator makes a fresh mode for each call, so recursive calls each restore their own. Then
# switch with `self._set()`.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - `_enter`: copy `_state.grad_enabled` into `self._was_grad_enabled` and `_state.inference` into
#   `self._was_inference`; then call `self._set()`.
# - `_exit`: copy them back, the other way round.
#
# </details>
# %% part _Mode._enter
# %% locked plug-enter
_enter = graded(_enter)
minigrad.grad_mode._Mode._enter = _enter
# %% part _Mode._exit
# %% locked plug-exit
_exit = graded(_exit)
minigrad.grad_mode._Mode._exit = _exit
# %% code
# Try it: x = minigrad.ones(2, requires_grad=True)
# with minigrad.no_grad():
#     with minigrad.no_grad():
#         pass
#     print((x * 2).requires_grad, minigrad.is_grad_enabled())   # False False
# %% tests test-nesting 2+1 _Mode._enter _Mode._exit
def no_grad_then_after(lib):
    """Inside no_grad, x * 2 records nothing; after the block grad mode is on again."""
    x = lib.ones(2, requires_grad=True)
    with lib.no_grad():
        inside = flags(x * 2), modes(lib)
    return {"inside": inside, "after": (flags(x * 2), modes(lib))}


def nested(lib, outer, inner):
    """A mode inside another: leaving the inner block puts back the outer block's mode."""
    x = lib.ones(2, requires_grad=True)
    seen = {}
    with getattr(lib, outer)():
        with getattr(lib, inner)():
            seen["inner block"] = flags(x * 2)
        seen["back in the outer block"] = flags(x * 2), modes(lib)
    seen["after both"] = modes(lib)
    return seen


def backward_under_no_grad(lib):
    """The tutorial (seed 004) on a training loop wrapped in no_grad by mistake: "The model forward
    pass runs, the loss is computed, and nothing happens." backward() does not do nothing silently:
    the loss has no grad_fn, and backward raises (torch's message)."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 1)
    x = lib.randn(4, 3)
    with lib.no_grad():
        loss = layer(x).pow(2).mean()
    return outcome(loss.backward), loss.requires_grad, layer.weight.grad


normal_mode()
check("no_grad, then after it", no_grad_then_after)
check("seed 004: backward() on a loss computed under no_grad", backward_under_no_grad, message=True)
check("enable_grad inside no_grad", nested, "no_grad", "enable_grad")
check("no_grad inside no_grad", nested, "no_grad", "no_grad")
### BEGIN HIDDEN TESTS


def error_inside(lib):
    """A block left by an exception puts the mode back too."""
    with lib.no_grad():
        with lib.enable_grad():
            outcome(lambda: 1 / 0)
            try:
                with lib.no_grad():
                    raise ValueError("left by an exception")
            except ValueError:
                pass
            inner = modes(lib)
        outer = modes(lib)
    return inner, outer, modes(lib)


def decorated(lib):
    """@no_grad(): each call runs in a fresh mode, so recursive calls restore their own."""
    x = lib.ones(2, requires_grad=True)

    @lib.no_grad()
    def halve(t, depth):
        return (t * 0.5, modes(lib)) if depth == 0 else halve(t, depth - 1)

    with lib.enable_grad():
        half, inside = halve(x, 3)
        after_call = modes(lib)
    return flags(half), inside, after_call, flags(x * 2)


def module_made_under_no_grad(lib):
    """nn.Linear initialises its parameters under no_grad: made inside a no_grad block, it must not
    switch grad mode back on; its parameters still require grad."""
    lib.manual_seed(0)
    with lib.no_grad():
        layer = lib.nn.Linear(2, 2)
        inside = modes(lib), flags(layer(lib.ones(2)))
    return inside, flags(layer.weight), flags(layer(lib.ones(2))), modes(lib)


def one_object_twice(lib):
    """One no_grad object entered again inside an enable_grad block inside itself."""
    x = lib.ones(2, requires_grad=True)
    off = lib.no_grad()
    with off:
        with lib.enable_grad():
            with off:
                deepest = flags(x * 2)
            middle = modes(lib)
        outer = modes(lib)
    return deepest, middle, outer, modes(lib)


normal_mode()
check("an exception inside no_grad", error_inside)
check("@no_grad() on a recursive function", decorated)
check("nn.Linear made under no_grad", module_made_under_no_grad)
check("one no_grad object entered twice", one_object_twice)
check("no_grad inside enable_grad inside no_grad", nested, "enable_grad", "no_grad")
### END HIDDEN TESTS

# %% markdown
# ### `set_grad_enabled`, which switches when it is made (your `_enter` and `_exit` again)
# %% tests test-set_grad_enabled 1+1 _Mode._enter _Mode._exit
def as_a_call(lib):
    """set_grad_enabled(False) as a plain call: off until set_grad_enabled(True)."""
    x = lib.ones(2, requires_grad=True)
    lib.set_grad_enabled(False)
    off = flags(x * 2), modes(lib)
    lib.set_grad_enabled(True)
    return {"after set_grad_enabled(False)": off, "after set_grad_enabled(True)": (flags(x * 2), modes(lib))}


def as_a_block(lib, outer, mode):
    x = lib.ones(2, requires_grad=True)
    with getattr(lib, outer)():
        with lib.set_grad_enabled(mode):
            inside = flags(x * 2), modes(lib)
        back = modes(lib)
    return {"inside": inside, "back in the outer block": back, "after": modes(lib)}


normal_mode()
check("set_grad_enabled(False) as a call", as_a_call)
check("with set_grad_enabled(True) inside no_grad", as_a_block, "no_grad", True)
### BEGIN HIDDEN TESTS


def as_a_decorator(lib):
    """Made as a decorator it must not stay switched; each call switches."""
    x = lib.ones(2, requires_grad=True)

    @lib.set_grad_enabled(False)
    def double(t):
        return t * 2, modes(lib)

    made = modes(lib)
    doubled, inside = double(x)
    return made, flags(doubled), inside, modes(lib)


normal_mode()
check("with set_grad_enabled(False) inside enable_grad", as_a_block, "enable_grad", False)
check("@set_grad_enabled(False)", as_a_decorator)
### END HIDDEN TESTS

# %% markdown
# ## Part 2 — `inference_mode`
# `inference_mode._set(self)` switches to what the mode stands for: `inference_mode()` (its
# `self._args` is `(True,)`) turns grad mode off and inference mode on; `inference_mode(False)`
# turns grad mode on and inference mode off.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Compare with `no_grad`'s `_set`, which sets one switch. This one sets two, from one bool.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `self._args[0]` is the bool the mode was made with. Inference mode takes that value; grad mode
# takes the opposite.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Set grad mode to the opposite of `self._args[0]`, and inference mode to `self._args[0]` itself.
#
# </details>
# %% part inference_mode._set
# %% locked plug-inference_mode
_set = graded(_set)
minigrad.grad_mode.inference_mode._set = _set
# %% tests test-inference-mode 2+1 _Mode._enter _Mode._exit inference_mode._set
def inside_inference_mode(lib):
    """Grad mode off, inference mode on; what is made inside is an inference tensor; after the block
    both switches are back."""
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        y = x * 2
        inside = modes(lib)
        made = lib.ones(2)
    return {"inside": inside, "y": flags(y), "y.is_inference()": y.is_inference(),
            "made inside: is_inference()": made.is_inference(), "after": modes(lib)}


def inference_mode_false(lib, outer):
    """inference_mode(False) switches back to normal mode inside another mode's block."""
    x = lib.ones(2, requires_grad=True)
    with getattr(lib, outer)():
        with lib.inference_mode(False):
            y = x * 2
            inside = modes(lib), lib.ones(2).is_inference()
        back = modes(lib)
    return {"inside": inside, "y": flags(y), "back in the outer block": back, "after": modes(lib)}


normal_mode()
check("inside inference_mode", inside_inference_mode)
check("inference_mode(False) inside inference_mode", inference_mode_false, "inference_mode")
### BEGIN HIDDEN TESTS


def inference_inside_no_grad(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.no_grad():
        with lib.inference_mode():
            inside = modes(lib), (x * 2).is_inference()
        back = modes(lib), (x * 2).is_inference()
    return inside, back, modes(lib)


def decorated_inference(lib):
    x = lib.ones(2, requires_grad=True)

    @lib.inference_mode()
    def predict(t):
        return t * 2

    made = modes(lib)
    y = predict(x)
    return made, flags(y), y.is_inference(), modes(lib)


def inference_tensor_afterwards(lib):
    """An inference tensor outside the block: an op that does not save it records a graph through
    it; one that would save it for backward refuses."""
    with lib.inference_mode():
        frozen = lib.full((2,), 3.0)
    w = lib.ones(2, requires_grad=True)
    (w + frozen).sum().backward()
    return {"w.grad": w.grad, "w * frozen": outcome(lambda: w * frozen),
            "w * frozen.clone()": flags(w * frozen.clone())}


def inference_and_versions(lib):
    """seed 004's "inference_mode disables version tracking": a normal tensor edited inside the block
    is counted; an inference tensor has no counter, and may be edited in place only inside the mode."""
    a = lib.ones(2)
    with lib.inference_mode():
        a.mul_(2)
        made = lib.ones(2)
        made.add_(1)
    return {"a._version": a._version, "made._version": outcome(lambda: made._version),
            "made.add_(1) outside": outcome(lambda: made.add_(1)), "made": made}


normal_mode()
check("inference_mode(False) inside no_grad", inference_mode_false, "no_grad")
check("inference_mode inside no_grad", inference_inside_no_grad)
check("@inference_mode()", decorated_inference)
check("an inference tensor after the block", inference_tensor_afterwards)
check("inference_mode and version counters", inference_and_versions)
### END HIDDEN TESTS

# %% markdown
# ## Part 3 — `detach`
# `Tensor.detach(self)`: a new tensor on the same memory (`self._data`), with no `grad_fn` and
# `requires_grad=False`, sharing the version counter (`self._version_counter`; an inference
# tensor has `None` there: keep the new tensor's own) and the inference flag (`_is_inference`).
#
# <details><summary>Hint 1 — a nudge</summary>
#
# What must the new tensor share with `self`, and what must it not have?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `Tensor(storage)` makes a tensor with no history that requires no grad, and a version counter
# of its own. Give it `self`'s counter instead, when `self` has one, so that an edit of either is
# an edit of both; and copy `self._is_inference`, so that the detach of an inference tensor is one
# too.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Make `out`, a `Tensor` on `self._data`.
# - If `self` has a version counter, give `out` that same counter object.
# - Copy `self`'s inference flag onto `out`. Return `out`.
#
# </details>
# %% part Tensor.detach
# %% locked plug-detach
detach = graded(detach)
minigrad.Tensor.detach = detach
# %% tests test-detach 2+1 _Mode._enter _Mode._exit inference_mode._set Tensor.detach
def what_detach_gives(lib):
    a = lib.tensor([0.5, 1.0], requires_grad=True)
    e = a.exp()
    d = e.detach()
    return {"e": flags(e), "d": flags(d), "d's values": d}


def editing_the_detached(lib):
    """d = e.detach() shares e's memory and version counter: editing d in place changes e, and the
    node that saved e refuses to backward."""
    a = lib.tensor([0.5, 1.0], requires_grad=True)
    e = a.exp()
    d = e.detach()
    d.mul_(2)
    return {"e after d.mul_(2)": e, "versions of e and d": (e._version, d._version),
            "e.sum().backward()": outcome(e.sum().backward), "a.grad": a.grad}


def detach_of_an_inference_tensor(lib):
    """An inference tensor's detach is one too, with a version counter of its own."""
    with lib.inference_mode():
        frozen = lib.ones(2)
    d = frozen.detach()
    return {"is_inference()": d.is_inference(), "d": flags(d), "d._version": outcome(lambda: d._version),
            "values": d}


normal_mode()
check("e.detach()", what_detach_gives)
check("editing e.detach() in place", editing_the_detached)
check("an inference tensor's detach", detach_of_an_inference_tensor)
### BEGIN HIDDEN TESTS


def gradient_stops_at_detach(lib):
    """In x.detach() * x the detached factor is a constant: one path for the gradient, not two."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x.detach() * x).sum().backward()
    return x.grad


def detach_of_a_leaf(lib):
    """A leaf's detach can be made a leaf of its own: gradients stop there."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    d = w.detach()
    seen = flags(d)
    d.requires_grad_()
    (d * 3).sum().backward()
    return seen, d.grad, w.grad


normal_mode()
check("x.detach() * x", gradient_stops_at_detach)
check("a leaf's detach", detach_of_a_leaf)
### END HIDDEN TESTS

# %% markdown
# ## Part 4 — the leak
#
# `leaky_train_step` trains a model for one step and logs the training loss and the loss on a
# validation batch. Run it for a few steps and the bytes that graphs keep for backward grow with
# every step (the free cell below measures them). Write `train_step`: the same step, the same
# numbers logged, with nothing kept after the step. Log Python numbers, as torch's run of the fixed
# loop does. (The idiomatic validation is under `torch.no_grad()`, but graded code can't switch grad
# modes; you don't need it here.)
#
# **Open:** what you change, and how. The checks compare the log, the bytes kept after each
# step, and the trained parameters: 4 steps of one `Linear`, and, hidden, 6 steps of
# `Linear-Tanh-Linear`.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Measure first (the free cell). Then ask: after a step, what still holds a reference to a graph?
# Look at what the step puts in `log`.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Each logged loss is a tensor with a `grad_fn`: as long as `log` holds it, its graph lives. The
# training loss's graph has run backward, which freed what its nodes saved; the validation loss's
# graph never runs backward, so its nodes keep their saved tensors, one graph more every step.
# Log numbers instead (`.item()`, or `float(...)`): nothing in `log` then holds a graph, and each
# one goes when the step ends. (A validation loss computed from `model(x_val).detach()` has no
# graph to keep in the first place.)
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - The same steps as `leaky_train_step`: forward, loss, `backward`, `sgd_step`.
# - Log the training loss as a number (`.item()`) instead of the tensor.
# - Compute the validation loss as before, and log it as a number too.
#
# </details>
# %% locked given
def sgd_step(lib, model, lr=0.1):
    """optimizer.step() and zero_grad() of plain SGD, written out: each parameter that got a gradient
    moves against it, under no_grad (the update is not part of what the model computes)."""
    with lib.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
                p.grad = None


def leaky_train_step(lib, model, batch, log):
    """One step of training, logging the training and the validation loss. It leaks."""
    x, y, x_val, y_val = batch
    loss = lib.nn.functional.mse_loss(model(x), y)
    loss.backward()
    sgd_step(lib, model)
    log["loss"].append(loss)
    log["val_loss"].append(lib.nn.functional.mse_loss(model(x_val), y_val))


def fixed_from_outside(lib, model, batch, log):
    """What torch's run of a leak-free loop logs and keeps: the given step, then each tensor it logged
    replaced by its number at once."""
    leaky_train_step(lib, model, batch, log)
    for values in log.values():
        values[-1] = values[-1].item()


def bytes_kept_after_each_step(lib, step, model, batches, log):
    """Run ``step`` on each batch; after each, the bytes the graphs still alive keep for backward:
    minigrad's own count (minigrad.memory.saved_bytes, from the first step on), torch's through its
    saved-tensor hooks (minigrad.memory.SavedBytes)."""
    per_step = []
    hooks = minigrad.memory.SavedBytes(torch) if lib is torch else None
    gc.collect()  # graphs that died in reference cycles earlier must not leave the count during the steps
    start = minigrad.memory.saved_bytes()
    with hooks or contextlib.nullcontext():
        for batch in batches:
            step(lib, model, batch, log)
            per_step.append(hooks.current if hooks else minigrad.memory.saved_bytes() - start)
    return per_step


def training(lib, step, steps, hidden=0):
    """``steps`` steps of ``step`` on a small model (one Linear, or Linear-Tanh-Linear with
    ``hidden`` units): the bytes kept after each, and the log."""
    lib.manual_seed(0)
    layers = [lib.nn.Linear(3, hidden), lib.nn.Tanh(), lib.nn.Linear(hidden, 1)] if hidden else [lib.nn.Linear(3, 1)]
    model = lib.nn.Sequential(*layers)
    x_val, y_val = lib.randn(16, 3), lib.randn(16, 1)
    batches = [(lib.randn(8, 3), lib.randn(8, 1), x_val, y_val) for _ in range(steps)]
    log = {"loss": [], "val_loss": []}
    kept = bytes_kept_after_each_step(lib, step, model, batches, log)
    return {"bytes kept for backward after each step": kept, "log": log, "parameters": list(model.parameters())}

# %% code
# Measure it: the given step keeps more after every step
# print(training(minigrad, leaky_train_step, 4)["bytes kept for backward after each step"])
# %% answer train_step
def train_step(lib, model, batch, log):
    """One step of training that logs the training and the validation loss as numbers: nothing it
    logs keeps a graph alive."""
    ### BEGIN SOLUTION
    x, y, x_val, y_val = batch
    loss = lib.nn.functional.mse_loss(model(x), y)
    loss.backward()
    sgd_step(lib, model)
    log["loss"].append(loss.item())
    val_loss = lib.nn.functional.mse_loss(model(x_val), y_val)
    log["val_loss"].append(val_loss.item())
    ### END SOLUTION
# %% locked plug-train_step
train_step = graded(train_step)
# %% tests test-leak 2+1 _Mode._enter _Mode._exit train_step
def logged_training(lib, steps, hidden=0):
    """torch runs the fixed loop; minigrad runs your train_step."""
    return training(lib, fixed_from_outside if lib is torch else train_step, steps, hidden)


normal_mode()
check("4 steps: bytes kept after each, and the log", logged_training, 4)
### BEGIN HIDDEN TESTS
check("6 steps of Linear-Tanh-Linear: bytes kept, the log, the trained parameters", logged_training, 6, 5)
### END HIDDEN TESTS
