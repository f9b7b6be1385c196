"""The sandbox student code runs in while it is graded: bubblewrap (Debian package ``bubblewrap``) plus
rlimits, no Docker.

Inside, the code sees the machine read-only, except its own working copy (``workdir``, also its cwd)
and a private, size-bounded /tmp; paths in ``hidden`` (solutions/, the gradebook, other students'
folders) are covered by an empty read-only tmpfs (a directory) or /dev/null (a file); /run (where
daemons keep their sockets) is always hidden. It has no network: a fresh network namespace holds
only its own loopback, so even 127.0.0.1 reaches nothing of the host's. It has its own PID, IPC and
UTS namespaces, /proc and /dev are read-only, and it dies with the process that started it.

Limits are rlimits, set inside the sandbox by util-linux's ``prlimit`` just before the command runs
(a command-line shim, so the command needs no help from its starter): RLIMIT_CPU, RLIMIT_AS,
RLIMIT_NPROC, RLIMIT_FSIZE.

RLIMIT_NPROC needs care, since it counts every process and thread of a *real* uid, and the kernel
skips it for real uid 0 even inside a user namespace (copy_process: ``real_cred->user !=
INIT_USER``; measured here: 50 forks under ``--nproc=10`` with bwrap's usual root->uid mapping):

* run by a normal user, bwrap makes a user namespace; the kernel counts RLIMIT_NPROC per user
  namespace, so only the sandbox's own processes count. ``--disable-userns`` forbids nested ones.
* run by root (CI containers, this VM), the command drops to a uid no account uses, fresh for each
  sandbox (``setpriv --reuid``), so NPROC counts exactly the sandbox's processes. That uid keeps two
  capabilities, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (ambient, bounding set reduced to them),
  so it still reads root's Python (here under /root, mode 700) and writes the root-owned workdir:
  what it may touch is decided by the mounts above, not by file modes. A read-only /proc stops it
  from mapping root into a user namespace of its own (uid_map cannot be written). One visible
  quirk: ``os.access`` (checks with caps off) calls root-owned folders unwritable.

Threads count against RLIMIT_NPROC, so the sandbox sets OMP_NUM_THREADS=1: torch would otherwise
start a thread per core, which on a big machine exceeds the limit (and makes CPU time depend on the
machine). RLIMIT_AS is per process: without cgroups, the sandbox as a whole may use up to
``processes * memory_bytes``; run the grader itself under a memory cgroup (systemd-run -p
MemoryMax=..., a container's limit) for a hard total.
"""
import functools
import glob
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass


GiB, MiB = 1 << 30, 1 << 20
ALWAYS_HIDDEN = ("/run",)
KEPT_CAPS = ("dac_override", "dac_read_search")


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command may use; for the verdict harness, all of a notebook's checks together.

    Measured here (torch 2.13 CPU, OMP_NUM_THREADS=1): ``import torch`` reaches 0.6 GiB of address
    space (0.23 GiB resident); a kernel that imports torch and minigrad 1.26 GiB, with 11 threads;
    executing a whole reference exercise notebook at most 1.37 GiB and 5.1 s of CPU time (ex2).
    The defaults leave about 3x the memory and 6x the threads, and 24x the CPU time (slow CI
    machines; nbgrader's per-cell wall-clock timeout still applies)."""
    cpu_seconds: int = 120        # RLIMIT_CPU, soft (SIGXCPU); the hard limit (SIGKILL) is 1 s later
    memory_bytes: int = 4 * GiB   # RLIMIT_AS, per process
    processes: int = 64           # RLIMIT_NPROC: processes and threads of the sandbox together
    file_bytes: int = 64 * MiB    # RLIMIT_FSIZE; also the size of the private /tmp and of /dev/shm


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up here; the message says why."""


@functools.cache
def check_available():
    """None when the sandbox works here, else the reason it does not (for a human)."""
    tools = ["bwrap", "prlimit"] + (["setpriv"] if os.geteuid() == 0 else [])
    missing = [tool for tool in tools if not shutil.which(tool)]
    if "bwrap" in missing:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    if missing:
        return f"{' and '.join(missing)} not found: apt-get install util-linux"
    with tempfile.TemporaryDirectory() as workdir:
        try:
            done = subprocess.run(wrap([sys.executable, "-c", "open('probe', 'w').write('ok')"], workdir),
                                  check=False, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap could not run: {error}"
        if done.returncode or not os.path.exists(os.path.join(workdir, "probe")):
            detail = (done.stderr.strip() or f"exit status {done.returncode}").splitlines()[-1]
            return (f"bubblewrap cannot set up its sandbox here ({detail}); it needs bubblewrap 0.8 or "
                    "newer, a kernel that allows namespaces (inside Docker: --privileged), and unless run "
                    "as root, unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; "
                    "on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0)")
    return None


def wrap(argv, workdir, limits=Limits(), hidden=(), env=None):
    """The command that runs ``argv`` in the sandbox, in ``workdir`` (which must exist).

    ``env``: variables to set inside besides the few the sandbox sets (PATH, HOME=/tmp, ...); nothing
    else of the caller's environment goes in."""
    workdir = os.path.realpath(workdir)
    command = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session",
               "--ro-bind", "/", "/",
               "--dev", "/dev", *_gpu_devices(),
               "--size", str(limits.file_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
               "--proc", "/proc", "--remount-ro", "/proc",
               "--perms", "1777", "--size", str(limits.file_bytes), "--tmpfs", "/tmp"]
    for path in _python_under_tmp():  # a virtual environment in /tmp must stay visible over the private /tmp
        command += ["--ro-bind", path, path]
    # Parents before children: the workdir may lie inside a hidden folder (.course/), and a hidden
    # path inside the workdir must still be covered after the workdir is bound.
    hidden = {os.path.realpath(path) for path in (*ALWAYS_HIDDEN, *hidden) if os.path.lexists(path)} - {workdir}
    hidden_dirs = [path for path in hidden if os.path.isdir(path)]
    for path in sorted([*hidden, workdir], key=lambda path: path.count(os.sep)):
        if path == workdir:
            command += ["--bind", workdir, workdir]
        elif path in hidden_dirs:
            command += ["--tmpfs", path]
        else:
            command += ["--ro-bind", "/dev/null", path]
    for path in hidden_dirs:
        command += ["--remount-ro", path]
    variables = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/tmp", "TMPDIR": "/tmp",
                 "LANG": "C.UTF-8", "USER": "student", "LOGNAME": "student",
                 "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(env or {})}
    command += ["--clearenv", "--chdir", workdir]
    for name, value in variables.items():
        command += ["--setenv", name, str(value)]
    if os.geteuid() == 0:
        command += ["--cap-drop", "ALL"]
        for cap in ("setuid", "setgid", "setpcap", *KEPT_CAPS):  # setpriv needs the first three
            command += ["--cap-add", f"CAP_{cap.upper()}"]
        uid, caps = str(_unused_uid()), ",".join(["-all", *(f"+{cap}" for cap in KEPT_CAPS)])
        command += ["--", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                    f"--inh-caps={caps}", f"--ambient-caps={caps}", f"--bounding-set={caps}"]
    else:
        command += ["--unshare-user", "--disable-userns", "--"]
    return command + ["prlimit", f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
                      f"--as={limits.memory_bytes}", f"--nproc={limits.processes}",
                      f"--fsize={limits.file_bytes}", "--core=0", "--", *argv]


def _gpu_devices():
    """NVIDIA's device nodes, when the machine has them: tests marked for the GPU run on it."""
    return [arg for path in sorted(glob.glob("/dev/nvidia*")) for arg in ("--dev-bind", path, path)]


def _python_under_tmp():
    """The folders of this Python (a virtual environment and the interpreter it links to) that lie
    in /tmp, which the sandbox replaces by an empty tmpfs."""
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)))}
    return sorted(p for p in paths if p == "/tmp" or p.startswith("/tmp/"))


_serial = itertools.count()


def _unused_uid():
    """A uid no account has (from 2**30 up), different for every sandbox running on this machine
    (this process's pid and a counter), so RLIMIT_NPROC counts one sandbox's processes only."""
    return 1 << 30 | (os.getpid() & 0x3FFFFF) << 8 | next(_serial) & 0xFF
