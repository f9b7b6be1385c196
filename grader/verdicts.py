"""Verdicts decided outside the learner's code: the grading step of the course's autograde.

nbgrader gives a test cell its points when the cell runs without an error in the learner's kernel
— where the learner's code could have patched ``torch.equal`` or the test helpers. Instead,
``VerdictExecute`` (in nbgrader's autograde pipeline, in place of its Execute) runs the exercise's
checks in two processes that never meet: with torch and the reference solutions (``reference.py``:
the expected results, once per exercise), and, in the sandbox, with minigrad and the learner's
*definitions* (``inside/harness.py``, in a process a worker's grading server forks for it: ``forkserver.py``),
after ``inside/graded_code.py`` checked them. The grader compiles every cell
itself and sends the code in; the learner's process sends back, check by check, what it saw, over a
pipe read while it runs, within a time and size budget the grader enforces. A test cell passes when
both runs saw the same results for every check and neither raised; the cell gets "passed" or an
error saying which scenario differs and how, and nbgrader's own SaveAutoGrades turns that into points.

Each submission's outcome is one row (``records.py``): graded, with the device its checks ran on,
or why it was not graded (a rejected construct, a cell that ran too long or died, a run past its budget).
"""
import ast
import dataclasses
import fcntl
import hashlib
import importlib.util
import json
import marshal
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer, Unicode

from coursekit.testing import difference, labels_of, nearly_equal, parts_of, without_messages

from . import forkserver, records
from .devices import grading_device
from .inside import guards
from .inside.graded_code import definitions, violation
from .inside.policy import POLICIES
from .sandbox import Limits

REFERENCE = Path(__file__).with_name("reference.py")
RESULTS_BUDGET = 16 << 20  # bytes of results one run may send
MESSAGE_KINDS = {"cell": 2, "check": 5, "error": 2, "denied": 5, "done": 1}
RESULTS_FORMAT = 3  # of the expected results cached in .course/expected: a new format recomputes them


def plan(source_notebook, solutions):
    """The cells the harness runs, in order: locked code, solutions (from ``solutions`` by grade_id),
    the scenarios' definitions (support: the learner's code never sees them) and tests."""
    cells = []
    for cell in source_notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta:
            continue
        kind = ("test" if meta.get("grade") else "solution" if meta.get("solution")
                else "support" if meta["grade_id"].endswith("-scenarios") else "locked")
        source = solutions.get(meta["grade_id"], "") if kind == "solution" else cell.source
        cells.append({"kind": kind, "id": meta["grade_id"], "source": source})
    return cells


def apart(cells):
    """The plan as the runs that grade it: the visible tests in one, the hidden tests (``NAME-hidden``)
    in another, so that the run whose errors reach the learner's feedback never holds hidden-test
    code. The visible test cells also run in the hidden run, for what they define (a hidden check may
    use a visible one's scenario), as "support" cells whose checks report nothing."""
    hidden = [cell for cell in cells if cell["kind"] == "test" and cell["id"].endswith("-hidden")]
    visible = [cell for cell in cells if cell not in hidden]
    if not hidden:
        return [visible]
    return [visible, [dict(cell, kind="support") if cell["kind"] == "test" and cell not in hidden else cell
                      for cell in cells]]


def solution_cells(notebook, without_markers=False):
    def clean(code):
        return "\n".join(line for line in code.splitlines()
                         if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")) if without_markers else code
    return {c.metadata["nbgrader"]["grade_id"]: clean(c.source) for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}


class NotGraded(Exception):
    """The learner's code is rejected before it runs: ``reason`` in the learner's words; ``detail``,
    for the instructor's log only: what a run that was stopped tried (``Flagged``)."""

    def __init__(self, reason, detail=None):
        super().__init__(reason)
        self.detail = detail


DENIALS = {"read": "read what graded code may not read", "write": "wrote where graded code may not write",
           "import": "imported what graded code may not import",
           "base": "derived a class from one graded code may not derive from",
           "audit": "tried what the grading process allows no code (compiling, importing, files, frames)"}
"""What a denial while graded code ran tells the learner, by its kind: fixed texts. What it tried is
named by names learner code chose (its classes', its attributes'), in a run that may have reached
hidden checks: that goes to the instructor's log only, never into the reason the learner sees."""


class Flagged(Exception):
    """Graded code tried, while it ran, what its run-time guards deny (``guards.py``): ``run`` makes
    it NotGraded, with the cell's number in the learner's notebook and the kind of denial."""

    def __init__(self, kind, construct, cell, line):
        super().__init__(kind, construct, cell, line)
        self.kind, self.construct, self.cell, self.line = kind, construct, cell, line

    def reason(self, numbers):
        return (f"graded code {DENIALS[self.kind]} at cell {numbers.get(self.cell, 0)} line {self.line} "
                "(flagged: tried while it ran)")


class Stopped(Exception):
    """The grading process did not finish, or used more than its share: ``how`` ("timeout", "budget",
    "died", "results", "garbled", "memory", "disk") in the cell with id ``cell``."""

    def __init__(self, how, cell):
        super().__init__(how, cell)
        self.how, self.cell = how, cell


def compiled(cells, numbers=None, exercise="", guarded=True):
    """The plan as the job the grading process runs: learner cells reduced to their definitions,
    checked (NotGraded names a construct graded code may not contain, at its cell ``numbers[id]``
    of the learner's notebook) and, when ``guarded`` (not for torch's run of the reference
    solutions, which hands them torch's objects), compiled under run-time guards (``inside/guards.py``)
    with the guard policy of ``exercise``. A cell that does not parse defines nothing, as in a kernel.

    Each cell is (kind, code, text): the text of a solution cell's definitions (its other lines
    blank, so that line numbers are the learner's), which the code is compiled from, goes with it
    (the grading process finds a kernel's text with ``inspect``, for the kernel process to compile it:
    ``kernel_process.py``); the text of locked and test cells never does."""
    code = []
    for cell in cells:
        where = f"cell {(numbers or {}).get(cell['id'], 0)}"
        filename = f"<{cell['id']}>"
        if cell["kind"] != "solution":
            code.append((cell["kind"], compile(cell["source"], filename, "exec", dont_inherit=True), None))
            continue
        text = cell["source"]
        try:
            tree = definitions(text)
        except SyntaxError:
            text, tree = "", definitions("")
        reason = violation(tree, where)
        if reason:
            raise NotGraded(reason)
        text = _kept_lines(text, tree)
        if not guarded:
            code.append(("solution", compile(tree, filename, "exec", dont_inherit=True), text))
            continue
        try:
            code.append(("solution", guards.compile_graded(tree, filename), text))
        except SyntaxError as refused:
            line = text.splitlines()[refused.lineno - 1].strip()[:80]
            raise NotGraded(f"`{line}` at {where} line {refused.lineno} is not allowed in graded code") from None
    return marshal.dumps({"policy": POLICIES.get(exercise, {}) if guarded else None, "cells": code})


def _kept_lines(source, tree):
    """``source`` with only the lines of the definitions ``tree`` kept (the others blank), so that
    line numbers stay the learner's."""
    lines = source.splitlines(True)
    kept = set()
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        kept.update(range(first, node.end_lineno + 1))
    return "".join(line if number in kept else "\n" for number, line in enumerate(lines, 1))


def unmet_requirements(source_notebook):
    """Why the exercise cannot be graded here, or None: the modules its notebook requires (``#
    %% requires`` in its spec: an optional extra's, as Triton for exercise 9) that are not installed."""
    missing = [name for name in source_notebook.metadata.get("minigrad", {}).get("requires", [])
               if importlib.util.find_spec(name) is None]
    if missing:
        return f"the exercise needs {' and '.join(missing)}, which the grading machine does not have installed"
    return None


def run(folder, cells, library, sandboxed=False, cell_timeout=None, budget=None, numbers=None, environment=None):
    """Run ``cells`` with ``library`` ("torch": the reference, in ``folder``, in a process of its
    own, with ``environment`` added to this one's; "minigrad": the learner's, by this process's grading server (``forkserver``), with only
    ``folder``'s staged minigrad and the harness to import, and an empty working folder, in the
    sandbox when ``sandboxed``).
    Returns {test id: {"checks": [[name, seen, message], ...], "error": text or None}}. Raises NotGraded when
    the learner's code is rejected, Stopped when a cell runs past ``cell_timeout``, the run past
    ``budget`` seconds or RESULTS_BUDGET bytes, the process dies, or it sends what is not a result."""
    payload = compiled(cells, numbers, Path(folder).name, guarded=library != "torch")
    if library == "torch":
        return _reference(folder, payload, cells, environment or {})
    for fresh in (False, True):
        server = forkserver.server(folder, sandboxed)
        try:
            cells_write, results_read = server.start()
            break
        except forkserver.NotReady:
            forkserver.discard()
            if fresh:
                raise Stopped("died", cells[0]["id"]) from None
    kills = server.oom_kills()
    try:
        results = _collect(cells_write, payload, results_read, cells, cell_timeout, budget)
        finished = server.finished()
    except Flagged as flagged:
        forkserver.discard()
        raise NotGraded(flagged.reason(numbers or {}), f"`{flagged.construct}`") from None
    except Stopped as stop:
        full = stop.how == "died" and server.finished() == "full"
        forkserver.discard()
        if full or server.oom_kills() > kills:
            raise Stopped("disk" if full else "memory", stop.cell) from None
        raise
    except BaseException:
        forkserver.discard()
        raise
    finally:
        os.close(results_read)
    if finished == "full" or server.oom_kills() > kills:  # a process of the job's was killed, or a write failed
        forkserver.discard()
        raise Stopped("disk" if finished == "full" else "memory", cells[-1]["id"])
    if finished is None:  # the server ended after the job (it changed what the server cannot undo)
        forkserver.discard()
    return results


def _reference(folder, payload, cells, environment):
    """torch's run with the reference solutions: a plain process, in the exercise's source folder."""
    cells_read, cells_write = os.pipe()
    results_read, results_write = os.pipe()
    try:
        process = subprocess.Popen([sys.executable, "-B", str(REFERENCE), str(results_write)], cwd=folder,
                                   stdin=cells_read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   pass_fds=(results_write,), start_new_session=True, env={**os.environ, **environment})
    finally:
        os.close(cells_read)
        os.close(results_write)
    try:
        return _collect(cells_write, payload, results_read, cells, None, None)
    finally:
        os.close(results_read)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _collect(cells_write, payload, channel, cells, cell_timeout, budget):
    """Send the cells, then read the results while the process runs, trusting nothing it sends."""
    start = since = time.monotonic()
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(cells_write, view):]
    except BrokenPipeError:
        pass
    finally:
        os.close(cells_write)
    results = {cell["id"]: {"checks": [], "error": None} for cell in cells if cell["kind"] == "test"}
    selector = selectors.DefaultSelector()
    selector.register(channel, selectors.EVENT_READ)
    buffer, received, current = b"", 0, -1

    def stop(how):
        raise Stopped(how, cells[max(current, 0)]["id"])

    while True:
        now = time.monotonic()
        waits = [w for w in (cell_timeout and since + cell_timeout - now, budget and start + budget - now) if w]
        if waits and min(waits) <= 0:
            stop("budget" if budget and now - start >= budget else "timeout")
        if not selector.select(min(waits) if waits else None):
            continue
        data = os.read(channel, 1 << 16)
        if not data:
            stop("died")
        received += len(data)
        if received > RESULTS_BUDGET:
            stop("results")
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            message = _message(line)
            if message is None:
                stop("garbled")
            kind = message[0]
            if kind == "done":
                if current != len(cells) - 1:
                    stop("garbled")
                return results
            if kind == "cell":
                if message[1] != current + 1 or message[1] >= len(cells):
                    stop("garbled")
                current, since = message[1], time.monotonic()
                continue
            if kind == "denied":
                raise Flagged(message[1], message[2][:200], message[3], message[4])
            test = results.get(cells[current]["id"]) if current >= 0 else None
            if test is None:
                stop("garbled")
            if kind == "check":
                told = [[type_name[:100], [line[:200] for line in lines[:4]]] for type_name, lines in message[4][:5]]
                test["checks"].append([message[1][:500], message[2], message[3], told])
            else:
                test["error"] = message[1][:2000]


def _message(line):
    """A message from the grading process, or None when it is not one (see inside/harness.py)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if type(message) is not list or not message or type(message[0]) is not str or \
            MESSAGE_KINDS.get(message[0]) != len(message):
        return None
    if message[0] == "cell" and type(message[1]) is not int:
        return None
    if message[0] in ("check", "error") and type(message[1]) is not str:
        return None
    if message[0] == "check" and not (type(message[3]) is bool and type(message[4]) is list and all(
            type(told) is list and len(told) == 2 and type(told[0]) is str and type(told[1]) is list
            and all(type(line) is str for line in told[1]) for told in message[4])):
        return None
    if message[0] == "denied" and not (type(message[1]) is str and message[1] in DENIALS and type(message[2]) is str
                                       and type(message[3]) is str and type(message[4]) is int):
        return None
    return message


def compare(expected, actual, cells=()):
    """{test id: (passed, why)} — a test passes when the learner's run saw what torch's run saw (error
    messages word for word where torch's run says the check grades them). ``cells``, the plan, lets
    ``why`` name the parts the test exercises and what the scenario recorded where results differ."""
    verdicts = {}
    for test_id, want in expected.items():
        if test_id.startswith("_"):
            continue
        got = actual.get(test_id)
        if got is None:
            verdicts[test_id] = (False, "the checks did not run")
        elif got["error"]:
            verdicts[test_id] = (False, got["error"])
        elif len(got["checks"]) != len(want["checks"]):
            verdicts[test_id] = (False, f"{len(got['checks'])} of {len(want['checks'])} checks ran")
        else:
            wrong = failed_checks(want, got)
            verdicts[test_id] = (True, "") if not wrong else (False, difference(*wrong[0][1:], *pointers(cells, test_id,
                                                                                                   wrong[0][1])))
    return verdicts


def pointers(cells, test_id, title):
    """(the parts test ``test_id`` exercises, the labels of what check ``title``'s scenario returns:
    ``coursekit.testing.labels_of``) from the plan's text: the check is found by its title (an
    f-string's by its literal parts), its scenario by name among the cells before it."""
    sources = [cell["source"] for cell in cells]
    ids = [cell["id"] for cell in cells]
    if test_id not in ids:
        return (), None
    test = sources[ids.index(test_id)]
    scenario = next((call.args[1].id for call in _check_calls(test) if len(call.args) > 1
                     and isinstance(call.args[1], ast.Name) and _titled(call.args[0], title)), None)
    labels = None
    for source in sources[:ids.index(test_id) + 1]:
        labels = labels_of(source, scenario) or labels
    return parts_of(test), labels


def _check_calls(source):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"
            and node.args]


def _titled(node, title):
    """Whether a check's title, as written (a literal or an f-string), can read ``title``."""
    if isinstance(node, ast.Constant):
        return node.value == title
    if isinstance(node, ast.JoinedStr):
        pattern = "".join(re.escape(part.value) if isinstance(part, ast.Constant) else ".*" for part in node.values)
        return re.fullmatch(pattern, title, re.S) is not None
    return False


def checks_told(test_id, expected, actual):
    """What the feedback (``feedback.HideHiddenTests``) names of a test cell's checks: of a hidden one,
    the titles of those that failed, and nothing else of them; of a visible one, every title as it
    ran (an f-string's filled in), from torch's run."""
    if test_id.endswith("-hidden"):
        return {"failed checks": [name for _, name, *_ in failed_checks(expected[test_id], actual.get(test_id))]}
    return {"checks": [name for name, *_ in expected[test_id]["checks"]]}


def failed_checks(want, got):
    """The checks of one test cell whose results differ, in order, as (their place in the cell, title,
    torch's, minigrad's, what the learner's code raised); a check that did not run counts as failed."""
    wrong = []
    for index, (name, wanted, message, _) in enumerate(want["checks"]):
        if index >= len((got or {}).get("checks", [])):
            wrong.append((index, name, wanted, None, []))
            continue
        _, seen, _, told = got["checks"][index]
        if not message:
            wanted, seen = without_messages(wanted), without_messages(seen)
        if not nearly_equal(seen, wanted):
            wrong.append((index, name, wanted, seen, told))
    return wrong


def expected_results(source_folder, notebook_name, cache, device):
    """What torch gives with the reference solutions (no learner code involved) on ``device``
    (``devices.Device``), cached in ``cache``. Grading workers ask at once: the first computes
    them, holding a lock the others wait on."""
    source_path = source_folder / notebook_name
    stamp = f"{RESULTS_FORMAT}:{device.name}:{source_path.stat().st_mtime_ns}:{source_path.stat().st_size}"
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cache.exists():
            cached = json.loads(cache.read_text())
            if cached.get("stamp") == stamp:
                return cached["results"]
        source = nbformat.read(source_path, as_version=4)
        results = run(source_folder, plan(source, solution_cells(source, without_markers=True)), "torch",
                      environment=device.environment())
        cache.write_text(json.dumps({"stamp": stamp, "results": results}))
    return results


EXPECTATIONS = "expected.json"
"""Beside an exercise's release: the reference's results of its from-reference visible checks, for Validate."""


def stage_expectations(root):
    """Beside the release of each exercise with from-reference tests (``notebooks.py``: checks that
    run a program the learner writes, a training loop, with either library), the reference's results
    of their visible checks, ``exercises/<exercise>/expected.json``: Validate reads torch's side of
    those checks there (``coursekit.testing.check``), as grading does from torch's run of the
    reference, instead of running the learner's own program with torch (whose bugs would then
    compare equal). Made on the machine whose lab validates (``./run lab``, ``hub/setup.sh``: its
    torch and device), again when the source notebook, the staged package or torch changed.
    Returns the exercises whose results it made."""
    import torch

    device = grading_device(False)
    staged = (Path(root) / ".course" / "staged").read_text()
    made = []
    for notebook_path in sorted(Path(root).glob("solutions/*/*.ipynb")):
        exercise = notebook_path.parent.name
        source = nbformat.read(notebook_path, as_version=4)
        marked = [cell.metadata["nbgrader"]["grade_id"] for cell in source.cells
                  if cell.metadata.get("minigrad", {}).get("torch's side") == "reference"]
        target = Path(root) / "exercises" / exercise / EXPECTATIONS
        stamp = f"{notebook_path.read_text()}{staged}{torch.__version__}{device.name}"
        stamp = hashlib.sha256(stamp.encode()).hexdigest()
        if not marked or unmet_requirements(source) or \
                target.exists() and json.loads(target.read_text()).get("stamp") == stamp:
            continue
        print(f"minigrad: running the reference's {exercise} for Validate (what torch gives its checks of "
              "a program you write; again only when the exercise or torch changes)", file=sys.stderr)
        visible = apart(plan(source, solution_cells(source, without_markers=True)))[0]
        cells = [dict(cell, kind="support") if cell["kind"] == "test" and cell["id"] not in marked else cell
                 for cell in visible]
        results = run(notebook_path.parent, cells, "torch", environment=device.environment())
        checks = {}
        for test in marked:
            if results[test]["error"]:
                raise RuntimeError(f"{exercise}: the reference fails {test}: {results[test]['error']}")
            for name, seen, _, _ in results[test]["checks"]:
                if name in checks:
                    raise ValueError(f"{exercise}: two from-reference checks are titled {name!r}")
                checks[name] = seen
        target.write_text(json.dumps({"stamp": stamp, "torch": torch.__version__, "device": device.name,
                                      "checks": checks}))
        made.append(exercise)
    return made


STOPPED = {
    "timeout": "timed out in cell {cell} after {timeout} s",
    "budget": "ran past the whole-submission budget of {budget} s (in cell {cell})",
    "died": "kernel died in cell {cell}",
    "results": "sent more than {size} MiB of results (in cell {cell})",
    "garbled": "its grading process sent something that is not a result (in cell {cell})",
    "memory": "used more than {memory} GiB of memory (in cell {cell})",
    "disk": "used more than {disk} MiB of disk (in cell {cell})",
}


class VerdictExecute(NbGraderPreprocessor):
    """nbgrader's autograde step that executes the notebook, replaced by the verdict harness. A
    submission that cannot be graded gets its outcome and stops nbgrader's pipeline (NotGraded); one
    that can leaves its outcome to ``RecordOutcome``, after nbgrader has saved its scores."""

    course_root = Unicode(help="the course's root folder").tag(config=True)
    source_directory = Unicode("solutions").tag(config=True)
    cache_directory = Unicode(".course/expected", help="where torch's expected results are kept").tag(config=True)
    timeout = Integer(30, help="seconds a cell may run").tag(config=True)
    budget = Integer(120, help="seconds all of a submission's cells may run together").tag(config=True)
    sandbox = Bool(True, help="run the learner's code in grader.sandbox").tag(config=True)

    def preprocess(self, nb, resources):
        exercise, name = resources["nbgrader"]["assignment"], resources["nbgrader"]["notebook"]
        root = Path(self.course_root)
        source_folder = root / self.source_directory / exercise
        source = nbformat.read(source_folder / f"{name}.ipynb", as_version=4)
        index = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(nb.cells)}
        numbers = {grade_id: i + 1 for grade_id, i in index.items()}
        sandboxed = self._sandboxed()
        device = grading_device(sandboxed)
        outcome = records.Outcome(None, device.description, "bubblewrap" if sandboxed else "none (--no-sandbox)")
        resources["grader_outcome"] = outcome

        def not_graded(reason):
            records.save(resources["nbgrader"]["db_url"], exercise, resources["nbgrader"]["student"],
                         dataclasses.replace(outcome, reason=reason))
            raise NotGraded(reason) from None

        unmet = unmet_requirements(source)  # before torch's run, whose results would be cached
        if unmet:
            not_graded(unmet)
        expected = expected_results(source_folder, f"{name}.ipynb", self.cache_file(exercise, name),
                                    device)
        try:
            actual, start, planned = {}, time.monotonic(), plan(source, solution_cells(nb))
            for cells in apart(planned):
                left = max(self.budget - (time.monotonic() - start), 0.001)
                actual.update(run(source_folder, cells, "minigrad", self._sandboxed(), self.timeout, left, numbers))
        except (NotGraded, Stopped) as error:
            if getattr(error, "detail", None):
                self.log.warning("%s, %s: flagged: %s", exercise, resources["nbgrader"]["student"], error.detail)
            not_graded(error.args[0] if isinstance(error, NotGraded) else STOPPED[error.how].format(
                cell=numbers.get(error.cell, 0), timeout=self.timeout, budget=self.budget, size=RESULTS_BUDGET >> 20,
                memory=Limits().memory_bytes >> 30, disk=Limits().file_bytes >> 20))
        for test_id, (passed, why) in compare(expected, actual, planned).items():
            cell = nb.cells[index[test_id]]
            cell.outputs = [new_output("stream", name="stdout", text="passed\n") if passed else
                            new_output("error", ename="AssertionError", evalue=why, traceback=why.splitlines())]
            cell.metadata["minigrad"] = checks_told(test_id, expected, actual)
        from .report import kept_checks  # which imports this module

        resources["grader_checks"] = kept_checks(expected, actual, planned)  # RecordOutcome saves them
        return nb, resources

    def cache_file(self, exercise, name):
        """Where torch's expected results for notebook ``name`` of ``exercise`` are kept."""
        return Path(self.course_root) / self.cache_directory / f"{exercise}-{name}.json"

    def _sandboxed(self):
        if self.sandbox:
            from .sandbox import SandboxUnavailable, check_available

            reason = check_available()
            if reason:
                raise SandboxUnavailable(f"cannot sandbox learner code: {reason} (or set VerdictExecute.sandbox = False)")
        return self.sandbox


def prepare_expected(config, exercise, notebooks):
    """Fill the cache of torch's expected results for ``exercise``'s notebooks as ``VerdictExecute``
    (configured by ``config``) would on this machine, before grading shards start. Returns the device's
    description."""
    step = VerdictExecute(config=config)
    root = Path(step.course_root)
    device = grading_device(step._sandboxed())
    for name in notebooks:
        expected_results(root / step.source_directory / exercise, name,
                         step.cache_file(exercise, Path(name).stem), device)
    return device.description


class RecordOutcome(NbGraderPreprocessor):
    """nbgrader's autograde step after SaveAutoGrades: the submission is graded, which ``status``,
    ``export``, the feedback and ``autograde``'s reruns read (``records``), with each check's result,
    which ``report`` reads, whichever route graded it (our command line, nbgrader's, Formgrader's
    Autograde button)."""

    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        records.save(meta["db_url"], meta["assignment"], meta["student"], resources["grader_outcome"],
                     resources["grader_checks"])
        return nb, resources
