"""The hub machine's zygote (grader/lab/course_zygote.py): kernels and Validates forked from one
import of torch, each as the user who asked, in that user's limits, and nothing for a sandbox.

Runs this clone's zygote (as hub/start.sh does: root, an empty environment) with the hub's venv, and
asks it as the hub's learner1, a Unix user; needs root and hub/setup.sh (.ci/run does both), skipped
otherwise.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from grader.build import ROOT
from support import reference_solutions, submission_like

PREFIX = Path(os.environ.get("HUB_PREFIX", "/opt/minigrad-hub"))
PYTHON = PREFIX / "venv" / "bin" / "python"
USER = "learner1"
EXERCISE = "ex3_freeing"


def _missing():
    if os.geteuid() != 0:
        return "needs root (the zygote becomes the user who asks)"
    if not PYTHON.exists() or subprocess.run(["id", USER], capture_output=True).returncode:
        return f"hub/setup.sh has not been run (no {PYTHON} or no user {USER})"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

ASK_FOR_A_KERNEL = """
import json, os, signal, sys, time
from jupyter_client import KernelManager

lab, pythonpath = sys.argv[1], sys.argv[2]
manager = KernelManager(kernel_name="python3")
manager.kernel_spec.argv = [sys.executable, "-I", "-S", f"{lab}/course_zygote.py", "--kernel",
                            sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
manager.kernel_spec.env = {"PYTHONPATH": pythonpath}
began = time.monotonic()
manager.start_kernel(cwd=os.getcwd())
client = manager.client()
client.start_channels()
client.wait_for_ready(timeout=120)


def run(code, interrupt_after=None):
    sent, printed, error = client.execute(code), [], None
    if interrupt_after:
        time.sleep(interrupt_after)
        manager.interrupt_kernel()
    while True:
        message = client.get_iopub_msg(timeout=120)
        if message["parent_header"].get("msg_id") != sent:
            continue
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        if message["msg_type"] == "error":
            error = message["content"]["ename"]
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(printed), error


said, _ = run("import os, resource, sys\\n"
              "ours = sorted(name for name in sys.modules if name.split('.')[0] in ('minigrad', 'coursekit'))\\n"
              "import torch\\n"  # as an exercise's first cell imports it
              "print(repr(dict(ours=ours, uid=os.getuid(), gid=os.getgid(), data=resource.getrlimit(resource.RLIMIT_DATA), "
              "nice=os.nice(0), cwd=os.getcwd(), path=sys.path, pid=os.getpid(), "
              "comm=open('/proc/self/comm').read().strip(), private=sum(int(line.split()[1]) "
              "for line in open('/proc/self/smaps_rollup') if line.startswith('Private_')))))")
report = eval(said)
interrupted = time.monotonic()
_, error = run("import time; time.sleep(60)", interrupt_after=1)
report["interrupt_seconds"], report["interrupted"] = time.monotonic() - interrupted, error
if sys.argv[3] == "kill":
    os.kill(manager.provisioner.process.pid, signal.SIGKILL)
elif sys.argv[3] == "shutdown":
    manager.shutdown_kernel()
print(json.dumps(report), flush=True)
os._exit(0)  # ("orphan": a server that ends without shutting its kernel down)
"""


@pytest.fixture(scope="module")
def lab():
    """This clone's zygote and Validate, in a folder the user can read, and the zygote serving there."""
    folder = Path(tempfile.mkdtemp(prefix="minigrad-zygote-"))
    folder.chmod(0o755)
    for name in ("course_zygote.py", "course_validate.py"):
        shutil.copy(ROOT / "grader" / "lab" / name, folder)
    (folder / "ask.py").write_text(ASK_FOR_A_KERNEL)
    socket_path, log = folder / "zygote.sock", open(folder / "zygote.log", "wb")
    zygote = subprocess.Popen(["env", "-i", f"PATH={PYTHON.parent}:/usr/bin:/bin", "HOME=/nonexistent",
                               "OMP_NUM_THREADS=1", str(PYTHON), str(folder / "course_zygote.py"), "--serve",
                               str(socket_path)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not socket_path.exists():
        assert zygote.poll() is None and time.monotonic() < deadline, (folder / "zygote.log").read_text()
        time.sleep(0.2)
    yield {"folder": folder, "socket": socket_path, "log": folder / "zygote.log", "zygote": zygote}
    zygote.terminate()
    zygote.wait(timeout=30)
    assert not socket_path.exists(), "the zygote left its socket behind"
    shutil.rmtree(folder)


def as_user(lab, *command, cwd, zygote=True, limits=("--data=3000000000",), nice=7):
    env = {"HOME": os.path.expanduser(f"~{USER}"), "PATH": f"{PYTHON.parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "MINIGRAD_ZYGOTE": str(lab["socket"]) if zygote else ""}
    return subprocess.run(["runuser", "-u", USER, "--", "prlimit", *limits, "--", "nice", "-n", str(nice),
                           "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def user_folder(lab, name):
    folder = lab["folder"] / name
    folder.mkdir()
    shutil.chown(folder, USER, USER)
    return folder


def kernel_report(lab, folder, ending="shutdown", zygote=True):
    answer = as_user(lab, str(PYTHON), str(lab["folder"] / "ask.py"), str(lab["folder"]), "/opt/lessons-lib", ending,
                     cwd=folder, zygote=zygote)
    assert answer.returncode == 0, answer.stderr[-3000:]
    return json.loads(answer.stdout.splitlines()[-1])


def gone(pid, seconds=20):
    """Whether process ``pid`` ends (or is a zombie) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def test_a_kernel_is_a_fork_of_the_zygote_as_the_user_who_asked(lab):
    folder = user_folder(lab, "kernel")
    report = kernel_report(lab, folder)
    uid = int(subprocess.run(["id", "-u", USER], capture_output=True, text=True).stdout)
    assert report["uid"] == uid and report["gid"] != 0
    assert report["comm"] == "minigrad-kernel"  # a fork of the zygote, not a process of its own
    assert report["ours"] == [], "the zygote imported a minigrad: the notebook's folder has its own"
    assert report["data"] == [3000000000, 3000000000] and report["nice"] == 7  # the asker's limits
    assert report["cwd"] == str(folder) and "/opt/lessons-lib" in report["path"]  # its folder, its PYTHONPATH
    assert report["private"] < 60 * 1024, f"{report['private']} KiB of its own: the imports are not shared"
    assert report["interrupted"] == "KeyboardInterrupt" and report["interrupt_seconds"] < 10
    assert gone(report["pid"]), "the kernel outlived its shutdown"


def test_a_kernel_ends_when_jupyter_kills_its_client(lab):
    report = kernel_report(lab, user_folder(lab, "killed"), ending="kill")
    assert report["comm"] == "minigrad-kernel"
    assert gone(report["pid"]), "the kernel outlived its client"


def test_a_kernel_ends_when_its_server_ends_without_shutting_it_down(lab):
    report = kernel_report(lab, user_folder(lab, "orphan"), ending="orphan")
    assert report["comm"] == "minigrad-kernel"
    assert gone(report["pid"]), "the kernel outlived its server"


def test_without_a_zygote_the_client_starts_the_kernel_itself(lab):
    report = kernel_report(lab, user_folder(lab, "alone"), zygote=False)
    assert report["comm"] == "python" and report["private"] > 100 * 1024, report  # the ordinary kernel, imports its own
    assert report["interrupted"] == "KeyboardInterrupt"


def test_a_process_in_another_mount_namespace_is_refused(lab):
    """A grading sandbox (bubblewrap: namespaces of its own) gets nothing from the zygote, even where
    its socket were in view."""
    asked = subprocess.run(["unshare", "--mount", str(PYTHON), "-c", (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.connect({str(lab['socket'])!r})\n"
        "try:\n"
        "    s.sendall(b'{}\\n')\n"
        "    sys.exit(len(s.recv(100)))\n"
        "except ConnectionResetError:\n"
        "    sys.exit(0)")], capture_output=True, text=True, timeout=60)
    assert asked.returncode == 0, asked.stderr  # the connection closed with no answer
    assert "refused: PermissionError" in lab["log"].read_text() and "another mount namespace" in lab["log"].read_text()


def test_validate_runs_in_a_fork_of_the_zygote_as_the_learner(lab, tmp_path):
    reference = reference_solutions(_course(tmp_path), EXERCISE)
    answers = {}
    for name, change in (("untouched", None), ("done", lambda gid, ref, released: ref)):
        folder = user_folder(lab, name)
        shutil.copytree(ROOT / "exercises" / EXERCISE, folder, dirs_exist_ok=True)
        notebook = folder / f"{EXERCISE}.ipynb"
        if change:
            submission_like(notebook, change, reference)
        _add_cell(notebook, "import os\nopen('whoami', 'w').write(str(os.getuid()))")
        subprocess.run(["chown", "-R", f"{USER}:{USER}", str(folder)], check=True)
        answer = as_user(lab, str(PYTHON), "-c", (
            "import asyncio, json, sys\n"
            f"sys.path.insert(0, {str(lab['folder'])!r})\n"
            "import course_validate\n"
            "checker = course_validate.Checker()\n"
            f"answer = asyncio.run(course_validate.validate({str(notebook)!r}, checker))\n"
            "print(json.dumps([answer, checker.process is None]))"), cwd=folder)
        assert answer.returncode == 0, answer.stderr[-3000:]
        answers[name], no_checker = json.loads(answer.stdout.splitlines()[-1])
        assert no_checker, "the server started a checker of its own"
        assert (folder / "whoami").read_text() == subprocess.run(["id", "-u", USER], capture_output=True,
                                                                 text=True).stdout.strip()
    assert answers["done"]["success"] and answers["done"]["value"] == {}
    assert answers["done"]["summary"].startswith("All 6 visible tests pass.")
    assert "6 of 6 visible checks fail. Not written yet" in answers["untouched"]["value"]["failed"][0]["source"]


def _course(tmp_path):
    shutil.copytree(ROOT / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    return tmp_path


def _add_cell(path, source):
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_code_cell(source))
    nbformat.write(notebook, path)
