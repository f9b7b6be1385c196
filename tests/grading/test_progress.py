"""Issue 35, item 4: the grader's long steps say which exercise is under way (grader/progress.py):
tqdm's bar on a terminal, a plain line per exercise elsewhere (a log, CI, a pipe)."""
import io

from grader.progress import each_exercise


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_pipe_gets_a_line_as_each_exercise_starts(capsys):
    seen = []
    for exercise in each_exercise(["ex1_ops", "ex2_engine"], "recording in the gradebook"):
        seen.append((exercise, capsys.readouterr().err))
    assert seen == [("ex1_ops", "minigrad: recording in the gradebook: ex1_ops (1/2)\n"),
                    ("ex2_engine", "minigrad: recording in the gradebook: ex2_engine (2/2)\n")]


def test_a_terminal_gets_a_bar_naming_the_exercise_under_way(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    seen = []
    for exercise in each_exercise(["ex1_ops", "ex2_engine"], "selftest, grading and validating"):
        seen.append(terminal.getvalue().split("\r")[-1])
    assert seen[0].startswith("minigrad: selftest, grading and validating:   0%|") and "0/2" in seen[0]
    assert seen[0].endswith(", ex1_ops]") and seen[1].endswith(", ex2_engine]") and "1/2" in seen[1]
    assert "2/2" in terminal.getvalue().split("\r")[-1] and "(1/2)" not in terminal.getvalue()
