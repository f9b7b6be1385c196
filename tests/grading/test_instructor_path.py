"""An instructor's whole path after learners submitted, in a scratch copy of the course (the repository's
own .course/ stays untouched):

1. Two learners' submissions of exercise 3 lie in the exchange's inbound folder, as nbgrader's submit
   leaves them: ada's solved, bob's partly wrong (his _release_saved frees nothing of a node that saved
   a single tensor).
2. Our command line: collect, autograde (in the sandbox where bubblewrap works), status, export (grades
   CSV and histogram), feedback.
3. In Chromium, in an instructor's lab (``./run lab --instructor``: grader/lab/instructor before
   grader/ on JUPYTER_CONFIG_PATH): Nbgrader → Formgrader shows the assignment with its two
   submissions and their scores, and bob's graded notebook; each learner's feedback page shows the
   hidden tests only as passed or failed, never their code or scenario names; the grades CSV and the
   score histogram open in the lab (File → Open from Path), the histogram's image rendered.
4. The README's ``./run grader report ex3_freeing``, as typed, in the scratch course; its notebook opened in
   the lab (File → Open from Path…) shows the table of what the class got wrong and its figure.

Each step leaves a screenshot in screenshots/instructor/ (git-ignored). The tests run in file order
and share one browser page.
"""
import base64
import csv
import datetime
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from matplotlib import colors
from matplotlib import image as png

from grader import workflow
from grader.build import ROOT, nbgrader_env, stage
from grader.devices import grading_device
from grader.sandbox import check_available
import support
from support import (PARTLY_WRONG, browser, max_score, menu, needs_chromium, reference_solutions,  # noqa: F401
                     run_environment, serve, submission_like)  # browser is a fixture

pytestmark = needs_chromium
EXERCISE = "ex3_freeing"
FULL = max_score(ROOT, EXERCISE)
COPIED = ("minigrad", "coursekit", "grader", "exercises", "solutions")
# ./run and what it reads to find its environment set up; the lessons' map of seed puzzles (report's lesson column)
COPIED_FILES = ("run", "pyproject.toml", "course/README.md")
LONG = 60_000  # ms: the lab's first page on a busy two-core machine
SHORT = 30_000  # ms: the page's answer to a click
# what the hidden test bob fails says in its code: none of it may reach a learner's feedback (its
# checks' titles do: the release lists them, and the feedback names the ones that failed)
HIDDEN_TEXT = ("fails_part_way", "BEGIN HIDDEN TESTS", "third_backward_after_retain")


def shot(page, name):
    support.shot(page, "instructor", name)


def _submit(root, student, change):
    """Put ``student``'s edited copy of the release into the exchange's inbound folder, as nbgrader's
    submit does: <student>+<exercise>+<timestamp>+<random>/ with the files and timestamp.txt."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")
    random = base64.urlsafe_b64encode(os.urandom(9)).decode("ascii")
    folder = root / ".course" / "exchange" / "minigrad" / "inbound" / f"{student}+{EXERCISE}+{stamp}+{random}"
    shutil.copytree(root / "exercises" / EXERCISE, folder)
    submission_like(folder / f"{EXERCISE}.ipynb", change, reference_solutions(root, EXERCISE))
    (folder / "timestamp.txt").write_text(stamp)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A scratch course with exercise 3 in the gradebook and released, and two learners' submissions."""
    root = tmp_path_factory.mktemp("instructor")
    for folder in COPIED:
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    for name in COPIED_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    stage(root)
    # the gradebook learns the exercise's cells (build does this for the repository's own gradebook)
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", EXERCISE, "--force", "--log-level=ERROR"],
                   cwd=root, env=nbgrader_env(root), check=True, capture_output=True, timeout=300)
    workflow.release(EXERCISE, root=root)
    grade_id, right, wrong = PARTLY_WRONG
    _submit(root, "ada", lambda gid, reference, released: reference)
    _submit(root, "bob", lambda gid, reference, released: reference.replace(right, wrong) if gid == grade_id else reference)
    return root


@pytest.fixture(scope="module")
def lab(course, tmp_path_factory):
    """JupyterLab as ``./run lab --instructor`` starts it, on the scratch course."""
    with serve(course, tmp_path_factory.mktemp("jupyter"), "instructor") as served:
        yield served


@pytest.fixture(scope="module")
def page(browser, lab):  # noqa: F811 - browser is labs' fixture
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    yield page
    page.close()


def grader(root, *args):
    """``python -m grader ARGS`` in the scratch course, as an instructor types it there."""
    env = nbgrader_env(root)
    env["PYTHONPATH"] = str(root)
    done = subprocess.run([sys.executable, "-m", "grader", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_collect_autograde_status_export_feedback(course):
    grader(course, "collect", EXERCISE)
    assert sorted(p.name for p in (course / ".course" / "submitted").iterdir()) == ["ada", "bob"]
    sandbox = [] if check_available() is None else ["--no-sandbox"]  # CI has bubblewrap
    graded = grader(course, "autograde", EXERCISE, "--workers=2", *sandbox)
    assert f"autograde {EXERCISE}: 2/2 done" in graded
    assert grader(course, "status", EXERCISE).splitlines() == [f"ada: graded {FULL}/{FULL}",
                                                                 f"bob: graded {FULL - 3}/{FULL}"]
    grader(course, "export", EXERCISE)
    histogram = png.imread(course / ".course" / f"{EXERCISE}-scores.png")[..., :3]
    orange = np.all(np.abs(histogram - colors.to_rgb("tab:orange")) < 0.02, axis=-1)
    assert orange.sum() > 1000  # its bars are drawn
    grades = (course / ".course" / f"{EXERCISE}-grades.csv").read_text()
    assert f"bob,{EXERCISE},graded,{FULL - 3:.1f},{FULL:.1f}," in grades
    said = grader(course, "feedback", EXERCISE)  # placed in the inbound folder by hand, without nbgrader's secret
    assert said.strip().endswith("; not released for ada, bob (not submitted through the exchange)")
    for student in ("ada", "bob"):
        assert (course / ".course" / "feedback" / student / EXERCISE / f"{EXERCISE}.html").is_file()


def test_formgrader_shows_the_submissions_and_their_scores(page, lab):
    from playwright.sync_api import expect

    page.goto(f"{lab['url']}/lab?reset&token={lab['token']}")
    page.locator(".jp-Launcher").wait_for(timeout=LONG)
    page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).click()  # one Formgrader in it
    shown = page.locator(".lm-Menu-item:not(.lm-mod-hidden)")
    expect(shown.first).to_be_visible(timeout=SHORT)
    assert [text.strip() for text in shown.all_inner_texts()] == [
        "Assignment List", "Course List", "Formgrader", "Create assignment"]
    page.keyboard.press("Escape")
    menu(page, "Nbgrader", "nbgrader:open-formgrader")
    formgrader = page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
    row = formgrader.locator("#main-table tr", has_text=EXERCISE)
    expect(row).to_be_visible(timeout=LONG)
    expect(row.locator("td.num-submissions")).to_have_text("2", timeout=SHORT)
    shot(page, "01_formgrader_manage_assignments")

    row.locator("td.num-submissions a").click()  # its submissions, with their scores
    submissions = formgrader.locator("#main-table tr")
    expect(submissions).to_have_count(2, timeout=SHORT)
    for student, score in (("ada", f"{FULL} / {FULL}"), ("bob", f"{FULL - 3} / {FULL}")):
        expect(formgrader.locator("#main-table tr", has_text=student).locator(".score")).to_have_text(
            score, timeout=SHORT)
    shot(page, "02_formgrader_submissions")

    # Autograde again, and Generate Feedback: their modals say what they did, not nbgrader's copy log or a warning
    bob = formgrader.locator("#main-table tr", has_text="bob")
    for button, said, name in (
            ("autograde", f"bob: graded {FULL - 3}/{FULL}\ndevice: {grading_device(True).description}\n"
                          "sandbox: bubblewrap", "02a_formgrader_autograded_bob"),
            ("generate-feedback", f"bob: .course/feedback/bob/{EXERCISE}/", "02b_formgrader_feedback_bob")):
        bob.locator(f"td.{button} a").click()
        modal = formgrader.locator("#success-modal")
        expect(modal.locator("pre")).to_have_text(said, timeout=LONG * 3)
        page.wait_for_timeout(500)  # Bootstrap's fade-in
        shot(page, name)
        modal.locator("button.btn-primary").click()
        expect(modal).to_be_hidden(timeout=SHORT)

    formgrader.locator("#main-table tr", has_text="bob").locator("td").first.locator("a").click()
    notebook = formgrader.locator("#main-table tr", has_text=EXERCISE)  # bob's submission: its notebooks
    expect(notebook.locator(".score")).to_have_text(f"{FULL - 3} / {FULL}", timeout=SHORT)
    shot(page, "03_formgrader_bob")

    notebook.locator("a", has_text=EXERCISE).first.click()  # the graded notebook, hidden tests and all
    graded = formgrader.locator("#notebook-container").first
    expect(graded).to_contain_text("failing part-way", timeout=LONG)
    for test, points in (("test-retain-graph", "0"), ("test-seed-003-hidden", "0"), ("test-seed-003", "2")):
        # the autograded score is the field's placeholder (a value would be the instructor's override)
        expect(graded.locator(f"input.score[id='{test}']")).to_have_attribute("placeholder", points, timeout=SHORT)
    graded.locator("input.score[id='test-seed-003-hidden']").scroll_into_view_if_needed()
    shot(page, "04_formgrader_bob_notebook")


@pytest.mark.parametrize("student, score, verdicts", [("ada", FULL, {"passed": 5, "failed": 0}),
                                                      ("bob", FULL - 3, {"passed": 4, "failed": 1})])
def test_feedback_shows_hidden_tests_only_as_passed_or_failed(page, lab, student, score, verdicts):
    """The feedback HTML a learner gets (``feedback``; nbgrader's release_feedback hands it out), opened
    in the browser: the score, each hidden test's cell reduced to passed/failed and its points."""
    path = lab["root"] / ".course" / "feedback" / student / EXERCISE / f"{EXERCISE}.html"
    page.goto(path.as_uri())
    text = page.locator("body").inner_text()
    assert f"{EXERCISE} (Score: {score:.1f} / {FULL:.1f})" in text
    assert "Graded on " in text
    for verdict, count in verdicts.items():
        assert len(re.findall(rf"hidden test — {verdict} — \d/1 points", text)) == count, text
    for hidden in HIDDEN_TEXT:  # neither shown nor anywhere in the page
        assert hidden not in page.content(), hidden
    assert "seed 003: m = k after backward" in text  # visible tests stay in full
    first = 5 if student == "ada" else 7
    shot(page, f"{first:02d}_feedback_{student}_score")
    hidden = page.locator(".cell", has_text="hidden test — failed" if verdicts["failed"] else "hidden test — passed")
    hidden.first.scroll_into_view_if_needed()
    shot(page, f"{first + 1:02d}_feedback_{student}_hidden_test")
    if verdicts["failed"]:  # a visible test that fails says which scenario differs, and how
        assert "'after backward() they are freed'\n  minigrad differs from torch" in text
        page.locator(".output_area", has_text="minigrad differs from torch").first.scroll_into_view_if_needed()
        shot(page, f"{first + 2:02d}_feedback_{student}_visible_test_failed")


def open_path(page, path):
    """File → Open from Path…: the lab opens .course/'s files too (the instructor's lab allows hidden files)."""
    menu(page, "File", "filebrowser:open-path")
    dialog = page.locator(".jp-Dialog-content")
    dialog.locator("input").fill(path)
    dialog.get_by_role("button", name="Open").click()


def test_the_grades_and_their_histogram_open_in_the_lab(page, lab):
    from playwright.sync_api import expect

    page.goto(f"{lab['url']}/lab?reset&token={lab['token']}")
    page.locator(".jp-Launcher").wait_for(timeout=LONG)
    open_path(page, f".course/{EXERCISE}-grades.csv")
    grid = page.locator(".jp-CSVViewer:not(.lm-mod-hidden)")
    expect(grid).to_be_visible(timeout=SHORT)
    shot(page, "10_grades_csv")

    open_path(page, f".course/{EXERCISE}-scores.png")
    image = page.locator(".jp-ImageViewer:not(.lm-mod-hidden) img")
    expect(image).to_be_visible(timeout=SHORT)
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle(), timeout=SHORT)
    assert image.evaluate("img => img.naturalWidth") > 100
    shot(page, "11_histogram")


def test_the_report_opens_in_the_lab_with_its_table_and_figure(page, lab):
    """The README's report command, as typed in the scratch course (``./run``, this run's venv), then its
    notebook in the lab as the README says: File → Open from Path…, the table and the figure rendered."""
    from playwright.sync_api import expect

    readme = (ROOT / "README.md").read_text()
    grading = readme.split("**Grading, step by step**", 1)[1].split("\n## ", 1)[0]
    command = f"./run grader report {EXERCISE}"
    assert f"`{command}`" in grading and f"`.course/{EXERCISE}-report.ipynb`" in grading
    assert "File → Open from Path…" in grading
    root = lab["root"]
    done = subprocess.run(["bash", "-c", command], cwd=root, env=run_environment(root), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    state = root / ".course"
    assert done.stdout.splitlines()[-1] == (
        f"wrote {state / f'{EXERCISE}-report.csv'}, {state / f'{EXERCISE}-report.png'} and "
        f"{state / f'{EXERCISE}-report.ipynb'} (in the instructor's lab: File → Open from Path…)")
    with open(state / f"{EXERCISE}-report.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    # bob's _release_saved frees nothing of a one-tensor node: the visible check that says so, and a hidden one
    failing = {(row["test"], row["scenario"]) for row in rows if row["failing"] != "0"}
    assert ("test-retain-graph", "after backward() they are freed") in failing
    assert any(test == "test-seed-003-hidden" for test, _ in failing)
    assert all(row["graded"] == "2" and row["lesson_section"] for row in rows)

    page.goto(f"{lab['url']}/lab?reset&token={lab['token']}")
    page.locator(".jp-Launcher").wait_for(timeout=LONG)
    open_path(page, f".course/{EXERCISE}-report.ipynb")
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    table = notebook.locator(".jp-RenderedMarkdown table")
    expect(table).to_be_visible(timeout=LONG)
    shown = table.locator("tbody tr")
    expect(shown).to_have_count(len(rows), timeout=SHORT)
    for row, cells in zip(rows, shown.all(), strict=True):
        text = cells.inner_text()
        share = f"{row['failing']}/2 ({int(row['failing']) / 2:.0%})"
        assert row["test"] in text and row["scenario"] in text and share in text, (row, text)
    assert "1/2 (50%)" in table.locator("tr", has_text="after backward() they are freed").inner_text()
    shot(page, "12_report_table")

    image = notebook.locator(".jp-RenderedImage img")
    expect(image).to_have_count(1, timeout=SHORT)
    expect(notebook.locator(".jp-CodeCell .cm-editor")).to_be_hidden()  # the figure, no code editor above it
    image.evaluate("img => img.scrollIntoView({block: 'start'})")
    page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=image.element_handle(), timeout=SHORT)
    assert image.evaluate("img => img.naturalWidth") > 100
    assert page.locator(".jp-Dialog").count() == 0  # no kernel to pick: it needs none
    shot(page, "13_report_figure")
