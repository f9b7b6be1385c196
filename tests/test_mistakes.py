"""Plausible wrong versions of each part, kept as test data: each must lose points, on the test named,
every time (the verdict harness grades them, as autograde does, without nbgrader's overhead)."""
import shutil

import nbformat
import pytest

from grader import verdicts
from grader.build import ROOT

# exercise 6's SGD step: its weight decay and momentum blocks, to swap them
_DECAY = '    if group["weight_decay"] != 0:\n        grad = grad.add(param, alpha=group["weight_decay"])\n'
_MOMENTUM = ('    momentum = group["momentum"]\n    if momentum != 0:\n        state = self.state[param]\n'
             '        buf = state.get("momentum_buffer")\n        if buf is None:\n'
             '            buf = state["momentum_buffer"] = grad.clone().detach()\n        else:\n'
             '            buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])\n'
             '        grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf\n')

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
    "ex6_training": [
        ("momentum buffer starts at zeros", "SGD-_update", 'state["momentum_buffer"] = grad.clone().detach()',
         'state["momentum_buffer"] = grad.clone().detach() * 0', "test-sgd"),
        ("dampening applied on the first step", "SGD-_update", 'state["momentum_buffer"] = grad.clone().detach()',
         'state["momentum_buffer"] = grad.clone().detach().mul_(1 - group["dampening"])', "test-sgd-options"),
        ("weight decay added after momentum", "SGD-_update", _DECAY + _MOMENTUM, _MOMENTUM + _DECAY, "test-sgd-options"),
        ("sign error: the step climbs the gradient", "SGD-_update", 'param.add_(grad, alpha=-group["lr"])',
         'param.add_(grad, alpha=group["lr"])', "test-sgd"),
        ("lr applied twice", "SGD-_update", 'param.add_(grad, alpha=-group["lr"])',
         'param.add_(grad * group["lr"], alpha=-group["lr"])', "test-sgd"),
        ("the parameter rebound, not updated in place", "SGD-_update", 'param.add_(grad, alpha=-group["lr"])',
         'param = param.add(grad, alpha=-group["lr"])', "test-sgd"),
        ("Nesterov ignored", "SGD-_update", 'grad.add(buf, alpha=momentum) if group["nesterov"] else buf', "buf",
         "test-sgd-options-hidden"),
        ("the momentum buffer is the gradient itself, not a copy", "SGD-_update",
         'state["momentum_buffer"] = grad.clone().detach()', 'state["momentum_buffer"] = grad', "test-sgd-in-place-hidden"),
        ("zero_grad zeros when it should set None", "Optimizer-zero_grad", "param.grad = None", "grad.zero_()",
         "test-zero-grad"),
        ("zero_grad makes a new zero tensor", "Optimizer-zero_grad", "grad.zero_()", "param.grad = grad * 0",
         "test-zero-grad"),
        ("zero_grad forgets parameters without a gradient", "Optimizer-zero_grad",
         "if grad is None:\n                continue\n            ", "", "test-zero-grad-hidden"),
        ("zero_grad zeroes the first group only", "Optimizer-zero_grad", "for group in self.param_groups:",
         "for group in self.param_groups[:1]:", "test-zero-grad-hidden"),
        ("fit: zero_grad between backward and step", "fit",
         "optimizer.zero_grad()\n            loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])"
         "\n            loss.backward()\n",
         "loss = loss_fn(model(x[start:start + batch_size]), y[start:start + batch_size])"
         "\n            loss.backward()\n            optimizer.zero_grad()\n", "test-fit"),
        ("fit: losses kept as tensors", "fit", "losses.append(loss.item())", "losses.append(loss)", "test-fit"),
        ("fit: the last, smaller batch dropped", "fit", "range(0, len(y), batch_size)",
         "range(0, len(y) - batch_size + 1, batch_size)", "test-fit-hidden"),
        ("settings: too few epochs for 95%", "settings", "EPOCHS = 10", "EPOCHS = 3", "test-target"),
        ("fixed_fit zeroes the head only", "fixed_fit", "body.zero_grad()\n        head.zero_grad()",
         "head.zero_grad()", "test-fixed"),
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
