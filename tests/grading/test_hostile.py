"""The hostile catalog — each a real submission, graded in one autograde run together with good ones.
Each gets a grade or a clear reason, nothing is lost, a good submission gets exactly the grade it
gets alone. By attack class: code that patches the checking machinery, reaches the grading
process's own entry points, runs while definitions are made, or touches the machine (files,
network, processes) is rejected before it runs, naming the construct; what passes that check
(patches through local names, fake results printed, files shipped beside the notebook, runaway
code, markup in error messages) changes no grade and shows nothing it should not; a grader killed
mid-run resumes."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader import workflow
from grader.build import ROOT, nbgrader_env
from grader.devices import grading_device
from grader.sandbox import check_available
from support import EXERCISE, FULL, NOTEBOOK, RELEASE_PART, RIGHT, WRONG, flagged, reference_solutions, write_submission

pytestmark = pytest.mark.skipif(bool(check_available()), reason=f"no sandbox here: {check_available()}")
def solved(root, replace=None):
    """The reference solution cells, some replaced ({grade_id: source})."""
    return {**reference_solutions(root, EXERCISE), **(replace or {})}


def notebook_edit(change):
    def edit(folder, path):
        notebook = nbformat.read(path, as_version=4)
        change(notebook)
        nbformat.write(notebook, path)
    return edit


def cell(notebook, grade_id):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def copied(grade_id, source=None):
    """A notebook edit: the cell ``grade_id`` pasted again right after itself (with ``source``)."""
    def change(notebook):
        original = cell(notebook, grade_id)
        copy = nbformat.from_dict(original)
        copy.id, copy.source = "pasted", source or original.source
        notebook.cells.insert(notebook.cells.index(original) + 1, copy)
    return change


def released_stub(root):
    return cell(nbformat.read(root / "exercises" / EXERCISE / NOTEBOOK, as_version=4), RELEASE_PART).source


def release_saved(code, right=True):
    """_release_saved that runs ``code`` first each time the engine calls it (grading runs the
    learner's definitions, so hostile code hides in a function body), then frees as the reference
    does (or with a typical mistake: never-saved entries freed too, so seed 003's checks fail)."""
    body = "\n".join("    " + line for line in code.splitlines())
    return (f"def _release_saved(self):\n{body}\n    if self._saved:\n"
            f"        self._saved = {RIGHT if right else WRONG}\n")


def patched(patch):
    """The typical mistake, plus a patch that tries to make the failing checks pass anyway: run at
    the top of the cell (in the learner's kernel) and again inside _release_saved (while graded)."""
    return lambda root: solved(root, {RELEASE_PART: patch + "\n" + release_saved(patch, right=False)})


def in_release_cell(code):
    return lambda root: solved(root, {RELEASE_PART: release_saved(code)})


# Patches of the checking machinery, as they would be written in a kernel: each is rejected, and
# the reason names the construct and where it is (cell, line). (code, construct, line)
PATCHES = {
    "patch-torch-equal": ("import torch\ntorch.equal = lambda *args, **kwargs: True", "torch.equal", 5),
    "patch-check": ("import coursekit.testing\ncoursekit.testing.check = lambda *args, **kwargs: None\n"
                    "check = coursekit.testing.check", "import coursekit.testing", 1),
    "patch-nearly-equal": ("import coursekit.testing\ncoursekit.testing.nearly_equal = lambda *args, **kwargs: True",
                           "import coursekit.testing", 1),
    "patch-showtraceback": ("import IPython\nshell = IPython.get_ipython()\nif shell:\n"
                            "    shell.showtraceback = lambda *args, **kwargs: None", "import IPython", 1),
    "patch-builtins": ("import builtins\nbuiltins.AssertionError = type('Quiet', (BaseException,), {})",
                       "import builtins", 1),
    "patch-sys-modules": ("import sys, types\nfake = types.ModuleType('coursekit.testing')\n"
                          "fake.check = fake.outcome = lambda *args, **kwargs: None\nsys.modules['coursekit.testing'] = fake",
                          "import sys, types", 1),
}
# Code that reaches the grading process or the machine, inside _release_saved: rejected.
# (body, construct, line in the cell)
REACHING = {
    "call-main": ("import __main__\n__main__.serve(__main__.torch, 3)", "import __main__", 2),
    "rebind-check": ("global check\ncheck = None", "global check", 2),
    "frame-walk": ("frame = (i for i in ()).gi_frame", "(i for i in ()).gi_frame", 2),
    "torch-autograd": ("torch.autograd.grad", "torch.autograd", 2),
    "sleep-forever": ("import time\ntime.sleep(10**6)", "import time", 2),
    "exit": ("import os\nos._exit(1)", "import os", 2),
    "segfault": ("import ctypes\nctypes.string_at(0)", "import ctypes", 2),
    "fork-bomb": ("import os, time\nfor _ in range(300):\n    os.fork()", "import os, time", 2),
    "read-files": ("leaked = open('/etc/hostname').read()", "open", 2),
    "network": ("import socket\nsocket.create_connection(('127.0.0.1', 9))", "import socket", 2),
}
# Code that runs while a definition is made (an annotation, a class's __init_subclass__, a decorator
# imported under another name): rejected. (whole cell, construct, line)
AT_DEFINITION = {
    "annotation-call": ("def _release_saved(self) -> print('runs while defined'):\n    pass", "print('runs while defined')", 1),
    "init-subclass": ("class Sneaky:\n    def __init_subclass__(cls):\n        pass", "def __init_subclass__", 2),
    "aliased-decorator": ("from coursekit.testing import check as staticmethod\n\n@staticmethod\ndef helper():\n    pass",
                          "from coursekit.testing import check as staticmethod", 1),
}


MARKUP = "## learner heading\n<script>alert('markdown')</script>\n<img src=x onerror=\"alert('image')\">"


def rejected(root, construct, line):
    return f"`{construct}` at cell {cell_number(root, RELEASE_PART)} line {line} is not allowed in graded code"


def cell_number(root, grade_id):
    notebook = nbformat.read(root / "exercises" / EXERCISE / NOTEBOOK, as_version=4)
    return next(i for i, c in enumerate(notebook.cells, start=1) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def ship_beside(folder, path):
    """Files beside the notebook: a torch.py that breaks torch, and the whole reference minigrad."""
    (folder / "torch.py").write_text("raise SystemExit('shipped torch')\n")
    shutil.rmtree(folder / "minigrad")
    shutil.copytree(ROOT / "minigrad", folder / "minigrad", ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "grader" / "nbgrader_config.py", "a") as config:
        config.write("c.VerdictExecute.timeout = 10\n")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", EXERCISE, "--force"], cwd=root,
                   env=nbgrader_env(root), check=True, capture_output=True)
    submissions = {
        "good-1": (lambda r: solved(r), None),
        "good-2": (lambda r: solved(r), None),
        "untouched": (lambda r: None, None),
        "broken": (patched(""), None),
        **{name: (patched(code), None) for name, (code, _, _) in PATCHES.items()},
        **{name: (in_release_cell(code), None) for name, (code, _, _) in REACHING.items()},
        **{name: (lambda r, code=code: solved(r, {RELEASE_PART: code + "\n\n" + release_saved("")}), None)
           for name, (code, _, _) in AT_DEFINITION.items()},
        "patch-through-alias": (lambda r: solved(r, {RELEASE_PART: release_saved(
            "t = torch\nt.equal = lambda *args, **kwargs: True\nm = coursekit.testing\n"
            "m.nearly_equal = lambda *args, **kwargs: True", right=False)}), None),
        "print-fake-results": (lambda r: solved(r, {RELEASE_PART: release_saved(
            "print('[\"check\", \"fake\", true]')\nprint('[\"done\"]')", right=False)}), None),
        "shipped-files": (lambda r: solved(r, {RELEASE_PART: released_stub(r)}), ship_beside),
        "script-in-error": (in_release_cell("raise RuntimeError('<script>alert(1)</script>')"), None),
        "infinite-loop": (in_release_cell("while True:\n    pass"), None),
        "forged-progress": (in_release_cell("while True:\n    print('[\"cell\", 99]')"), None),
        "memory-bomb": (in_release_cell("hoard = bytearray(1 << 40)"), None),
        "huge-output": (in_release_cell("print('x' * 100_000_000)"), None),
        "invalid-json": (None, lambda folder, path: path.write_text('{"cells": [')),
        "empty-file": (None, lambda folder, path: path.write_bytes(b"")),
        "non-utf8": (None, lambda folder, path: path.write_bytes(b"\xff\xfe\x00garbage")),
        "missing": (None, lambda folder, path: path.unlink()),
        "misnamed": (None, lambda folder, path: path.rename(folder / "Exercise 3.ipynb")),
        "deleted-test-cell": (lambda r: solved(r), notebook_edit(
            lambda nb: nb.cells.remove(cell(nb, "test-seed-003")))),
        "edited-locked-test": (patched(""), notebook_edit(
            lambda nb: setattr(cell(nb, "test-second-backward"), "source", "pass"))),
        "deleted-test-after-locked": (lambda r: solved(r), notebook_edit(
            lambda nb: nb.cells.remove(cell(nb, "test-second-backward")))),
        "deleted-answer": (lambda r: solved(r), notebook_edit(lambda nb: nb.cells.remove(cell(nb, RELEASE_PART)))),
        "stub-answer": (lambda r: solved(r, {RELEASE_PART: released_stub(r)}), None),
        "copied-answer": (lambda r: solved(r), notebook_edit(copied(RELEASE_PART))),
        "copied-answer-wrong-last": (lambda r: solved(r), notebook_edit(
            copied(RELEASE_PART, release_saved("", right=False)))),
        "copied-test": (lambda r: solved(r), notebook_edit(copied("test-seed-001"))),
        "bad-metadata": (lambda r: solved(r), notebook_edit(
            lambda nb: cell(nb, "test-seed-001").metadata.nbgrader.update(points="lots"))),
        "markup-in-markdown": (lambda r: solved(r), notebook_edit(lambda nb: nb.cells.append(
            nbformat.v4.new_markdown_cell(MARKUP)))),
        "cell-to-markdown": (lambda r: solved(r), notebook_edit(
            lambda nb: setattr(cell(nb, RELEASE_PART), "cell_type", "markdown"))),
    }
    for student, (solutions, edit) in submissions.items():
        write_submission(root, student, solutions(root) if solutions else None, edit)
    workflow.autograde(EXERCISE, workers=2, root=root, progress=lambda line: None)
    workflow.feedback(EXERCISE, root=root)
    return root, {row["student"]: row for row in workflow.scores(EXERCISE, root=root)}


def test_everything_is_graded_or_has_a_clear_reason(catalog):
    _, rows = catalog
    assert len(rows) == 47
    for student, row in rows.items():
        assert row["status"] == "graded" or row["reason"], student
        if student == "bad-metadata":
            continue
        assert "autograde failed" not in row["reason"] and "grader error" not in row["reason"], (student, row)


def test_good_submissions_get_the_grade_they_get_alone(catalog):
    _, rows = catalog
    for student in ("good-1", "good-2", "deleted-test-cell"):
        assert rows[student]["score"] == rows[student]["max_score"] == FULL, (student, rows[student])
    assert rows["untouched"]["score"] == 0


@pytest.mark.parametrize("student", sorted(PATCHES))
def test_patching_the_checks_is_rejected_naming_the_construct(catalog, student):
    root, rows = catalog
    _, construct, line = PATCHES[student]
    assert rows[student]["status"] == "not graded"
    assert rows[student]["reason"] == rejected(root, construct, line)


@pytest.mark.parametrize("student", sorted(REACHING) + sorted(AT_DEFINITION))
def test_code_that_reaches_the_grader_or_runs_while_defined_is_rejected(catalog, student):
    root, rows = catalog
    _, construct, line = {**REACHING, **AT_DEFINITION}[student]
    assert rows[student]["status"] == "not graded"
    assert rows[student]["reason"] == rejected(root, construct, line)


def test_a_patch_through_a_local_name_is_stopped_while_it_runs_and_flagged(catalog):
    """``t = torch; t.equal = ...`` passes the static check (``t`` is not an imported name); the
    run-time guard stops it at the write (grader/inside/guards.py) and the instructor sees it flagged."""
    root, rows = catalog
    assert rows["patch-through-alias"]["status"] == "not graded"
    assert rows["patch-through-alias"]["reason"] == flagged("torch.equal = ...", cell_number(root, RELEASE_PART), 3)


@pytest.mark.parametrize("student", ["print-fake-results", "edited-locked-test"])
def test_what_passes_the_check_changes_no_grade(catalog, student):
    _, rows = catalog
    assert 0 < rows["broken"]["score"] < FULL
    assert rows[student]["status"] == "graded"
    assert rows[student]["score"] == rows["broken"]["score"], rows[student]


def test_files_shipped_beside_the_notebook_are_never_imported(catalog):
    """A torch.py and a whole reference minigrad beside an untouched notebook: graded as the untouched one."""
    _, rows = catalog
    assert rows["shipped-files"]["status"] == "graded"
    assert rows["shipped-files"]["score"] == rows["stub-answer"]["score"] < FULL


def test_deleted_and_copied_cells_are_repaired_from_the_release(catalog):
    root, rows = catalog
    for student in ("deleted-test-after-locked", "copied-answer", "copied-test"):
        assert rows[student]["status"] == "graded" and rows[student]["score"] == FULL, (student, rows[student])
    assert rows["deleted-answer"]["status"] == "graded"
    assert rows["deleted-answer"]["score"] == rows["stub-answer"]["score"] < FULL
    assert rows["copied-answer-wrong-last"]["score"] == rows["broken"]["score"] < FULL  # the last copy counts


def test_an_unexpected_nbgrader_failure_keeps_its_traceback_for_the_instructor(catalog):
    root, rows = catalog
    log = ".course/logs/ex3_freeing/bad-metadata.log"
    assert rows["bad-metadata"]["reason"] == (
        f"autograde failed: ValueError: could not convert string to float: 'lots' (nbgrader's log: {log})")
    assert "Traceback (most recent call last)" in (root / log).read_text()


def test_runaway_code_is_stopped_with_a_reason(catalog):
    root, rows = catalog
    notebook = nbformat.read(root / "exercises" / EXERCISE / NOTEBOOK, as_version=4)
    first_test = next(i for i, c in enumerate(notebook.cells, start=1) if c.metadata.get("nbgrader", {}).get("grade"))
    assert rows["infinite-loop"]["reason"] == f"timed out in cell {first_test} after 10 s"
    assert rows["forged-progress"]["reason"] == f"timed out in cell {first_test} after 10 s"
    assert rows["memory-bomb"]["status"] == "graded" and rows["memory-bomb"]["score"] < FULL  # MemoryError fails checks
    assert rows["huge-output"]["status"] == "graded" and rows["huge-output"]["score"] == FULL


def test_unreadable_submissions_say_why(catalog):
    _, rows = catalog
    assert rows["invalid-json"]["reason"].startswith(f"invalid notebook {NOTEBOOK}: Notebook does not appear to be JSON")
    assert rows["empty-file"]["reason"].startswith(f"invalid notebook {NOTEBOOK}")
    assert rows["non-utf8"]["reason"] == f"invalid notebook {NOTEBOOK}: not UTF-8 text"
    assert rows["missing"]["reason"] == f"missing notebook {NOTEBOOK} (found: no notebook)"
    assert rows["misnamed"]["reason"] == f"missing notebook {NOTEBOOK} (found: Exercise 3.ipynb)"
    assert rows["cell-to-markdown"]["status"] == "graded" or rows["cell-to-markdown"]["reason"]


def test_learner_text_is_escaped_in_feedback(catalog):
    root, rows = catalog
    assert rows["script-in-error"]["status"] == "graded" and rows["script-in-error"]["score"] < FULL
    page = (root / ".course" / "feedback" / "script-in-error" / EXERCISE / f"{EXERCISE}.html").read_text()
    assert "RuntimeError: &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


def test_learner_markup_reaches_feedback_and_formgrader_only_sanitised(catalog):
    """A markdown cell with a script and an image whose onerror runs one: the feedback page and the
    page Formgrader shows the instructor (an HTMLExporter from the course's config) run neither."""
    from nbconvert.exporters import HTMLExporter

    root, rows = catalog
    assert rows["markup-in-markdown"]["score"] == FULL
    feedback = (root / ".course" / "feedback" / "markup-in-markdown" / EXERCISE / f"{EXERCISE}.html").read_text()
    autograded = root / ".course" / "autograded" / "markup-in-markdown" / EXERCISE / NOTEBOOK
    formgrader, _ = HTMLExporter(config=workflow.course_api(root).config).from_filename(str(autograded))
    for page in (feedback, formgrader):
        assert "learner heading" in page  # shown, as text
        assert "<script>alert('markdown')" not in page and "<img src=x onerror" not in page


def test_no_feedback_page_holds_hidden_test_text(catalog):
    root, rows = catalog
    source = nbformat.read(root / "solutions" / EXERCISE / NOTEBOOK, as_version=4)
    hidden_lines = {line.strip() for c in source.cells if "BEGIN HIDDEN TESTS" in c.source
                    for line in c.source.split("### BEGIN HIDDEN TESTS")[1].splitlines()
                    if len(line.strip()) > 25 and "HIDDEN TESTS" not in line}
    release = nbformat.read(root / "exercises" / EXERCISE / NOTEBOOK, as_version=4)
    hidden_lines -= {line.strip() for c in release.cells for line in c.source.splitlines()}
    assert hidden_lines
    pages = list((root / ".course" / "feedback").rglob("*.html"))
    assert len(pages) == sum(row["status"] == "graded" for row in rows.values())
    for page in pages:
        text = page.read_text()
        assert not [line for line in hidden_lines if line in text], page


def _descendants(pid):
    """Every process below ``pid`` now, from /proc."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:  # it ended meanwhile
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        below = children.get(stack.pop(), [])
        found += below
        stack += below
    return found


def _running(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_grader_killed_mid_run_leaves_no_worker_and_resumes_where_it_stopped(catalog):
    root, _ = catalog
    late = ["late-1", "late-2", "late-3", "late-4"]
    for student in late:  # right, and slow enough (about 2 s each) that the grader is killed mid-run
        write_submission(root, student, solved(root, {RELEASE_PART: release_saved("sum(range(2 * 10**6))")}))
    before = workflow.outcomes(EXERCISE, root=root)
    command = [sys.executable, "-m", "grader", "autograde", EXERCISE, "--workers", "2"]
    grader = subprocess.Popen(command, cwd=root, env=nbgrader_env(root), start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while len(workflow.outcomes(EXERCISE, root=root)) < len(before) + 1:
        assert time.monotonic() < deadline and grader.poll() is None
        time.sleep(0.5)
    below = _descendants(grader.pid)
    assert len(below) >= 2  # the workers, and their grading servers
    os.kill(grader.pid, signal.SIGKILL)  # the grader alone, as `kill -9 PID` does
    grader.wait()
    deadline = time.monotonic() + 20
    while any(_running(pid) for pid in below):
        still = [pid for pid in below if _running(pid)]
        assert time.monotonic() < deadline, f"processes {still} still run 20 s after the grader was killed"
        time.sleep(0.2)
    partial = workflow.outcomes(EXERCISE, root=root)
    assert len(before) < len(partial) < len(before) + 4
    waiting = [f"{student}: not graded yet" for student in late if student not in partial]
    assert waiting and set(waiting) <= set(workflow.status(EXERCISE, root=root))
    subprocess.run(command, cwd=root, env=nbgrader_env(root), check=True, capture_output=True, timeout=600)
    rows = {row["student"]: row for row in workflow.scores(EXERCISE, root=root)}
    assert all(rows[f"late-{i}"]["score"] == FULL for i in range(1, 5))
    assert len(rows) == len(before) + 4


CHEATING_MUL = '''class Mul(Function):
    node_name = "MulBackward0"
    saved_names = ("self", "other")
    inplace_saves_self = True

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        a._data.requires_grad_(need_a)
        b._data.requires_grad_(need_b)
        ctx.out = a._data * b._data
        return ctx.out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad * b if b is not None else None, grad * a if a is not None else None)
'''


def test_an_engine_that_lets_torch_autograd_do_the_work_is_stopped(tmp_path):
    """Mul marking its storage requires_grad (torch's autograd recording minigrad's work) is stopped
    at ``requires_grad_``, a member of torch's tensors graded code may not use."""
    from grader import verdicts

    folder = tmp_path / "ex1_ops"
    shutil.copytree(ROOT / "solutions" / "ex1_ops", folder)
    source = nbformat.read(folder / "ex1_ops.ipynb", as_version=4)
    reference = verdicts.solution_cells(source, without_markers=True)
    with pytest.raises(verdicts.NotGraded) as stopped:
        verdicts.run(folder, verdicts.plan(source, {**reference, "Mul": CHEATING_MUL}), "minigrad")
    assert str(stopped.value) == flagged("Tensor.requires_grad_", 0, 10)
    assert stopped.value.detail == "`Tensor.requires_grad_`"


def test_storage_that_requires_grad_fails_the_checks_saying_why(tmp_path):
    """What the guards let through (a factory's ``requires_grad=True``) still cannot hand minigrad's
    work to torch: a Mul whose storage requires grad fails the checks it takes part in, saying why."""
    from grader import verdicts

    folder = tmp_path / "ex1_ops"
    shutil.copytree(ROOT / "solutions" / "ex1_ops", folder)
    source = nbformat.read(folder / "ex1_ops.ipynb", as_version=4)
    reference = verdicts.solution_cells(source, without_markers=True)
    product = "return a._data * b._data"
    assert reference["Mul"].count(product) == 1
    leaking = reference["Mul"].replace(product, "out = torch.empty_like(a._data * b._data, requires_grad=True)\n"
                                                "        out.copy_(a._data * b._data)\n        return out")
    expected = verdicts.expected_results(folder, "ex1_ops.ipynb", tmp_path / "expected.json", grading_device(False))
    actual = verdicts.run(folder, verdicts.plan(source, {**reference, "Mul": leaking}), "minigrad")
    passed, why = verdicts.compare(expected, actual)["test-Mul-saved"]
    assert not passed and "storage requires grad" in why


def exp_by_torch(reference, how):
    """The reference Exp, its backward asking torch's autograd (``how``) on a private leaf."""
    return reference.replace("ctx.save_for_backward(result)", "ctx.save_for_backward(result)\n        ctx.source = a._data") \
        .replace("return grad * result", "leaf = ctx.source.detach().requires_grad_()\n        " + how +
                 "\n        return minigrad.Tensor(found.detach())")


@pytest.mark.parametrize("how, outcome", [
    ("(found,) = torch.autograd.grad(leaf.exp(), leaf, grad._data)", "`torch.autograd` at cell 0 line 20"),
    ("leaf.exp().backward(grad._data)\n        found = leaf.grad",
     flagged("Tensor.detach", 0, 19)),
])
def test_an_exp_whose_backward_asks_torch_for_the_gradient_gets_no_points_for_it(tmp_path, how, outcome):
    """Exp's backward computed by torch's autograd on a private leaf: by name (torch.autograd) it is
    rejected before it runs; through a tensor's .backward() it is stopped while it runs, at the first
    member of torch's tensors graded code may not use (``detach``, ``requires_grad_``, ``backward``)."""
    from grader import verdicts

    folder = tmp_path / "ex1_ops"
    shutil.copytree(ROOT / "solutions" / "ex1_ops", folder)
    source = nbformat.read(folder / "ex1_ops.ipynb", as_version=4)
    reference = verdicts.solution_cells(source, without_markers=True)
    assert reference["Exp"].count("return grad * result") == 1
    cells = verdicts.plan(source, {**reference, "Exp": exp_by_torch(reference["Exp"], how)})
    with pytest.raises(verdicts.NotGraded) as rejected:
        verdicts.run(folder, cells, "minigrad")
    assert str(rejected.value) == (outcome if "flagged" in outcome else f"{outcome} is not allowed in graded code")
