"""course/lesson.py: what a learner sees from a predict cell and from a side-by-side run."""
import sys

import pytest

from grader.build import ROOT

sys.path.insert(0, str(ROOT / "course"))
from lesson import predict, side_by_side  # noqa: E402


def second_backward(torch):
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def gradient(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    return x.grad


@pytest.mark.parametrize("answer, scenario, verdict", [
    (..., gradient, "Your turn"),
    ("error", second_backward, "Right"),
    ("works", second_backward, "Not what torch does"),
    ([2, 4], gradient, "Right"),
    ([2.0, 4.5], gradient, "Not what torch does"),
    ("works", gradient, "Right"),
    (float("inf"), lambda torch: torch.tensor(1000.0).exp(), "Right"),
    (1e38, lambda torch: torch.tensor(1000.0).exp(), "Not what torch does"),
    (float("nan"), lambda torch: torch.tensor(float("inf")) - torch.tensor(float("inf")), "Right"),
])
def test_a_prediction_gets_feedback(capsys, answer, scenario, verdict):
    predict(answer, scenario)
    assert capsys.readouterr().out.startswith(verdict)


def test_side_by_side_prints_both_columns_and_raises_when_minigrad_differs(capsys):
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        return {"y.grad_fn": y.grad_fn, "y": y, "differs": lib.__name__}

    with pytest.raises(AssertionError, match="differs"):
        side_by_side(scenario)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["torch", "minigrad"]
    assert lines[1].split() == ["y.grad_fn", "MulBackward0", "MulBackward0"]
    assert lines[2].split() == ["y", "[3,", "6]", "[3,", "6]"]
    assert lines[3].endswith("<- differs")
