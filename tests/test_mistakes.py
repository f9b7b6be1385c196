"""Plausible wrong versions of each part, kept as test data: each must lose points, on the test named,
every time (the verdict harness grades them, as autograde does, without nbgrader's overhead)."""
import os
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
    "ex9_gpu_kernel": [
        ("the max reads the padding as 0", "softmax_kernel", ', other=float("-inf")))', "))", "test-softmax_kernel-hidden"),
        ("the sum counts the padding", "softmax_kernel",
         'x = tl.load(x_row + start + columns, mask=start + columns < n, other=float("-inf"))',
         "x = tl.load(x_row + start + columns, mask=start + columns < n)", "test-softmax_kernel"),
        ("no max shift", "softmax_kernel", "shift = tl.max(top, 0)", "shift = 0.0", "test-softmax_kernel-hidden"),
        ("a row starts at x_ptr + row (no row stride)", "softmax_kernel",
         "x_row, out_row = x_ptr + row * n, out_ptr + row * n", "x_row, out_row = x_ptr + row, out_ptr + row * n",
         "test-softmax_kernel"),
        ("the sum's block loop stops a column early", "softmax_kernel",
         "x_ptr.dtype.element_ty)\n    for start in range(0, n, BLOCK):\n        x = tl.load(",
         "x_ptr.dtype.element_ty)\n    for start in range(0, n - 1, BLOCK):\n        x = tl.load(",
         "test-softmax_kernel-hidden"),
        ("the backward's sum not weighted by the gradient", "softmax_backward_kernel", "dot += g * y", "dot += y",
         "test-softmax_backward_kernel"),
        ("the backward is the Jacobian's diagonal", "softmax_backward_kernel", "y * (g - dot)", "g * y * (1 - y)",
         "test-softmax_backward_kernel"),
        ("the backward's sum keeps the last block only", "softmax_backward_kernel", "dot += g * y", "dot = g * y",
         "test-softmax_backward_kernel-hidden"),
        ("the output is allocated as float32", "Softmax", "out = torch.empty_like(rows)",
         "out = torch.empty(rows.shape, device=rows.device)", "test-Softmax"),
        ("the input is not made contiguous", "Softmax", "rows = data.reshape(-1, data.shape[-1]).contiguous()",
         "rows = data.reshape(-1, data.shape[-1])", "test-Softmax-hidden"),
        ("Softmax saves its input", "Softmax", "ctx.save_for_backward(result)", "ctx.save_for_backward(x)",
         "test-Softmax"),
        ("one program for all the rows", "Softmax", "softmax_kernel[(rows.shape[0],)]", "softmax_kernel[(1,)]",
         "test-Softmax"),
        ("the backward runs on storage: no second derivative", "Softmax", "return SoftmaxGrad.apply(grad, result)",
         "return minigrad.Tensor(triton_softmax.softmax_backward(grad._data, result._data))",
         "test-Softmax-graph-hidden"),
    ],
}
CASES = [pytest.param(exercise, *case, id=f"{exercise}: {case[0]}") for exercise, cases in MISTAKES.items()
         for case in cases]


def test_every_exercise_keeps_wrong_versions():
    assert sorted(MISTAKES) == sorted(p.stem for p in (ROOT / "grader" / "exercises").glob("ex*.py"))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Per exercise: its source folder (staged minigrad included), notebook, reference and torch's
    results; or why it cannot be graded here (exercise 9 without Triton, except on CI, which installs it)."""
    root = tmp_path_factory.mktemp("mistakes")
    found = {}
    for exercise in MISTAKES:
        folder = root / exercise
        shutil.copytree(ROOT / "solutions" / exercise, folder)
        source = nbformat.read(folder / f"{exercise}.ipynb", as_version=4)
        unmet = None if os.environ.get("CI") else verdicts.unmet_requirements(source)
        if unmet:
            found[exercise] = unmet
            continue
        expected = verdicts.expected_results(folder, f"{exercise}.ipynb", root / f"{exercise}.json")
        found[exercise] = folder, source, verdicts.solution_cells(source, without_markers=True), expected
    return found


def source_of(sources, exercise):
    if isinstance(sources[exercise], str):
        pytest.skip(sources[exercise])
    return sources[exercise]


@pytest.mark.parametrize("exercise, what, part, right, wrong, failing_test", CASES)
def test_a_wrong_version_loses_points(sources, exercise, what, part, right, wrong, failing_test):
    folder, source, reference, expected = source_of(sources, exercise)
    assert reference[part].count(right) == 1
    solutions = {**reference, part: reference[part].replace(right, wrong, 1)}
    results = verdicts.compare(expected, verdicts.run(folder, verdicts.plan(source, solutions), "minigrad"))
    assert results[failing_test][0] is False, f"{what}: {failing_test} passed"
    assert "differs from PyTorch" in results[failing_test][1] or "Error" in results[failing_test][1]


@pytest.mark.parametrize("exercise", MISTAKES)
def test_the_reference_passes_every_test(sources, exercise):
    folder, source, reference, expected = source_of(sources, exercise)
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
