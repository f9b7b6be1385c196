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
        ("_unpack hands out the SavedTensor itself", "BackwardFunction-_unpack", "return saved.unpack(self)",
         "return saved", "test-retain-graph"),
        ("_unpack gives None for a freed entry", "BackwardFunction-_unpack", "raise RuntimeError(ERR_BACKWARD_TWICE)",
         "return None", "test-second-backward"),
        ("_unpack raises its own message", "BackwardFunction-_unpack", "raise RuntimeError(ERR_BACKWARD_TWICE)",
         "raise RuntimeError('saved tensors were freed')", "test-error-message"),
    ],
    "ex4_versions": [
        ("_mutate bumps before the kernel runs", "Tensor-_mutate",
         "    storage_op(self._data, *args)\n    if self._version_counter is None:",
         "    if self._version_counter is not None:\n        self._version_counter.version += 1\n"
         "    storage_op(self._data, *args)\n    if self._version_counter is None:", "test-version-bump"),
        ("_mutate never bumps (only recorded edits do)", "Tensor-_mutate",
         "    else:\n        self._version_counter.version += 1\n", "", "test-version-bump"),
        ("_mutate lets an inference tensor be edited anywhere", "Tensor-_mutate",
         "        if not grad_mode.is_inference_mode_enabled():\n            raise RuntimeError(ERR_INFERENCE_INPLACE)",
         "        pass", "test-version-bump-hidden"),
        ("_inplace forgets the bump of a recorded edit", "Tensor-_inplace",
         "    self._record_inplace(function, *args)\n    self._version_counter.version += 1",
         "    self._record_inplace(function, *args)", "test-version-bump"),
        ("detach gives a fresh version counter", "Tensor-detach",
         "    if self._version_counter is not None:\n        out._version_counter = self._version_counter\n", "",
         "test-detach"),
        ("unpack compares versions with < (the wrong way round)", "SavedTensor-unpack",
         "self.version_counter.version != self.saved_version", "self.version_counter.version < self.saved_version",
         "test-saved-version"),
        ("unpack checks saved outputs only", "SavedTensor-unpack",
         "    if self.version_counter.version != self.saved_version:",
         "    if self.tensor is not None:\n        return self.tensor\n"
         "    if self.version_counter.version != self.saved_version:", "test-saved-version"),
        ("the message swaps the two versions", "SavedTensor-_raise_modified",
         "version=self.version_counter.version,\n                                           saved=self.saved_version",
         "version=self.saved_version,\n                                           saved=self.version_counter.version",
         "test-error-message"),
        ("the message names the node that saved the tensor, not the one that made it",
         "SavedTensor-_raise_modified", "self.tensor._data, self.tensor.grad_fn, self.tensor._output_nr",
         "self.tensor._data, node, self.tensor._output_nr", "test-error-message"),
        ("the leaf check forgets no_grad (it comes before the recording test)", "Tensor-_inplace",
         "    if not recording:\n",
         "    if self._requires_grad and self.grad_fn is None:\n        raise RuntimeError(ERR_LEAF_INPLACE)\n"
         "    if not recording:\n", "test-leaf"),
        ("the leaf check refuses non-leaves too", "Tensor-_inplace",
         "    if self._requires_grad and self.grad_fn is None:", "    if self._requires_grad:", "test-leaf"),
        ("the leaf check refuses leaves that don't require grad", "Tensor-_inplace",
         "    if self._requires_grad and self.grad_fn is None:", "    if self.grad_fn is None:", "test-leaf"),
        ("recording decided by self alone, not by the arguments", "Tensor-_inplace",
         "self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))",
         "self._requires_grad)", "test-leaf"),
        ("no view-of-a-leaf check", "Tensor-_inplace",
         "        if view.base._requires_grad and view.base.grad_fn is None:\n"
         "            raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)\n", "", "test-leaf"),
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
