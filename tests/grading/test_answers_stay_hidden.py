"""Issue 34: nothing the learner receives holds an answer, not even in code beside the exercise (the
check of exercise 4's view of a leaf was, line for line, in ``Tensor._edited_in_place_by``).

**The release** of exercise N: every file of ``exercises/<exercise>/`` that ``release`` sends (what
nbgrader's ``CourseDirectory.ignore`` leaves): each cell of the notebook, the staged ``minigrad/``
and ``coursekit/``, ``inside/``, ``policy.json``, the stubs' own text included (a docstring
must not spell a line out either). It must hold no answer of exercise N, nor of a later exercise; an
earlier exercise's parts are reference code there (the learner wrote them).

The answer lines, and how lines are compared: tests/grading/answer_lines.py.
"""
import fnmatch

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from answer_lines import ANSWERS, EXERCISES, LOCAL, normalised
from grader.build import ROOT


IGNORED = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "grader")).load_config().CourseDirectory.ignore


def released_lines(exercise):
    """(file, where in it, line) of every line of every file ``release`` sends for ``exercise``."""
    folder = ROOT / "exercises" / exercise
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or any(fnmatch.fnmatch(name, pattern) for name in relative.parts for pattern in IGNORED):
            continue
        if path.suffix == ".ipynb":
            for cell in nbformat.read(path, as_version=4).cells:
                for number, line in enumerate(cell.source.splitlines(), 1):
                    yield str(relative), f"cell {cell.id} line {number}", line
        else:
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                yield str(relative), f"line {number}", line


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_release_holds_no_answer_of_this_or_a_later_exercise(exercise):
    number = EXERCISES[exercise]
    assert any(n == number for n, _, _, _ in ANSWERS), f"{exercise}: no answer line to look for"
    assert (ROOT / "exercises" / exercise / "minigrad" / "engine.py").exists()
    places = {}
    for file, where, line in released_lines(exercise):
        places.setdefault(normalised(line, LOCAL), []).append((file, where, line.strip()))
    leaks = sorted({f"exercise {n}, {what}: {line!r}\n    in {file}, {where}: {copy!r}"
                    for n, what, line, forms in ANSWERS if n >= number
                    for form in forms for file, where, copy in places.get(form, [])})
    assert not leaks, f"{exercise}'s release holds {len(leaks)} line(s) of answers:\n" + "\n".join(leaks)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_release_holds_no_hidden_test(exercise):
    released = "\n".join(line for _, _, line in released_lines(exercise))
    assert "HIDDEN TESTS" not in released and "fails_part_way" not in released  # hidden code; its titles are public


@pytest.mark.parametrize("copy", ["        if self._view.base._requires_grad and self._view.base.grad_fn is None:",
                                  "if self._view.base._requires_grad and self._view.base.grad_fn   is None:  # (a copy)"],
                         ids=["as it was", "spaced and commented"])
def test_the_scan_finds_the_answer_that_once_shipped_beside_exercise_4(copy):
    """What issue 34's learner found: exercise 4's view-of-leaf check, line for line, in
    ``Tensor._edited_in_place_by`` (main at d7429db), which exercise 4's release held unstubbed. A
    released line like it, however spaced or commented, is an answer line of exercise 4."""
    form = normalised(copy, LOCAL)
    assert any(number == 4 and form in forms for number, _, _, forms in ANSWERS), form
