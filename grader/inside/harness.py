"""Runs an exercise's checks in a process of its own and reports what each check() saw, as plain data.

``python -m inside.harness --serve CONTROL_FD [--isolated]`` is a grading server (``--isolated``: in the
sandbox): it imports torch and the staged minigrad once (most of a run's cost), then forks one
grading process per submission (``fork_server``). A grading process runs the checks with minigrad
and the learner's definitions, and nothing else — torch's side is run by the grader, apart
(``reference.py``, which runs ``serve`` as ``python reference.py FD``). It reads its cells from
standard input as code the grader compiled (the grader checked the learner's definitions first, see
``graded_code.py``, and compiled them under run-time guards, ``guards.py``), with the
exercise's guard policy: no test text, no expected result and no file the grader trusts is ever
within its reach. The learner's definitions come with their own text, for ``inspect`` to find
(a kernel's is what the job's kernel process compiles: ``kernel_process.py``). What it saw leaves,
check by check, through the pipe ``FD``, which the grader reads while it runs:

    ["cell", N]            cell N of the plan starts (the grader's watchdog times each cell; a plan's
                           cells are locked code, solutions, tests, and "support": the scenarios'
                           definitions, and visible tests run beside hidden ones for what they
                           define, reporting nothing)
    ["check", NAME, SEEN, MESSAGE, RAISED]  a check of the current test cell, what it saw (plain
                           data), whether it grades error messages word for word, and the exceptions
                           the learner's code raised meanwhile, as [type name, lines] (``raised_lines``)
    ["error", TEXT]        the current test cell raised
    ["denied", KIND, CONSTRUCT, CELL, LINE]  graded code tried what its guards deny (``guards.py``;
                           KIND: read, write, import or base), or what the audit hook refuses (KIND:
                           audit, CONSTRUCT: the event), at line LINE of the cell with id CELL
    ["done"]

The run-time guards are one layer; a grading process has a second, independent one: an audit hook
(PEP 578, ``watch``), installed just before the first cell of learner code runs (the grader's setup
cells before it load data and import what the checks use without it), which no code can remove. From
then on every audited event is refused, whoever causes it (learner code, minigrad, torch, the
standard library), except: ``exec`` of the code objects the grader sent (the cells), ``id()``, and
frame and source reads by the few trusted functions that read the stack or a function's code
(``_readers``: the harness's report of what the learner's code raised, the guards' report of a
denial, torch's lazy CUDA calls, minigrad's anomaly mode and grad-mode decorators, exercise 9's
``@triton.jit``), through the standard library's traceback, linecache, tokenize and inspect only
(``THROUGH``) and only the libraries' own ``.py`` files. So compiling or executing any other code (``compile``,
``exec``/``eval`` of text, ``marshal``, new code objects), importing any module not already imported
(the server imports what the exercises need first; a module already imported raises no event, so
what a module can do that matters is refused by its own events), opening files, ``ctypes``,
``gc``'s object walks, reading frames (``sys._getframe``, a traceback's ``tb_frame``, a generator's
``gi_frame``) and code objects (``__code__``), processes, signals, sockets and threads all end the
run: the hook reports ``["denied", "audit", EVENT, CELL, LINE]`` (the innermost learner line on the
stack) before it raises ``Refused`` (a BaseException), so no ``except`` can hide it. It holds with
the guards off (``tests/grading/test_guards.py``). What it does not see: calls that raise no event,
such as ``os.write`` on a descriptor already open, which the guards and the sandbox keep from
learner code. The learner's own kernel (Validate) has no hook: it runs only in the grading process.

The grader treats every message as untrusted: sizes, types and order are checked there.
"""
import _thread
import ctypes
import importlib
import inspect
import json
import linecache
import marshal
import os
import platform
import re
import resource
import shutil
import signal
import socket
import sys
import time
import tokenize
import traceback

_dumps, _write, _type, _exit, _getframe = json.dumps, os.write, type, os._exit, sys._getframe  # before any learner code
PLAIN_TYPES = (type(None), bool, int, float, str)


def strict(value):
    """Plain data of exactly the JSON types; anything else (objects faking equality) becomes a marker."""
    kind = _type(value)
    if kind in PLAIN_TYPES:
        return value
    if kind in (list, tuple):
        return [strict(v) for v in value]
    if kind is dict and all(_type(k) is str for k in value):
        return {k: strict(v) for k, v in value.items()}
    return ["not plain data", kind.__name__]


def serve(lib, fd, kernels=None):
    """Run the cells read from standard input with ``lib`` (torch or minigrad), reporting to ``fd``.

    The learner's definitions run in a namespace of their own under the exercise's run-time guards
    (``guards.py``); locked cells share what they define with it, test cells share nothing (their
    scenarios and ``check`` stay out of the learner's reach). ``kernels``: the job's kernel process
    (``kernel_process.py``), which runs every kernel ``@triton.jit`` makes in the grading process:
    Triton's ``jit`` is its ``Kernels.jit`` there, whichever layer of guards is on."""
    import minigrad
    import torch
    import coursekit.testing
    from coursekit.testing import plain, raised_lines

    from .guards import Guards

    coursekit.testing.graded = _as_compiled  # the locked cells' graded(...): the grader compiled them guarded
    if kernels:  # every kernel made here from now on, minigrad's own and the learner's, runs in the kernel process
        import triton

        triton.jit = kernels.jit
    coursekit.testing._LIBRARIES += (os.path.abspath(__file__),)  # its check's frame is no learner's

    job = marshal.loads(sys.stdin.buffer.read())
    cells = job["cells"]

    def send(message):
        data = (_dumps(message) + "\n").encode()
        while data:
            data = data[_write(fd, data):]

    def check(name, scenario, *args, message=False):
        raised = coursekit.testing._raised = []  # what the scenario's outcome(...) calls catch, for the feedback
        try:
            value = scenario(lib, *args)
        except Exception as error:  # noqa: BLE001 - the error is the result being compared
            value = error
            raised.append(error)
        finally:
            coursekit.testing._raised = None
        if lib is minigrad and _storage_requires_grad(value, minigrad.Tensor):
            seen = ["uses torch.autograd: a minigrad tensor's storage requires grad"]
        else:
            seen = strict(plain(value))
        told = [[_type(error).__name__, raised_lines(error)] for error in raised[:5]] if lib is minigrad else []
        send(["check", str(name), seen, message is True, told])

    def report(kind, construct, filename, line):
        send(["denied", kind, str(construct)[:200], filename.strip("<>"), int(line)])

    learner_files = {code.co_filename for kind, code, _ in cells if kind == "solution"}
    if job["policy"] is None:  # torch's run of the reference solutions: trusted code, compiled unguarded
        learner = {"__name__": "graded"}
    else:
        learner = Guards(job["policy"], report, learner_files, _getframe).namespace()
    trusted = {"__name__": "__main__"}
    audited = lib is minigrad
    for number, (kind, code, text) in enumerate(cells):
        if audited and kind == "solution":  # learner code starts here: the grader's setup cells ran without the hook
            audited = False
            for name in (job["policy"] or {}).get("modules", []):  # what the exercise imports beyond minigrad's
                importlib.import_module(name)
            minigrad.memory._ledger()  # started now, not by a gc walk once learner code ran
            if torch.cuda.is_available():  # CUDA started now: what its start does is no learner's
                torch.cuda.init()
            watch({code for _, code, _ in cells}, {raised_lines.__code__, Guards.deny.__code__,
                                                    *(reader.__code__ for reader in _readers(minigrad, kernels))},
                  lambda event, frame: report("audit", event, *_learner_line(frame, learner_files)))
        send(["cell", number])
        if text is not None:
            linecache.cache[code.co_filename] = (len(text), None, text.splitlines(True), code.co_filename)
        if kind in ("test", "support"):  # a support cell runs for what it defines: its checks report nothing
            trusted["check"] = check if kind == "test" else _ignore
        namespace = learner if kind == "solution" else trusted
        before = dict(namespace)
        try:
            exec(code, namespace)  # noqa: S102 - running the exercise is the point
        except BaseException as error:  # noqa: BLE001 - a failing cell is a result
            if kind == "test":
                send(["error", f"{_type(error).__name__}: {error}"[:2000]])
        changed = {k: v for k, v in namespace.items() if k not in before or before[k] is not v}
        if kind == "solution":
            trusted.update(changed)
        elif kind == "locked":
            learner.update({k: v for k, v in changed.items() if _shareable(k, v)})
    send(["done"])


class Refused(BaseException):
    """An audited event the grading process refuses (``watch``); the grader has been told already."""


HARMLESS = frozenset({"builtins.id"})
"""Audited events honest grading raises that reach nothing: ``id()`` (minigrad's reprs, copy's memos)."""
READS = {"sys._getframe": None, "object.__getattr__": ("tb_frame", "f_code", "__code__", "__defaults__", "__kwdefaults__"),
         "open": None}
"""The events a trusted reader raises (``watch``): the frame attributes it reads, the files it opens."""
THROUGH = frozenset(module.__file__ for module in (traceback, linecache, tokenize, inspect))
"""The standard library's modules through which a trusted reader reads frames and source lines (and
torch.package's importer, whose ``inspect.getfile`` stands in for the standard one once torch is
imported: ``watch`` adds it)."""


def _readers(minigrad, kernels):
    """The libraries' functions that read the stack while grading runs: torch's lazy device calls keep
    the stack that made them (every ``manual_seed``), minigrad's anomaly mode the stack that made a node,
    its grad modes' decorators a function's code flags (``inspect.isgeneratorfunction``); and, with a
    kernel process, ``@triton.jit`` a kernel's code and source (``Kernels.jit``)."""
    import torch

    return (torch.cuda._lazy_call, torch.xpu._lazy_call, torch.mtia._lazy_call, minigrad.function._forward_stack,
            minigrad.grad_mode._decorate, *([type(kernels).jit] if kernels else []))


def _libraries():
    """Where the libraries' own source lies (torch, minigrad, coursekit, the standard library, and the
    harness's folder: the guards)."""
    import coursekit.testing

    return (*coursekit.testing._LIBRARIES, os.path.dirname(os.path.abspath(__file__)) + os.sep)


def watch(ours, readers, refuse):
    """Install the grading process's audit hook (see the module's docstring): every event but
    ``exec`` of a code object in ``ours``, HARMLESS ones, and READS by a code object in ``readers``
    (the innermost frame not of THROUGH's modules: trusted code that called back learner code does not
    vouch for it) is refused: ``refuse(event, frame)`` reports it (an import or an open with the module
    or the path, for the grader's log), then ``Refused`` is raised. While the
    hook decides, the events it raises itself (reading the stack) pass."""
    import torch.package.package_importer

    libraries, busy = _libraries(), []
    through = THROUGH | {torch.package.package_importer.__file__}

    def hook(event, args):
        if busy or event in HARMLESS or event == "exec" and args[0] in ours:
            return
        busy.append(event)
        try:
            frame = _getframe(1)
            allowed = event in READS and _read_by(frame, readers, through) and _plain_read(event, args, libraries)
            if not allowed:
                refuse(f"{event} {args[0]}" if event in ("import", "open") and _type(args[0]) is str else event, frame)
        finally:
            busy.pop()
        if not allowed:
            raise Refused(event)

    sys.addaudithook(hook)


def _read_by(frame, readers, through):
    while frame is not None and frame.f_code.co_filename in through:
        frame = frame.f_back
    return frame is not None and frame.f_code in readers


def _plain_read(event, args, libraries):
    """A frame attribute the readers read, or a library's ``.py`` file opened to read (source lines)."""
    if event == "object.__getattr__":
        return args[1] in READS[event]
    if event == "open":
        path, mode, flags = args
        return (_type(path) is str and path.endswith(".py") and os.path.normpath(path) == path
                and path.startswith(libraries) and mode in ("r", "rb")
                and not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
    return True


def _learner_line(frame, learner_files):
    """(cell file name, line) of the innermost frame of learner code from ``frame`` out, or ("", 0)."""
    while frame is not None and frame.f_code.co_filename not in learner_files:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame else ("", 0)


def _as_compiled(definition):
    """``graded`` while grading: the definition as the grader compiled it (under the run-time guards)."""
    return definition


def _ignore(*args, **kwargs):
    """``check`` in a support cell (a visible test cell run beside the hidden ones, ``verdicts.apart``)."""


def _shareable(name, value):
    """Whether a name a locked cell bound goes into the learner's namespace: not the course's test
    helpers (``check``, ``outcome``: they run scenarios with torch), nor a dunder."""
    module = value.__name__ if _type(value).__name__ == "module" else getattr(value, "__module__", None)
    return not name.startswith("__") and module != "coursekit.testing"


def _storage_requires_grad(value, tensor_type):
    """Whether a minigrad tensor in ``value`` has storage that torch's autograd tracks."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tensor_type):
            data = item._data
            if data.requires_grad or data.grad_fn is not None:
                return True
        elif _type(item) in (list, tuple):
            stack.extend(item)
        elif _type(item) is dict:
            stack.extend(item.values())
    return False


_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 1, 4, 36  # <linux/prctl.h>
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(platform.machine())  # syscall numbers
_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
_KEYCTL_JOIN_SESSION_KEYRING, _KEYCTL_CLEAR, _KEYCTL_READ = 1, 7, 11  # <linux/keyctl.h>
_USER_KEYRINGS = (-4, -5)  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING: the uid's, shared by its processes
_libc = ctypes.CDLL(None, use_errno=True)


def fork_server(lib, control, isolated, first_job=0, kernels=False):
    """Serve jobs from the grader over the socket ``control``: each is two file descriptors (the
    job's cells to read, its results pipe to write), run by a child forked for it; b"ready" goes back
    when the server can take the next one. With ``kernels`` (exercise 9), each job's child first
    forks its kernel process (``kernel_process.start``), before it reads the job.

    Submissions graded one after another by one server must not reach each other. A job's process
    runs learner code as the server's uid, so the server, before it says ready again (``isolated``:
    in the sandbox, where the uid has nothing else), kills every process the job left and reaps them
    as their subreaper, returns every folder the uid can write (the working folder, /tmp, /dev/shm)
    to what it held at the start (their times too), empties the keyrings the uid shares (each job
    has a session keyring of its own), and checks what a process of the same uid can change of
    another: its rlimits (prlimit), nice value, CPU affinity, scheduling policy and I/O priority.
    Anything it cannot undo — a change there, an extended attribute, a System V IPC object or a key
    left, a mark in the network namespace (a socket, traffic on the loopback), a process that
    survived, a tree too deep to walk — ends the server instead; the grader
    starts a fresh sandbox. A job that filled one of those folders is told to the grader (b"full")
    before the server cleans up. PIDs too: job K of this grading process (``first_job`` counts those
    before this server) gets PID ``_job_pid(K)`` of the sandbox's PID namespace whatever the jobs
    before it did; the server takes the PIDs up to it (threads that end at once), and a job that
    used more than ``PID_STRIDE`` (its processes and threads) ends the server. The server is not
    dumpable, so no job can ptrace it, read its memory or its file descriptors (the control socket)
    through /proc."""
    _libc.prctl(_PR_SET_DUMPABLE, 0)
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if kernels:
        from . import kernel_process

        kernel_process.prepare()
    channel = socket.socket(fileno=control)
    folders = (os.getcwd(), "/tmp", "/dev/shm") if isolated else (os.getcwd(),)
    state, times, shared = _fingerprint(folders), _times(folders), _shared() if isolated else None
    job = first_job
    if isolated and not _next_pid_is(_job_pid(job)):
        return
    channel.sendall(b"ready")
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 2)
        except OSError:
            return
        if len(fds) != 2:
            return  # the grader closed the socket: it is done with this server
        pid = os.fork()
        if pid == 0:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if isolated and _KEYCTL:  # a session keyring of its own, which dies with the job
                _libc.syscall(_KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, None)
            channel.close()
            runner = kernel_process.start() if kernels else None
            os.dup2(fds[0], 0)
            sys.argv[1:] = [str(fds[1])]  # as ``python harness.py FD``
            try:
                serve(lib, fds[1], runner)
            finally:
                if runner:
                    runner.close()
                _exit(0)
        for fd in fds:
            os.close(fd)
        os.waitpid(pid, 0)
        if isolated and any(os.statvfs(folder).f_bavail == 0 for folder in folders):
            channel.sendall(b"full")  # the job wrote all a folder holds: the grader says so, then goes on
        if not _clean(folders, state, times, shared, isolated):
            return
        job += 1
        if isolated and not _next_pid_is(_job_pid(job)):
            return
        channel.sendall(b"ready")


PID_BASE, PID_STRIDE = 4096, 64
"""Job K's PID is PID_BASE + K * PID_STRIDE (wrapping before the namespace's pid_max): above what a
server's start takes, and room for a job's own threads and children (a compiler Triton runs, CUDA's
threads); the server takes what a job left of its stride, a thread each, 16 started at a time."""


def _job_pid(job):
    with open("/proc/sys/kernel/pid_max") as limit:
        room = (int(limit.read()) - PID_BASE) // PID_STRIDE - 1
    return PID_BASE + job % room * PID_STRIDE


def _next_pid_is(pid):
    """Take PIDs (a thread each, which ends at once) until the next process forked gets ``pid``; False
    when the PIDs are already past it (a job took more than its stride)."""
    threads = len(os.listdir("/proc/self/task"))
    while True:
        with open("/proc/sys/kernel/ns_last_pid") as last:
            taken = int(last.read())
        if taken >= pid:
            return False
        if taken == pid - 1:
            return True
        for _ in range(min(pid - 1 - taken, 16)):  # each takes its PID as it is made (no waiting for it to
            _thread.start_new_thread(int, ())     # run), 16 at a time: they count against RLIMIT_NPROC
        while len(os.listdir("/proc/self/task")) > threads:  # all gone before the next: no job sees them
            time.sleep(0.0002)


def _clean(folders, state, times, shared, isolated):
    """After a job: whether the server is as it was before it (see fork_server). Outside the sandbox
    (``isolated`` false: trusted code, as in the course's own tests) only the working folder is emptied."""
    if isolated:
        try:
            os.kill(-1, signal.SIGKILL)  # every process of this uid in the sandbox but the server
        except ProcessLookupError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        try:
            os.kill(-1, 0)
            return False  # a process this server may signal is still there
        except ProcessLookupError:
            pass
        if any(len(open(f"/proc/sysvipc/{kind}").readlines()) > 1 for kind in ("shm", "sem", "msg")):
            return False
        if _shared() != shared:
            return False
    try:
        for folder in folders:
            _prune(folder, state[0])
        _reset_times(times)
        return _fingerprint(folders) == state
    except (OSError, RecursionError):  # a folder the job made unreadable, a file it may not delete, a tree too deep
        return False


def _shared():
    """What every process of the sandbox shares and the server cannot put back: the uid's keyrings
    (emptied first), and the namespaces' own marks — the network's (its loopback's counters, its
    protocols' statistics, its sockets, among them connections that stay in TIME_WAIT a minute after
    their processes died) and the host name."""
    network = []
    for name in _NETWORK:
        try:
            with open(f"/proc/net/{name}", "rb") as table:
                network.append(table.read())
        except FileNotFoundError:  # a kernel without IPv6
            network.append(None)
    return _keyrings(), network, os.uname().nodename


_NETWORK = ("dev", "snmp", "snmp6", "netstat", "tcp", "tcp6", "udp", "udp6", "raw", "raw6", "unix", "packet")
"""The network namespace's tables (/proc/net): not ``sockstat``, whose memory counts are the machine's."""


def _keyrings():
    """Empty the keyrings every process of this uid shares (a job's own session keyring goes with
    it), and say what they hold then (the size of their lists of keys), which must be what they
    held when the server started."""
    if not _KEYCTL:
        return None
    for keyring in _USER_KEYRINGS:
        _libc.syscall(_KEYCTL, _KEYCTL_CLEAR, keyring)
    return [_libc.syscall(_KEYCTL, _KEYCTL_READ, keyring, None, 0) for keyring in _USER_KEYRINGS]


def _prune(folder, skeleton):
    """Delete what is in ``folder`` but not in ``skeleton``, entering the skeleton's folders."""
    for entry in os.scandir(folder):
        if entry.path not in skeleton:
            if entry.is_dir(follow_symlinks=False):
                _writable(entry.path)
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        elif skeleton[entry.path][0]:
            _prune(entry.path, skeleton)


def _writable(top):
    """Give back to the folders under ``top`` the rights a job took away, so they can be removed."""
    os.chmod(top, 0o700)
    for folder, names, _ in os.walk(top):
        for name in names:
            if not os.path.islink(os.path.join(folder, name)):
                os.chmod(os.path.join(folder, name), 0o700)


def _skeleton(folders):
    """What lies in the writable ``folders`` (the folders the sandbox made, links, the paths bound
    there): {path: (whether to look inside, its inode, mode and owner)}."""
    with open("/proc/self/mountinfo") as table:  # a mount point is its 5th field, with octal escapes
        mounts = {re.sub(r"\\(\d{3})", lambda m: chr(int(m[1], 8)), line.split()[4]) for line in table}
    found, stack = {folder: (False, *_identity(folder)) for folder in folders}, list(folders)
    while stack:
        for entry in os.scandir(stack.pop()):
            inside = entry.path not in mounts and entry.is_dir(follow_symlinks=False)
            found[entry.path] = (inside, *_identity(entry.path))
            if inside:
                stack.append(entry.path)
    return found


def _identity(path):
    """What a path is, as a job of the same uid could change it but the server cannot put back:
    its inode, mode, owner and extended attributes (its times, ``_reset_times`` puts back)."""
    info = os.lstat(path)
    try:
        attributes = tuple(sorted(os.listxattr(path, follow_symlinks=False)))
    except OSError:  # a file system without them
        attributes = ()
    return info.st_ino, info.st_mode, info.st_uid, attributes


def _times(folders):
    """The folders' access and modification times, to put back after each job."""
    return {folder: (os.stat(folder).st_atime_ns, os.stat(folder).st_mtime_ns) for folder in folders}


def _reset_times(times):
    """Put the writable folders' times back, so that no job reads in them what another did. Where
    the server may not (a folder root owns, as bubblewrap's tmpfs is when the grader runs as root,
    whose times a job may not set either), it moves them itself, after every job alike, if it can
    write there (else no job could)."""
    for folder, (atime, mtime) in times.items():
        try:
            os.utime(folder, ns=(atime, mtime))
        except PermissionError:
            if not os.access(folder, os.W_OK):
                continue  # no job could write there either
            probe = os.path.join(folder, ".minigrad-server")
            open(probe, "w").close()
            os.unlink(probe)


def _fingerprint(folders):
    """The writable folders' skeleton, and what another process of the same uid could have changed of this one."""
    limits = [resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")]
    ioprio = _libc.syscall(_IOPRIO_GET, 1, 0) if _IOPRIO_GET else None  # IOPRIO_WHO_PROCESS, this process
    return (_skeleton(folders), limits, os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0),
            os.sched_getscheduler(0), os.sched_getparam(0), ioprio)


if __name__ == "__main__":
    import numpy.random  # noqa: F401 - what torch and minigrad import lazily while checks run, imported
    import torch  # here: no module is imported once learner code runs (see ``watch``)
    import torch._subclasses.schema_check_mode  # noqa: F401

    import minigrad as library
    import minigrad.memory

    minigrad.memory._ledger()  # started before any job (each job's child inherits it), not by a heap walk per job
    for argument in sys.argv:  # what the exercise's checks make torch import lazily (policy.POLICIES' "imports")
        if argument.startswith("--import="):
            importlib.import_module(argument.removeprefix("--import="))
    torch.set_grad_enabled(False)  # torch's autograd does none of the learner's work (graded code can't turn it on)
    fork_server(library, int(sys.argv[2]), "--isolated" in sys.argv, int(sys.argv[3]), "--kernels" in sys.argv)
