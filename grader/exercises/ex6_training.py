# %% markdown
# # Exercise 6 — the training loop: SGD, `zero_grad`, and a loop that diverges
#
# *Lessons: `course/06a_zero_grad_and_step.ipynb` and `course/06b_clipping_devices_data.ipynb`.*
#
# `loss.backward()` **adds** each parameter's gradient to `param.grad`; `optimizer.step()` moves the
# parameters along `param.grad`; `optimizer.zero_grad()` forgets the gradients before the next
# backward. You write the two pieces of `minigrad.optim` a training loop leans on, then use them.
#
# ### The contract
#
# Your `SGD` and `zero_grad` must do what `torch.optim.SGD` and `Optimizer.zero_grad` do, and your
# loops must train as torch's do. The graded tests run the same scenarios with PyTorch (from the same
# initial weights) and with your minigrad, and compare:
#
# * **SGD steps** (`test-sgd`, `test-sgd-options`). A small model (its last bias frozen: no gradient,
#   no update) takes three SGD steps (hidden: six, on the GPU when there is one) with `lr` alone, with
#   momentum, dampening, weight decay, Nesterov momentum, `maximize`, their mixes, and (hidden) two
#   parameter groups. After each step: the parameters, the momentum buffers (a reference kept to a
#   buffer sees the later steps) and each parameter's version (how many in-place edits it had).
# * **What a step edits** (`test-sgd-in-place`). A step between a forward and its backward makes that
#   backward fail, as in torch (the step edited a weight the graph saved). Hidden: a step reads
#   `param.grad` and never edits it, and the momentum buffer is a tensor of its own.
# * **`zero_grad`** (`test-zero-grad`, `test-zero-grad-and-step`). Between two backward passes, with
#   a reference kept to the old gradient: what `param.grad` is after `zero_grad`, after the next
#   backward, and what became of the kept tensor. Then a step after `zero_grad`, with momentum and
#   weight decay. Hidden: parameters without a gradient (frozen, or unused by the loss), and a
#   gradient that has a `grad_fn` or requires grad.
# * **Training** (`test-fit`, `test-target`, `test-fixed`). Your `fit` on scikit-learn's digits (8x8
#   images of handwritten digits): every step's loss, the trained parameters, the test accuracy
#   (hidden: on the GPU, a smaller last batch, `Adam`). Your settings must reach 95% accuracy on
#   digits the model never trained on. Your `fixed_fit` must train as the fixed loop does in torch.
#
# They train in float64, so that only real differences count: an update written with different but
# equivalent arithmetic rounds differently in the last bits, and after a hundred steps float32 would
# show it. A check passes when the numbers agree to about six significant digits.
#
# ### What you write
#
# 1. `SGD._update(self, param, grad, group)`: one parameter's SGD step.
# 2. `Optimizer.zero_grad(self, set_to_none=True)`: forget the gradients: `None`, or zeros in place.
# 3. `fit(model, optimizer, loss_fn, x, y, epochs, batch_size)`, and four settings: `LR`,
#    `MOMENTUM`, `BATCH_SIZE`, `EPOCHS`.
# 4. `fixed_fit(lib, model, x, y, steps, batch_size)`: a loop whose loss falls, then climbs: find
#    why, and fix it.
#
# Parts 3 and 4 train with your `SGD` and `zero_grad`: finish parts 1 and 2 first.
#
# ### What is yours to decide
#
# The parts are open in different ways. Part 1: the update must be torch's, but which ops you write it
# with is yours. Part 3: where the loop forgets the gradients, and all four settings. Part 4: finding
# the bug, and how you fix it. Each part says what it must do; its hints open on demand: a nudge, then
# the idea, then the pseudocode.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, grad-mode switches (`no_grad`: `step` already runs your update with grad mode off),
# files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import importlib.util
from pathlib import Path

import numpy
import torch

import minigrad
from coursekit.testing import check, graded, outcome

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # tests marked for the GPU run there when there is one
torch.set_num_threads(1)  # tiny tensors: several CPU threads would wait for each other more than they work

# scikit-learn's digits, what sklearn.datasets.load_digits() returns: 1797 images of 8x8 pixels (0 to 16)
# and their labels, read from the file scikit-learn ships (without importing scikit-learn: 1.5 s saved).
_sklearn = Path(importlib.util.find_spec("sklearn").submodule_search_locations[0])
_digits = numpy.loadtxt(_sklearn / "datasets" / "data" / "digits.csv.gz", delimiter=",")
_order = numpy.random.RandomState(0).permutation(len(_digits))  # shuffled once, the same way every time
IMAGES, LABELS = _digits[_order, :-1] / 16.0, _digits[_order, -1].astype(numpy.int64)


def digits(lib, device="cpu"):
    """The first 1400 images to train on and the other 397 to test on: (x_train, y_train, x_test, y_test),
    float64 images (one row of 64 pixels each) and int64 labels."""
    images = lib.tensor(IMAGES, dtype=lib.float64, device=device)
    labels = lib.tensor(LABELS, device=device)
    return images[:1400], labels[:1400], images[1400:], labels[1400:]


def mlp(lib, device="cpu"):
    """The model: 64 pixels -> 32 hidden units -> ReLU -> 10 scores, one per digit; torch's initial
    weights for manual_seed(0), then made float64."""
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(64, 32), lib.nn.ReLU(), lib.nn.Linear(32, 10)).double().to(device)


def accuracy(lib, model, x, y):
    """The fraction of images in x whose highest score is their label."""
    with lib.no_grad():
        return (model(x).argmax(dim=1) == y).double().mean().item()


# %% markdown
# ## Part 1 — `SGD._update` (open: the ops)
#
# `optimizer.step()` (given, in `Optimizer`) calls `self._update(param, param.grad, group)` for every
# parameter that has a gradient, **with grad mode off**, so in-place edits of parameters are allowed
# and record nothing. `group` is the parameter's group: a dict with `"lr"`, `"momentum"`,
# `"dampening"`, `"weight_decay"`, `"nesterov"`, `"maximize"`. `self.state[param]` is a dict kept
# between steps (empty at first).
#
# Your `_update` must compute what torch's `SGD` computes, for every mix of these options, and:
#
# * move the parameter **in place** (the model holds this very tensor), once per step;
# * keep the momentum buffer in `self.state[param]["momentum_buffer"]`: one tensor for the whole
#   run, edited in place at each step, never `param.grad` itself;
# * never edit `grad` in place: it is `param.grad`.
#
# Which ops you write it with is up to you: new tensors or in-place edits, `add(other, alpha=k)` or
# `*` and `+`. In float64, equivalent arithmetic passes the tests.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# torch's documentation of `torch.optim.SGD` prints its algorithm, line by line, and the lesson's
# section 3 runs it by hand. Two details decide most of the tests: what the buffer holds after the
# first step, and at which point `maximize` flips the sign.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Build the direction step by step from the gradient: flip it to maximize, then add the weight decay,
# then, with momentum, replace it by the buffer (or, with Nesterov, the gradient plus the momentum
# times the buffer). At the first step the buffer **is a copy of the gradient**: no dampening, no
# zeros first. Each op that makes a new tensor leaves `param.grad` alone.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# Torch's SGD does, in this order:
#
# 1. `maximize`: use `-grad` instead of `grad` (to climb the function instead of descending it).
# 2. `weight_decay` λ ≠ 0: `grad = grad + λ·param` (after the negation: the decay still pulls the
#    parameter towards zero when maximizing).
# 3. `momentum` μ ≠ 0: the parameter's momentum buffer lives in `self.state[param]` (a dict,
#    kept between steps) under `"momentum_buffer"`. At the first step the buffer **is a copy of the
#    gradient** (no dampening, no zeros first); at later steps it is updated in place:
#    `buf = μ·buf + (1 - dampening)·grad`. The direction is then `buf`, or, with `nesterov`,
#    `grad + μ·buf`.
# 4. `param = param - lr·direction`, **in place** (the model holds this very tensor).
#
# The ops torch's SGD uses (so your numbers round as torch's do): `grad.add(other, alpha=k)`
# (`grad + k·other`, a new tensor), `-grad`, `t.clone().detach()` (a copy), and in place `t.mul_(k)`
# and `t.add_(other, alpha=k)` (each returns `t`, so they chain).
#
# </details>
# %% part SGD._update
# %% locked plug-SGD-update
_update = graded(_update)
minigrad.optim.SGD._update = _update
# %% code
# Try it: p = minigrad.nn.Parameter(minigrad.ones(2)); p.grad = minigrad.tensor([1.0, 2.0])
# opt = minigrad.optim.SGD([p], lr=0.1, momentum=0.9); opt.step(); p, opt.state[p]
# %% tests test-sgd 2+1 SGD._update
def sgd_steps(lib, options, steps=3, device="cpu"):
    """A few SGD steps of a small float64 model (its last bias frozen: no gradient, no update): after
    each step the parameters, their momentum buffers and their versions (in-place edits count)."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1)).double().to(device)
    model[2].bias.requires_grad_(False)
    optimizer = lib.optim.SGD(model.parameters(), **options)
    x = lib.randn(8, 3, dtype=lib.float64).to(device)
    y = lib.randn(8, 1, dtype=lib.float64).to(device)
    seen = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad = None
        lib.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        seen.append({"parameters": dict(model.named_parameters()),
                     "momentum buffers": [optimizer.state[p].get("momentum_buffer") for p in model.parameters()],
                     "versions": [p._version for p in model.parameters()]})
    return seen


check("SGD(lr=0.1): three steps", sgd_steps, {"lr": 0.1})
check("SGD(lr=0.1, momentum=0.9): three steps", sgd_steps, {"lr": 0.1, "momentum": 0.9})
### BEGIN HIDDEN TESTS
check("SGD(lr=0.05, momentum=0.5): six steps on DEVICE", sgd_steps, {"lr": 0.05, "momentum": 0.5}, 6, DEVICE)


def two_groups(lib):
    """Two parameter groups, with their own learning rate and momentum."""
    lib.manual_seed(0)
    first, second = lib.nn.Linear(2, 2).double(), lib.nn.Linear(2, 1).double()
    optimizer = lib.optim.SGD([{"params": first.parameters()}, {"params": second.parameters(), "lr": 0.5,
                                                               "momentum": 0.0}], lr=0.1, momentum=0.9)
    x = lib.randn(4, 2, dtype=lib.float64)
    for _ in range(3):
        for p in [*first.parameters(), *second.parameters()]:
            p.grad = None
        second(first(x)).pow(2).mean().backward()
        optimizer.step()
    return dict(first.named_parameters()), dict(second.named_parameters()), [
        optimizer.state[p].get("momentum_buffer") for p in [*first.parameters(), *second.parameters()]]


check("two parameter groups", two_groups)
### END HIDDEN TESTS

# %% tests test-sgd-options 2+2 SGD._update
check("SGD(momentum=0.9, dampening=0.3): the first step is not dampened", sgd_steps,
      {"lr": 0.1, "momentum": 0.9, "dampening": 0.3})
check("SGD(momentum=0.9, weight_decay=0.1): decay before momentum", sgd_steps,
      {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1})
check("SGD(momentum=0.9, nesterov=True)", sgd_steps, {"lr": 0.1, "momentum": 0.9, "nesterov": True})
### BEGIN HIDDEN TESTS
check("SGD(weight_decay=0.1) without momentum", sgd_steps, {"lr": 0.1, "weight_decay": 0.1})
check("SGD(momentum=0.9, nesterov=True, weight_decay=0.01)", sgd_steps,
      {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01})
check("SGD(maximize=True, weight_decay=0.1)", sgd_steps, {"lr": 0.1, "maximize": True, "weight_decay": 0.1})
check("SGD(maximize=True, momentum=0.9, dampening=0.1)", sgd_steps,
      {"lr": 0.1, "maximize": True, "momentum": 0.9, "dampening": 0.1})
### END HIDDEN TESTS

# %% tests test-sgd-in-place 1+1 SGD._update
def step_between_forward_and_backward(lib):
    """step() edits the weight in place; the product saved it for backward, so backward refuses — as in
    torch (a classic of GAN loops that step one model before the other's backward)."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 1).double()
    optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
    x = lib.randn(2, 3, dtype=lib.float64)
    layer(x).sum().backward()
    loss = (layer(x) ** 2).sum()
    optimizer.step()
    return outcome(loss.backward), layer.weight, layer.weight._version


def gradient_untouched(lib, options):
    """Two steps: each reads param.grad and never edits it; a momentum buffer is a copy of the first
    gradient, not that tensor (the second step edits the buffer in place)."""
    lib.manual_seed(0)
    w = lib.randn(3, dtype=lib.float64, requires_grad=True)
    optimizer = lib.optim.SGD([w], lr=0.1, **options)
    seen = []
    for _ in range(2):
        w.grad = None
        (w * w).sum().backward()
        grad, version = w.grad.clone(), w.grad._version
        optimizer.step()
        seen.append({"grad before the step": grad, "grad after it": w.grad,
                     "edits of grad by the step": w.grad._version - version,
                     "buffer is grad": optimizer.state[w].get("momentum_buffer") is w.grad})
    return seen, optimizer.state[w].get("momentum_buffer"), w


check("step() between a forward and its backward", step_between_forward_and_backward)
check("the gradient is read, not edited (weight decay)", gradient_untouched, {"weight_decay": 0.1})
check("the gradient is read, not edited (momentum)", gradient_untouched, {"momentum": 0.9})
### BEGIN HIDDEN TESTS
check("the gradient is read, not edited (maximize, momentum, weight decay)", gradient_untouched,
      {"maximize": True, "momentum": 0.9, "weight_decay": 0.1})
### END HIDDEN TESTS

# %% markdown
# ## Part 2 — `Optimizer.zero_grad`
#
# For every parameter of every group that has a gradient (a parameter whose `param.grad` is `None`
# is left alone):
#
# * `set_to_none=True` (torch's default): the gradient becomes `None`. The next backward makes a new
#   tensor.
# * `set_to_none=False`: the same tensor stays, holding zeros, and the next backward adds to it. The
#   zeroing must not be recorded: afterwards the gradient has no `grad_fn` and does not require grad.
#
# The difference shows in a tensor you kept (`g = w.grad`): `None` leaves it alone, zeroing edits
# it. And in `step()`: it skips a parameter whose gradient is `None`, but with zeros it still runs the
# update: momentum and weight decay move the parameter.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# The parameters live in `self.param_groups`: a list of dicts, each with its `"params"`. Before you
# zero a gradient in place, ask what a gradient made by `backward(create_graph=True)` is: the output
# of a graph.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `None` is one assignment. Zeros are an in-place edit: first cut the gradient from any graph, so
# that the edit is not recorded, then zero it.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# For each group in `self.param_groups`, for each parameter in its `"params"`:
#
# 1. A parameter whose gradient is `None`: skip it.
# 2. With `set_to_none`: the parameter's `.grad` becomes `None`.
# 3. Otherwise: a gradient made by a graph (it has a `grad_fn`) is cut from it with `detach_()`;
#    any other gradient gets `requires_grad_(False)`. Then zero it in place with `zero_()`.
#
# </details>
# %% part Optimizer.zero_grad
# %% locked plug-zero_grad
zero_grad = graded(zero_grad)
minigrad.optim.Optimizer.zero_grad = zero_grad
# %% tests test-zero-grad 2+1 Optimizer.zero_grad
def zero_grad_then_backward(lib, set_to_none):
    """zero_grad between two backward passes, a reference to the old gradient kept."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 2).double()
    optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
    x = lib.randn(4, 3, dtype=lib.float64)
    layer(x).sum().backward()
    kept = layer.weight.grad
    optimizer.zero_grad(set_to_none=set_to_none)
    after = {"weight.grad after zero_grad": layer.weight.grad, "bias.grad after zero_grad": layer.bias.grad}
    (layer(x) ** 2).sum().backward()
    return {**after, "weight.grad after the next backward": layer.weight.grad, "the kept tensor": kept,
            "its version": kept._version, "weight.grad is the kept tensor": layer.weight.grad is kept}


def some_without_grad(lib, set_to_none):
    """Two groups; one parameter frozen and one unused by the loss: both have no gradient, and are skipped."""
    lib.manual_seed(0)
    used, unused = lib.nn.Linear(2, 2).double(), lib.nn.Linear(2, 2).double()
    used.bias.requires_grad_(False)
    optimizer = lib.optim.SGD([{"params": used.parameters()}, {"params": unused.parameters()}], lr=0.1)
    used(lib.ones(1, 2, dtype=lib.float64)).sum().backward()
    unused.bias.grad = lib.ones(2, dtype=lib.float64)
    optimizer.zero_grad(set_to_none=set_to_none)
    return [p.grad for p in [*used.parameters(), *unused.parameters()]]


check("zero_grad() (set_to_none=True)", zero_grad_then_backward, True)
check("zero_grad(set_to_none=False)", zero_grad_then_backward, False)
check("parameters without a gradient, set_to_none=False", some_without_grad, False)
### BEGIN HIDDEN TESTS


def gradient_with_a_graph(lib):
    """A gradient that is itself the output of a graph, and one that requires grad: zeroing them in
    place must not be recorded."""
    w = lib.ones(2, dtype=lib.float64, requires_grad=True)
    v = lib.ones(2, dtype=lib.float64, requires_grad=True)
    w.grad = w * 3
    v.grad = lib.ones(2, dtype=lib.float64, requires_grad=True)
    optimizer = lib.optim.SGD([w, v], lr=0.1)
    optimizer.zero_grad(set_to_none=False)
    return [(p.grad, p.grad.requires_grad, p.grad.grad_fn) for p in (w, v)]


check("parameters without a gradient, set_to_none=True", some_without_grad, True)
check("a gradient with a grad_fn, and one that requires grad", gradient_with_a_graph)
### END HIDDEN TESTS

# %% tests test-zero-grad-and-step 1 SGD._update Optimizer.zero_grad
def zero_grad_then_step(lib, set_to_none):
    """After zero_grad, a step with momentum and weight decay: None skips the parameter, zeros do not."""
    lib.manual_seed(0)
    w = lib.randn(3, dtype=lib.float64, requires_grad=True)
    optimizer = lib.optim.SGD([w], lr=0.1, momentum=0.9, weight_decay=0.1)
    for _ in range(2):
        (w * w).sum().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=set_to_none)
    before = w.clone()
    optimizer.step()
    return {"w before": before, "w after a step with no new gradient": w}


check("zero_grad(), then step()", zero_grad_then_step, True)
check("zero_grad(set_to_none=False), then step()", zero_grad_then_step, False)

# %% markdown
# ## Part 3 — the training loop (open)
#
# Write `fit`: `epochs` passes over `(x, y)` in order, in batches of `batch_size` rows
# (`x[start:start + batch_size]`; the last batch may be smaller). Each batch is one step: a forward,
# a backward of the loss, a step of the optimizer, with no gradient left over from an earlier batch.
# Return every step's loss **as a Python float**. `fit` must work with either library: use only what
# it is given. How you write the loop, and where in it you forget the old gradients, is up to you.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# The test compares every step's loss with torch's: the batches must come in the same order, one
# step each. Think about what a list of loss tensors would keep alive.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Two loops: epochs, then batch starts `0, batch_size, 2·batch_size, ...` up to `len(y)`. The
# gradients must be forgotten between two backward passes: before each forward, or after each step.
# `loss.item()` gives a float; a list of loss tensors would keep every step's graph alive.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. Start an empty list of losses.
# 2. For each epoch, for each batch start from 0 to `len(y)` in steps of `batch_size`:
#    - forget the old gradients (`optimizer.zero_grad()`);
#    - the loss of the model's output on the batch's rows against their labels (`loss_fn`);
#    - backward of that loss, then a step of the optimizer;
#    - append the loss as a float (`.item()`).
# 3. Return the list.
#
# </details>
# %% answer fit
def fit(model, optimizer, loss_fn, x, y, epochs, batch_size):
    """Train ``model`` on ``(x, y)``; return the loss of every step, as floats."""
    ### BEGIN SOLUTION
    losses = []
    for _ in range(epochs):
        for start in range(0, len(y), batch_size):
            optimizer.zero_grad()
            loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses
    ### END SOLUTION
# %% locked check-fit
fit = graded(fit)
# %% markdown
# Now choose the settings: the model `mlp(minigrad)`, trained by your `fit` with
# `SGD(model.parameters(), lr=LR, momentum=MOMENTUM)`, `EPOCHS` passes in batches of `BATCH_SIZE`,
# must reach at least 95% accuracy on the 397 test digits, in at most 150 steps (a step is one
# batch). Define the four constants in the next cell. Any values that reach the target pass.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Try `LR = 0.01`, `MOMENTUM = 0.0` first, and look at the losses and
# `accuracy(minigrad, model, x_test, y_test)` in the free cell below.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# 150 steps is not many: 1400 training images in batches of 100 is 14 steps an epoch, so about ten
# epochs. With so few steps, each must go further: a larger learning rate, and momentum, which keeps
# going in the direction of the last steps.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# 1. Fix `BATCH_SIZE` and `EPOCHS` so that `EPOCHS · ceil(1400 / BATCH_SIZE)` is at most 150.
# 2. Raise `LR` by about three times at each try while the loss still falls smoothly.
# 3. Add momentum (0.5, then 0.9) and lower `LR` if the loss jumps about.
# 4. Stop when the test accuracy is above 0.95.
#
# </details>
# %% answer settings
# LR, MOMENTUM, BATCH_SIZE, EPOCHS: at least 95% test accuracy in at most 150 steps.
### BEGIN SOLUTION
LR = 0.1
MOMENTUM = 0.9
BATCH_SIZE = 100
EPOCHS = 10
### END SOLUTION
# %% code
# Try it:
# x_train, y_train, x_test, y_test = digits(minigrad)
# model = mlp(minigrad)
# losses = fit(model, minigrad.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
#              minigrad.nn.CrossEntropyLoss(), x_train, y_train, EPOCHS, BATCH_SIZE)
# len(losses), losses[-1], accuracy(minigrad, model, x_test, y_test)
# %% tests test-fit 2+1 from-reference SGD._update Optimizer.zero_grad fit
def train(lib, epochs, batch_size, device="cpu", adam=False):
    """fit on the digits from torch's initial weights: every loss, the sum of each trained parameter (whole
    tensors would not fit on a screen), the test accuracy."""
    x_train, y_train, x_test, y_test = digits(lib, device)
    model = mlp(lib, device)
    optimizer = (lib.optim.Adam(model.parameters(), lr=0.01) if adam else
                 lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    losses = fit(model, optimizer, lib.nn.CrossEntropyLoss(), x_train, y_train, epochs, batch_size)
    return {"losses": losses, "parameter sums": {name: p.sum() for name, p in model.named_parameters()},
            "test accuracy": accuracy(lib, model, x_test, y_test)}


check("fit: SGD(lr=0.1, momentum=0.9), 2 epochs of batches of 100", train, 2, 100)
check("fit: 1 epoch of batches of 300 (the last one has 200)", train, 1, 300)
### BEGIN HIDDEN TESTS
check("fit on DEVICE: 2 epochs of batches of 600 (the last one has 200)", train, 2, 600, DEVICE)
check("fit with Adam(lr=0.01): 1 epoch of batches of 200", train, 1, 200, "cpu", True)
### END HIDDEN TESTS

# %% tests test-target 2 from-reference SGD._update Optimizer.zero_grad fit
def reaches_the_target(lib):
    """Your settings: at least 95% test accuracy, in at most 150 steps."""
    x_train, y_train, x_test, y_test = digits(lib)
    model = mlp(lib)
    optimizer = lib.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = fit(model, optimizer, lib.nn.CrossEntropyLoss(), x_train, y_train, EPOCHS, BATCH_SIZE)
    return {"test accuracy >= 0.95": accuracy(lib, model, x_test, y_test) >= 0.95,
            "at most 150 steps": len(losses) <= 150}


check("your LR, MOMENTUM, BATCH_SIZE and EPOCHS", reaches_the_target)

# %% markdown
# ## Part 4 — a loop whose loss diverges (open)
#
# `broken_fit` fine-tunes the model with two optimizers: the first layer (`model[0]`, the "body")
# at half the learning rate of the last (`model[2]`, the "head"). Its loss falls faster than
# a correct loop's at first — then, after about 50 steps, it climbs and never comes back down. Run it and
# find out why.
# %% locked broken
def broken_fit(lib, model, x, y, steps, batch_size):
    """Fine-tuning: the body learns at 0.05, the head at 0.1, both with momentum 0.9."""
    body = lib.optim.SGD(model[0].parameters(), lr=0.05, momentum=0.9)
    head = lib.optim.SGD(model[2].parameters(), lr=0.1, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        start = step * batch_size % len(y)
        body.zero_grad()
        loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])
        loss.backward()
        body.step()
        head.step()
        losses.append(loss.item())
    return losses


# %% code
# Look first:
# x_train, y_train, x_test, y_test = digits(minigrad)
# model = mlp(minigrad)
# losses = broken_fit(minigrad, model, x_train, y_train, 140, 100)
# [round(loss, 2) for loss in losses[::10]]
# %% markdown
# Write `fixed_fit`: the same loop, with the same learning rates and momentum, without the bug. The
# test compares every step's loss and the trained parameters with the fixed loop run in torch. What
# the bug is, and how you fix it, is yours to find.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# The lesson's tools help: print each parameter's gradient norm after `backward()`, and compare it
# with the gradient of this batch's loss alone.
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `backward()` adds to `.grad`. Look at which gradients the loop forgets before each backward, and
# which it never forgets: those grow with every step, and momentum carries them further.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# The same loop as `broken_fit`, with one line more: each step forgets the gradients of **both**
# optimizers (`body.zero_grad()` and `head.zero_grad()`) before its forward.
#
# </details>
# %% answer fixed_fit
def fixed_fit(lib, model, x, y, steps, batch_size):
    """``broken_fit`` without the bug."""
    ### BEGIN SOLUTION
    body = lib.optim.SGD(model[0].parameters(), lr=0.05, momentum=0.9)
    head = lib.optim.SGD(model[2].parameters(), lr=0.1, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        start = step * batch_size % len(y)
        body.zero_grad()
        head.zero_grad()
        loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])
        loss.backward()
        body.step()
        head.step()
        losses.append(loss.item())
    return losses
    ### END SOLUTION
# %% locked check-fixed_fit
fixed_fit = graded(fixed_fit)
# %% tests test-fixed 2+1 from-reference SGD._update Optimizer.zero_grad fixed_fit
def fine_tune(lib, steps, device="cpu"):
    """fixed_fit on the digits in batches of 100: every loss, the sum of each trained parameter (whole
    tensors would not fit on a screen), the test accuracy."""
    x_train, y_train, x_test, y_test = digits(lib, device)
    model = mlp(lib, device)
    losses = fixed_fit(lib, model, x_train, y_train, steps, 100)
    return {"losses": losses, "parameter sums": {name: p.sum() for name, p in model.named_parameters()},
            "test accuracy": accuracy(lib, model, x_test, y_test)}


check("fixed_fit: 140 steps", fine_tune, 140)
### BEGIN HIDDEN TESTS
check("fixed_fit on DEVICE: 30 steps", fine_tune, 30, DEVICE)
### END HIDDEN TESTS
