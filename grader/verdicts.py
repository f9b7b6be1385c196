"""Verdicts decided outside the learner's code: the grading step of the course's autograde.

nbgrader gives a test cell its points when the cell runs without an error in the learner's kernel
— where the learner's code could have patched ``torch.equal`` or the test helpers. Instead,
``VerdictExecute`` (in nbgrader's autograde pipeline, in place of its Execute) runs ``harness.py``
twice: with torch and the reference solutions (the expected results, once per exercise), and, in
the sandbox, with minigrad and the learner's *definitions* (their top-level statements are not
run). A test cell passes when both runs saw the same results for every check and neither raised;
the cell gets "passed" or an error saying which scenario differs and how, and nbgrader's own
SaveAutoGrades turns that into points. A run that hangs in a cell is stopped there (CellTimeoutError
in that cell); a run that dies says in which cell (DeadKernelError).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer, List, Unicode

from minigrad.testing import nearly_equal

HARNESS = Path(__file__).with_name("harness.py")
GRADED_ON = "graded-on.txt"  # in the autograded folder: the device the verdicts were decided on
DIED = "kernel died in cell {}"


def plan(source_notebook, solutions):
    """The cells the harness runs, in order: locked code, solutions (from ``solutions`` by grade_id), tests."""
    cells = []
    for cell in source_notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta:
            continue
        kind = "test" if meta.get("grade") else "solution" if meta.get("solution") else "locked"
        source = solutions.get(meta["grade_id"], "") if kind == "solution" else cell.source
        cells.append({"kind": kind, "id": meta["grade_id"], "source": source})
    return cells


def solution_cells(notebook, without_markers=False):
    def clean(code):
        return "\n".join(line for line in code.splitlines()
                         if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")) if without_markers else code
    return {c.metadata["nbgrader"]["grade_id"]: clean(c.source) for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}


class Stopped(Exception):
    """The harness did not finish: ``how`` is "timeout" or "died", in the cell with id ``cell``."""

    def __init__(self, how, cell):
        super().__init__(how, cell)
        self.how, self.cell = how, cell


def run(folder, cells, library, command_wrapper=None, cell_timeout=None):
    """Run the harness in ``folder``: its results by test id ({"checks": [...], "error": ...}) and
    "_device". Raises Stopped when a cell runs past ``cell_timeout`` or the process dies."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=".verdict-") as scratch:
        plan_path, results, progress = (Path(scratch) / name for name in ("plan.json", "results.json", "progress"))
        plan_path.write_text(json.dumps(cells))
        harness = shutil.copy(HARNESS, scratch)  # grader/ itself is hidden from sandboxed code
        argv = [sys.executable, harness, str(plan_path), str(results), library, str(progress)]
        process = subprocess.Popen(command_wrapper(argv, folder) if command_wrapper else argv, cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        running, since = None, time.monotonic()
        while process.poll() is None:
            time.sleep(0.05)
            cell = progress.read_text() if progress.exists() else None
            if cell != running:
                running, since = cell, time.monotonic()
            elif cell_timeout and time.monotonic() - since > cell_timeout:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                raise Stopped("timeout", running)
        try:
            return json.loads(results.read_text())
        except (OSError, ValueError):
            raise Stopped("died", running) from None


def compare(expected, actual):
    """{test id: (passed, why)} — a test passes when the learner's run saw what torch's run saw."""
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
            wrong = [(name, seen, wanted) for (name, seen), (_, wanted) in zip(got["checks"], want["checks"])
                     if not nearly_equal(seen, wanted)]
            verdicts[test_id] = (True, "") if not wrong else (False, "scenario '{}' differs from PyTorch\n"
                                                              "  torch did:    {}\n  minigrad did: {}".format(*(
                                                                  wrong[0][0], wrong[0][2], wrong[0][1])))
    return verdicts


def expected_results(source_folder, notebook_name, cache):
    """What torch gives with the reference solutions (no learner code involved), cached in ``cache``."""
    source_path = source_folder / notebook_name
    stamp = f"{source_path.stat().st_mtime_ns}:{source_path.stat().st_size}"
    if cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("stamp") == stamp:
            return cached["results"]
    source = nbformat.read(source_path, as_version=4)
    results = run(source_folder, plan(source, solution_cells(source, without_markers=True)), "torch")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"stamp": stamp, "results": results}))
    return results


class VerdictExecute(NbGraderPreprocessor):
    """nbgrader's autograde step that executes the notebook, replaced by the verdict harness."""

    course_root = Unicode(help="the course's root folder").tag(config=True)
    source_directory = Unicode("solutions").tag(config=True)
    cache_directory = Unicode(".course/expected", help="where torch's expected results are kept").tag(config=True)
    timeout = Integer(30, help="seconds a cell may run").tag(config=True)
    sandbox = Bool(True, help="run the learner's code in grader.sandbox").tag(config=True)
    hidden = List(Unicode(), help="paths the sandboxed code may not read").tag(config=True)

    def preprocess(self, nb, resources):
        folder = Path(resources["metadata"]["path"])
        exercise, name = resources["nbgrader"]["assignment"], resources["nbgrader"]["notebook"]
        root = Path(self.course_root)
        expected = expected_results(root / self.source_directory / exercise, f"{name}.ipynb",
                                    root / self.cache_directory / f"{exercise}-{name}.json")
        source = nbformat.read(root / self.source_directory / exercise / f"{name}.ipynb", as_version=4)
        index = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(nb.cells)}
        try:
            actual = run(folder, plan(source, solution_cells(nb)), "minigrad", self._wrapper(), self.timeout)
        except Stopped as stop:
            number = index.get(stop.cell, -1) + 1
            if stop.how == "died":
                self.log.error(DIED.format(number))
                raise DeadKernelError(DIED.format(number)) from None
            for cell in nb.cells:  # no test ran to the end: none may count as passed
                if cell.metadata.get("nbgrader", {}).get("grade"):
                    cell.outputs = [new_output("error", ename="NotRun", evalue=f"not run: timed out in cell {number}",
                                               traceback=[f"not run: timed out in cell {number}"])]
            nb.cells[number - 1].outputs = [new_output("error", ename="CellTimeoutError", evalue="",
                                                       traceback=[f"CellTimeoutError: ran past {self.timeout} s"])]
            return nb, resources
        (folder / GRADED_ON).write_text(actual.pop("_device", "an unknown device"))
        for test_id, (passed, why) in compare(expected, actual).items():
            cell = nb.cells[index[test_id]]
            cell.outputs = [new_output("stream", name="stdout", text="passed\n") if passed else
                            new_output("error", ename="AssertionError", evalue=why, traceback=why.splitlines())]
        return nb, resources

    def _wrapper(self):
        if not self.sandbox:
            return None
        from .sandbox import Limits, SandboxUnavailable, check_available, wrap

        reason = check_available()
        if reason:
            raise SandboxUnavailable(f"cannot sandbox learner code: {reason} (or set VerdictExecute.sandbox = False)")
        return lambda argv, folder: wrap(argv, str(folder), Limits(), self.hidden)
