"""Plausible wrong versions of each part, kept as test data: each must lose points, on the test named,
every time (the verdict harness grades them, as autograde does, without nbgrader's overhead)."""
import shutil

import nbformat
import pytest

from grader import verdicts
from grader.build import ROOT

# exercise: [(what the learner got wrong, part's grade_id, reference text, wrong text, the test that must fail)]
MISTAKES = {
    "ex1_ops": [
        ("Mul saves both inputs", "Mul", "ctx.save_for_backward(a if need_b else None, b if need_a else None)",
         "ctx.save_for_backward(a, b)", "test-Mul-saved"),
        ("sum_to sums one leading dimension only", "sum_to", "grad = grad.sum(tuple(range(lead)))",
         "grad = grad.sum(0)", "test-sum_to"),
        ("Mm's weight gradient laid out contiguously", "Mm", "mat2_grad(grad, a, ctx.mat2_layout) if a",
         "a.t().mm(grad) if a", "test-Mm"),
        ("Exp saves its input", "Exp", "ctx.save_for_backward(result)", "ctx.save_for_backward(a)", "test-Exp"),
        ("SumDim ignores keepdim", "SumDim", "_keep_dims(grad, ctx.dims, ctx.keepdim)",
         "_keep_dims(grad, ctx.dims, False)", "test-SumDim"),
    ],
    "ex2_engine": [
        ("backprop overwrites a buffer", "backprop",
         "buffer[input_nr] = grad if buffer[input_nr] is None else buffer[input_nr] + grad",
         "buffer[input_nr] = grad", "test-shared-node"),
        ("ties broken by id(node)", "backprop", "heapq.heappush(ready, node)",
         "heapq.heappush(ready, (-node._sequence_nr, id(node), node))", "test-order"),
        ("dependencies counted once per node", "compute_dependencies",
         "dependencies[next_node] = dependencies.get(next_node, 0) + 1", "dependencies[next_node] = 1",
         "test-dependencies"),
    ],
    "ex3_freeing": [
        ("_release_saved marks unsaved entries freed", "BackwardFunction-_release_saved",
         "tuple(None if s is None else _FREED for s in self._saved)", "tuple(_FREED for s in self._saved)",
         "test-seed-003"),
        ("run_node frees even with retain_graph", "run_node",
         "    if not retain_graph:\n        node._release_saved()", "    node._release_saved()", "test-retain-graph"),
        ("run_node never frees", "run_node",
         "    if not retain_graph:\n        node._release_saved()", "", "test-second-backward"),
        ("_unpack skips the version check", "BackwardFunction-_unpack", "return saved.unpack(self)",
         "return saved.tensor if saved.tensor is not None else saved.unpack(self)", "test-edited-in-place"),
        ("_unpack gives None for a freed entry", "BackwardFunction-_unpack", "raise RuntimeError(ERR_BACKWARD_TWICE)",
         "return None", "test-second-backward"),
        ("_unpack raises its own message", "BackwardFunction-_unpack", "raise RuntimeError(ERR_BACKWARD_TWICE)",
         "raise RuntimeError('saved tensors were freed')", "test-error-message"),
    ],
    "ex8_checkpoint": [
        ("the inputs kept as they are, not saved (an in-place edit goes unseen)", "checkpointed_forward",
         "inputs = [save(arg) if isinstance(arg, Tensor) else arg for arg in args]", "inputs = list(args)",
         "test-inputs"),
        ("the body run twice in the forward (once without the hooks, for the output)", "checkpointed_forward",
         "    with saved_tensors_hooks(frame.pack, frame.unpack):\n        return function(*args, **kwargs)",
         "    output = function(*args, **kwargs)\n    with saved_tensors_hooks(frame.pack, frame.unpack):\n"
         "        function(*args, **kwargs)\n    return output", "test-body-runs"),
        ("no shortcut without grad mode", "checkpointed_forward",
         "    if not grad_mode.is_grad_enabled():\n        return function(*args, **kwargs)\n", "",
         "test-body-runs-hidden"),
        ("pack keeps the tensor in the holder: nothing is recomputed", "_Frame-pack", "    holder = _Holder()\n",
         "    holder = _Holder()\n    holder.value = tensor.detach()\n", "test-body-runs"),
        ("pack does not record the holder", "_Frame-pack", "    self.holders.append(holder)\n", "", "test-gradients"),
        ("unpack recomputes on every unpack", "_Frame-unpack", "    if holder.value is None:\n        self.recompute()",
         "    self.recompute()", "test-body-runs"),
        ("unpack leaves the tensor in the holder (the next backward does not recompute)", "_Frame-unpack",
         "value, holder.value = holder.value, None", "value = holder.value", "test-body-runs"),
        ("the forward's random state not replayed", "_Frame-recompute",
         "            if self.rng is not None:\n                _set_rng_state(self.rng)\n", "", "test-random"),
        ("the random state replayed without fork_rng (the generator outside is rewound)", "_Frame-recompute",
         "enabled=self.rng is not None", "enabled=False", "test-random"),
        ("recomputed in backward's grad mode (off: the body saves nothing)", "_Frame-recompute",
         "saved_tensors_hooks(fill, lambda kept: kept.value), enable_grad():",
         "saved_tensors_hooks(fill, lambda kept: kept.value):", "test-gradients"),
        ("the recomputed tensors not detached (their graph stays alive in a cycle)", "_Frame-recompute",
         "kept.value = tensor.detach()", "kept.value = tensor", "test-memory-hidden"),
        ("the holders filled in reverse order", "_Frame-recompute", "holder = self.holders[filled]",
         "holder = self.holders[len(self.holders) - 1 - filled]", "test-gradients"),
        ("no early stop: the whole body runs again, counted at the end", "_Frame-recompute",
         """        filled += 1
        if filled == len(self.holders):
            raise _StopRecomputation
        return kept

    args = [arg.unpack(None) if isinstance(arg, (SavedTensor, PackedTensor)) else arg for arg in self.inputs]
    devices = [] if self.rng is None else self.rng[1]
    try:
        with torch.random.fork_rng(devices=devices, enabled=self.rng is not None), \\
                saved_tensors_hooks(fill, lambda kept: kept.value), enable_grad():
            if self.rng is not None:
                _set_rng_state(self.rng)
            self.function(*args, **self.kwargs)
    except _StopRecomputation:
        return
    raise CheckpointError(""",
         """        filled += 1
        return kept

    args = [arg.unpack(None) if isinstance(arg, (SavedTensor, PackedTensor)) else arg for arg in self.inputs]
    devices = [] if self.rng is None else self.rng[1]
    with torch.random.fork_rng(devices=devices, enabled=self.rng is not None), \\
            saved_tensors_hooks(fill, lambda kept: kept.value), enable_grad():
        if self.rng is not None:
            _set_rng_state(self.rng)
        self.function(*args, **self.kwargs)
    if filled != len(self.holders):
        raise CheckpointError(""",
         "test-body-runs"),
    ],
}
CASES = [pytest.param(exercise, *case, id=f"{exercise}: {case[0]}") for exercise, cases in MISTAKES.items()
         for case in cases]


def test_every_exercise_keeps_wrong_versions():
    assert sorted(MISTAKES) == sorted(p.stem for p in (ROOT / "grader" / "exercises").glob("ex*.py"))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Per exercise: its source folder (staged minigrad included), notebook, reference and torch's results."""
    root = tmp_path_factory.mktemp("mistakes")
    found = {}
    for exercise in MISTAKES:
        folder = root / exercise
        shutil.copytree(ROOT / "solutions" / exercise, folder)
        source = nbformat.read(folder / f"{exercise}.ipynb", as_version=4)
        expected = verdicts.expected_results(folder, f"{exercise}.ipynb", root / f"{exercise}.json")
        found[exercise] = folder, source, verdicts.solution_cells(source, without_markers=True), expected
    return found


@pytest.mark.parametrize("exercise, what, part, right, wrong, failing_test", CASES)
def test_a_wrong_version_loses_points(sources, exercise, what, part, right, wrong, failing_test):
    folder, source, reference, expected = sources[exercise]
    assert reference[part].count(right) == 1
    solutions = {**reference, part: reference[part].replace(right, wrong, 1)}
    results = verdicts.compare(expected, verdicts.run(folder, verdicts.plan(source, solutions), "minigrad"))
    assert results[failing_test][0] is False, f"{what}: {failing_test} passed"
    assert "differs from PyTorch" in results[failing_test][1] or "Error" in results[failing_test][1]


@pytest.mark.parametrize("exercise", MISTAKES)
def test_the_reference_passes_every_test(sources, exercise):
    folder, source, reference, expected = sources[exercise]
    results = verdicts.compare(expected, verdicts.run(folder, verdicts.plan(source, reference), "minigrad"))
    assert all(passed for passed, _ in results.values()), {k: v for k, v in results.items() if not v[0]}


def test_a_wrongly_worded_error_costs_only_the_check_that_grades_the_wording(sources):
    """Exercise 3's errors are compared by type in every check and word for word in one: a learner's
    own message for a freed graph loses that one test's point, not the exercise."""
    folder, source, reference, expected = sources["ex3_freeing"]
    part = "BackwardFunction-_unpack"
    solutions = {**reference, part: reference[part].replace(
        "raise RuntimeError(ERR_BACKWARD_TWICE)", "raise RuntimeError('saved tensors were freed')", 1)}
    results = verdicts.compare(expected, verdicts.run(folder, verdicts.plan(source, solutions), "minigrad"))
    assert [test for test, (passed, _) in results.items() if not passed] == ["test-error-message"]
