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
    "ex7_custom_functions": [
        ("one-sided differences", "_numerical_jacobians",
         "entry.copy_(original - eps)\n            before = _output_values(func, inputs)\n"
         "            entry.copy_(original + eps)\n            after = _output_values(func, inputs)\n"
         "            entry.copy_(original)\n            for jacobian, k in zip(per_output, positions):\n"
         "                jacobian[row] = _central_difference(before[k], after[k], eps, index)",
         "before = _output_values(func, inputs)\n"
         "            entry.copy_(original + eps)\n            after = _output_values(func, inputs)\n"
         "            entry.copy_(original)\n            for jacobian, k in zip(per_output, positions):\n"
         "                jacobian[row] = ((after[k] - before[k]) / eps).reshape(-1)", "test-numerical"),
        ("the moved element is not put back", "_numerical_jacobians", "            entry.copy_(original)\n", "",
         "test-numerical"),
        ("the elements moved in a copy of the storage", "_numerical_jacobians", "data = inp._data",
         "data = inp._data.clone()", "test-numerical"),
        ("Jacobians for every tensor input, not only those requiring grad", "_numerical_jacobians",
         "for inp in _requiring_grad(inputs):", "for inp in [i for i in inputs if isinstance(i, minigrad.Tensor)]:",
         "test-numerical-hidden"),
        ("elements walked through reshape(-1), a copy when not contiguous", "_numerical_jacobians",
         "entry = data[index]", "entry = data.reshape(-1)[row]", "test-numerical-hidden"),
        ("a grad_output of ones instead of one-hot", "_jacobians_from_backward", "one_hot[j] = 1.0",
         "one_hot.fill_(1.0)", "test-analytical"),
        ("backward's gradient written as row j (the Jacobian transposed)", "_jacobians_from_backward",
         "jacobian[:, j] = grad._data.reshape(-1)", "jacobian[j] = grad._data.reshape(-1)", "test-analytical"),
        ("no retain_graph for the next column", "_jacobians_from_backward", "retain_graph=True, allow_unused=True",
         "allow_unused=True", "test-analytical"),
        ("no allow_unused for an input backward does not reach", "_jacobians_from_backward",
         "retain_graph=True, allow_unused=True", "retain_graph=True", "test-analytical-hidden"),
        ("absolute tolerance only", "_check_jacobians",
         "torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), rtol, atol)",
         "torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), 0, atol)", "test-wrong-backwards"),
        ("rtol scaled by the analytical Jacobian", "_check_jacobians",
         "torch.allclose(a.to(dtype), n.to(device=a.device, dtype=dtype), rtol, atol)",
         "torch.allclose(n.to(device=a.device, dtype=dtype), a.to(dtype), rtol, atol)", "test-wrong-backwards"),
        ("only the first input checked", "_check_jacobians",
         "enumerate(zip(analytical, numerical))", "enumerate(zip(analytical[:1], numerical[:1]))",
         "test-wrong-backwards-hidden"),
        ("only the first output checked", "_check_jacobians", "for i, output in enumerate(outputs):",
         "for i, output in enumerate(outputs[:1]):", "test-wrong-backwards-hidden"),
        ("its own error message", "_check_jacobians",
         'GradcheckError(f"Jacobian mismatch for output {i:d} with respect to input {j:d},\\n"',
         'GradcheckError(f"Jacobian mismatch: output {i:d}, input {j:d}\\n"', "test-mismatch-message"),
        ("log-sum-exp's forward not shifted", "StableLogSumExp",
         "return (x - shift).exp().sum(dim=dim, keepdim=True).log().squeeze(dim) + shift.squeeze(dim)",
         "return x.exp().sum(dim=dim).log()", "test-lse"),
        ("log-sum-exp's backward not shifted", "StableLogSumExp", "shifted = (x - shift).exp()",
         "shifted = x.exp()", "test-lse"),
        ("grad_output not unsqueezed", "StableLogSumExp", "return grad_output.unsqueeze(ctx.dim) * softmax, None",
         "return grad_output * softmax, None", "test-lse"),
        ("softmax normalised over every element", "StableLogSumExp",
         "shifted / shifted.sum(dim=ctx.dim, keepdim=True)", "shifted / shifted.sum()", "test-lse"),
        ("no gradient slot (None) for dim", "StableLogSumExp", "return grad_output.unsqueeze(ctx.dim) * softmax, None",
         "return grad_output.unsqueeze(ctx.dim) * softmax", "test-lse"),
        ("infinite rows shifted by their max (the tutorial's nan)", "StableLogSumExp",
         "        shift = shift.masked_fill(shift.abs() == math.inf, 0)\n", "", "test-lse"),
        ("only -inf rows shifted by 0", "StableLogSumExp", "shift.masked_fill(shift.abs() == math.inf, 0)",
         "shift.masked_fill(shift == -math.inf, 0)", "test-lse-hidden"),
        ("the straight-through estimator returns None", "StraightThroughEstimator", "return grad_output, None",
         "return None, None", "test-ste"),
        ("the straight-through estimator returns zeros", "StraightThroughEstimator", "return grad_output, None",
         "return grad_output * 0, None", "test-ste"),
        ("the straight-through estimator rounds in backward too", "StraightThroughEstimator",
         "return grad_output, None", "return grad_output.mul(255).round().div(255), None", "test-ste"),
        ("2 ** num_bits steps", "StraightThroughEstimator", "scale = 2 ** num_bits - 1", "scale = 2 ** num_bits",
         "test-ste"),
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
