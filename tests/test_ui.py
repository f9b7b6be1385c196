"""A learner in real JupyterLab, in a real browser: open exercise 3, press nbgrader's Validate.

Needs Debian's chromium (.ci/run installs it). Validate saves the notebook it checks, so the test
works on copies.
"""
import shutil

import pytest

from grader.build import ROOT
from labs import browser, needs_chromium, serve, validate  # noqa: F401 - browser is a fixture
from test_exercises import _reference_solutions, _submission_like

pytestmark = needs_chromium
EXERCISE = "ex3_freeing"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A learner's JupyterLab serving copies of exercise 3: one done right, one with a typical mistake."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", root / "solutions")
    reference = _reference_solutions(root, EXERCISE)
    for name, change in (("done", lambda gid, ref, released: ref),
                         ("mistake", lambda gid, ref, released: ref.replace(
                             "tuple(None if s is None else _FREED for s in self._saved)",
                             "tuple(_FREED for s in self._saved)"))):
        shutil.copytree(ROOT / "exercises" / EXERCISE, root / name)
        _submission_like(root / name / f"{EXERCISE}.ipynb", change, reference)
    with serve(root, tmp_path_factory.mktemp("labstate"), "learner") as server:
        yield server


def validate_in_lab(browser, lab, folder, screenshot):  # noqa: F811 - browser is labs' fixture
    """Open the notebook, press Validate, return the text of nbgrader's result dialog."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{lab['url']}/lab/workspaces/{folder}/tree/{folder}/{EXERCISE}.ipynb?reset&token={lab['token']}")
    dialog = validate(page.get_by_role("button", name="Validate"))
    page.screenshot(path=str(screenshot))
    text = dialog.inner_text()
    page.close()
    return text


def test_validate_passes_on_a_finished_exercise(browser, lab, tmp_path):  # noqa: F811
    text = validate_in_lab(browser, lab, "done", tmp_path / "done.png")
    assert "Success! Your notebook passes all the tests." in text


def test_validate_names_the_failing_scenario(browser, lab, tmp_path):  # noqa: F811
    text = validate_in_lab(browser, lab, "mistake", tmp_path / "mistake.png")
    assert "scenario 'seed 003: m = k after backward' differs from PyTorch" in text
    assert "torch did:" in text and "minigrad did:" in text
