"""What the grading tests share.

Submissions: an exercise's points, its reference answers, a learner's submission made from the
release with answers changed, and exercise 3's kept mistake, the one the pipeline tests submit.

Browsers (test_ui.py, test_learner_path.py, test_instructor_path.py, test_hub.py, test_fresh_clone.py):
Debian's chromium; a server waited for until it answers; JupyterLab started as ``./run lab`` starts
it, for a learner or an instructor, on a scratch copy of the course; pressing Validate; screenshots;
the lab's menus; waiting for a kernel, typing over a cell."""
import contextlib
import glob
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from grader.build import ROOT
from grader import verdicts
from grader.verdicts import DENIALS


# --- submissions ---------------------------------------------------------------------------------


@pytest.fixture
def unguarded(monkeypatch):
    """The first layer off: no static check, and the learner's cells compiled as the torch run's (no
    guards, every builtin)."""
    compiled = verdicts.compiled
    monkeypatch.setattr(verdicts, "violation", lambda tree, where: None)
    monkeypatch.setattr(verdicts, "compiled", lambda cells, numbers, exercise, guarded:
                        compiled(cells, numbers, exercise, guarded=False))


def flagged(construct, cell, line):
    """What grading tells the learner of ``construct``, denied while graded code ran: its kind and
    where, never its names (verdicts.DENIALS); the construct itself is the NotGraded's ``detail``."""
    kind = ("import" if construct.startswith("import ") else "write" if construct.endswith(" = ...")
            else "base" if construct.startswith("class ") else "read")
    return f"graded code {DENIALS[kind]} at cell {cell} line {line} (flagged: tried while it ran)"


def max_score(root, exercise):
    """The points an exercise is worth, from its source notebook."""
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in source.cells)


def graded_exercise(where, exercise):
    """(folder, source notebook, reference solutions, torch's expected results) of ``exercise``'s
    solutions, copied into ``where``: what in-process grading (``verdicts.run``) takes."""
    from grader.devices import grading_device

    folder = where / exercise
    shutil.copytree(ROOT / "solutions" / exercise, folder)
    source = nbformat.read(folder / f"{exercise}.ipynb", as_version=4)
    reference = verdicts.solution_cells(source, without_markers=True)
    expected = verdicts.expected_results(folder, f"{exercise}.ipynb", where / "expected.json", grading_device(False))
    return folder, source, reference, expected


def reference_solutions(root, exercise):
    """The solution cells of the source notebook, without nbgrader's markers, by grade_id."""
    source = nbformat.read(root / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: _without_markers(c.source) for c in source.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def submission_like(path, change_solution, reference):
    """The notebook at ``path`` with each solution cell's code set to ``change_solution(grade_id,
    reference code, released code)``."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in reference:
            cell.source = change_solution(grade_id, reference[grade_id], cell.source)
    nbformat.write(notebook, path)


def _without_markers(code):
    return "\n".join(line for line in code.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


EXERCISE = "ex3_freeing"
"""The exercise the pipeline tests submit: small, and quick to grade."""
NOTEBOOK = f"{EXERCISE}.ipynb"
FULL = max_score(ROOT, EXERCISE)
RELEASE_PART = "BackwardFunction-_release_saved"
RIGHT, WRONG = "tuple(None if s is None else _FREED for s in self._saved)", "tuple(_FREED for s in self._saved)"
PARTLY_WRONG = ("BackwardFunction-_release_saved", "if self._saved:", "if self._saved and len(self._saved) > 1:")
"""(part, reference text, wrong text): a _release_saved that frees only nodes that saved more than
one tensor, which fails a visible test and a hidden one."""


def write_submission(root, student, solutions=None, edit=None):
    """``student``'s submission of EXERCISE in the course at ``root``: the release, with the solution
    cells given ({grade_id: source}), then ``edit(folder, notebook path)`` if given."""
    folder = root / ".course" / "submitted" / student / EXERCISE
    shutil.copytree(root / "exercises" / EXERCISE, folder)
    path = folder / NOTEBOOK
    if solutions is not None:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in solutions:
                cell.source = solutions[grade_id]
        nbformat.write(notebook, path)
    if edit:
        edit(folder, path)



def course_with_submissions(root, rounds):
    """A scratch course at ``root`` (the sources, the exercises as built) with ``3 * rounds`` submissions
    of EXERCISE, learner-0, learner-1, ...: in turn right, the untouched release, and with the kept
    mistake (which fails the visible seed-003 checks). Returns each one's expected score."""
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    reference = reference_solutions(root, EXERCISE)
    mistaken = {**reference, RELEASE_PART: reference[RELEASE_PART].replace(RIGHT, WRONG)}
    expected = {}
    for number, (solutions, score) in enumerate([(reference, FULL), (None, 0), (mistaken, FULL - 2)] * rounds):
        write_submission(root, f"learner-{number}", solutions)
        expected[f"learner-{number}"] = score
    return expected

# --- browsers ------------------------------------------------------------------------------------

SHOTS = ROOT / "screenshots"
LONG = 120_000  # ms: a cold kernel on a busy two-core machine
SHORT = 30_000  # ms: the page's answer to a click
CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield chromium
        chromium.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(server, url, log, what):
    """Wait until ``url`` answers; if it does not within two minutes, or ``server`` (a process leading
    its own group) ends first, kill its group and fail with its ``log``."""
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
                raise RuntimeError(f"{what} did not start:\n{log.read_text()}") from None
            time.sleep(0.5)


def validate(button):
    """Press nbgrader's Validate ``button`` and wait until its dialog shows the result; returns the dialog."""
    page = button.page
    button.click(timeout=90_000)
    dialog = page.locator(".jp-Dialog-content")
    dialog.wait_for(timeout=180_000)
    page.wait_for_function("!document.querySelector('.jp-Dialog-content').innerText.includes('Validating')",
                           timeout=180_000)
    return dialog


def passed_in_full(dialog_text):
    """Whether a Validate dialog says what a passing exercise passed: its visible tests, and which hidden
    checks run only when it is graded (lab extension minigrad-lab), not nbgrader's
    "passes all the tests"."""
    return (re.search(r"All \d+ visible tests? pass\.\s+\d+ hidden checks? \(\d+ points?\) run when you submit, not now:\s+• ",
                      dialog_text) is not None and "passes all the tests" not in dialog_text)


def run_environment(clone):
    """The environment a newcomer's shell gives ``./run``, pointed at this run's venv (MINIGRAD_VENV)
    with the extras it was installed with, so that ``./run`` finds it set up and installs nothing."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("JUPYTER", "PYTHON", "MINIGRAD", "IPYTHON"))}
    env["MINIGRAD_VENV"] = sys.prefix
    for extras in ("", "kernels"):
        listed = "test,course" + (f",{extras}" if extras else "")
        stamp = subprocess.run(["cksum"], input=(clone / "pyproject.toml").read_text() + listed + "\n",
                               capture_output=True, text=True, check=True).stdout.split()[0]
        if os.path.exists(os.path.join(sys.prefix, f".installed-{stamp}")):
            env["MINIGRAD_EXTRAS"] = extras
            return env
    raise AssertionError(f"{sys.prefix} was not set up by ./run (no .installed-* stamp for this pyproject.toml)")


@contextlib.contextmanager
def serve(root, state, role):
    """JupyterLab on 127.0.0.1 with ``role``'s lab (grader/lab/<role> before grader/ on
    JUPYTER_CONFIG_PATH) on the course at ``root``; Jupyter's own files under ``state``. Yields
    {"url", "token", "root"}."""
    env = dict(os.environ)
    env.update({
        "JUPYTER_CONFIG_PATH": os.pathsep.join([str(root / "grader" / "lab" / role), str(root / "grader")]),
        "JUPYTER_CONFIG_DIR": str(state / "config"), "JUPYTER_DATA_DIR": str(state / "data"),
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"), "IPYTHONDIR": str(state / "ipython"),
        "MPLCONFIGDIR": str(state / "matplotlib"),
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")]),
        # the lessons import the course's minigrad (./run's editable install); here, the scratch copy's
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")])),
    })
    port, token = free_port(), f"minigrad-{role}-test"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = open(state / "server.log", "wb")
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(server, f"{url}/api/status?token={token}", state / "server.log", "JupyterLab")
        yield {"url": url, "token": token, "root": root, "log": state / "server.log"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a server that does not stop is killed, not left running
            server.kill()
            server.wait()
        log.close()


def shot(page, folder, name):
    """Save screenshots/<folder>/<name>.png, once the page has painted what the last scroll brought
    into view (the notebook skips rendering cells out of view: content-visibility)."""
    (SHOTS / folder).mkdir(parents=True, exist_ok=True)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.screenshot(path=str(SHOTS / folder / f"{name}.png"))


def menu(page, menu_name, command, only=False):
    """Click ``menu_name`` in the menu bar, then the item that runs ``command`` (``only``: the menu shows
    no other item)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu_name}$")).click()
    item = page.locator(f".lm-Menu-item[data-command='{command}']")
    item.wait_for()
    if only:
        shown = page.locator(".lm-Menu-item:not(.lm-mod-hidden)").all_inner_texts()
        assert len(shown) == 1, f"{menu_name} shows {[text.strip() for text in shown]}"
    item.click()


def wait_for_kernel(page, kernel="ipykernel"):
    """Until the notebook's kernel (``Python 3 (<kernel>)``) has started (cells run before it would
    ask which kernel to start)."""
    page.locator(".jp-StatusBar-Item", has_text=re.compile(rf"\({kernel}\) \| Idle")).wait_for(timeout=LONG)


def run_all(page, panel):
    """Run → Run All Cells, and wait until every cell ran (or one failed) and the kernel is idle. A
    collapsed cell shows no prompt: its count is not in the page, but its error would be."""
    menu(page, "Run", "runmenu:run-all")
    page.wait_for_function(
        r"""() => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea > .jp-InputPrompt')]
                .map(p => p.textContent);
            const ran = prompts.every(p => /\[\d+\]/.test(p));
            const failed = panel.querySelector("[data-mime-type='application/vnd.jupyter.stderr']");
            const idle = [...document.querySelectorAll('.jp-StatusBar-Item')].some(e => e.textContent.endsWith('| Idle'))
                && panel.querySelector('.jp-Notebook-ExecutionIndicator').dataset.status === 'idle';
            return prompts.length > 0 && !prompts.some(p => p.includes('*')) && (ran || failed) && idle;
        }""", timeout=LONG)
    prompts = panel.locator(".jp-CodeCell .jp-InputArea > .jp-InputPrompt").all_text_contents()
    assert all(re.fullmatch(r"\s*\[\d+\]:\s*", p) for p in prompts), f"cells not run: {prompts}"
    errors = panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, errors.all_text_contents()


def replace_cell_source(page, cell, source):
    """Type ``source`` over the cell's code, as a learner who selects it all and types."""
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)


# --- PostgreSQL ----------------------------------------------------------------------------------

POSTGRES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
needs_postgres = pytest.mark.skipif(not POSTGRES, reason="Debian's postgresql is not installed")


def _as_postgres(argv):
    """The server refuses to run as root: as root, run its tools as the package's postgres user."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of the test module's own, on a unix socket; gives a function that makes a
    fresh database on it and returns its URL."""
    home = Path(tempfile.mkdtemp(prefix="minigrad-pg-"))  # pytest's folders are closed to the postgres user
    data, sockets = home / "data", home / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
        shutil.chown(sockets, "postgres")
    tools = POSTGRES[-1]
    subprocess.run(_as_postgres([f"{tools}/initdb", "-D", str(data), "-A", "trust", "-U", "grader"]),
                   check=True, capture_output=True)
    subprocess.run(_as_postgres([f"{tools}/pg_ctl", "-D", str(data), "-w", "-l", str(home / "log"), "-o",
                                 f"-k {sockets} -c listen_addresses=''", "start"]), check=True, capture_output=True)
    names = itertools.count()

    def new_database():
        name = f"gradebook{next(names)}"
        subprocess.run(_as_postgres([f"{tools}/createdb", "-h", str(sockets), "-U", "grader", name]),
                       check=True, capture_output=True)
        return f"postgresql+psycopg2://grader@/{name}?host={sockets}"
    yield new_database
    subprocess.run(_as_postgres([f"{tools}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"]), capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def database(postgres):
    """A fresh PostgreSQL gradebook's URL."""
    return postgres()


# --- Slurm -----------------------------------------------------------------------------------------

needs_slurm = pytest.mark.skipif(os.geteuid() != 0 or not all(map(shutil.which, ("slurmctld", "slurmd", "munged"))),
                                 reason="needs root, and Debian's slurm-wlm and munge (which .ci/run installs)")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A single-node Slurm cluster of the test module's own (Debian's slurm-wlm and munge, daemons started
    by hand, as on a machine without systemd); gives the environment its commands need."""
    home = tmp_path_factory.mktemp("slurm")
    if subprocess.run(["munge", "-n"], capture_output=True).returncode != 0:
        Path("/run/munge").mkdir(exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=True)
    host = socket.gethostname().split(".")[0]
    (home / "slurm.conf").write_text("\n".join([
        "ClusterName=minigrad", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
        f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}", f"StateSaveLocation={home}/state",
        f"SlurmdSpoolDir={home}/spool", f"SlurmctldPidFile={home}/slurmctld.pid", f"SlurmdPidFile={home}/slurmd.pid",
        f"SlurmctldLogFile={home}/slurmctld.log", f"SlurmdLogFile={home}/slurmd.log", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/affinity", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU_Memory",
        "ReturnToService=2", "MpiDefault=none", "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
        f"NodeName={host} CPUs={os.cpu_count()} RealMemory=8000 State=UNKNOWN",
        "PartitionName=grading Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
    env = {**os.environ, "SLURM_CONF": str(home / "slurm.conf")}
    for daemon in ("slurmctld", "slurmd"):
        subprocess.run([daemon, "-f", env["SLURM_CONF"]], env=env, check=True)
    deadline = time.monotonic() + 60
    while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout:
        assert time.monotonic() < deadline, (home / "slurmctld.log").read_text()[-2000:]
        time.sleep(0.5)
    yield env
    subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True)
