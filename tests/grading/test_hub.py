"""A class on a real multi-user JupyterHub (hub/setup.sh, hub/start.sh), in Chromium.

The hub runs as root on 127.0.0.1 and starts each user's JupyterLab as that Unix user; nbgrader's
exchange is the shared /srv/nbgrader/exchange; the instructor's course (solutions included) lives in
the instructor's home. In the browser, learner2 lands on the lessons and runs two of them live (the
course's minigrad, compiled: hub/setup.sh); every lesson runs as learner1 in the lessons' kernel; no
file a learner can read holds an answer line, the engine's tests pass on the lessons' build, and the
grading sandbox cannot see it.
learner1 logs in, fetches exercise 3 from the Assignment List, types the solution, Validates and
Submits; learner2 fetches and Submits it unchanged, and cannot open learner1's server. Then, as Unix
users: neither learner can read the other's home nor the instructor's course, nor list the
exchange's inbound, nor read a reference answer; learner2 plants a submission in learner1's name and
one with a link to the solutions; the instructor collects (neither plant nor link) and autogrades
both with the course's CLI: learner1 full marks, learner2 none; logged in, the instructor sees both grades
in nbgrader's Formgrader. Screenshots in screenshots/hub/. When the hub stops, no process of the
three users is left running.

Needs root, hub/setup.sh done (.ci/run does it), configurable-http-proxy and Debian's chromium;
skipped otherwise, saying which is missing. It resets learner1's and learner2's exercise 3 and stops
the three users' processes at the end: not for a machine serving a class (it refuses to start while
those users have processes running).
"""
import importlib.metadata
import json
import multiprocessing
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from answer_lines import ANSWERS, EXERCISES, LOCAL, normalised
from grader.build import ROOT
from grader.parts import find_parts
from support import (passed_in_full, CHROMIUM, LONG, SHORT, browser, free_port, menu, reference_solutions,  # noqa: F401
                     replace_cell_source, run_all, validate, wait_for_kernel, wait_until_up)  # browser is a fixture

PREFIX = Path(os.environ.get("HUB_PREFIX", "/opt/minigrad-hub"))
EXCHANGE = Path(os.environ.get("MINIGRAD_EXCHANGE", "/srv/nbgrader/exchange"))
LEARNERS = ("learner1", "learner2")
INSTRUCTOR = "instructor"
EXERCISE = "ex3_freeing"
SHOTS = ROOT / "screenshots" / "hub"


def _missing():
    if os.geteuid() != 0:
        return "needs root (the hub starts each user's server as that Unix user)"
    if not (PREFIX / "venv" / "bin" / "jupyterhub").exists() or not (PREFIX / "passwords").exists():
        return f"hub/setup.sh has not been run (no {PREFIX}/venv/bin/jupyterhub)"
    if not shutil.which("configurable-http-proxy"):
        return "configurable-http-proxy (npm) is not installed: run hub/setup.sh"
    if not CHROMIUM.exists():
        return "Debian's chromium is not installed"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def home(user):
    return Path(os.path.expanduser(f"~{user}"))


def as_user(user, *command, cwd=None, check=True):
    """Run ``command`` as the Unix user ``user`` (the course's venv first on PATH)."""
    env = {"HOME": str(home(user)), "PATH": f"{PREFIX}/venv/bin:/usr/bin:/bin", "MINIGRAD_EXCHANGE": str(EXCHANGE),
           "LANG": "C.UTF-8"}
    return subprocess.run(["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command],
                          cwd=cwd, capture_output=True, text=True, check=check)


def can(user, test, path):
    """Whether ``test -r``/``test -x``... holds for ``path`` as ``user``; ``ls`` for a listing."""
    command = ["ls", str(path)] if test == "ls" else ["test", test, str(path)]
    return as_user(user, *command, check=False).returncode == 0


def _reset():
    """Forget an earlier run of this test: the learners' fetched exercise, their submissions and
    nbgrader's cache of them, and the instructor's collected and graded copies."""
    for learner in LEARNERS:
        shutil.rmtree(home(learner) / EXERCISE, ignore_errors=True)
        shutil.rmtree(home(learner) / "course", ignore_errors=True)
        shutil.rmtree(home(learner) / ".local" / "share" / "jupyter" / "nbgrader_cache", ignore_errors=True)
        for submission in (EXCHANGE / "minigrad" / "inbound").glob(f"{learner}+{EXERCISE}+*"):
            shutil.rmtree(submission)
        for folder in ("submitted", "autograded"):
            shutil.rmtree(home(INSTRUCTOR) / "minigrad" / ".course" / folder / learner / EXERCISE, ignore_errors=True)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    running = _processes()
    if running:  # a hub serving these users (a class, an earlier run): this test would reset their work
        pytest.fail(f"the hub's users have processes running; stop their hub first: {running}")
    _reset()
    state = tmp_path_factory.mktemp("hubstate")
    port = free_port()
    env = dict(os.environ, HUB_PREFIX=str(PREFIX), HUB_STATE=str(state), HUB_PORT=str(port),
               HUB_INTERNAL_PORT=str(free_port()), HUB_PROXY_API_PORT=str(free_port()),
               MINIGRAD_EXCHANGE=str(EXCHANGE))
    log = open(state / "hub.log", "wb")
    server = subprocess.Popen([str(ROOT / "hub" / "start.sh")], env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_until_up(server, f"{url}/hub/api", state / "hub.log", "JupyterHub")
    passwords = dict(line.split(":", 1) for line in (PREFIX / "passwords").read_text().split())
    yield {"url": url, "passwords": passwords, "log": state / "hub.log"}
    server.send_signal(signal.SIGTERM)  # the hub stops the users' servers and its proxy
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    log.close()
    deadline = time.monotonic() + 15  # the users' servers and kernels end a moment after the hub
    while (left := _processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    for user, processes in left.items():
        for process in processes:
            os.kill(int(process.split()[0]), signal.SIGKILL)
    assert not left, f"servers left running after the hub stopped: {left}"


def _processes():
    """The users' live processes (not zombies, which their parent or init reaps), by user."""
    found = {}
    for user in (*LEARNERS, INSTRUCTOR):
        lines = subprocess.run(["ps", "-u", user, "-o", "pid=,stat=,args="], capture_output=True,
                               text=True).stdout.splitlines()
        live = [line.strip() for line in lines if not line.split()[1].startswith("Z")]
        if live:
            found[user] = live
    return found


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def log_in(browser, hub, user, screenshot=None):  # noqa: F811
    """A browser of the user's own (no cookies shared): log in on the hub's page, wait for the lab."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{hub['url']}/hub/login")
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(hub["passwords"][user])
    if screenshot:
        shot(page, screenshot)
    page.locator("#login_submit").click()
    page.wait_for_url(re.compile(f"/user/{user}/lab"), timeout=LONG)
    page.goto(f"{hub['url']}/user/{user}/lab?reset")  # a fresh workspace, not the last run's open tabs
    page.locator(".jp-Launcher").wait_for(timeout=LONG)
    return page


def fetch(page, number, user):
    from playwright.sync_api import expect

    menu(page, "Nbgrader", "nbgrader:open-assignment-list", only=True)  # a learner's tools only
    row = page.locator("#released_assignments_list .list_item", has_text=EXERCISE)
    expect(row).to_be_visible(timeout=LONG)
    shot(page, f"{number:02d}_{user}_assignment_list")
    row.get_by_role("button", name="Fetch").click()
    fetched = page.locator("#fetched_assignments_list .list_item", has_text=EXERCISE).first
    expect(fetched).to_be_attached(timeout=LONG)  # listed; the notebook may have opened over the list already
    shot(page, f"{number + 1:02d}_{user}_fetched")
    assert (home(user) / EXERCISE / f"{EXERCISE}.ipynb").stat().st_uid == home(user).stat().st_uid
    return fetched


def submit(page, number, user):
    from playwright.sync_api import expect

    page.locator(".lm-TabBar-tab", has_text="Assignments").click()
    fetched = page.locator("#fetched_assignments_list .list_item", has_text=EXERCISE).first
    fetched.get_by_role("button", name="Submit").click()
    expect(page.locator("#submitted_assignments_list .list_item", has_text=EXERCISE)).to_be_visible(timeout=LONG)
    shot(page, f"{number:02d}_{user}_submitted")


def test_a_learner_lands_on_the_lessons_and_runs_them_live(browser, hub):  # noqa: F811
    """The lab opens on 00_start_here, in ~/course: the lessons, the learner's own files, as the
    course ships them (no outputs), in the "minigrad lessons" kernel. Run All runs its setup cell
    with the course's minigrad (nbgrader configured: Validate works here); unit 2's Run All runs its
    side-by-side checks (which raise where minigrad differs from torch), and the engine's source as
    the lesson prints it shows exercise 2's part as a stub, not its answer."""
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{hub['url']}/hub/login")
    page.locator("#username_input").fill("learner2")
    page.locator("#password_input").fill(hub["passwords"]["learner2"])
    page.locator("#login_submit").click()
    page.wait_for_url(re.compile("/user/learner2/lab/tree/course/00_start_here.ipynb"), timeout=LONG)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    panel.locator(".jp-MarkdownCell").first.wait_for(timeout=LONG)
    shot(page, "00_learner2_lands_on_00_start_here")
    lessons = sorted(path.name for path in (home("learner2") / "course").iterdir() if not path.name.startswith("."))
    assert lessons == sorted(path.name for path in (ROOT / "course").iterdir() if path.suffix in (".ipynb", ".py", ".md"))
    assert all((home("learner2") / "course" / name).stat().st_uid == home("learner2").stat().st_uid for name in lessons)
    copy = json.loads((home("learner2") / "course" / "03a_what_backward_frees.ipynb").read_text())
    assert copy["metadata"]["kernelspec"]["name"] == "minigrad-lessons"
    assert not any(cell.get("outputs") for cell in copy["cells"])

    wait_for_kernel(page, "minigrad lessons")
    run_all(page, panel)
    setup = panel.locator(".jp-OutputArea-output", has_text="a first minigrad backward")
    expect(setup).to_contain_text("x.grad = [2.0, 4.0, 6.0]", timeout=SHORT)
    expect(setup).to_contain_text(f"minigrad  {PREFIX}/lessons/lib/minigrad", timeout=SHORT)
    expect(setup).to_contain_text("nbgrader  configured", timeout=SHORT)
    shot(page, "00_learner2_ran_00_start_here")

    page.goto(f"{hub['url']}/user/learner2/lab/tree/course/02_the_engine.ipynb?reset")  # 02 alone: its kernel
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text="02_the_engine.ipynb")).to_be_visible(timeout=LONG)
    wait_for_kernel(page, "minigrad lessons")
    run_all(page, panel)
    expect(panel.locator(".jp-OutputArea-output", has_text="<- differs")).to_have_count(0)
    printed = panel.locator(".jp-OutputArea-output", has_text="def compute_dependencies(")
    expect(printed).to_contain_text("compute_dependencies is yours to write", timeout=SHORT)
    expect(printed).not_to_contain_text("dependencies.get(", timeout=SHORT)
    printed.scroll_into_view_if_needed()
    shot(page, "00_learner2_ran_02_the_engine")
    page.context.close()


def test_every_lesson_runs_in_a_learners_kernel():
    """Each lesson, executed as learner1 in the lessons' kernel (nbconvert, as the learner's server
    would run it): no cell raises, so every side-by-side check of minigrad against torch holds."""
    out = Path(tempfile.mkdtemp(prefix="hub-lessons-"))
    shutil.chown(out, "learner1", "learner1")
    lessons = [str(path) for path in sorted((PREFIX / "lessons" / "course").glob("*.ipynb"))]

    def execute(some):
        return as_user("learner1", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--output-dir", str(out),
                       "--ExecutePreprocessor.timeout=600", *some, cwd=out, check=False)
    try:
        with ThreadPoolExecutor(2) as pool:  # a kernel at a time each: both cores
            for ran in pool.map(execute, (lessons[::2], lessons[1::2])):
                assert ran.returncode == 0, ran.stderr[-3000:]
        executed = sorted(path.name for path in out.glob("*.ipynb"))
        assert executed == sorted(path.name for path in (ROOT / "course").glob("*.ipynb")), executed
    finally:
        shutil.rmtree(out)


def test_the_lessons_minigrad_passes_the_engines_tests():
    """The lessons' minigrad, compiled where it holds a part (hub/setup.sh), is the engine the course
    tests: the engine's tests pass on it as on the source. Cython's functions make no frames and hold
    their arguments and closures otherwise than Python's, and warnings, freeing and the gradients kept
    without a copy depend on both. (``-P`` and no ``pythonpath``: the clone's minigrad not first.)"""
    env = {**os.environ, "PYTHONPATH": f"{PREFIX / 'lessons' / 'lib'}{os.pathsep}{ROOT}"}
    where = subprocess.run([sys.executable, "-P", "-c", "import minigrad.engine as e; print(e.__file__)"], env=env,
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(PREFIX / "lessons" / "lib")) and where.endswith(".so"), where
    ran = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "pythonpath=",
                          "-n", "2", "tests/engine"], env=env, cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout[-3000:]


def test_a_learners_server_runs_within_the_classs_limits(hub):
    """learner2's server and the lessons' kernels it started above (forks of the machine's zygote,
    grader/lab/course_zygote.py): RLIMIT_DATA and RLIMIT_NPROC, nice 5, torch on one thread, learner2's."""
    listed = as_user("learner2", "ps", "-ww", "-u", "learner2", "-o", "pid=,comm=,args=").stdout.splitlines()
    (server,) = [line.split()[0] for line in listed if "jupyterhub-singleuser" in line]
    kernels = [line.split()[0] for line in listed if line.split()[1] == "minigrad-kernel"]
    assert kernels, f"no kernel of learner2's is a fork of the zygote: {listed}"
    for process in (server, *kernels):
        limits = Path(f"/proc/{process}/limits").read_text()
        assert re.search(r"Max data size\s+4294967296\s+4294967296", limits), limits
        assert re.search(r"Max processes\s+256\s+256", limits), limits
        assert Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()[16] == "5"  # nice
        assert b"OMP_NUM_THREADS=1" in Path(f"/proc/{process}/environ").read_bytes().split(b"\0")


def test_the_zygote_holds_nothing_of_roots_environment(hub):
    """Its forks become learners with a copy of its memory: it was started with a few settings only."""
    listed = subprocess.run(["ps", "-ww", "-u", "root", "-o", "pid=,args="], capture_output=True, text=True).stdout
    (zygote,) = [line.split()[0] for line in listed.splitlines() if "course_zygote.py --serve" in line]
    names = {entry.split(b"=")[0] for entry in Path(f"/proc/{zygote}/environ").read_bytes().split(b"\0") if entry}
    assert names == {b"PATH", b"HOME", b"LANG", b"OMP_NUM_THREADS", b"MKL_NUM_THREADS"}


def test_learner1_fetches_solves_validates_and_submits(browser, hub):  # noqa: F811
    from playwright.sync_api import expect

    page = log_in(browser, hub, "learner1", "01_learner1_login")
    shot(page, "02_learner1_lab")
    fetch(page, 3, "learner1")
    # the fetched notebook opens by itself (minigrad-lab), and the file browser goes to it
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    wait_for_kernel(page)
    expect(page.locator("[data-type='document-title'].lm-mod-current")).to_contain_text(f"{EXERCISE}.ipynb",
                                                                                        timeout=SHORT)
    expect(page.locator(".jp-FileBrowser .jp-BreadCrumbs")).to_contain_text(EXERCISE, timeout=SHORT)
    runtime = home("learner1") / ".local" / "share" / "jupyter" / "runtime"
    newest = max(runtime.glob("kernel-*.json"), key=lambda path: path.stat().st_mtime)
    assert json.loads(newest.read_text())["transport"] == "ipc"  # no TCP port to collide on
    for part in reference_solutions(ROOT, EXERCISE).values():
        cell = panel.locator(".jp-CodeCell", has_text=part.splitlines()[0])
        expect(cell).to_contain_text("raise NotImplementedError()", timeout=SHORT)
        replace_cell_source(page, cell, part)
        expect(cell).not_to_contain_text("raise NotImplementedError()", timeout=SHORT)
    shot(page, "05_learner1_solution_typed")
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    expect(page.locator("[data-type='document-title'].lm-mod-current")).not_to_have_class(
        re.compile("jp-mod-dirty"), timeout=SHORT)
    dialog = validate(panel.get_by_role("button", name="Validate"))
    shot(page, "06_learner1_validated")
    assert passed_in_full(dialog.inner_text()), dialog.inner_text()
    dialog.get_by_role("button", name="Ok").click()
    submit(page, 7, "learner1")
    page.context.close()


def test_learner2_submits_unchanged_and_cannot_open_learner1s_server(browser, hub):  # noqa: F811
    page = log_in(browser, hub, "learner2", "08_learner2_login")
    fetch(page, 9, "learner2")
    submit(page, 11, "learner2")
    answer = page.goto(f"{hub['url']}/user/learner1/lab")
    shot(page, "12_learner2_opens_learner1s_lab")
    assert answer.status == 403, (answer.status, page.url)
    assert "You do not have permission to access Server at /user/learner1/" in page.inner_text("body")
    page.context.close()


def test_learners_cannot_read_each_others_work_nor_the_instructors_course(hub):
    learner1_work = home("learner1") / EXERCISE / f"{EXERCISE}.ipynb"
    assert can("learner1", "-r", learner1_work)  # the check itself works
    assert not can("learner2", "-r", learner1_work)
    assert not can("learner2", "ls", home("learner1"))
    source = home(INSTRUCTOR) / "minigrad" / "solutions" / EXERCISE / f"{EXERCISE}.ipynb"
    assert can(INSTRUCTOR, "-r", source)
    for learner in LEARNERS:
        assert not can(learner, "-r", source)
        assert not can(learner, "ls", home(INSTRUCTOR))
        assert not can(learner, "ls", EXCHANGE / "minigrad" / "inbound")  # submissions: written, not listed
        assert can(learner, "ls", EXCHANGE / "minigrad" / "outbound" / EXERCISE)  # the release: for all
    for submission in (EXCHANGE / "minigrad" / "inbound").glob(f"*+{EXERCISE}+*"):
        assert submission.stat().st_uid == home(submission.name.split("+")[0]).stat().st_uid


def test_no_learner_can_read_a_reference_answer(hub):
    """The minigrad every server imports holds stubs only (the lessons' build: see the next test); an
    exercise not yet released (its package would hold the reference code of the exercises before it)
    is not in the exchange."""
    shown = as_user("learner1", "python", "-c", "import inspect, minigrad.function as f; "
                    "print(inspect.getsource(f.BackwardFunction._release_saved))", cwd=home("learner1")).stdout
    assert "NotImplementedError" in shown and "_FREED for s in self._saved" not in shown
    for exercise in ("ex4_versions", "ex9_gpu_kernel"):
        assert not (EXCHANGE / "minigrad" / "outbound" / exercise).exists()


# Where a learner account may read what the course put there, besides their own home (their work)
# and the admin's clone (hub/setup.sh's source, which must not be readable: see the README): the
# hub's venv and lessons, the exchange, the other users' files, the shared temporary folders.
SCANNED = (PREFIX, EXCHANGE, Path("/home"), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


def _become(user):
    entry = pwd.getpwnam(user)
    os.setgroups(os.getgrouplist(user, entry.pw_gid))
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)


def _from_the_package_index():
    """The files pip installed into the hub's venv for the packages the course does not make (torch,
    JupyterLab...: each one's RECORD), whose text comes from the package index, 1.7 GB of it."""
    site = next((PREFIX / "venv" / "lib").glob("python3*/site-packages"))
    return {os.path.normpath(os.path.join(site, file)) for dist in importlib.metadata.distributions(path=[str(site)])
            if dist.metadata["Name"] != "minigrad" for file in dist.files or ()}


def _readable_answers(skip):
    """(answer's exercise, path, line) of every answer line (answer_lines.py's, normalised)
    in a file this process can read under ``SCANNED``, but ``skip`` and the packages from the index;
    and the files it read. A binary file is read as its printable runs where it names minigrad
    (the lessons' compiled modules do). A line is tokenised only where it holds the longest name of
    some answer line."""
    index = _from_the_package_index()
    forms = {form: number for number, _, _, found in ANSWERS for form in found}
    anchors = {max((token for token in form if token != "_" and token.isidentifier()), key=len, default=None)
               for form in forms}
    assert None not in anchors
    anchor = re.compile("|".join(map(re.escape, sorted(anchors, key=len, reverse=True))))
    found, read = [], set()
    for root in dict.fromkeys(SCANNED):
        for folder, _, names in os.walk(root):
            if Path(folder) == skip or skip in Path(folder).parents:
                continue
            for name in names:
                path = Path(folder, name)
                if str(path) in index:
                    continue
                try:
                    data = path.read_bytes() if path.is_file() else b""
                except OSError:
                    continue
                read.add(path)
                if b"\0" in data:
                    data = b"\n".join(re.findall(rb"[\t\x20-\x7e]{6,}", data)) if b"minigrad" in data else b""
                text, starts = data.decode(errors="replace"), set()
                for match in anchor.finditer(text):
                    start = text.rfind("\n", 0, match.start()) + 1
                    end = text.find("\n", match.end())
                    line = text[start:end if end >= 0 else None]
                    if start not in starts and (form := normalised(line, LOCAL)) in forms:
                        found.append((forms[form], str(path), line.strip()))
                    starts.add(start)
    return found, read


def test_no_file_a_learner_can_read_holds_an_answer(hub):
    """Issue 35: as learner1 (their uid and groups), every line of every file they can read outside
    their home is scanned for the answer lines of every part (the lessons' build and its stubbed
    text, the venv, the exchange): none there, but exercise N's release holds the reference code of
    the exercises before N (by design: its checks need a working engine), which the scan finds."""
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(1, mp_context=context, initializer=_become, initargs=("learner1",)) as pool:
        found, read = pool.submit(_readable_answers, home("learner1")).result()
    allowed = [(number, path, line) for number, path, line in found
               if number < max((EXERCISES.get(part, 0) for part in Path(path).parts), default=0)]
    leaks = sorted(set(found) - set(allowed))
    assert not leaks, f"{len(leaks)} answer line(s) a learner can read:\n" + "\n".join(map(str, leaks[:20]))
    released = {(number, Path(path).relative_to(EXCHANGE).parts[2]) for number, path, _ in allowed
                if EXCHANGE in Path(path).parents}
    assert {(1, "ex3_freeing"), (2, "ex3_freeing")} <= released, released  # the scan reads what it should
    lessons = {path for path in (PREFIX / "lessons").rglob("*") if path.is_file()}
    assert lessons <= read, lessons - read  # the lessons, their minigrad's text and build: all read as learner1
    compiled = list((PREFIX / "lessons" / "lib" / "minigrad").rglob("*.so"))
    assert len(compiled) == len({part.path for part in find_parts(ROOT / "minigrad")}), compiled
    assert not any(path.with_suffix("").with_suffix(".c").exists() for path in compiled)


def test_the_grading_sandbox_cannot_import_the_lessons_build(hub):
    """The instructor grades in the sandbox (grader/sandbox.py), which binds the venv and the system,
    not the lessons' folder: a submission cannot import the compiled reference as a black box."""
    course = home(INSTRUCTOR) / "minigrad"
    inside = f"import os; print(os.path.exists({str(PREFIX / 'venv')!r}), os.path.exists({str(PREFIX / 'lessons')!r}))"
    probe = ("import subprocess, sys, tempfile; from grader.sandbox import wrap; "
             f"print(subprocess.run(wrap([sys.executable, '-c', {inside!r}], tempfile.mkdtemp()), capture_output=True, "
             "text=True).stdout)")
    seen = as_user(INSTRUCTOR, "python", "-c", probe, cwd=course, check=False)
    assert seen.stdout.split() == ["True", "False"], seen


def test_a_learner_can_plant_a_submission_but_collect_takes_neither_it_nor_a_link(hub):
    """The shared inbound is writable by every learner (nbgrader's exchange). learner2 writes a newer
    submission in learner1's name, and a newer one of their own holding a link to the instructor's
    solutions: collect (grader/exchange.py) takes learner1's own submission and copies no link, so
    the next test's grades are learner1's and learner2's own work."""
    inbound = EXCHANGE / "minigrad" / "inbound"
    notebook = home("learner2") / EXERCISE / f"{EXERCISE}.ipynb"
    solutions = home(INSTRUCTOR) / "minigrad" / "solutions" / EXERCISE / f"{EXERCISE}.ipynb"
    for name, extra in (("learner1", None), ("learner2", solutions)):
        folder = inbound / f"{name}+{EXERCISE}+2099-01-01 00:00:00.000000 UTC+planted"
        as_user("learner2", "mkdir", str(folder))
        as_user("learner2", "cp", str(notebook), str(folder))
        if extra:
            as_user("learner2", "ln", "-s", str(extra), str(folder / "answers.ipynb"))
        assert folder.stat().st_uid == home("learner2").stat().st_uid


def test_instructor_collects_and_autogrades_both(hub):
    course = home(INSTRUCTOR) / "minigrad"
    as_user(INSTRUCTOR, "python", "-m", "grader", "collect", EXERCISE, cwd=course)
    assert not (course / ".course" / "submitted" / "learner2" / EXERCISE / "answers.ipynb").exists()
    graded = as_user(INSTRUCTOR, "python", "-m", "grader", "autograde", EXERCISE, "--force", cwd=course).stdout
    lines = dict(re.findall(r"^(learner\d): (.*)$", graded, re.M))
    full = re.fullmatch(r"graded (\S+)/(\S+)", lines["learner1"])
    assert full and full[1] == full[2] and float(full[2]) > 0, graded
    assert re.fullmatch(r"graded 0/\S+", lines["learner2"]), graded
    as_user(INSTRUCTOR, "python", "-m", "grader", "export", EXERCISE, cwd=course)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(course / ".course" / f"{EXERCISE}-scores.png", SHOTS / "13_instructor_scores.png")


def test_instructor_sees_the_grades_in_formgrader(browser, hub):  # noqa: F811
    from playwright.sync_api import expect

    page = log_in(browser, hub, INSTRUCTOR, "14_instructor_login")
    page.goto(f"{hub['url']}/user/{INSTRUCTOR}/lab")
    page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).click(timeout=LONG)
    shown = page.locator(".lm-Menu-item:not(.lm-mod-hidden)")
    expect(shown.first).to_be_visible(timeout=SHORT)
    assert [text.strip() for text in shown.all_inner_texts()] == [  # one Formgrader, as in the local lab
        "Assignment List", "Course List", "Formgrader", "Create assignment"]
    page.keyboard.press("Escape")
    page.goto(f"{hub['url']}/user/{INSTRUCTOR}/formgrader/gradebook/{EXERCISE}/{EXERCISE}")
    rows = page.locator("#main-table tr")
    expect(rows).to_have_count(2, timeout=LONG)  # loaded: names hidden, as nbgrader shows them first
    page.get_by_role("button", name="Show All Names").click()
    expect(page.get_by_role("button", name="Hide All Names")).to_be_visible(timeout=SHORT)
    for learner in LEARNERS:
        expect(rows.get_by_text(learner)).to_be_visible(timeout=SHORT)
    expect(rows.filter(has_text="learner1")).to_contain_text("16 / 16", timeout=SHORT)
    expect(rows.filter(has_text="learner2")).to_contain_text("0 / 16", timeout=SHORT)
    shot(page, "15_instructor_formgrader_submissions")
    # and inside the instructor's lab (Nbgrader → Formgrader), which frames it: the single-user
    # server's default "frame-ancestors 'none'" refused it (grader/lab/instructor allows 'self')
    page.goto(f"{hub['url']}/user/{INSTRUCTOR}/lab")
    page.locator(".jp-Launcher").wait_for(timeout=LONG)
    menu(page, "Nbgrader", "nbgrader:open-formgrader")
    framed = page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
    expect(framed.locator("#main-table tr", has_text=EXERCISE)).to_be_visible(timeout=LONG)
    shot(page, "16_instructor_formgrader_in_the_lab")
    page.context.close()


def test_a_learner_fetches_the_released_feedback_and_opens_it(browser, hub):  # noqa: F811
    """`grader feedback` writes and releases (learner1's: submitted through the exchange); the
    learner's Fetch Feedback gets the page, and "view feedback" opens it in the lab (nbgrader's
    lab extension goes to its folder, grader/lab/labextensions opens the page): each test named
    by its scenarios."""
    from playwright.sync_api import expect

    course = home(INSTRUCTOR) / "minigrad"
    said = as_user(INSTRUCTOR, "python", "-m", "grader", "feedback", EXERCISE, cwd=course).stdout
    assert "released" in said, said
    page = log_in(browser, hub, "learner1")  # learner2's last submission is the one planted above: no secret
    menu(page, "Nbgrader", "nbgrader:open-assignment-list", only=True)
    submitted = page.locator("#submitted_assignments_list .list_item", has_text=EXERCISE).first
    submitted.get_by_role("button", name="Fetch Feedback").click()
    view = page.locator("#submitted_assignments_list a", has_text="view feedback").first
    expect(view).to_be_visible(timeout=LONG)
    view.click()
    expect(page.locator(".jp-DirListing-item", has_text=f"{EXERCISE}.html")).to_be_visible(timeout=LONG)
    framed = page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
    expect(framed.locator("#toc")).to_contain_text("visible checks", timeout=LONG)
    expect(framed.locator("#toc")).to_contain_text("seed 003: m = k after backward", timeout=SHORT)
    shot(page, "17_learner1_opens_the_feedback")
    page.context.close()
