"""A learner in real JupyterLab, in a real browser: open exercise 3, press nbgrader's Validate.

Needs Debian's chromium (.ci/run installs it). Validate saves the notebook it checks, so the test
works on copies.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from grader.build import ROOT, nbgrader_env
from test_exercises import _reference_solutions, _submission_like

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
EXERCISE = "ex3_freeing"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving copies of exercise 3: one done right, one with a typical mistake."""
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
    port, token = _free_port(), "minigrad-ui-test"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    server = subprocess.Popen(command, env=nbgrader_env(root), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("JupyterLab did not start")
            time.sleep(0.5)
    yield url, token
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield chromium
        chromium.close()


def validate_in_lab(browser, lab, folder, screenshot):
    """Open the notebook, press Validate, return the text of nbgrader's result dialog."""
    url, token = lab
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{url}/lab/workspaces/{folder}/tree/{folder}/{EXERCISE}.ipynb?reset&token={token}")
    page.get_by_role("button", name="Validate").click(timeout=90_000)
    dialog = page.locator(".jp-Dialog-content")
    dialog.wait_for(timeout=180_000)
    page.wait_for_function("!document.querySelector('.jp-Dialog-content').innerText.includes('Validating')",
                           timeout=180_000)
    page.screenshot(path=str(screenshot))
    text = dialog.inner_text()
    page.close()
    return text


def test_validate_passes_on_a_finished_exercise(browser, lab, tmp_path):
    text = validate_in_lab(browser, lab, "done", tmp_path / "done.png")
    assert "Success! Your notebook passes all the tests." in text


def test_validate_names_the_failing_scenario(browser, lab, tmp_path):
    text = validate_in_lab(browser, lab, "mistake", tmp_path / "mistake.png")
    assert "scenario 'seed 003: m = k after backward' differs from PyTorch" in text
    assert "torch did:" in text and "minigrad did:" in text
