"""The grader's side of ``inside.harness.fork_server``: a grading process that imported torch and the
staged minigrad once, and forks a fresh process per submission. It runs the exercise's staged
folders (``parts.STAGED``: minigrad, coursekit and the grader's ``inside``), copied into the sandbox.

Starting Python and importing torch is 1.2 s of the 1.5 s a submission's run takes here; a worker
grading one exercise pays it once. Each worker keeps one server (one sandbox, with its own uid),
for the staged package it last graded; a server that does not say it is ready for the next job in
time, or a job that ends in any way but "done", ends the server, and the next job gets a fresh one.
"""
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from .inside.policy import POLICIES
from .parts import STAGED

READY_SECONDS = 60  # for a fresh server to import torch and minigrad, or a used one to clean up after a job


class NotReady(Exception):
    """The server did not say it was ready in time (or ended)."""


class Server:
    """A harness serving jobs for ``folder``'s staged minigrad, in the sandbox when ``sandboxed``."""

    def __init__(self, folder, sandboxed):
        self.key = _stamp(Path(folder)), sandboxed
        self._scratch = tempfile.TemporaryDirectory(prefix="minigrad-grading-")
        code, work = Path(self._scratch.name) / "code", Path(self._scratch.name) / "work"
        work.mkdir()
        for package in STAGED:
            shutil.copytree(Path(folder) / package, code / package, ignore=shutil.ignore_patterns("__pycache__"))
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # one message a send
        self.cgroup, self._ready = None, False
        # the staged packages alone on the path (-P: not the working folder, which jobs write)
        argv = [sys.executable, "-B", "-P", "-m", "inside.harness", "--serve", str(theirs.fileno()), str(_jobs_started)]
        path = {"PYTHONPATH": str(code)}
        policy = POLICIES.get(Path(folder).name, {})
        if "triton" in policy.get("modules", []):
            argv.append("--kernels")  # exercise 9: each job runs its kernels in a process of its own
        argv += [f"--import={module}" for module in policy.get("imports", [])]
        if sandboxed:
            from .sandbox import Limits, MemoryCgroup, wrap

            self.cgroup = MemoryCgroup.create(Limits().memory_bytes)
            argv = wrap(argv + ["--isolated"], work, Limits(), [code], env=path, private=True, cgroup=self.cgroup)
        try:
            self.process = subprocess.Popen(argv, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                                            start_new_session=True, env={**os.environ, **path})
        finally:
            theirs.close()

    def start(self):
        """A job for the next ready child: (where to write its cells, where to read its results)."""
        if not self._ready and self._next() != b"ready":
            raise NotReady
        global _jobs_started
        self._ready = False
        cells_read, cells_write = os.pipe()
        results_read, results_write = os.pipe()
        try:
            socket.send_fds(self.control, [b"job"], [cells_read, results_write])
        except OSError:
            raise NotReady from None
        finally:
            os.close(cells_read)
            os.close(results_write)
        _jobs_started += 1
        return cells_write, results_read

    def finished(self):
        """After a job: "full" when it filled a folder it may write (the server says so once the
        job's processes are gone), else "ready" (the server can take the next) or None (it ended)."""
        message = self._next()
        if message == b"full":
            return "full"
        self._ready = message == b"ready"
        return "ready" if self._ready else None

    def oom_kills(self):
        """How many of the sandbox's processes the kernel killed for using more than its memory."""
        return self.cgroup.oom_kills() if self.cgroup else 0

    def _next(self):
        with selectors.DefaultSelector() as selector:
            selector.register(self.control, selectors.EVENT_READ)
            if not selector.select(READY_SECONDS):
                return None
            try:
                return self.control.recv(16)
            except OSError:
                return None

    def close(self):
        self.control.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        if self.cgroup:
            self.cgroup.remove()
        self._scratch.cleanup()


def _stamp(folder):
    """The staged packages as they are now: a server serves only the ones it imported."""
    return str(folder), tuple(sorted((str(p), p.stat().st_mtime_ns)
                                     for package in STAGED for p in (folder / package).rglob("*.py")))


_current = None
_jobs_started = 0
"""Jobs this process has handed to its servers: a fresh server is told how many, so that its first job
gets the PID the next job of the server it replaces would have had (harness.fork_server)."""


def server(folder, sandboxed):
    """This process's server for ``folder``'s staged package, started if need be (one at a time)."""
    global _current
    if _current is not None and _current.key != (_stamp(Path(folder)), sandboxed):
        discard()
    if _current is None:
        _current = Server(folder, sandboxed)
    return _current


def discard():
    """End this process's server; the next job starts a fresh one."""
    global _current
    if _current is not None:
        _current, server_ = None, _current
        server_.close()
