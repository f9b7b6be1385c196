"""course/lesson.py: what a learner sees from a predict cell, a side-by-side run and a picture."""
import sys

import pytest

from grader.build import ROOT

sys.path.insert(0, str(ROOT / "course"))
import lesson  # noqa: E402
from lesson import attempt, picture, predict, saved, side_by_side  # noqa: E402


def second_backward(torch):
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def gradient(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    return x.grad


def node(torch):
    return (torch.ones(2, requires_grad=True) * 2).sum().grad_fn.next_functions[0][0].next_functions[0][0]


@pytest.mark.parametrize("answer, scenario, verdict", [
    (..., gradient, "Your turn"),
    ("AccumulateGrad", node, "Right"),
    ("MulBackward0", node, "Not what torch does"),
    ("error", second_backward, "Right"),
    ("works", second_backward, "Not what torch does"),
    ("error: backward through the graph a second time, retain_graph", second_backward, "Right"),
    ("Error: RuntimeError, SECOND TIME", second_backward, "Right"),
    ("error: version", second_backward, "An error, yes, but not with 'version' in it"),
    ("error: second time", gradient, "Not what torch does"),
    ([2, 4], gradient, "Right"),
    ([2.0, 4.5], gradient, "Not what torch does"),
    ("works", gradient, "Right"),
    (float("inf"), lambda torch: torch.tensor(1000.0).exp(), "Right"),
    (1e38, lambda torch: torch.tensor(1000.0).exp(), "Not what torch does"),
    (float("nan"), lambda torch: torch.tensor(float("inf")) - torch.tensor(float("inf")), "Right"),
])
def test_a_prediction_gets_feedback(capsys, answer, scenario, verdict):
    predict(answer, scenario, binary=answer in ("works", "error"))
    assert capsys.readouterr().out.startswith(verdict)


def test_works_says_what_the_scenario_gave(capsys):
    predict("works", gradient, binary=True)
    predict("error", lambda torch: None, binary=True)
    assert capsys.readouterr().out.splitlines() == [
        "Right. torch: works, and gives [2, 4]", "Not what torch does. You said 'error'; torch: works",
        "Keep your guess in mind: the next cells show why."]


def test_a_question_that_asks_for_more_than_works_or_error_wants_the_value_or_the_words(capsys):
    predict("error", second_backward)
    predict("works", gradient)
    predict("works", lambda torch: None)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("An error, yes. Which one?") and out[1].startswith("It works, yes. What does it give?")
    assert out[2] == "Right. torch: works"


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


def test_on_a_torch_minigrad_does_not_follow_a_difference_is_said_not_raised(capsys, monkeypatch):
    """Issue 23: a lesson must not stop on a difference the learner did not cause. On a release
    minigrad does not follow (a newer torch may word an error differently) it says so and goes on."""
    def scenario(lib):
        return {"differs": lib.__name__}

    monkeypatch.setattr(lesson.releases, "FOLLOWED", False)
    side_by_side(scenario)
    out = capsys.readouterr().out
    assert "minigrad differs from torch in: differs" in out
    assert "minigrad follows torch 2.11 to 2.13; yours, " in out and "the lesson goes on." in out


def test_a_long_error_is_written_out_in_full_under_the_table(capsys):
    side_by_side(lambda torch: {"second": attempt(second_backward, torch), "x": torch.ones(1)})
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[1] == "RuntimeError:" and lines[1].split()[-1].endswith("…")
    assert lines[4].startswith("second: RuntimeError: Trying to backward through the graph a second time")
    assert "retain_graph=True" in " ".join(lines[4:])


def test_edges_and_saved_tensors_read_alike_in_both_columns(capsys):
    def scenario(torch):
        x = torch.ones(2, requires_grad=True)
        y = x * 2
        y.sum().backward()
        return {"edges": y.grad_fn.next_functions, "saved": saved(y.grad_fn), "leaf": saved(x.grad_fn)}

    side_by_side(scenario)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split(maxsplit=1)[1].split("  ")[0] == "((AccumulateGrad, 0), (None, 0))"
    assert lines[2].split() == ["saved", "other", "(freed)", "other", "(freed)"]
    assert lines[3].split() == ["leaf", "no", "node", "no", "node"]


def test_a_picture_is_drawn_when_both_graphs_agree_and_refused_when_not(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    drawn = []
    monkeypatch.setattr(lesson.viz, "draw", lambda graph, title=None: drawn.append((graph, title)))

    def product(torch):
        x = torch.ones(2, requires_grad=True)
        return {"x": x, "y": (x * 3).sum()}

    picture(product, "y", title="y")
    [(graph, title)] = drawn
    assert [node.name for node in graph.nodes] == ["SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad"]
    assert [node.label for node in graph.nodes] == ["y", None, "x"] and title == "y"

    def differs(torch):
        x = torch.ones(2, requires_grad=True)
        return {"y": x * 3 if torch.__name__ == "torch" else x + 3}

    with pytest.raises(AssertionError, match="graph differs"):
        picture(differs, "y")
