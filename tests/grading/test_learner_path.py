"""A learner's whole path in real JupyterLab, in Chromium: the lab is started as ``./run lab`` starts a
learner's (grader/lab/learner before grader/ on JUPYTER_CONFIG_PATH, every exercise released into the
local exchange), on a scratch copy of the course, so the repository's own .course/ stays untouched.

1. course/00_start_here.ipynb: Run All Cells runs without an error; the predict cell, answered wrongly
   then rightly, says so.
2. course/03a_what_backward_frees.ipynb: Run All Cells; the graph pictures are there, and the backward
   stepper's Next node runs one node at a time and says which saved tensors it freed, until the
   shared node fails.
3. The Assignment List: Fetch exercise 3 (it opens, and the file browser goes to it), type the
   solution into its cells, Validate passes, Submit puts it into the exchange's inbound folder.

Each step leaves a screenshot in screenshots/learner/ (git-ignored). The tests run in file order and
share one browser page, as one learner would.
"""
import json
import re
import shutil
import urllib.request

import nbformat
import pytest

from grader.build import ROOT, stage
import support
from support import (passed_in_full, LONG, SHORT, browser, menu, needs_chromium, reference_solutions,  # noqa: F401
                     replace_cell_source, run_all, serve, validate, wait_for_kernel)  # browser is a fixture

pytestmark = needs_chromium
EXERCISE = "ex3_freeing"
COPIED = ("minigrad", "coursekit", "grader", "course", "exercises", "solutions")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab as ``./run lab`` starts it for a learner, on a scratch copy of the course."""
    from grader import workflow

    root = tmp_path_factory.mktemp("learner")
    for folder in COPIED:
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    stage(root)
    workflow.release_all(root)  # as ./run lab does: the Assignment List lists every exercise
    with serve(root, tmp_path_factory.mktemp("jupyter"), "learner") as served:
        yield served


@pytest.fixture(scope="module")
def page(browser, lab):  # noqa: F811 - browser is labs' fixture
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    page.close()


def shot(page, name):
    support.shot(page, "learner", name)


def open_notebook(page, lab, path):
    """Open ``path`` in a fresh workspace (the kernels of earlier notebooks shut down first)."""
    _shut_down_kernels(lab)
    page.goto(f"{lab['url']}/lab/tree/{path}?reset&token={lab['token']}")
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    wait_for_kernel(page)
    return panel


def _shut_down_kernels(lab):
    headers = {"Authorization": f"token {lab['token']}"}
    with urllib.request.urlopen(urllib.request.Request(f"{lab['url']}/api/kernels", headers=headers)) as answer:
        kernels = json.load(answer)
    for kernel in kernels:
        urllib.request.urlopen(urllib.request.Request(f"{lab['url']}/api/kernels/{kernel['id']}", method="DELETE",
                                                      headers=headers))


def test_start_here_runs_and_its_predict_cell_answers(page, lab):
    from playwright.sync_api import expect

    panel = open_notebook(page, lab, "course/00_start_here.ipynb")
    run_all(page, panel)
    expect(panel.locator(".jp-OutputArea-output", has_text="a first minigrad backward")).to_be_visible(timeout=SHORT)
    shot(page, "01_start_here_ran")

    cell = panel.locator(".jp-CodeCell", has_text="predict(prediction, second_backward, binary=True)")
    notebook = nbformat.read(lab["root"] / "course" / "00_start_here.ipynb", as_version=4)
    source = next(c.source for c in notebook.cells if "predict(prediction, second_backward, binary=True)" in c.source)
    assert "prediction = ..." in source
    output = cell.locator(".jp-OutputArea-output")
    expect(output).to_contain_text("Your turn", timeout=SHORT)
    for answer, feedback in (('"works"', "Not what torch does. You said 'works'"),
                             ('"error"', "Right. torch: RuntimeError: Trying to backward through the graph a second time")):
        replace_cell_source(page, cell, source.replace("prediction = ...", f"prediction = {answer}"))
        page.keyboard.press("Control+Enter")
        expect(output).to_contain_text(feedback, timeout=LONG)
        cell.scroll_into_view_if_needed()
        shot(page, "02_predict_wrong" if answer == '"works"' else "03_predict_right")
    assert "Not what torch does" not in output.inner_text()


def test_unit_3_pictures_and_stepper(page, lab):
    from playwright.sync_api import expect

    panel = open_notebook(page, lab, "course/03a_what_backward_frees.ipynb")
    run_all(page, panel)
    pictures = panel.locator(".jp-RenderedImage img")
    assert pictures.count() >= 4  # the freed graph, the two losses before and after, the stepper's drawing
    pictures.first.scroll_into_view_if_needed()
    assert pictures.first.evaluate("img => img.naturalWidth") > 100
    shot(page, "04_unit3_graph_picture")

    widget = panel.locator(".jp-OutputArea-output .widget-vbox", has=page.locator(".widget-button"))
    expect(widget).to_have_count(1, timeout=SHORT)
    next_button = widget.locator(".widget-button", has_text="Next node")
    status = widget.locator(".widget-html-content")
    picture = widget.locator("img.widget-image")
    expect(next_button).to_be_enabled(timeout=SHORT)
    assert status.inner_text().strip() == ""
    picture.scroll_into_view_if_needed()  # its buttons, lines and picture in view
    shot(page, "05_stepper_before")
    steps = [("1. MseLossBackward0 ran", "freed self, target"), ("2. MvBackward0 ran", "freed self, vec"),
             ("3. AddBackward0 ran", "sent None, [2]"),
             ("RuntimeError", "Trying to backward through the graph a second time")]
    for number, (ran, said) in enumerate(steps, 1):
        before = picture.get_attribute("src")
        next_button.click()
        expect(status).to_contain_text(ran, timeout=SHORT)
        expect(status).to_contain_text(said, timeout=SHORT)
        expect(picture).not_to_have_attribute("src", before, timeout=SHORT)  # redrawn: the freed buffers turn grey
        picture.scroll_into_view_if_needed()
        shot(page, f"{5 + number:02d}_stepper_click_{number}")
    expect(next_button).to_be_disabled(timeout=SHORT)


def test_fetch_validate_submit_from_the_assignment_list(page, lab):
    from playwright.sync_api import expect

    _shut_down_kernels(lab)
    page.goto(f"{lab['url']}/lab?reset&token={lab['token']}")
    page.locator(".jp-Launcher").wait_for(timeout=LONG)  # the lab restored: it adds no tab over the list
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^course$")).wait_for()
    # one copy of each exercise: the fetched one; the release and the sources are not in the learner's lab
    listed = page.locator(".jp-DirListing-item .jp-DirListing-itemText").all_inner_texts()
    assert "course" in listed and "exercises" not in listed and "solutions" not in listed, listed
    menu(page, "Nbgrader", "nbgrader:open-assignment-list", only=True)  # a learner's tools only
    released = page.locator("#released_assignments_list")
    row = released.locator(".list_item", has_text=EXERCISE)
    expect(row).to_be_visible(timeout=LONG)
    assert released.locator(".list_item").count() == len(list((lab["root"] / "exercises").glob("ex*_*/")))
    shot(page, "10_assignment_list")

    row.get_by_role("button", name="Fetch").click()
    fetched = page.locator("#fetched_assignments_list").locator(".list_item", has_text=EXERCISE).first
    expect(fetched).to_be_attached(timeout=LONG)  # listed; the notebook may have opened over the list already
    folder = lab["root"] / EXERCISE  # Exchange.assignment_dir ".": the server's root_dir
    assert (folder / f"{EXERCISE}.ipynb").is_file() and (folder / "minigrad").is_dir()

    # the fetched notebook opens by itself (minigrad-lab), and the file browser goes to it
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    wait_for_kernel(page)
    expect(page.locator("[data-type='document-title'].lm-mod-current")).to_contain_text(f"{EXERCISE}.ipynb",
                                                                                        timeout=SHORT)
    expect(page.locator(".jp-FileBrowser .jp-BreadCrumbs")).to_contain_text(EXERCISE, timeout=SHORT)
    expect(page.locator(".jp-DirListing-item.jp-mod-selected")).to_contain_text(f"{EXERCISE}.ipynb", timeout=SHORT)
    shot(page, "11_fetched")
    reference = reference_solutions(lab["root"], EXERCISE)
    for part in reference.values():
        signature = part.splitlines()[0]
        cell = panel.locator(".jp-CodeCell", has_text=signature)
        expect(cell).to_contain_text("raise NotImplementedError()", timeout=SHORT)
        replace_cell_source(page, cell, part)
        expect(cell).not_to_contain_text("raise NotImplementedError()", timeout=SHORT)
    cell.scroll_into_view_if_needed()
    shot(page, "12_solution_typed")
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    tab = page.locator("[data-type='document-title'].lm-mod-current")
    expect(tab).not_to_have_class(re.compile("jp-mod-dirty"), timeout=SHORT)
    saved = (folder / f"{EXERCISE}.ipynb").read_text()
    assert "raise NotImplementedError" not in saved and "_FREED for s in self._saved" in saved

    dialog = validate(panel.get_by_role("button", name="Validate"))
    shot(page, "13_validated")
    assert passed_in_full(dialog.inner_text()), dialog.inner_text()
    dialog.get_by_role("button", name="Ok").click()

    page.locator(".lm-TabBar-tab", has_text="Assignments").click()
    fetched = page.locator("#fetched_assignments_list").locator(".list_item", has_text=EXERCISE).first
    fetched.get_by_role("button", name="Submit").click()
    submitted = page.locator("#submitted_assignments_list .list_item", has_text=EXERCISE)
    expect(submitted).to_be_visible(timeout=LONG)
    shot(page, "14_submitted")
    inbound = list((lab["root"] / ".course" / "exchange" / "minigrad" / "inbound").glob(f"*+{EXERCISE}+*"))
    assert len(inbound) == 1
    assert "_FREED for s in self._saved" in (inbound[0] / f"{EXERCISE}.ipynb").read_text()
