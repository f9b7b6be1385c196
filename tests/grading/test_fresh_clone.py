"""Issue 22, items 4 and 5: the instructor's routes on a fresh clone, with nothing but the README's
commands and Formgrader's buttons (our fixtures once did a setup step the README never told anyone to
do, and the README's grading route failed on every fresh clone).

A clone of the committed repository (``git clone``: what a newcomer gets; uncommitted changes are not
in it) uses this test run's environment through ``MINIGRAD_VENV``, the README's route for an
environment made elsewhere, so that ``./run`` installs nothing. The exercise is released and two
learners submit with nbgrader's own commands (what the Assignment List's Fetch and Submit run); then
the README's "Grading, step by step" block runs verbatim, line by line, and its last line,
``./run lab --instructor``, opens the lab in Chromium, where Formgrader collects a third, late
learner's submission and grades it with its Autograde button, through the same sandboxed pipeline
(screenshots in screenshots/fresh_clone/).
"""
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

import support
from grader import records
from grader.build import ROOT, nbgrader_env
from grader.sandbox import check_available
from support import (PARTLY_WRONG, browser, free_port, max_score, needs_chromium, reference_solutions,  # noqa: F401
                     run_environment, submission_like, wait_until_up)  # browser is a fixture

if check_available() and not os.environ.get("CI"):  # .ci/run installs bubblewrap, which the README's autograde needs
    pytest.skip(check_available(), allow_module_level=True)
if not shutil.which("git"):
    pytest.skip("git is not installed", allow_module_level=True)

EXERCISE = "ex3_freeing"
FULL = max_score(ROOT, EXERCISE)
LONG, SHORT = 60_000, 30_000  # ms


def readme_grading_steps(readme):
    """The commands of the README's "Grading, step by step" block, comments left out."""
    block = re.search(r"\*\*Grading, step by step\*\*.*?```bash\n(.*?)```", readme, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def outcome(root, student):
    """The clone's outcome for a submission (``grader.records``, in its gradebook)."""
    return records.read(f"sqlite:///{root / '.course' / 'gradebook.db'}", EXERCISE)[student]


def shell(clone, command, env, timeout=600):
    done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"$ {command}\n{done.stdout}{done.stderr}"
    return done.stdout


def submit(clone, home, student, change=None):
    """A learner fetches the exercise and submits it solved (``change``: one part made wrong), with the
    nbgrader commands their lab's Assignment List runs."""
    env = nbgrader_env(clone)
    home.mkdir(parents=True, exist_ok=True)
    for args in (["fetch_assignment", EXERCISE], None, ["submit", EXERCISE, f"--student={student}"]):
        if args is None:
            def edit(grade_id, reference, released):
                return reference.replace(change[1], change[2]) if change and grade_id == change[0] else reference
            submission_like(home / EXERCISE / f"{EXERCISE}.ipynb", edit, reference_solutions(clone, EXERCISE))
            continue
        subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=home, env=env, check=True, capture_output=True,
                       timeout=300)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    base = tmp_path_factory.mktemp("fresh")
    root = base / "minigrad"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(root)], check=True, timeout=300)
    env = run_environment(root)
    shell(root, f"./run grader release {EXERCISE}", env)  # as the README's grading commands: ./run grader release
    submit(root, base / "ada", "ada")
    submit(root, base / "bob", "bob", PARTLY_WRONG)
    return {"root": root, "base": base, "env": env}


@pytest.fixture(scope="module")
def graded(clone):
    """The README's grading block, run verbatim but for its last line (the lab, opened below)."""
    steps = readme_grading_steps((clone["root"] / "README.md").read_text())
    assert steps[-1] == "./run lab --instructor"
    return {step: shell(clone["root"], step, clone["env"]) for step in steps[:-1]}


def test_the_readmes_grading_steps_work_on_a_fresh_clone(clone, graded):
    root = clone["root"]
    assert [step.split()[2] for step in graded] == ["collect", "autograde", "status", "export", "feedback"]
    out = {step.split()[2]: text for step, text in graded.items()}
    assert out["collect"].strip() == f"collected 2 submissions of {EXERCISE} (2 new, 0 updated)"
    scores = [f"ada: graded {FULL}/{FULL}", f"bob: graded {FULL - 3}/{FULL}"]
    assert out["autograde"].splitlines()[-2:] == scores and out["status"].splitlines() == scores
    assert (root / ".course" / f"{EXERCISE}-grades.csv").is_file() and (root / ".course" / f"{EXERCISE}-scores.png").is_file()
    assert out["feedback"].strip() == (f"wrote feedback for 2 submissions of {EXERCISE} in {root / '.course' / 'feedback'}; "
                                       "released: learners get theirs with Fetch Feedback in the Assignment List")
    fetched = subprocess.run([sys.executable, "-m", "nbgrader", "fetch_feedback", EXERCISE, "--student=bob"],
                             cwd=clone["base"] / "bob", env=nbgrader_env(root), capture_output=True, text=True, timeout=300)
    assert fetched.returncode == 0, fetched.stderr
    # what bob's Fetch Feedback gets (the learners here share one account and its nbgrader cache, so ada's comes too)
    pages = [page.read_text() for page in (clone["base"] / "bob" / EXERCISE / "feedback").glob(f"*/{EXERCISE}.html")]
    assert any(f"{EXERCISE} (Score: {FULL - 3:.1f} / {FULL:.1f})" in page for page in pages)
    assert outcome(root, "bob").reason is None and outcome(root, "bob").sandbox == "bubblewrap"


@pytest.fixture(scope="module")
def lab(clone, graded):
    """The README's last grading line, ``./run lab --instructor``, as typed (Jupyter's port, token and
    browser from Jupyter's own variables)."""
    port, token = free_port(), "fresh-clone-instructor"
    env = dict(clone["env"], JUPYTER_PORT=str(port), JUPYTER_TOKEN=token, BROWSER="true")
    log_path = clone["base"] / "lab.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(["bash", "-c", "./run lab --instructor"], cwd=clone["root"], env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(server, f"{url}/api/status?token={token}", log_path, "./run lab --instructor")
            yield {"url": url, "token": token}
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


@needs_chromium
def test_formgrader_collects_and_autogrades_a_late_submission_in_the_sandbox(clone, lab, browser):  # noqa: F811
    from playwright.sync_api import expect

    submit(clone["root"], clone["base"] / "cy", "cy")  # after the others were graded
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{lab['url']}/?token={lab['token']}")  # the lab opens on the start page
        expect(page.locator("[data-type='document-title'].lm-mod-current")).to_contain_text("00_start_here.ipynb",
                                                                                            timeout=LONG)
        page.goto(f"{lab['url']}/lab?reset&token={lab['token']}")
        page.locator(".jp-Launcher").wait_for(timeout=LONG)
        support.menu(page, "Nbgrader", "nbgrader:open-formgrader")
        formgrader = page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
        row = formgrader.locator("#main-table tr", has_text=EXERCISE)
        expect(row.locator("td.num-submissions")).to_have_text("2", timeout=LONG)
        support.shot(page, "fresh_clone", "01_formgrader_two_submissions")

        row.locator("td.collect a").click()  # Formgrader's Collect: cy's submission
        modal = formgrader.locator("#success-modal")
        expect(modal).to_contain_text(f"Successfully collected submissions of '{EXERCISE}'", timeout=LONG)
        expect(modal.locator("button.btn-primary")).to_be_visible(timeout=SHORT)
        page.wait_for_timeout(500)  # Bootstrap's fade-in
        support.shot(page, "fresh_clone", "02_formgrader_collected")
        modal.locator("button.btn-primary").click()
        expect(modal).to_be_hidden(timeout=SHORT)
        expect(row.locator("td.num-submissions")).to_have_text("3", timeout=SHORT)

        row.locator("td.num-submissions a").click()
        cy = formgrader.locator("#main-table tr", has_text="cy")
        expect(cy.locator(".status")).to_contain_text("needs autograding", timeout=SHORT)
        cy.locator("td.autograde a").click()  # Formgrader's Autograde: our pipeline, in the sandbox
        modal = formgrader.locator("#success-modal")
        expect(modal).to_contain_text(f"Successfully autograded '{EXERCISE}' for student 'cy'", timeout=LONG * 3)
        expect(modal.locator("pre")).to_contain_text(f"cy: graded {FULL}/{FULL}\n", timeout=SHORT)  # the outcome, not a copy log
        expect(modal.locator("button.btn-primary")).to_be_visible(timeout=SHORT)
        page.wait_for_timeout(500)
        support.shot(page, "fresh_clone", "03_formgrader_autograded_cy")
        modal.locator("button.btn-primary").click()
        expect(modal).to_be_hidden(timeout=SHORT)
        expect(cy.locator(".score")).to_have_text(f"{FULL} / {FULL}", timeout=SHORT)
        support.shot(page, "fresh_clone", "04_formgrader_scores")
    finally:
        page.close()
    assert outcome(clone["root"], "cy").reason is None  # graded: recorded by VerdictExecute and RecordOutcome,
    assert outcome(clone["root"], "cy").sandbox == "bubblewrap"  # in the sandbox
    assert shell(clone["root"], f"./run grader status {EXERCISE}", clone["env"]).splitlines() == [
        f"ada: graded {FULL}/{FULL}", f"bob: graded {FULL - 3}/{FULL}", f"cy: graded {FULL}/{FULL}"]
