"""The sandbox learner code runs in while it is graded: bubblewrap (Debian package ``bubblewrap``) plus
rlimits, no Docker.

Inside, the code sees only what grading needs: the system's programs and libraries (/usr and its
/bin, /lib links, the dynamic linker's cache), this Python (its installation, its virtual
environment, the links between them), the paths in ``readonly`` (the staged package and the
harness), all read-only; its own working folder (``workdir``, also its cwd), and a private,
size-bounded /tmp. Nothing else of the machine is there: no home folder (a Python installed under
/root is bound alone, at its own path), no /work or /srv, no git checkout, no nbgrader cache, no
other submission, no gradebook. It has no network: a fresh network namespace holds only its own
loopback, so even 127.0.0.1 reaches nothing of the host's. It has its own PID, IPC and UTS
namespaces, /proc and /dev are read-only, and it dies with the process that started it.

On a machine with an NVIDIA GPU the sandbox also holds what CUDA needs to start, and nothing more
(``Gpu``): the device nodes, /sys read-only, a /proc left writable (remounted read-only, CUDA
finds no device; its files stay the unprivileged uid's own, /proc/sys root's), the folders of the
driver's ``libcuda.so.1`` where they lie outside /usr (on ``LD_LIBRARY_PATH``, and named to
Triton, which looks for it with ``ldconfig -p``), and RLIMIT_DATA in place of RLIMIT_AS: CUDA
reserves far more address space than 4 GiB at its start (inaccessible mappings, which
RLIMIT_DATA does not count), so RLIMIT_AS fails its initialisation.

It runs as an unprivileged uid with every capability dropped: run by root (CI containers, this VM),
the command drops to a uid no account uses, fresh for each sandbox (``setpriv --reuid``), which owns
the working folder (``wrap`` hands it over) and nothing else; run by a normal user, bwrap makes a
user namespace and ``--disable-userns`` forbids nested ones. The grader runs a worker's submissions
one after another in one sandbox (``forkserver``), which puts itself back as it was between them.

Limits are rlimits, set inside the sandbox by util-linux's ``prlimit`` just before the command runs
(a command-line shim, so the command needs no help from its starter): RLIMIT_CPU, RLIMIT_AS,
RLIMIT_NPROC, RLIMIT_FSIZE, and RLIMIT_MSGQUEUE 0 (no POSIX message queue can be made: the
sandbox's processes could not list them, so a grading server could not clear them between jobs).

RLIMIT_NPROC needs care, since it counts every process and thread of a *real* uid, and the kernel
skips it for real uid 0 even inside a user namespace (copy_process: ``real_cred->user !=
INIT_USER``): hence the fresh uid as root; as a normal user, the kernel counts RLIMIT_NPROC per
user namespace, so only the sandbox's own processes count.

Threads count against RLIMIT_NPROC, so the sandbox sets OMP_NUM_THREADS=1: torch would otherwise
start a thread per core, which on a big machine exceeds the limit (and makes CPU time depend on the
machine). RLIMIT_AS is per process: a grading server's sandbox joins a memory cgroup of its own
(``MemoryCgroup``, where the grader may make one: as root, or in a delegated cgroup) that bounds
its processes together; elsewhere the sandbox as a whole may use up to ``processes * memory_bytes``
(run the grader under a memory cgroup, systemd-run -p MemoryMax=..., for a hard total).
"""
import functools
import glob
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass


GiB, MiB = 1 << 30, 1 << 20
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache", "/etc/ld.so.conf",
          "/etc/ld.so.conf.d", "/etc/alternatives")


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command may use; for the verdict harness, all of a notebook's checks together.

    Measured here (torch 2.13 CPU, OMP_NUM_THREADS=1): ``import torch`` reaches 0.6 GiB of address
    space (0.23 GiB resident); a kernel that imports torch and minigrad 1.26 GiB, with 11 threads;
    executing a whole reference exercise notebook at most 1.37 GiB and 5.1 s of CPU time (ex2).
    The defaults leave about 3x the memory and 6x the threads, and 24x the CPU time (slow CI
    machines; nbgrader's per-cell wall-clock timeout still applies)."""
    cpu_seconds: int = 120        # RLIMIT_CPU, soft (SIGXCPU); the hard limit (SIGKILL) is 1 s later
    memory_bytes: int = 4 * GiB   # RLIMIT_AS (on a GPU machine RLIMIT_DATA), per process
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


def wrap(argv, workdir, limits=Limits(), readonly=(), env=None, private=False, cgroup=None, gpu=None):
    """The command that runs ``argv`` in the sandbox, in ``workdir`` (which must exist; run as root,
    this hands it to the sandbox's uid), seeing ``readonly`` paths besides the system and this Python.

    ``env``: variables to set inside besides the few the sandbox sets (PATH, HOME=/tmp, ...); nothing
    else of the caller's environment goes in. ``private``: the working folder is a fresh tmpfs of
    ``limits.file_bytes`` at ``workdir``'s path, as /tmp is (what is written there never reaches the
    host's disk, and cannot outgrow it), not ``workdir`` itself. ``cgroup``: a ``MemoryCgroup`` the
    sandbox's processes join before it starts, which bounds their memory together. ``gpu``: what
    CUDA needs (default: this machine's, ``Gpu.here()``)."""
    workdir = os.path.realpath(workdir)
    gpu = Gpu.here() if gpu is None else gpu
    command = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    for path in SYSTEM:
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            command += ["--ro-bind", path, path]
    command += ["--dev", "/dev", *gpu.devices(),
                "--size", str(limits.file_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
                "--proc", "/proc", *([] if gpu.nodes else ["--remount-ro", "/proc"]),
                "--perms", "1777", "--size", str(limits.file_bytes), "--tmpfs", "/tmp"]
    folders, links = _python_paths()
    for path in [*folders, *gpu.folders(), *map(os.path.realpath, readonly)]:  # after /tmp: a virtual environment may lie there
        command += [*_parents(path), "--ro-bind", path, path]
    for path, target in links.items():
        command += [*_parents(path), "--symlink", target, path]
    if private:
        command += [*_parents(workdir), "--perms", "1777", "--size", str(limits.file_bytes), "--tmpfs", workdir]
    else:
        command += [*_parents(workdir), "--bind", workdir, workdir]
    variables = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                 "LANG": "C.UTF-8", "USER": "student", "LOGNAME": "student",
                 "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **gpu.variables(), **(env or {})}
    command += ["--clearenv", "--chdir", workdir]
    for name, value in variables.items():
        command += ["--setenv", name, str(value)]
    if os.geteuid() == 0:
        uid = _unused_uid()
        if not private:
            os.chown(workdir, uid, uid)
            os.chmod(workdir, 0o711)  # bwrap, root without capabilities by then, must still enter it
        command += ["--cap-drop", "ALL"]
        for cap in ("SETUID", "SETGID", "SETPCAP"):  # for setpriv, which then drops every capability
            command += ["--cap-add", f"CAP_{cap}"]
        command += ["--", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                    "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
    else:
        command += ["--unshare-user", "--disable-userns", "--"]
    memory = f"--data={limits.memory_bytes}" if gpu.nodes else f"--as={limits.memory_bytes}"
    command += ["prlimit", f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}", memory,
                f"--nproc={limits.processes}", f"--fsize={limits.file_bytes}", "--core=0", "--msgqueue=0", "--", *argv]
    if cgroup is not None:  # join it first (0: the writing process), then become bwrap: every process inside is in it
        command = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', cgroup.procs, *command]
    return command


class MemoryCgroup:
    """A memory cgroup (v1's memory controller, or v2's) bounding a sandbox's processes together:
    RLIMIT_AS bounds each process, not their sum (three forked children may each take the limit).
    When they pass ``limit`` the kernel kills one of them (the largest) and counts an OOM kill,
    which ``oom_kills`` reads. ``create`` gives None where this process may not make one (not
    root, and no delegated cgroup): there only the per-process limits hold."""

    def __init__(self, path, version):
        self.path, self.version = path, version
        self.procs = os.path.join(path, "cgroup.procs")

    @classmethod
    def create(cls, limit):
        for root, version, limit_file in (("/sys/fs/cgroup/memory", 1, "memory.limit_in_bytes"),
                                          ("/sys/fs/cgroup", 2, "memory.max")):
            if version == 2 and "memory" not in _read(os.path.join(root, "cgroup.subtree_control")).split():
                continue
            if not os.access(root, os.W_OK) or (version == 1 and not os.path.exists(os.path.join(root, limit_file))):
                continue
            path = os.path.join(root, f"minigrad-sandbox-{os.getpid()}-{next(_serial)}")
            try:
                os.mkdir(path)
                with open(os.path.join(path, limit_file), "w") as file:
                    file.write(str(limit))
                swap = os.path.join(path, "memory.memsw.limit_in_bytes" if version == 1 else "memory.swap.max")
                if os.path.exists(swap):
                    with open(swap, "w") as file:
                        file.write(str(limit) if version == 1 else "0")
            except OSError:
                if os.path.isdir(path):
                    os.rmdir(path)
                continue
            return cls(path, version)
        return None

    def oom_kills(self):
        """How many of its processes the kernel has killed for passing the limit."""
        text = _read(os.path.join(self.path, "memory.oom_control" if self.version == 1 else "memory.events"))
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")), 0)

    def remove(self):
        """Remove it, once its processes have gone (killing any still there)."""
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                for pid in _read(self.procs).split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.02)


def _read(path):
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return ""


def _parents(path):
    """bwrap makes the missing folders above a bound path with mode 700, which the sandbox's uid could
    not enter: make them first, traversable and empty but for what is bound below."""
    parents = []
    while os.path.dirname(path) not in ("/", path):
        path = os.path.dirname(path)
        parents[:0] = ["--perms", "0755", "--dir", path]
    return parents


@dataclass(frozen=True)
class Gpu:
    """What CUDA needs in the sandbox: NVIDIA's device nodes (none: no GPU, and the sandbox gets
    nothing of this), and the folders that hold the driver's ``libcuda.so.1``."""
    nodes: tuple = ()
    libraries: tuple = ()

    @classmethod
    @functools.cache
    def here(cls):
        nodes = tuple(sorted(glob.glob("/dev/nvidia*")))
        if not nodes:
            return cls()
        try:
            cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
        except OSError:
            cache = ""
        return cls(nodes, libcuda_folders(cache, os.environ.get("LD_LIBRARY_PATH", "")))

    def devices(self):
        """bwrap's arguments for the device nodes, and /sys read-only (CUDA reads the devices'
        description there)."""
        if not self.nodes:
            return []
        return [*(arg for path in self.nodes for arg in ("--dev-bind", path, path)), "--ro-bind", "/sys", "/sys"]

    def folders(self):
        """The driver's folders the sandbox must be given read-only: those outside the system's."""
        return [path for path in self.libraries if not any(path == top or path.startswith(top + "/") for top in SYSTEM)]

    def variables(self):
        """Where the driver's library is, for the dynamic linker and for Triton."""
        if not self.libraries:
            return {}
        return {"LD_LIBRARY_PATH": ":".join(self.libraries), "TRITON_LIBCUDA_PATH": self.libraries[0]}


def libcuda_folders(ldconfig_cache, ld_library_path):
    """The folders that hold ``libcuda.so.1``, from the dynamic linker's cache (``ldconfig -p``)
    and from ``LD_LIBRARY_PATH``, in that order, each once (its real path)."""
    cached = [line.split(" => ")[-1].strip() for line in ldconfig_cache.splitlines() if "libcuda.so.1 " in line]
    listed = [os.path.join(folder, "libcuda.so.1") for folder in ld_library_path.split(":") if folder]
    return tuple(dict.fromkeys(os.path.realpath(os.path.dirname(path)) for path in cached + listed
                               if os.path.exists(path)))


def _python_paths():
    """This Python: the folders to bind (its virtual environment, its installation) and, as {link:
    target}, the links on the way from ``sys.executable`` to the interpreter that lie outside them
    (made anew: their own folder may be one the sandbox's uid could not enter)."""
    folders = sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
                      os.path.dirname(os.path.realpath(sys.executable))})
    links, path = {}, os.path.abspath(sys.executable)
    while os.path.islink(path):
        target = os.readlink(path)
        if not any(path.startswith(folder + os.sep) for folder in folders):
            links[path] = target
        path = os.path.join(os.path.dirname(path), target)
    return folders, links


_serial = itertools.count()


CONTAINER_FLAGS = ("--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
                   "--security-opt", "apparmor=unconfined")
"""What the sandbox needs of a container (``docker run``) beyond Docker's defaults: new namespaces and a
loopback in its own network namespace. Fewer fails; ``--privileged`` is not needed."""

SLOT = "MINIGRAD_SANDBOX_SLOT"
"""The grading job's slot on its machine, 0 to 255 (``autograde --shard I/N`` takes I + 1; 0 alone): jobs
on one node, each in a PID namespace of its own (pods, containers), may have the same pids, never the
same slot."""


def _unused_uid():
    """A uid no account has (from 2**30 up), different for every sandbox running on this machine
    (the job's slot, this process's pid and a counter), so RLIMIT_NPROC counts one sandbox's
    processes only, and no sandbox can signal another's."""
    return 1 << 30 | (int(os.environ.get(SLOT, 0)) & 0xFF) << 22 | (os.getpid() & 0x3FFF) << 8 | next(_serial) & 0xFF
