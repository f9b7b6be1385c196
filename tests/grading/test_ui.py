"""A learner in real JupyterLab, in a real browser: open exercise 3 (untouched, with a mistake, done)
or a lesson, press Validate (the course's, grader/lab/course_validate.py, in nbgrader's dialog).

Needs Debian's chromium (.ci/run installs it). Validate saves the notebook it checks, so the test
works on copies. The screenshots are kept in screenshots/validate/.
"""
import json
import os
import shutil
import threading
import time
import urllib.request

import nbformat
import pytest

from grader.build import ROOT
from support import (passed_in_full, browser, needs_chromium, reference_solutions, serve, shot, submission_like,  # noqa: F401
                     validate)  # browser is a fixture

pytestmark = needs_chromium
EXERCISE = "ex3_freeing"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A learner's JupyterLab serving copies of exercise 3: one done right, one with a typical mistake."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", root / "solutions")
    reference = reference_solutions(root, EXERCISE)
    shutil.copytree(ROOT / "course", root / "course", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "exercises" / EXERCISE, root / "untouched")
    shutil.copytree(ROOT / "exercises" / EXERCISE, root / "slow")
    slow = nbformat.read(root / "slow" / f"{EXERCISE}.ipynb", as_version=4)
    slow.cells.insert(2, nbformat.v4.new_code_cell(  # a learner's experiment, writing where the checker answers
        "import os, time\nos.write(1, b'not an answer\\n')\ntime.sleep(4)"))
    nbformat.write(slow, root / "slow" / f"{EXERCISE}.ipynb")
    for name, change in (("done", lambda gid, ref, released: ref),
                         ("mistake", lambda gid, ref, released: ref.replace(
                             "tuple(None if s is None else _FREED for s in self._saved)",
                             "tuple(_FREED for s in self._saved)"))):
        shutil.copytree(ROOT / "exercises" / EXERCISE, root / name)
        submission_like(root / name / f"{EXERCISE}.ipynb", change, reference)
    with serve(root, tmp_path_factory.mktemp("labstate"), "learner") as server:
        yield server


def validate_in_lab(browser, lab, folder, notebook=f"{EXERCISE}.ipynb"):  # noqa: F811 - labs' fixture
    """Open the notebook, press Validate, return the text of the result dialog; the dialog must fit
    the window whole (no scrolling)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{lab['url']}/lab/workspaces/{folder}/tree/{folder}/{notebook}?reset&token={lab['token']}")
    dialog = validate(page.get_by_role("button", name="Validate"))
    shot(page, "validate", folder)
    fits = page.evaluate("() => [...document.querySelectorAll('.jp-Dialog-body, .jp-Dialog-body *')]"
                         ".every(e => e.scrollHeight <= e.clientHeight + 1 || getComputedStyle(e).overflowY == 'visible')")
    box = dialog.bounding_box()
    text = dialog.inner_text()
    page.close()
    assert fits and box["height"] <= 900, f"the dialog does not fit one screen:\n{text}"
    return text


def test_validate_passes_on_a_finished_exercise(browser, lab):  # noqa: F811
    text = validate_in_lab(browser, lab, "done")
    assert passed_in_full(text), text


def test_validate_on_the_untouched_release_names_the_parts_not_written(browser, lab):  # noqa: F811
    text = validate_in_lab(browser, lab, "untouched")
    assert "visible checks fail. Not written yet: BackwardFunction._release_saved" in text, text
    assert "your code raised NotImplementedError (a part not written yet)" in text
    assert "The following cell failed" not in text and "def " not in text  # no test source, no false label


def test_validate_names_the_failing_scenario_and_where_it_differs(browser, lab):  # noqa: F811
    text = validate_in_lab(browser, lab, "mistake")
    assert "'seed 003: m = k after backward'\n  minigrad differs from torch at " in text, text
    assert "  parts this test exercises: BackwardFunction._release_saved, run_node, BackwardFunction._unpack" in text
    assert "torch: " in text and "minigrad: " in text
    assert "Not written yet" not in text


def test_the_summary_line_wraps_in_a_narrow_window(browser, lab):  # noqa: F811
    """Issue 35: the failing dialog's first line (how many checks fail, the parts not written yet) sat
    in a one-line box, cut off; it wraps, whole (screenshots/validate/untouched-narrow.png)."""
    page = browser.new_page(viewport={"width": 960, "height": 900})
    page.goto(f"{lab['url']}/lab/workspaces/narrow/tree/untouched/{EXERCISE}.ipynb?reset&token={lab['token']}")
    summary = validate(page.get_by_role("button", name="Validate")).locator("#validation-message pre").first
    shot(page, "validate", "untouched-narrow")
    text = summary.inner_text()
    wide, room, height, line = summary.evaluate(
        "e => [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().height, parseFloat(getComputedStyle(e).lineHeight)]")
    page.close()
    assert text.startswith("6 of 6 visible checks fail. Not written yet: ") and text.endswith("BackwardFunction._unpack.")
    assert wide <= room and height >= 2 * line, (wide, room, height, line)


def test_validate_on_a_lesson_says_there_is_nothing_to_validate(browser, lab):  # noqa: F811
    text = validate_in_lab(browser, lab, "course", "03a_what_backward_frees.ipynb")
    assert "Nothing to validate: this notebook is a lesson" in text
    assert "Success" not in text


def test_the_server_answers_while_a_validate_runs(lab):
    """Validate runs in the checker, not in the server: a request made meanwhile is answered at once."""
    def call(method, path):
        request = urllib.request.Request(f"{lab['url']}/{path}", method=method,
                                         headers={"Authorization": f"token {lab['token']}"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.loads(answer.read())

    done = {}
    validating = threading.Thread(target=lambda: done.update(call("POST", f"assignments/validate?path=slow/{EXERCISE}.ipynb")))
    start = time.monotonic()
    validating.start()
    time.sleep(1)
    call("GET", "api/contents/slow")
    answered = time.monotonic() - start
    validating.join()
    assert answered < 2.5 and time.monotonic() - start >= 4, (answered, done)
    assert done["success"] and "6 of 6 visible checks fail" in done["value"]["failed"][0]["source"]


def test_a_checker_that_ended_is_started_again(lab):
    """The checker ends when idle (or dies): the next Validate starts another and still answers."""
    import asyncio
    import concurrent.futures
    import sys

    sys.path.insert(0, str(ROOT / "grader" / "lab"))
    import course_validate

    async def twice():
        checker = course_validate.Checker()
        path = str(lab["root"] / "done" / f"{EXERCISE}.ipynb")
        first = await course_validate.validate(path, checker)
        checker.process.kill()
        await checker.process.wait()
        return first, await course_validate.validate(path, checker)

    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # the browser's sync API holds this thread's loop
        first, second = thread.submit(lambda: asyncio.run(twice())).result()
    assert first == second and first["success"] and first["value"] == {}
    assert first["summary"].startswith("All 6 visible tests pass.\n")


def test_the_lab_checks_for_no_build(browser, lab):  # noqa: F811
    """grader/lab/*/labconfig turn JupyterLab's build check off: no page asks the server for one (on
    a machine with node, each asked ran `yarn config`, about 70 MB, at every server's start)."""
    validate_in_lab(browser, lab, "done")
    assert "api/build" not in lab["log"].read_text()


def test_opening_an_exercise_warms_its_checker_up(lab):
    """The checker starts when an exercise notebook is opened, so the first Validate finds it warm."""
    import subprocess

    mark = f"{lab['root']}/grader/lab/course_validate.py --serve"
    subprocess.run(["pkill", "-f", mark])
    time.sleep(1)
    request = urllib.request.Request(f"{lab['url']}/api/contents/untouched/{EXERCISE}.ipynb",
                                     headers={"Authorization": f"token {lab['token']}"})
    urllib.request.urlopen(request, timeout=60).read()
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", mark], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "no checker started"
        time.sleep(0.2)


def test_a_server_starts_no_nodejs_but_jupyterlabs_own_yarn_config(tmp_path, monkeypatch):
    """A class's servers start often: nothing in the course's config may make them run Node.js.
    JupyterLab itself runs `node yarn.js config --json` once as its labapp is imported, wherever
    node is on the PATH (jupyterlab/labapp.py's module-level get_app_version(); no setting turns it
    off); jupyter-lsp's search for language servers ran `npm prefix -g` before the course's config
    turned it off. Here node and npm are stand-ins that note how they were called."""
    shims, calls = tmp_path / "bin", tmp_path / "calls"
    shims.mkdir()
    for name in ("node", "npm"):
        (shims / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\nexit 1\n')
        (shims / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    shutil.copytree(ROOT / "grader", tmp_path / "course" / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "state").mkdir()
    with serve(tmp_path / "course", tmp_path / "state", "learner"):
        pass
    ran = calls.read_text().splitlines() if calls.exists() else []
    assert [call for call in ran if not call.endswith("/jupyter_builder/yarn.js config --json")] == [], ran
