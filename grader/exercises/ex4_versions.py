# %% markdown
# # Exercise 4 — in-place edits and version counters
#
# *Lesson: `course/04_inplace_and_versions.ipynb`.*
#
# Until now minigrad edited tensors in place without keeping count, so a node that saved a tensor
# could not tell that the tensor had been edited since, and minigrad let you edit a leaf that
# requires grad. You write the pieces that give minigrad torch's behaviour.
#
# Every minigrad tensor has a **version counter**, `t._version_counter` (its number is
# `t._version`): an object shared by every tensor that shares the memory (views, and `detach()`),
# whose number, `version`, goes up by one at each in-place edit. A node that saves a tensor keeps
# the counter and the number it had then (a `SavedTensor`: `version_counter`, `saved_version`). An
# inference tensor (made in `inference_mode`) has no counter: `_version_counter` is `None`.
#
# **The contract.** What torch does, and your minigrad must do:
#
# - every in-place edit adds one to the version, recorded by autograd or not, under `no_grad`
#   too; an out-of-place op bumps nothing; an edit that fails (shapes that don't broadcast)
#   changes nothing, its version included;
# - a node refuses to use a saved tensor whose version moved since it was saved (in backward, and
#   when you read `grad_fn._saved_*`): `RuntimeError` with torch's message, `ERR_MODIFIED`, which
#   names the tensor, the op that produced it (if any), the version now and the version saved.
#   Versions are compared, not values: an edit undone is still two edits;
# - autograd records an in-place edit when grad mode is on and the tensor or a tensor among the
#   op's arguments requires grad. A recorded edit is refused on a leaf that requires grad
#   (`ERR_LEAF_INPLACE`), on a view of one (`ERR_VIEW_OF_LEAF_INPLACE`), and on a view made under
#   `no_grad` (torch's message for that, which `views.check_inplace(view)` raises). When two apply,
#   torch's error is the view's: a view made under `no_grad` gets that message even if it is itself
#   a leaf that requires grad. An edit autograd does not record is refused for none of these
#   reasons. A refused edit changes nothing.
#
# You write, keeping each stub's signature and docstring: `Tensor._mutate(self, storage_op, *args)`
# (the edit autograd does not record; optimizers, `nn.init` and gradient clipping call it too),
# `SavedTensor.unpack(self, node)` (how every node's backward and `grad_fn._saved_*` get a saved
# tensor back: where the version check belongs) and `SavedTensor._raise_modified(self, node)` (its
# error), `Tensor._inplace(self, function, storage_op, *args)` (every in-place op: recorded or
# not, refused or not) and `Tensor._check_view_inplace(self)` (the refusals of a view edited in
# place, which custom Functions that mark a view dirty run too).
# `Tensor.detach` is given: a new tensor on the same storage, with no history, sharing `self`'s
# counter, so that editing the detached tensor is an edit the graph sees (you write it in
# exercise 5). Of minigrad's objects, the grader lets your code set only a counter's `version`.
#
# The graded checks re-run the lesson's scenarios with PyTorch and with your minigrad: versions
# after in-place ops (`+=`, `x[0] = ...`, `zero_()`, under `no_grad` too), recorded edits, failed
# edits, `nn.init`, SGD steps and gradient clipping; an edit through `detach()`, of a parameter
# too; a saved tensor edited, then backward or `_saved_*` (seed 002's `self * other` with `self`
# or `other` edited; the result of `exp` edited under `no_grad`, seed 000's point; an edit between
# two backward passes; an edit undone); the leaf edits of seed 004 (`x += 1`, `x.mul_(2)`,
# `x[0] = 5.`), an update under `no_grad` as optimizers do, edits of a non-leaf and of a leaf that
# needs no grad, views made under `no_grad`, a view of a leaf, a view of a non-leaf; every error
# word for word; seed 000's premise (a branch the loss does not use) and its small VQ model, whose
# codebook is updated in place in forward or after backward, with grad mode on or off, with and
# without a clone. An error must be of torch's type everywhere; its wording is graded in
# `test-error-message`, and for the views made under `no_grad`.
#
# **Open:** how `_raise_modified` finds what the message names and puts it together (the words
# are torch's, compared word for word), and how `_inplace` decides that autograd records the edit
# and lays out its checks in code: any layout that refuses the same edits with the same errors
# passes (which error wins when two apply is torch's, and graded). Each part has three hints,
# folded: open them one at a time, only when you need them.
#
# When your work is graded, only your definitions run (imports, functions, classes, constants);
# keep experiments in the free cells. Graded code may import only minigrad, torch, math and a few
# standard modules (heapq, itertools, functools, collections, typing), and may not use torch's own
# autograd, files, `sys`/`os`, `exec`/`eval` or dunder attributes; Validate names any such construct
# ("not graded: `import os` at ... line 2 is not allowed in graded code").
# %% locked setup
import torch

import minigrad
from minigrad import grad_mode, views
from minigrad.function import ERR_MODIFIED, SavedTensor, anomaly_hint, op_name, tensor_description
from minigrad.tensor import ERR_INFERENCE_INPLACE, ERR_LEAF_INPLACE, ERR_VIEW_OF_LEAF_INPLACE, Tensor
from coursekit.testing import check, graded, outcome

# %% markdown
# ## Part 1 — the version bump: `_mutate`
# `Tensor._mutate(self, storage_op, *args)` is the in-place edit autograd does not record (grad
# mode off, or nothing requires grad: optimizers' updates and `nn.init` go through it).
# `storage_op(self._data, *args)` is the kernel that edits the storage. The version goes up by one
# (an edit whose kernel fails changes nothing, its version included); return `self`. An inference
# tensor has no counter: outside inference mode
# (`grad_mode.is_inference_mode_enabled()` is false) editing it raises
# `RuntimeError(ERR_INFERENCE_INPLACE)`; inside, the edit is all. (Inference tensors come with
# exercise 5's `inference_mode`: until you write it no check can make one, so this exercise grades
# the counter and not this branch.)
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Two things happen: the kernel edits the storage, and the counter goes up. The kernel may fail.
# Which must come first?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Run the kernel first, then add one to `self._version_counter.version`: if the kernel raises,
# nothing is bumped. When `self._version_counter` is `None` (an inference tensor) there is
# nothing to bump; raise the error if inference mode is off, after the kernel, as torch does (the
# values have changed when it raises).
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Run the kernel: `storage_op` on `self._data` and `args`.
# - If `self` has no counter (`_version_counter` is `None`): raise `RuntimeError` with
#   `ERR_INFERENCE_INPLACE` unless inference mode is on.
# - Otherwise add one to the counter's `version`.
# - Return `self`.
#
# </details>
# %% part Tensor._mutate
# %% locked plug-mutate
_mutate = graded(_mutate)
Tensor._mutate = _mutate
# %% markdown
# ## Part 2 — the saved-version check: `unpack` and `_raise_modified`
# `SavedTensor.unpack(self, node)` hands a saved tensor to `node`'s backward (and to
# `grad_fn._saved_*`). A tensor edited in place since it was saved is refused with torch's error
# (`_raise_modified(node)` raises it); otherwise the tensor itself: `self.tensor`, or, when that is
# `None` (the tensor was an output of `node`, saved without it to avoid a cycle), the output
# rebuilt, which the given `self._output(node)` does.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# The `SavedTensor` kept two things about versions when it was made. Which of them changes when
# the tensor is edited in place, and which does not?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# `self.version_counter` is the tensor's own counter, shared with every tensor on its memory, so
# its `version` moves with each edit; `self.saved_version` is the number it had at saving time.
# Compare them before anything else. Then give back the tensor: `self.tensor`, or
# `self._output(node)` for a saved output.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - If the counter's `version` differs from `saved_version`: call `_raise_modified` with `node`.
# - If `self.tensor` is not `None`, return it; otherwise return what `self._output(node)` rebuilds.
#
# </details>
# %% part SavedTensor.unpack
# %% locked plug-unpack
unpack = graded(unpack)
SavedTensor.unpack = unpack
# %% markdown
# ### `_raise_modified`
# `SavedTensor._raise_modified(self, node)` raises torch's error, `ERR_MODIFIED` with its four
# fields filled: `tensor` (the tensor, and the op that produced it if it has one), `version` (the
# number now), `saved` (the number at saving time) and `hint` (`anomaly_hint()`). The checks
# compare the message word for word: a saved leaf (no producer), a saved output of the node, and
# saved non-leaves (the message names the op that made them, not the one that saved them).
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Print torch's message for `a * b` with `b` edited after the product, then for `a.exp()` with its
# result edited. What does each name, and where does each piece come from in a `SavedTensor`?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# The `tensor` field is `tensor_description(data)` of the saved tensor's storage, followed, when
# the tensor has a producer, by `", which is output {output_nr} of {op_name(producer)},"`. The
# producer is named as it is *now*. For a saved output of `node` (`self.tensor` is `None`): the
# storage `self.data`, the producer `node` itself, the number `self.output_nr`. For a saved input:
# `self.tensor._data`, `self.tensor.grad_fn` (`None` for a leaf: then no producer part) and
# `self.tensor._output_nr`.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Pick the storage, the producer and the output number: for a saved output (`self.tensor` is
#   `None`), `self.data`, `node` and `self.output_nr`; for a saved input, the tensor's `_data`, its
#   `grad_fn` and its `_output_nr`.
# - The description: `tensor_description` of that storage; if there is a producer, append the
#   "which is output ... of ..." part, with `op_name` of the producer.
# - Raise `RuntimeError` with `ERR_MODIFIED` formatted with the description, the counter's
#   `version` now, `saved_version`, and `anomaly_hint()`.
#
# </details>
# %% part SavedTensor._raise_modified
# %% locked plug-raise_modified
_raise_modified = graded(_raise_modified)
SavedTensor._raise_modified = _raise_modified
# %% markdown
# ## Part 3 — the leaf check: `_inplace` and `_check_view_inplace`
# `Tensor._inplace(self, function, storage_op, *args)` runs every in-place op (`add_`, `mul_`,
# `+=`, `x[i] = v`, ...): `function` is the op autograd records, `storage_op` its kernel on
# storage. Return `self`. What torch does:
#
# - an edit autograd does not record (see the contract) is a plain edit: `_mutate`, on storage;
# - a recorded edit of a view passes the view's checks, `self._check_view_inplace()` (you write it
#   next); a recorded edit of a leaf that requires grad is refused, with the contract's error, and
#   changes nothing;
# - any other recorded edit is recorded by `self._record_inplace(function, *args)` (given: it
#   applies `function` and moves the tensor onto the new node), then the version goes up by one,
#   as after a plain edit.
#
# <details><summary>Hint 1 — a nudge</summary>
#
# Two questions, in this order: does autograd record this edit at all? If it does, is the edit
# allowed? Why would editing a leaf that requires grad be a problem once it is recorded?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# Decide first whether autograd records the edit: grad mode on (`grad_mode._state.grad_enabled`)
# and `self` or a tensor among `args` requires grad. If not, `_mutate` on storage: pass each tensor
# argument's `_data`, other arguments as they are. A recorded edit would give a leaf a `grad_fn`, and
# it would stop being the leaf whose gradient you asked for: refuse it. A leaf that requires grad
# is one with `_requires_grad` set and no `grad_fn`. When `self` is a view (`self._view` is not
# `None`), the view checks come first: `self._check_view_inplace()`. Then `self` itself. (For a
# tensor that is no view, the leaf check may as well come first: with grad mode on, a tensor that
# requires grad makes the edit recorded.)
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - Recording: grad mode on, and `self` or a tensor among `args` requires grad.
# - Not recording: return `self._mutate(...)` with `storage_op` and the arguments, each tensor
#   replaced by its `_data`.
# - If `self` is a view: `self._check_view_inplace()`.
# - If `self` has `_requires_grad` set and no `grad_fn`: raise `RuntimeError` with
#   `ERR_LEAF_INPLACE`.
# - Record: `self._record_inplace(function, *args)`. Add one to the counter's `version`. Return
#   `self`.
#
# </details>
# %% part Tensor._inplace
# %% locked plug-inplace
_inplace = graded(_inplace)
Tensor._inplace = _inplace
# %% markdown
# ### `_check_view_inplace`
# `Tensor._check_view_inplace(self)` refuses a recorded in-place edit of `self`, a view, in torch's
# order: first a view made under `no_grad` (`views.check_inplace(self)` raises torch's error), then
# a view of a leaf that requires grad, `RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)`. It returns nothing.
# `_inplace` runs it, and so does minigrad when a custom Function edits a view in place
# (`ctx.mark_dirty`).
#
# <details><summary>Hint 1 — a nudge</summary>
#
# A view shares its base's memory: editing the view edits the base. Once the edit is recorded, the
# base's history goes through it. What if the base is a leaf that requires grad?
#
# </details>
#
# <details><summary>Hint 2 — the idea</summary>
#
# The view's base is `self._view.base`; it is a leaf that requires grad when it has
# `_requires_grad` set and no `grad_fn`. A view made under `no_grad` is refused before that:
# `views.check_inplace(self)` comes first.
#
# </details>
#
# <details><summary>Hint 3 — the pseudocode</summary>
#
# - `views.check_inplace(self)`.
# - If `self._view.base` has `_requires_grad` set and no `grad_fn`: raise `RuntimeError` with
#   `ERR_VIEW_OF_LEAF_INPLACE`.
#
# </details>
# %% part Tensor._check_view_inplace
# %% locked plug-check_view_inplace
_check_view_inplace = graded(_check_view_inplace)
Tensor._check_view_inplace = _check_view_inplace
# %% code
# Try it: a = minigrad.ones(2); a.add_(1); a._version   then   w = minigrad.ones(2, requires_grad=True); w.mul_(2)
# %% tests test-version-bump 2+1 Tensor._mutate Tensor._inplace
def versions(lib):
    """Each in-place op bumps the version by one, under no_grad too; an out-of-place op makes a new
    tensor (its own counter, at 0) and bumps nothing."""
    a = lib.ones(3)
    seen = {"new": a._version}
    with lib.no_grad():
        b = a * 2
        seen["a * 2 under no_grad"] = a._version
        a.mul_(2)
        seen["a.mul_(2) under no_grad"] = a._version
    a += 1
    a[0] = 5.0
    a.zero_()
    seen["+=, a[0] = 5., zero_()"] = a._version
    seen["b"] = b._version
    return seen


def recorded_edit(lib):
    """An edit autograd records (y requires grad) bumps the version too."""
    a = lib.ones(2, requires_grad=True)
    y = a * 2
    y.add_(1)
    y.mul_(3)
    return y._version, y.grad_fn, a._version


def failed_edit(lib, recorded):
    """An in-place op that fails (shapes that don't broadcast) changes nothing, its version included."""
    a = lib.ones(2, requires_grad=recorded)
    y = a * 2 if recorded else a
    return outcome(lambda: y.add_(lib.ones(3))), y._version


check("in-place ops bump, out-of-place ones don't", versions)
check("a recorded in-place op bumps", recorded_edit)
check("a failed in-place op does not bump", failed_edit, False)
check("a failed recorded in-place op does not bump", failed_edit, True)
### BEGIN HIDDEN TESTS


def sgd_step(layer, lr):
    """What torch.optim.SGD's step does (without importing torch.optim, slow to load): each
    parameter updated in place under no_grad."""
    for p in layer.parameters():
        p.add_(p.grad, alpha=-lr)


def updates_and_clipping(lib):
    """nn.init, SGD steps and clip_grad_norm_ edit in place under no_grad: versions go up."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 2)
    initialized = layer.weight._version
    for _ in range(2):
        layer.zero_grad()
        layer(lib.ones(3)).sum().backward()
        lib.nn.utils.clip_grad_norm_(layer.parameters(), 0.5)
        with lib.no_grad():
            sgd_step(layer, 0.1)
    return initialized, layer.weight._version, layer.bias._version, layer.weight.grad._version, layer.weight


check("nn.init, SGD updates and gradient clipping bump versions", updates_and_clipping)
### END HIDDEN TESTS

# %% tests test-detach 1+1 Tensor._mutate SavedTensor.unpack SavedTensor._raise_modified Tensor._inplace
def detach_shares(lib):
    """y.detach() shares y's memory and version counter: editing it is an edit of y, whose value
    exp's node saved, so backward refuses."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a.exp()
    d = y.detach()
    d.mul_(2)
    return {"y": y, "y._version": y._version, "d._version": d._version, "d.grad_fn": d.grad_fn,
            "backward": outcome(y.sum().backward)}


check("y.detach() edited in place", detach_shares)
### BEGIN HIDDEN TESTS


def detached_parameter(lib):
    """Editing a parameter through .detach() is allowed (the detached tensor requires no grad), and
    the graph that saved the parameter sees it."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    x = lib.tensor([3.0, 4.0], requires_grad=True)
    y = (w * x).sum()
    w.detach().add_(1)
    return w._version, w, outcome(y.backward), x.grad


check("a parameter edited through .detach()", detached_parameter)
### END HIDDEN TESTS

# %% tests test-saved-version 2+1 Tensor._mutate SavedTensor.unpack SavedTensor._raise_modified Tensor._inplace
def saved_then_edited(lib):
    """b is saved by a * b; editing b in place afterwards makes the saved tensor stale: backward
    refuses (the version check), and so does reading it."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0])
    y = a * b
    b.add_(1)
    return {"saved other": outcome(lambda: y.grad_fn._saved_other), "backward": outcome(y.sum().backward),
            "a.grad": a.grad}


def which_is_saved(lib, edited):
    """Seed 002: output = self * other with only self requiring grad saves other alone; editing self
    in place leaves backward working, editing other makes it fail."""
    lib.manual_seed(0)
    leaf = lib.rand(4, requires_grad=True)
    self = leaf.clone()
    other = lib.rand(4)
    output = self * other
    if edited == "self":
        self += 1
    else:
        other += 1
    return outcome(lambda: output.backward(lib.ones_like(output))), leaf.grad, self._version, other._version


check("a saved tensor edited in place", saved_then_edited)
check("seed 002: self += 1", which_is_saved, "self")
check("seed 002: other += 1", which_is_saved, "other")
### BEGIN HIDDEN TESTS


def result_edited_under_no_grad(lib):
    """Seed 000's point: no_grad does not stop the version check (the edit still bumps _version)."""
    a = lib.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    with lib.no_grad():
        y.mul_(2)
    return outcome(y.sum().backward), a.grad


def edited_after_retained_backward(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    y = (a * b).sum()
    y.backward(retain_graph=True)
    with lib.no_grad():
        b.mul_(2)
    return outcome(y.backward), a.grad


def edited_back(lib):
    """The check compares versions, not values: an edit undone is still two edits."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0])
    y = a * b
    b.add_(1)
    b.sub_(1)
    return outcome(y.sum().backward), b._version


check("the result of exp edited under no_grad", result_edited_under_no_grad)
check("edited between two backward passes", edited_after_retained_backward)
check("edited, then edited back", edited_back)
### END HIDDEN TESTS

# %% tests test-leaf 2+1 Tensor._mutate SavedTensor.unpack Tensor._inplace Tensor._check_view_inplace
IN_PLACE_ON_LEAF = {
    "x += 1": lambda x: x.__iadd__(1),
    "x.mul_(2)": lambda x: x.mul_(2),
    "x[0] = 5.": lambda x: x.__setitem__(0, 5.0),
}


def in_place_on_leaf(lib, edit):
    """Seed 004: an in-place edit of a leaf that requires grad is refused, and changes nothing."""
    x = lib.ones(3, requires_grad=True)
    return outcome(IN_PLACE_ON_LEAF[edit], x), x._version, x, x.is_leaf


def update_under_no_grad(lib):
    """What an optimizer does: the same kind of edit under no_grad works, bumps the version, and
    leaves w a leaf."""
    w = lib.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    with lib.no_grad():
        w -= 0.1 * w.grad
    return w, w._version, w.is_leaf, w.grad_fn


def allowed_edits(lib):
    """A non-leaf may be edited in place (recorded: it moves onto the new node); so may a leaf that
    does not require grad, with an argument that does."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    y += 1
    b = lib.zeros(2)
    b.add_(w)
    (y * b).sum().backward()
    return y.grad_fn, b.grad_fn, b.is_leaf, w.grad, y._version, b._version


def views_made_under_no_grad(lib):
    """A view made under no_grad, edited in place with grad mode on, is refused with torch's message,
    before any leaf check: one of a non-leaf, one that became a leaf that requires grad, and one of a
    leaf that requires grad (which the view-of-a-leaf check would also refuse, in other words)."""
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = a * 2
    x = lib.ones(3)
    with lib.no_grad():
        of_non_leaf = h[:2]
        of_plain = x[:2]
        of_leaf = a[:2]
    of_plain.requires_grad_()
    return {"a view of a non-leaf": outcome(lambda: of_non_leaf.add_(1)),
            "a view that is a leaf requiring grad": outcome(lambda: of_plain.add_(1)),
            "a view of a leaf that requires grad": outcome(lambda: of_leaf.add_(1)), "a._version": a._version}


for edit in IN_PLACE_ON_LEAF:
    check(f"seed 004: {edit} on a leaf that requires grad", in_place_on_leaf, edit)
check("an update under no_grad, as optimizers do", update_under_no_grad)
check("in-place edits of a non-leaf, and of a leaf without grad", allowed_edits)
check("views made under no_grad, edited with grad mode on", views_made_under_no_grad, message=True)
### BEGIN HIDDEN TESTS


def view_of_leaf(lib, under_no_grad):
    x = lib.ones(3, requires_grad=True)
    if under_no_grad:
        with lib.no_grad():
            result = outcome(lambda: x[0].mul_(2))
    else:
        result = outcome(lambda: x[0].mul_(2))
    return result, x._version, x


def sgd_steps(lib):
    """A few SGD steps (as torch.optim.SGD's step): each edits the parameters in place under no_grad."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 1)
    x, target = lib.randn(4, 3), lib.randn(4, 1)
    for _ in range(3):
        layer.zero_grad()
        ((layer(x) - target) ** 2).mean().backward()
        with lib.no_grad():
            for p in layer.parameters():
                p.add_(p.grad, alpha=-0.1)
    return layer.weight, layer.bias, layer.weight._version, layer.weight.is_leaf


def view_of_non_leaf(lib):
    """A view of a non-leaf edited in place: recorded (the base moves onto CopySlices), version bumped."""
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = a * 2
    v = y[1:]
    v.mul_(3)
    y.sum().backward()
    return y.grad_fn, v.grad_fn, y._version, a.grad


check("a view of a leaf edited in place", view_of_leaf, False)
check("a view of a leaf edited under no_grad", view_of_leaf, True)
check("three SGD steps", sgd_steps)
check("a view of a non-leaf edited in place", view_of_non_leaf)
### END HIDDEN TESTS

# %% tests test-error-message 2 Tensor._mutate SavedTensor.unpack SavedTensor._raise_modified Tensor._inplace Tensor._check_view_inplace
def every_error(lib):
    """Each error of this exercise: a saved leaf edited twice (no producer), a saved output edited (its
    node produced it), a saved non-leaf edited (made by Mul, then by exp: the message names the op
    that made it, not the one that saved it), and the two leaf errors."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0])
    y = a * b
    b.add_(1)
    b.add_(1)
    z = a.exp()
    with lib.no_grad():
        z.mul_(2)
    h = a * 2
    p = h * a
    g = a.exp()
    q = g * a
    with lib.no_grad():
        h.add_(1)
        g.add_(1)
    return {"saved leaf": outcome(y.sum().backward), "saved output": outcome(z.sum().backward),
            "saved non-leaf": outcome(p.sum().backward), "saved non-leaf made by another op": outcome(q.sum().backward),
            "leaf": outcome(lambda: a.add_(1)), "view of a leaf": outcome(lambda: a[0].add_(1))}


check("every error, word for word", every_error, message=True)

# %% tests test-seed-000 2+1 Tensor._mutate SavedTensor.unpack SavedTensor._raise_modified Tensor._inplace
def tiny_vq(lib, update, clone=False, steps=2):
    """Seed 000, small: an encoder, a codebook buffer (3 codes of 2 numbers, its columns) updated by
    an exponential moving average, straight-through quantization into a decoder, and a commitment
    term through flat @ codebook (which saves the codebook). ``update``: where the EMA update runs —
    "in forward", "in forward, no_grad", "after backward" or "after backward, no_grad"."""
    lib.manual_seed(0)
    encoder, decoder = lib.nn.Linear(4, 2), lib.nn.Linear(2, 4)
    codebook = lib.randn(2, 3)
    x = lib.randn(6, 4)

    def ema_update(flat, codes):
        codebook.mul_(0.9).add_(flat.t() @ codes, alpha=0.1)

    results = []
    for _ in range(steps):
        flat = encoder(x)
        used = codebook.clone() if clone else codebook
        scores = flat @ used
        best = scores.max(dim=1, keepdim=True).values
        codes = (scores == best).float()
        quantized = flat + (codes @ used.t() - flat).detach()
        if update.startswith("in forward"):
            with lib.no_grad() if update.endswith("no_grad") else lib.enable_grad():
                ema_update(flat, codes)
        loss = (decoder(quantized) - x).abs().mean() - 0.25 * best.mean()
        results.append(outcome(loss.backward))
        if update.startswith("after backward"):
            with lib.no_grad() if update.endswith("no_grad") else lib.enable_grad():
                ema_update(flat, codes)
    return results, codebook._version, encoder.weight.grad


def unused_by_the_loss(lib):
    """Seed 000's premise: backward "forces the tracking of even those variables in forward pass
    which were not involved in calculation of the loss". A branch that requires grad, whose saved
    result is then edited in place, but which the loss does not use: the loss's backward never
    visits it (nothing there is checked, nor freed); a backward through it does fail."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    side = w.exp()
    side.mul_(2)
    loss = (w * 3).sum()
    return {"loss.backward()": outcome(loss.backward), "w.grad": w.grad.clone(),
            "backward through the branch": outcome(side.sum().backward)}


check("seed 000: a branch the loss does not use", unused_by_the_loss)
check("seed 000: the EMA update in forward", tiny_vq, "in forward")
check("seed 000: the EMA update in forward, under no_grad", tiny_vq, "in forward, no_grad")
check("seed 000: the EMA update after backward, under no_grad", tiny_vq, "after backward, no_grad")
### BEGIN HIDDEN TESTS
check("seed 000: the EMA update after backward, grad mode on", tiny_vq, "after backward")
check("seed 000: forward on a clone, update under no_grad", tiny_vq, "in forward, no_grad", True)
check("seed 000: forward on a clone, update with grad mode on", tiny_vq, "in forward", True, 3)
### END HIDDEN TESTS
