"""Issue 4 (first part): the instructor's workflow on real nbgrader — release to the exchange, learners
fetch and submit with nbgrader's own commands, collect, autograde in parallel, and every submission
ends graded or "not graded: reason"; export writes the CSV and the histogram; feedback keeps hidden
tests hidden."""
import copy
import csv
import multiprocessing
import os
import pwd
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbconvert.filters import markdown2html
from nbgrader.coursedir import CourseDirectory

from grader import workflow
from grader.build import ROOT, exercise_specs, nbgrader_env
from grader.exchange import TrustedCollect
from grader.feedback import _clean
from grader.sandbox import check_available
from support import PARTLY_WRONG, max_score, reference_solutions, submission_like

EXERCISE = "ex3_freeing"
FULL = max_score(ROOT, EXERCISE)


def _run(root, args, cwd):
    env = nbgrader_env(root)
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def _learner(root, name, edit):
    """A learner fetches the exercise with nbgrader, edits the notebook folder, and submits it (all
    learners share this machine's user, so each submits under its own --student id)."""
    home = root / "learners" / name
    home.mkdir(parents=True)
    _run(root, [sys.executable, "-m", "nbgrader", "fetch_assignment", EXERCISE], home)
    edit(home / EXERCISE)
    _run(root, [sys.executable, "-m", "nbgrader", "submit", EXERCISE, f"--student={name}"], home)


def _solve(folder, root):
    submission_like(folder / f"{EXERCISE}.ipynb", lambda gid, ref, released: ref, reference_solutions(root, EXERCISE))


def _break_cell(body, root):
    """The reference, but _release_saved written as ``body``: grading calls it from the first test cell."""
    def change(grade_id, reference, released):
        if grade_id == RELEASE:
            return "def _release_saved(self):\n" + "\n".join("    " + line for line in body.splitlines())
        return reference

    def edit(folder):
        submission_like(folder / f"{EXERCISE}.ipynb", change, reference_solutions(root, EXERCISE))
    return edit


RELEASE = "BackwardFunction-_release_saved"
RIGHT_RELEASE = "if self._saved:\n    self._saved = tuple(None if s is None else _FREED for s in self._saved)"


def _first_test_cell():
    notebook = nbformat.read(ROOT / "exercises" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    return next(i for i, c in enumerate(notebook.cells, start=1) if c.metadata.get("nbgrader", {}).get("grade"))


def _cell_number(grade_id):
    notebook = nbformat.read(ROOT / "exercises" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    return next(i for i, c in enumerate(notebook.cells, start=1) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("workflow")
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "grader" / "nbgrader_config.py", "a") as config:
        config.write("c.VerdictExecute.timeout = 10\n")
    # no generate_assignment here, as on a fresh clone: collect records the exercises in the new gradebook
    workflow.release(EXERCISE, root=root)
    learners = {
        "ada": lambda folder: _solve(folder, root),
        "bob": lambda folder: None,
        "cy": _break_cell("import os\nos._exit(1)", root),
        "dee": _break_cell("while True:\n    pass", root),
        "eve": lambda folder: (folder / f"{EXERCISE}.ipynb").write_text('{"cells": ['),
        "fay": lambda folder: (folder / f"{EXERCISE}.ipynb").rename(folder / "my_work.ipynb"),
        "gus": lambda folder: (folder / f"{EXERCISE}.ipynb").write_bytes(b"\xff\xfe not a notebook"),
        "hal": _break_cell("if self._saved:\n    self._saved = tuple(_FREED for s in self._saved)", root),
        "jo": _break_cell(RIGHT_RELEASE.replace(PARTLY_WRONG[1], PARTLY_WRONG[2]), root),
    }
    learners["ivy"] = lambda folder: _solve(folder, root)
    for name, edit in learners.items():
        _learner(root, name, edit)
    inbound = root / ".course" / "exchange" / "minigrad" / "inbound"
    next(inbound.glob("ivy+*")).joinpath("answers.ipynb").symlink_to(root / "solutions" / EXERCISE / f"{EXERCISE}.ipynb")
    _learner(root, PLANTED, lambda folder: _solve(folder, root))  # submitted by this test's account, in the name of another account
    lines = [workflow.collect(EXERCISE, root=root)]
    workflow.autograde(EXERCISE, workers=2, root=root, progress=lines.append, sandbox=check_available() is None)
    return root, lines


def test_collect_says_what_it_took(course):
    _, lines = course
    assert lines[0] == f"collected 10 submissions of {EXERCISE} (10 new, 0 updated)"


PLANTED = "nobody"  # an account of this machine (Debian's), that the tests do not run as


def test_collect_takes_no_submission_made_in_another_accounts_name_and_follows_no_link(course):
    """grader/exchange.py: on a shared exchange anyone may write inbound; a submission counts only
    from the account it names, and a link in it (here to the instructor's solutions) is not copied."""
    root, _ = course
    submitted = root / ".course" / "submitted"
    assert not (submitted / PLANTED).exists()
    assert (submitted / "ivy" / EXERCISE / f"{EXERCISE}.ipynb").is_file()
    assert not (submitted / "ivy" / EXERCISE / "answers.ipynb").exists()


def _collector():
    return TrustedCollect(coursedir=CourseDirectory())


def test_collect_copies_an_honest_submission_whole_and_nothing_that_is_not_the_learners(tmp_path):
    """A submission's files and folders are copied byte for byte; a link, a pipe (which must not
    hang the copy) and a file of another account's (a hard link, say) are left out."""
    submission = tmp_path / "submission"
    (submission / "data" / "deeper").mkdir(parents=True)
    files = {f"{EXERCISE}.ipynb": b'{"cells": []}', "data/table.csv": b"a,b\n1,2\n",
             "data/deeper/weights.bin": bytes(range(256)) * 40}
    for name, content in files.items():
        (submission / name).write_bytes(content)
    (submission / "link.ipynb").symlink_to(submission / f"{EXERCISE}.ipynb")
    os.mkfifo(submission / "pipe")
    (submission / "theirs.txt").write_text("someone else's")
    os.chown(submission / "theirs.txt", pwd.getpwnam(PLANTED).pw_uid, -1)
    _collector().do_copy(str(submission), str(tmp_path / "copy"))
    copied = {path.relative_to(tmp_path / "copy").as_posix(): path.read_bytes()
              for path in (tmp_path / "copy").rglob("*") if path.is_file()}
    assert copied == files
    assert sorted(path.name for path in (tmp_path / "copy").rglob("*") if path.is_dir()) == ["data", "deeper"]


def test_collect_refuses_a_submission_over_the_size_limit_counting_what_it_reads(tmp_path):
    """nbgrader's ``max_dir_size`` (in kB), counted on the bytes read from the descriptors copied: a
    folder over it is refused with nbgrader's error, and nothing of it is left in the copy."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / f"{EXERCISE}.ipynb").write_bytes(b"x" * 600)
    (submission / "data.bin").write_bytes(b"y" * 600)
    collector = TrustedCollect(coursedir=CourseDirectory(max_dir_size=1))
    with pytest.raises(RuntimeError, match="^Directory size is too big. Size is over 1000, maximum size is 1000$"):
        collector.do_copy(str(submission), str(tmp_path / "copy"))
    assert not (tmp_path / "copy").exists()
    (submission / "data.bin").write_bytes(b"y" * 400)
    collector.do_copy(str(submission), str(tmp_path / "copy"))
    assert sorted(path.name for path in (tmp_path / "copy").iterdir()) == ["data.bin", f"{EXERCISE}.ipynb"]


def test_collect_copies_no_file_swapped_for_a_link_while_it_runs(tmp_path):
    """Issue 36: a learner who swaps their notebook for a link to a file only the instructor may read,
    between collect's check and its copy, gets the link refused, never the file's content: 1,000
    swaps, during 100 copies at least. The learner is another process, as on a hub, so that both run at once."""
    secret = tmp_path / "solutions.ipynb"
    secret.write_text("THE INSTRUCTOR'S SOLUTIONS")
    secret.chmod(0o600)
    submission = tmp_path / "submission"
    submission.mkdir()
    for number in range(100):  # more files: a wider window between check and copy
        (submission / f"padding{number:03}.txt").write_text("padding")
    notebook = submission / f"{EXERCISE}.ipynb"
    notebook.write_text("the learner's own")

    swaps = multiprocessing.get_context("fork").Value("q", 0)

    def swap():  # each made beside the folder and renamed in: the notebook is never missing
        while True:
            (tmp_path / "link").symlink_to(secret)
            os.replace(tmp_path / "link", notebook)
            (tmp_path / "own").write_text("the learner's own")
            os.replace(tmp_path / "own", notebook)
            swaps.value += 1

    learner = multiprocessing.get_context("fork").Process(target=swap, daemon=True)
    learner.start()
    seen, copies = set(), 0
    try:
        while swaps.value < 1000 or copies < 100:
            copy = tmp_path / f"copy{copies}"
            _collector().do_copy(str(submission), str(copy))
            seen.add((copy / notebook.name).read_text() if (copy / notebook.name).exists() else "refused")
            shutil.rmtree(copy)
            copies += 1
    finally:
        learner.kill()
    assert seen == {"the learner's own", "refused"}


def test_every_submission_is_graded_or_not_graded_with_a_reason(course):
    root, _ = course
    verdicts = workflow.outcomes(EXERCISE, root=root)
    assert verdicts["ada"] is None and verdicts["bob"] is None
    assert verdicts["cy"] == f"`import os` at cell {_cell_number(RELEASE)} line 2 is not allowed in graded code"
    assert verdicts["dee"] == f"timed out in cell {_first_test_cell()} after 10 s"
    assert verdicts["eve"].startswith(f"invalid notebook {EXERCISE}.ipynb: Notebook does not appear to be JSON")
    assert verdicts["fay"] == f"missing notebook {EXERCISE}.ipynb (found: my_work.ipynb)"
    assert verdicts["gus"] == f"invalid notebook {EXERCISE}.ipynb: not UTF-8 text"


def test_status_shows_scores_and_reasons(course):
    root, progress = course
    lines = workflow.status(EXERCISE, root=root)
    assert f"ada: graded {FULL}/{FULL}" in lines and f"bob: graded 0/{FULL}" in lines
    assert f"ivy: graded {FULL}/{FULL}" in lines
    assert "fay: not graded: missing notebook ex3_freeing.ipynb (found: my_work.ipynb)" in lines
    assert progress[-1].startswith(f"autograde {EXERCISE}: 10/10 done, ETA")


def test_export_writes_csv_with_reasons_and_a_histogram(course, tmp_path):
    root, _ = course
    workflow.export(EXERCISE, tmp_path / "grades.csv", tmp_path / "scores.png", root=root)
    with open(tmp_path / "grades.csv") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert rows["ada"]["status"] == "graded" and float(rows["ada"]["score"]) == FULL
    assert float(rows["ada"]["test-seed-003"]) == 2
    assert rows["cy"]["status"] == "not graded" and rows["cy"]["score"] == "" and rows["cy"]["reason"]
    assert (tmp_path / "scores.png").read_bytes()[:4] == b"\x89PNG"


def test_feedback_shows_hidden_tests_only_as_passed_or_failed(course):
    root, _ = course
    said = workflow.feedback(EXERCISE, root=root)
    written = sorted(path.parent.name for path in (root / ".course" / "feedback").glob(f"*/{EXERCISE}"))
    assert "ada" in written and said.startswith(f"wrote feedback for {len(written)} submissions of {EXERCISE} in ")
    html = (root / ".course" / "feedback" / "ada" / EXERCISE / f"{EXERCISE}.html").read_text()
    assert "hidden test — passed — 1/1 points" in html
    assert "fails_part_way" not in html and "BEGIN HIDDEN TESTS" not in html
    assert "seed 003: m = k after backward" in html


def test_a_failing_visible_check_reaches_the_learner_in_full(course):
    """Visible and hidden checks live in separate cells: the learner who freed never-saved entries
    reads which scenario differs and what torch and their code did, not just "hidden test — failed"."""
    root, _ = course
    workflow.feedback(EXERCISE, root=root)
    html = (root / ".course" / "feedback" / "hal" / EXERCISE / f"{EXERCISE}.html").read_text()
    assert "'seed 003: m = k after backward'\n  minigrad differs from torch at " in html, html
    assert "torch: " in html and "minigrad: " in html
    toc = html[html.index('<div id="toc">'):html.index("</ol>")]  # each test named by its scenarios
    assert "Test cell" not in toc and "visible checks" in toc and "hidden checks" in toc
    assert "seed 003: m = k after backward" in toc
    assert "fails_part_way" not in html and "BEGIN HIDDEN TESTS" not in html
    assert "Graded on CPU (no CUDA device on the grading machine)." in html or "Graded on CUDA (" in html


def test_a_failed_hidden_check_is_named_by_its_title_in_the_feedback(course):
    """Issue 34: a hidden test that fails names, in the learner's feedback, the titles of its checks
    that failed (from the grader's run), and only their titles: not their code, inputs or results."""
    root, _ = course
    workflow.feedback(EXERCISE, root=root)
    graded = nbformat.read(root / ".course" / "autograded" / "jo" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    failed = {cell.metadata["nbgrader"]["grade_id"]: cell.metadata["minigrad"]["failed checks"] for cell in graded.cells
              if cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-hidden")
              and cell.metadata["minigrad"]["failed checks"]}
    assert failed, "jo's submission fails no hidden check: the test needs one that does"
    html = (root / ".course" / "feedback" / "jo" / EXERCISE / f"{EXERCISE}.html").read_text()
    for titles in failed.values():
        for title in titles:
            assert html.count(title) >= 2, title  # in the note that lists the hidden checks, and as failed
            assert f"failed: {title!r}" in html.replace("&#39;", "'"), title


def test_a_plain_rerun_grades_again_what_the_grader_failed_and_nothing_else(course):
    """A submission whose outcome is the grader's own failure (a setup step missing then, say) is
    graded by a plain rerun; one graded, or not graded for the learner's reason, is left as it is."""
    root, _ = course
    api = workflow.course_api(root)
    workflow._not_graded(api, EXERCISE, "ada", "autograde failed: MissingEntry: No such assignment: ex3_freeing")
    before = workflow.outcomes(EXERCISE, root=root)
    lines = []
    assert workflow.autograde(EXERCISE, root=root, progress=lines.append, sandbox=check_available() is None) == []
    after = workflow.outcomes(EXERCISE, root=root)
    assert after["ada"] is None and {s: r for s, r in after.items() if s != "ada"} == \
        {s: r for s, r in before.items() if s != "ada"}
    assert lines == [f"autograde {EXERCISE}: 1/1 done, ETA 0 s"]


def test_the_grader_works_without_an_activated_venv(tmp_path, monkeypatch):
    """``.venv/bin/python -m grader ...`` with nothing activated: a new gradebook needs nbgrader's
    ``alembic`` console script, which it starts by name from PATH."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    database = tmp_path / "gradebook.db"
    done = subprocess.run([sys.executable, "-c", f"from nbgrader.api import Gradebook; Gradebook('sqlite:///{database}')"],
                          env=nbgrader_env(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_release_all_releases_each_exercise_once_and_replaces_an_outdated_one(tmp_path, capsys):
    """What ./run lab runs at each start: every exercise in the exchange, a line each as it goes;
    nothing copied again when nothing changed; an exercise whose release changed is released anew."""
    for folder in ("minigrad", "coursekit"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("grader", "exercises", "solutions"):  # staged packages are built, not copied
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "minigrad", "coursekit"))
    workflow.release_all(tmp_path)
    outbound = tmp_path / ".course" / "exchange" / "minigrad" / "outbound"
    exercises = sorted(p.name for p in (tmp_path / "exercises").iterdir() if p.is_dir())
    assert [line for line in capsys.readouterr().err.splitlines() if "releasing" in line] == [
        f"minigrad: releasing into the exchange: {spec.stem} ({number}/{len(exercises)})"
        for number, spec in enumerate(exercise_specs(tmp_path), 1)]
    assert sorted(p.name for p in outbound.iterdir()) == exercises
    assert all((outbound / name / "minigrad" / "engine.py").exists() for name in exercises)
    assert all((outbound / name / "coursekit" / "testing.py").exists() for name in exercises)
    released = {name: (outbound / name / f"{name}.ipynb").stat().st_mtime_ns for name in exercises}
    notebook = tmp_path / "exercises" / EXERCISE / f"{EXERCISE}.ipynb"
    notebook.write_text(notebook.read_text().replace("Exercise 3", "Exercise 3 (corrected)", 1))
    workflow.release_all(tmp_path)
    again = {name: (outbound / name / f"{name}.ipynb").stat().st_mtime_ns for name in exercises}
    assert [name for name in exercises if again[name] != released[name]] == [EXERCISE]
    assert [line for line in capsys.readouterr().err.splitlines() if "releasing" in line] == [
        f"minigrad: releasing into the exchange: {EXERCISE} (1/1)"]
    assert "Exercise 3 (corrected)" in (outbound / EXERCISE / f"{EXERCISE}.ipynb").read_text()


def test_workers_follow_the_cpus_the_job_was_given():
    """A Slurm job's cpuset (here: taskset) bounds the default number of grading workers, not the
    machine's cores (issue 27)."""
    done = subprocess.run(["taskset", "-c", "0", sys.executable, "-c",
                           "from grader.workflow import available_cpus; print(available_cpus())"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


@pytest.mark.parametrize("text, error", [("1/1", "I must be from 0 to N - 1"), ("one/4", "is not I/N"),
                                         ("4", "is not I/N")])
def test_a_shard_that_is_not_i_of_n_is_refused_saying_so(text, error):
    done = subprocess.run([sys.executable, "-m", "grader", "autograde", "ex3_freeing", "--shard", text], cwd=ROOT,
                          env=nbgrader_env(ROOT), capture_output=True, text=True)
    assert done.returncode == 2 and error in done.stderr, done.stderr


def test_a_number_of_shards_below_one_is_refused_saying_so():
    done = subprocess.run([sys.executable, "-m", "grader", "unfinished", "ex3_freeing", "0"], cwd=ROOT,
                          env=nbgrader_env(ROOT), capture_output=True, text=True)
    assert done.returncode == 2 and "'0' is not a number of shards (1 or more)" in done.stderr, done.stderr


def test_autograde_and_status_say_when_nothing_was_collected(tmp_path):
    """A fresh course, nothing submitted: the README's commands say so instead of printing nothing."""
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(nbgrader_env(tmp_path), PYTHONPATH=str(tmp_path))
    said = f"ex1_ops: no submissions collected yet (learners submit from the Assignment List; " \
           f"`collect ex1_ops` takes theirs from the exchange)\n"
    for command in (["autograde", "ex1_ops"] + ["--no-sandbox"] * bool(check_available()), ["status", "ex1_ops"]):
        done = subprocess.run([sys.executable, "-m", "grader", *command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert (done.returncode, done.stdout) == (0, said), done.stderr


def test_learner_html_keeps_data_only_as_an_image_and_no_id_or_script():
    """Issue 36: a ``data:`` URL is a picture in an image, never a link (its page would be the
    learner's HTML), however it is spelled; no learner id (the page's own ids, such as ``toc``, stay
    the page's); scripts, handlers and ``javascript:`` links are gone; code keeps its colouring."""
    image = "data:image/png;base64,iVBORw0KGgo="
    text = _clean(f'<a href="data:text/html,<script>alert(1)</script>">a</a><a href="da&#10;ta:text/html,x">b</a>'
                  f'<img src="{image}" alt="plot"><p id="toc">c</p><a href="javascript:alert(2)">d</a>'
                  f'<img src="x" onerror="alert(3)"><script>alert(4)</script><a href="https://pytorch.org">e</a>')
    assert text == (f'<a rel="noopener noreferrer">a</a><a rel="noopener noreferrer">b</a><img src="{image}" alt="plot">'
                    '<p>c</p><a rel="noopener noreferrer">d</a><img src="x">'
                    '<a href="https://pytorch.org" rel="noopener noreferrer">e</a>')
    assert '<span class="kn">import</span>' in _clean(markdown2html("```python\nimport torch\n```"))


def test_the_feedback_step_takes_the_html_exporters_config_without_a_warning(caplog):
    """Generate Feedback's exporter configures display_data_priority for every preprocessor, which
    nbgrader's NbGraderPreprocessor declares unconfigurable: a warning at each run, in Formgrader too."""
    from nbconvert.exporters import HTMLExporter

    from grader.feedback import HideHiddenTests

    HTMLExporter().register_preprocessor(HideHiddenTests, enabled=True)
    assert [record.getMessage() for record in caplog.records] == []


@pytest.mark.parametrize("corrupt", [None, ("points", "many"), ("grade_id", 7), ("solution", None),
                                     ("schema_version", 1), ("schema_version", 9), ("grade", True)])
def test_our_cell_metadata_check_decides_as_nbgraders(corrupt):
    """grader/metadata.py validates with the schema's validator built once: on the released notebook,
    intact or with one cell's metadata corrupted, it passes or fails as nbgrader's own check, saying
    the same (nbgrader's log shows the error it caught)."""
    from nbgrader.nbgraderformat import ValidationError
    from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheck

    from grader.metadata import CheckCellMetadata

    notebook = nbformat.read(ROOT / "exercises" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    if corrupt:
        graded = next(cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("solution"))
        graded.metadata.nbgrader[corrupt[0]] = corrupt[1]
    outcomes = []
    for check in (NbgraderCheck(), CheckCellMetadata()):
        try:
            check.preprocess(copy.deepcopy(notebook), {})
            outcomes.append("valid")
        except Exception as error:  # noqa: BLE001 - what each raises is what is compared
            cause = error.__context__
            outcomes.append((type(error), str(error), type(cause), str(cause)))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] == "valid") == (corrupt is None)
