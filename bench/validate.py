"""How long a learner waits for Validate, and what it costs, measured as they meet it:
``python bench/validate.py``.

Pressing Validate in JupyterLab posts the notebook's path to ``/assignments/validate``, which the
course's extension answers (grader/lab/course_validate.py: a fork of the server's warm checker runs
the notebook, nbgrader's Validator compares). This starts JupyterLab as ``./run lab`` does (the
learner's lab), fills each exercise's release (or those named: ``python bench/validate.py ex1_ops``)
with the reference solution, and posts each one ``--runs`` times, the same request the button
sends; it reports the wait and the CPU time of each Validate (the checker's forks). For comparison
it also times ``nbgrader validate`` on the command line: a fresh kernel, and nbgrader's application
started on top. Targets: issue 8, Validate <= 5 s (median); issue 24, <= 2 s and <= 0.5
CPU-seconds on an idle machine.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.build import nbgrader_env  # noqa: E402
from grader.parts import exercise_specs  # noqa: E402

TOKEN = "bench-validate"


def solved_release(where, exercise):
    """The learner's release of ``exercise`` (staged minigrad included) with every answer cell solved."""
    shutil.copytree(ROOT / "exercises" / exercise, where / exercise, ignore=shutil.ignore_patterns("__pycache__"))
    source = nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    answers = {cell.metadata["nbgrader"]["grade_id"]: "\n".join(
        line for line in cell.source.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
        for cell in source.cells if cell.metadata.get("nbgrader", {}).get("solution")}
    path = where / exercise / f"{exercise}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    nbformat.write(notebook, path)
    return path


def start_lab(root):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = nbgrader_env(ROOT)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(ROOT / "grader" / "lab" / "learner"), env["JUPYTER_CONFIG_PATH"]])
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
            return server, url
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("JupyterLab did not start")
            time.sleep(0.5)


def checker(server):
    """The process id of the server's checker, or None before it started."""
    for line in subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(server.pid)], capture_output=True,
                               text=True).stdout.splitlines():
        pid, args = line.split(maxsplit=1)
        if "course_validate.py --serve" in args:
            return int(pid)
    return None


def checker_cpu(server):
    """CPU seconds the server's checker and its finished forks have used (0 before it started)."""
    pid = checker(server)
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def start_checker(server, url, relative_path):
    """Open the notebook until the server has started a checker (it starts none while the last one,
    just stopped, is not yet seen to have ended), and wait until the checker is idle."""
    while checker(server) is None:
        open_notebook(url, relative_path)
        time.sleep(1)
    settle(server)


def settle(server):
    """Wait until the checker is idle: after a Validate it may still import what torch imported on
    first use (course_validate.torch_lazy_imports), which the next Validates should not be charged."""
    used = checker_cpu(server)
    while True:
        time.sleep(0.5)
        used, before = checker_cpu(server), used
        if used == before:
            return


def open_notebook(url, relative_path):
    """The request JupyterLab sends when the learner opens a notebook: the server starts the checker."""
    request = urllib.request.Request(f"{url}/api/contents/{relative_path}?content=1",
                                     headers={"Authorization": f"token {TOKEN}"})
    urllib.request.urlopen(request, timeout=60).read()


def press_validate(url, relative_path):
    """The request the Validate button sends; returns (seconds, the verdict)."""
    request = urllib.request.Request(f"{url}/assignments/validate", method="POST",
                                     data=json.dumps({"path": relative_path}).encode(),
                                     headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        reply = json.loads(response.read())
    elapsed = time.perf_counter() - start
    value = reply["value"]
    passed = reply["success"] and isinstance(value, dict) and not any(value.get(k) for k in ("failed", "errored"))
    return elapsed, passed


def validate_on_command_line(path):
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(path)], env=nbgrader_env(ROOT),
                            capture_output=True, text=True)
    return time.perf_counter() - start, "Success!" in result.stdout


def describe(times):
    return f"median {statistics.median(times):.2f} s ({min(times):.2f}-{max(times):.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exercises", nargs="*", help="default: every exercise")
    parser.add_argument("--runs", type=int, default=5, help="presses of Validate per exercise")
    args = parser.parse_args()
    exercises = args.exercises or [spec.stem for spec in exercise_specs(ROOT)]
    print(f"Validate of a solved exercise, {args.runs} runs each, {os.cpu_count()} cores (target: median <= 5 s)")
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as scratch:
        root = Path(scratch)
        paths = {exercise: solved_release(root, exercise) for exercise in exercises}
        server, url = start_lab(root)
        try:
            for exercise in exercises:
                start_checker(server, url, f"{exercise}/{exercise}.ipynb")  # a checker of its own, idle
                before = checker_cpu(server)
                first, _ = press_validate(url, f"{exercise}/{exercise}.ipynb")
                settle(server)
                learned = checker_cpu(server) - before
                before = checker_cpu(server)
                runs = [press_validate(url, f"{exercise}/{exercise}.ipynb") for _ in range(args.runs)]
                cpu = (checker_cpu(server) - before) / args.runs
                verdict = "passes" if all(passed for _, passed in runs) else "DOES NOT PASS"
                print(f"{exercise:12s} Validate in JupyterLab: {describe([t for t, _ in runs])}, "
                      f"{cpu:.2f} CPU-s each; the first {first:.2f} s, {learned:.2f} CPU-s with what the "
                      f"checker then imports; {verdict}")
                os.kill(checker(server), signal.SIGTERM)  # the next exercise is another learner's
        finally:
            server.terminate()
            server.wait(timeout=30)
        for exercise in exercises:
            runs = [validate_on_command_line(paths[exercise]) for _ in range(args.runs)]
            verdict = "passes" if all(passed for _, passed in runs) else "DOES NOT PASS"
            print(f"{exercise:12s} nbgrader validate (CLI): {describe([t for t, _ in runs])}, {verdict}")


if __name__ == "__main__":
    main()
