"""One warm process per class machine that forks every user's kernels and Validates.

A kernel, and each Validate, imports torch, IPython and ipykernel: about 140 MiB of Python objects
that are the same in every process. On the hub, this process (``--serve SOCKET``, started as root
by hub/start.sh, with an environment that holds nothing of root's) imports them once and forks a
process per request on its Unix socket. Before that process reads a byte of the request it becomes
the user at the other end (the uid the kernel gives for the socket's peer, ``SO_PEERCRED``; that
user's groups; the asking process's limits, niceness and umask), then forks again under the user's
own process limit; the job runs in that second fork, as the user, sharing the imported pages with
this process until it writes them (20 learners at once: a kernel's PSS is 65 MiB, against 168 MiB
started afresh; bench/hub_load.py). A peer in another mount namespace (a grading sandbox) is refused, and the socket is not in
the sandbox's view either. The jobs:

- ``kernel``: the kernelspecs hub/setup.sh writes start ``python -I -S course_zygote.py --kernel
  ARGV`` (a small client, a few MiB) in place of ``ARGV`` (``python -m ipykernel_launcher -f
  FILE``). The client hands the zygote its standard streams, folder and environment, then forwards
  the signals Jupyter sends it (interrupt, stop) until the kernel ends; when the client ends (Jupyter
  killed it, or its server ended), so does the kernel. With no zygote to answer, the client execs
  ``ARGV``: a kernel as before, only not shared.
- ``validate``: ``course_validate.Checker`` asks for ``course_validate.check(path)``, whose answer
  comes back on the socket.
"""
import contextlib
import ctypes
import gc
import json
import os
import pwd
import resource
import runpy
import signal
import site
import socket
import struct
import sys
import threading
import time

LIMITS = {"Max address space": resource.RLIMIT_AS, "Max core file size": resource.RLIMIT_CORE,
          "Max cpu time": resource.RLIMIT_CPU, "Max data size": resource.RLIMIT_DATA,
          "Max file size": resource.RLIMIT_FSIZE, "Max locked memory": resource.RLIMIT_MEMLOCK,
          "Max msgqueue size": resource.RLIMIT_MSGQUEUE, "Max open files": resource.RLIMIT_NOFILE,
          "Max processes": resource.RLIMIT_NPROC, "Max resident set": resource.RLIMIT_RSS}
"""The asking process's limits (as /proc/PID/limits names them) that its fork takes."""
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NAME, PR_SET_CHILD_SUBREAPER = 1, 4, 15, 36
NAMES = {"kernel": b"minigrad-kernel", "validate": b"minigrad-check"}
"""Each job's process name (ps's COMMAND; at most 15 bytes)."""
READ_SECONDS = 60
"""How long a fork waits for its request; it is the user's own process meanwhile."""


def serve(path):
    """As root: import what kernels and Validates import, then fork per connection on ``path``."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # hub/start.sh's process is the hub: end with it, imports and all
    import IPython.core.interactiveshell  # noqa: F401 - each import is here for every fork to share
    import ipykernel.kernelapp  # noqa: F401
    import nbgrader.apps  # noqa: F401
    import nbgrader.validator  # noqa: F401
    import torch._dynamo  # noqa: F401 - torch imports these on first use (checkpoints, optimizers, ...)
    import torch.fx.experimental.symbolic_shapes  # noqa: F401 - (backward(gradient), autograd.grad)
    gc.freeze()  # the collector never writes into what the forks share
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # the jobs, orphaned when their first fork ends, are reaped here
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGTERM, lambda number, frame: _end(path))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    listener.bind(path)
    os.chmod(path, 0o666)  # who asks is the kernel's word (SO_PEERCRED), not the file's mode
    listener.listen(256)
    print(f"course_zygote: serving on {path}", flush=True)
    while True:
        try:
            connection, _ = listener.accept()
        except OSError as error:  # out of file descriptors for a moment: the next request may find one
            print(f"course_zygote: {error}", file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        try:
            child = os.fork()
        except OSError as error:  # out of memory or processes: this asker gets no answer, the next may
            print(f"course_zygote: {error}", file=sys.stderr, flush=True)
            connection.close()
            continue
        if child == 0:
            listener.close()
            _become_peer(connection)  # the job, in a fork of this fork, as the user
        connection.close()


def _end(path):
    """The hub ended: so does the zygote, and its socket with it (forks already made go on)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os._exit(0)


def _reap(number, frame):
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _become_peer(connection):
    """In the first fork (root): become the user who asked, fork the job under their limits, end."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        pid, uid, gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"):
            raise PermissionError(f"pid {pid} (uid {uid}) asks from another mount namespace: a sandbox")
        limits = _limits(pid)
        niceness = os.getpriority(os.PRIO_PROCESS, pid)
        with open(f"/proc/{pid}/status") as status:
            status = dict(line.rstrip("\n").split(":\t", 1) for line in status)
        if int(status["Uid"].split()[0]) != uid:  # the pid was reused by another user's process meanwhile
            raise PermissionError(f"pid {pid} is no longer uid {uid}'s")
        user = pwd.getpwuid(uid)
        os.setsid()
        for limit, (soft, hard) in limits.items():
            _, ceiling = resource.getrlimit(limit)  # (root without CAP_SYS_RESOURCE, in a container, cannot raise it)
            resource.setrlimit(limit, (_at_most(soft, ceiling), _at_most(hard, ceiling)))
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
        os.umask(int(status["Umask"], 8))
        os.setgroups(os.getgrouplist(user.pw_name, gid))
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        _prctl(PR_SET_DUMPABLE, 1)  # the user's own process, as any other of theirs (/proc, a debugger)
        job = os.fork()  # under the user's own process limit, which root's forks do not meet
    except Exception as error:  # noqa: BLE001 - the zygote goes on; the asker sees the connection close
        print(f"course_zygote: refused: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        os._exit(1)
    if job:
        os._exit(0)
    try:
        _job(connection)
    except Exception as error:  # noqa: BLE001 - a request that could not be run: the asker sees the connection close
        print(f"course_zygote: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        os._exit(1)
    sys.exit(0)  # as a process that ran its job ends: its exit handlers run, its streams are flushed


def _prctl(option, value):
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def _limits(pid):
    """{limit: (soft, hard)} of process ``pid``, from /proc (which needs no capability, unlike prlimit)."""
    limits = {}
    with open(f"/proc/{pid}/limits") as listed:
        for line in listed:
            name = line[:26].strip()
            if name in LIMITS:
                soft, hard = line[26:].split()[:2]
                limits[LIMITS[name]] = _limit(soft), _limit(hard)
    return limits


def _limit(word):
    return resource.RLIM_INFINITY if word == "unlimited" else int(word)


def _at_most(value, ceiling):
    infinite = resource.RLIM_INFINITY
    return value if ceiling == infinite or (value != infinite and value <= ceiling) else ceiling


def _job(connection):
    """In the second fork, as the user: read the request (and the streams it hands over), run it."""
    nowhere = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):  # the zygote's own streams are root's log
        os.dup2(nowhere, stream)
    os.close(nowhere)
    connection.settimeout(READ_SECONDS)
    data, streams = b"", []
    while not data.endswith(b"\n"):
        more, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        if not more:
            os._exit(1)
        data, streams = data + more, streams + fds
    connection.settimeout(None)
    request = json.loads(data)
    for stream, fd in enumerate(streams):
        os.dup2(fd, stream)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    site.USER_BASE = site.USER_SITE = None  # found again from this HOME when asked (the zygote's was root's)
    _prctl(PR_SET_NAME, NAMES[request["job"]])  # what ps shows (its arguments stay the zygote's)
    if "numpy.random" in sys.modules:  # as a fresh process would be, not the same as every other fork
        sys.modules["numpy.random"].seed()
    {"kernel": _kernel, "validate": _validate}[request["job"]](connection, request)


def _kernel(connection, request):
    """Be ``python -m ipykernel_launcher ARGS`` in the client's folder, with its environment and streams."""
    argv = request["argv"]
    if argv[1:3] != ["-m", "ipykernel_launcher"]:
        os._exit(1)  # the client runs it itself
    paths = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    sys.path[:] = [os.getcwd(), *paths, *sys.path[1:]]
    # ipykernel read JPY_PARENT_PID at its import, in the zygote: none. The kernel ends with its client
    # (_forward_signals), not when its parent changes, and says nothing of being started by hand.
    sys.argv = [argv[0], *argv[3:], "--IPKernelApp.parent_handle=1"]
    connection.sendall(b"started\n")
    threading.Thread(target=_forward_signals, args=(connection,), daemon=True).start()
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)


def _forward_signals(connection):
    """The kernel's side of the client: the signals it was sent, to this kernel; its end, this kernel's."""
    for line in connection.makefile("rb"):
        number = int(line)
        if number == signal.SIGINT:  # to the thread that runs the cells, as the kernel expects an interrupt
            signal.pthread_kill(threading.main_thread().ident, number)
        else:
            os.kill(os.getpid(), number)
    os.kill(os.getpid(), signal.SIGKILL)


def _validate(connection, request):
    import course_validate

    answer = course_validate.check(request["path"])
    connection.sendall(json.dumps(answer).encode() + b"\n")
    os._exit(0)


def kernel_client(argv):
    """Ask the zygote for kernel ``argv``, then stand for it (Jupyter's signals go on to it); else exec it."""
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(os.environ["MINIGRAD_ZYGOTE"])
        request = {"job": "kernel", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        answer = connection.makefile("rb")
        if answer.readline() != b"started\n":
            raise ConnectionError("the zygote did not start the kernel")
    except (KeyError, OSError):
        os.execv(argv[0], argv)

    def forward(number, frame):
        connection.sendall(b"%d\n" % number)

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, forward)
    server = os.getppid()
    connection.settimeout(1)
    while os.getppid() == server:  # a server that ended without shutting its kernels down: end them (as
        try:                       # ipykernel's parent poller would)
            if not connection.recv(1):
                break  # the kernel ended
        except TimeoutError:
            continue


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["--kernel"]:
        kernel_client(sys.argv[2:])
    else:
        sys.exit("usage: course_zygote.py --serve SOCKET | --kernel ARGV")
