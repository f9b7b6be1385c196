"""The sandbox: each restriction is proven by learner code that tries to break it, run through
``grader.sandbox.wrap`` (as the grader runs learner code). Such code could never pass the static
check of graded code (it opens files, imports os and socket); the sandbox holds without it.

The scratch course lives under /var/tmp, not /tmp: the sandbox gets a private /tmp, so a course
there would merely be invisible inside, and "read-only" would go unproven."""
import errno
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import uuid
import warnings

import pytest

from grader import forkserver, sandbox, verdicts, workflow
from grader.build import ROOT
from grader.sandbox import Limits, SandboxUnavailable, check_available, wrap

REASON = check_available()
if REASON and os.environ.get("CI"):  # .ci/run installs bubblewrap: there, a sandbox that fails is a failure
    raise RuntimeError(f"the sandbox does not work on CI: {REASON}")
if REASON:
    print(f"sandbox tests skipped: {REASON}")
    warnings.warn(f"sandbox tests skipped: {REASON}")
    pytest.skip(REASON, allow_module_level=True)

SECRET = "hidden test: assert secret_answer == 42"


@pytest.fixture(scope="module")
def course():
    """A course as the grader sees it: alice's working copy, bob's beside it, the gradebook, solutions."""
    base = tempfile.mkdtemp(prefix="sbx-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
    root = os.path.join(base, "course")
    paths = {"root": root, "work": os.path.join(root, ".course", "autograded", "alice", "ex1"),
             "bob": os.path.join(root, ".course", "autograded", "bob", "ex1", "ex1.ipynb"),
             "gradebook": os.path.join(root, ".course", "gradebook.db"),
             "beside_gradebook": os.path.join(root, ".course", "exchange.log"),
             "solution": os.path.join(root, "solutions", "ex1", "ex1.ipynb")}
    for name in ("bob", "gradebook", "beside_gradebook", "solution"):
        os.makedirs(os.path.dirname(paths[name]), exist_ok=True)
        with open(paths[name], "w") as file:
            file.write(SECRET if name in ("gradebook", "solution") else f"{name}'s file")
    shutil.copytree(ROOT / "minigrad", os.path.join(paths["work"], "minigrad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    yield paths
    shutil.rmtree(base)


def run(course, code, limits=None, readonly=(), timeout=60):
    """Run ``python -c code`` in the sandbox, in alice's working copy."""
    command = wrap([sys.executable, "-c", textwrap.dedent(code)], course["work"], limits or Limits(), readonly)
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout)


def read(path):
    with open(path) as file:
        return file.read()


def test_writes_inside_the_workdir_and_private_tmp_work(course):
    done = run(course, """
        import os
        open("answer.txt", "w").write("mine")
        open("/tmp/scratch-sbx-test", "w").write("tmp")
        print(os.getcwd())
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.path.realpath(course["work"])
    assert read(os.path.join(course["work"], "answer.txt")) == "mine"
    assert not os.path.exists("/tmp/scratch-sbx-test")  # the sandbox's /tmp is its own


def test_writes_outside_the_workdir_fail(course):
    python_dir = os.path.dirname(os.path.realpath(sys.executable))
    targets = [course["bob"], os.path.join(os.path.dirname(course["bob"]), "new.py"), course["beside_gradebook"],
               os.path.join(course["root"], ".course", "new.db"), os.path.join(python_dir, "sbx-probe"),
               os.path.join(course["root"], "sbx-probe")]
    before = {path: read(path) for path in targets if os.path.exists(path)}
    done = run(course, f"""
        import os
        for path in {targets!r}:
            try:
                with open(path, "a") as file:
                    file.write("tampered")
                print("WROTE", path)
            except OSError as error:
                print(error.errno, path)
        for attempt in (lambda: os.remove({course['bob']!r}), lambda: os.rename({course['bob']!r}, {course['bob'] + '.moved'!r})):
            try:
                attempt()
                print("CHANGED")
            except OSError as error:
                print(error.errno, "remove/rename")
    """)
    try:
        assert done.returncode == 0, done.stderr
        assert "WROTE" not in done.stdout and "CHANGED" not in done.stdout
        failures = [line.split()[0] for line in done.stdout.splitlines()]
        assert len(failures) == len(targets) + 2 and set(failures) <= {str(errno.EROFS), str(errno.ENOENT),
                                                                              str(errno.EACCES)}, done.stdout
        assert failures[4] == str(errno.EROFS)  # this Python's folder is there, read-only
        assert {path: read(path) for path in before} == before
    finally:
        for path in targets:
            if path not in before and os.path.exists(path):
                os.remove(path)


def test_only_what_grading_needs_is_there(course):
    """No course folder, solution, gradebook, git checkout, home folder, nbgrader cache or other
    submission: the folders above the working copy and this Python hold only the way down to them."""
    home_cache = os.path.expanduser("~/.local/share/jupyter/nbgrader_cache")
    done = run(course, f"""
        import os
        for path in ({course['solution']!r}, {course['gradebook']!r}, {course['bob']!r},
                     {str(ROOT / '.git')!r}, {str(ROOT / 'solutions')!r}, {home_cache!r}, "/home", "/etc/passwd",
                     "/srv", "/var/lib"):
            print(path, os.path.exists(path))
        print(os.listdir({os.path.dirname(course['work'])!r}))
        print(os.listdir({os.path.dirname(os.path.realpath(sys.prefix))!r}))
        print(os.listdir({course['root']!r}))
    """)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(line.endswith(" False") for line in lines[:10]), done.stdout
    assert lines[10] == repr([os.path.basename(course["work"])])
    assert lines[11] == repr([os.path.basename(os.path.realpath(sys.prefix))])
    assert lines[12] == "['.course']"


def test_runs_as_an_unprivileged_uid_without_capabilities(course):
    done = run(course, """
        import os
        caps = {line.split(":")[0]: int(line.split()[1], 16) for line in open("/proc/self/status")
                if line.startswith("Cap")}
        print(os.getuid(), os.geteuid(), caps["CapEff"], caps["CapPrm"], caps["CapBnd"], caps["CapAmb"])
    """)
    assert done.returncode == 0, done.stderr
    uid, euid, *caps = map(int, done.stdout.split())
    assert uid == euid != 0 and caps == [0, 0, 0, 0]


def test_readonly_paths_are_read_only(course, tmp_path):
    shared = tmp_path / "code"
    shared.mkdir()
    (shared / "harness.py").write_text("harness\n")
    (shared / "harness.py").chmod(0o666)  # anyone may write it: only the mount stops the sandbox
    done = run(course, f"""
        import errno
        print(open({str(shared / 'harness.py')!r}).read().strip())
        try:
            open({str(shared / 'harness.py')!r}, "a").write("tampered")
        except OSError as error:
            print(errno.errorcode[error.errno])
    """, readonly=[shared])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["harness", "EROFS"]


@pytest.fixture
def listener():
    """A TCP listener on the host's 127.0.0.1 and an abstract unix socket; yields (port, name, accepted)."""
    tcp = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    name = f"\0sbx-test-{uuid.uuid4().hex}"
    unix.bind(name)
    unix.listen()
    accepted = []

    def accept(server):
        try:
            accepted.append(server.accept())
        except OSError:
            pass
    threads = [threading.Thread(target=accept, args=(server,), daemon=True) for server in (tcp, unix)]
    for thread in threads:
        thread.start()
    yield tcp.getsockname()[1], name, accepted
    for server, thread in zip((tcp, unix), threads):
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept
        thread.join()
        server.close()


def test_no_network(course, listener):
    port, name, accepted = listener
    done = run(course, f"""
        import socket
        for family, address in ((socket.AF_INET, ("127.0.0.1", {port})), (socket.AF_UNIX, {name!r})):
            try:
                socket.socket(family).connect(address)
                print("CONNECTED")
            except OSError as error:
                print(type(error).__name__)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ConnectionRefusedError", "ConnectionRefusedError"]
    assert accepted == []
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # the listener was there all along


def test_memory_bomb_gets_memory_error(course):
    done = run(course, """
        hoard = []
        try:
            while True:
                hoard.append(bytearray(64 << 20))
        except MemoryError:
            print("MemoryError after", len(hoard) * 64, "MiB")
    """, Limits(memory_bytes=1 << 30))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MemoryError after")
    assert int(done.stdout.split()[2]) < 1024


def test_infinite_loop_is_stopped_by_the_cpu_limit(course):
    done = run(course, "while True: pass", Limits(cpu_seconds=1), timeout=30)
    assert done.returncode in (128 + signal.SIGXCPU, 128 + signal.SIGKILL)


def test_fork_bomb_is_bounded(course):
    done = run(course, """
        import os
        release, hold = os.pipe()
        children, refused = 0, 0
        for _ in range(500):
            try:
                pid = os.fork()
            except BlockingIOError:
                refused += 1
                continue
            if pid == 0:
                os.close(hold)
                os.read(release, 1)
                os._exit(0)
            children += 1
        os.close(hold)
        while True:
            try:
                os.wait()
            except ChildProcessError:
                break
        print(children, refused)
    """, Limits(processes=16))
    assert done.returncode == 0, done.stderr
    children, refused = map(int, done.stdout.split())
    assert 0 < children < 16 and children + refused == 500


def test_file_size_is_bounded(course):
    done = run(course, """
        for path in ("big.bin", "/tmp/big.bin"):
            try:
                open(path, "wb").write(bytes(2 << 20))
                print("WROTE")
            except OSError as error:
                print(error.errno)
    """, Limits(file_bytes=1 << 20))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(errno.EFBIG)] * 2


def test_torch_and_minigrad_work(course):
    done = run(course, """
        import torch, minigrad
        a = minigrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        (a @ a).exp().sum().backward()
        (t @ t).exp().sum().backward()
        assert torch.allclose(a.grad._data, t.grad), (a.grad, t.grad)
        print("ok", type(a.grad).__module__)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "minigrad.tensor"]


def fake_gpu(tmp_path):
    """A stand-in for a GPU machine: /dev/null as its device node, and a driver folder (outside the
    system's, under /tmp as a venv may be) holding a ``libcuda.so.1``."""
    driver = tmp_path / "nvidia" / "lib64"
    driver.mkdir(parents=True)
    (driver / "libcuda.so.1").write_text("the driver")
    return sandbox.Gpu(nodes=("/dev/null",), libraries=(str(driver), "/usr/lib/x86_64-linux-gnu"))


def test_a_gpu_machine_sandbox_has_what_cuda_needs(course, tmp_path):
    """On a GPU machine (issue 22: inside a sandbox CUDA found no device, so a right answer computed
    on the CPU lost to torch's on cuda:0): the device nodes, /sys, a /proc CUDA can use (its
    read-only remount hides the GPU), the driver's folder named to the dynamic linker and to
    Triton, and RLIMIT_DATA for RLIMIT_AS, so that CUDA may reserve its address space (an
    inaccessible mapping, here 16 GiB) while memory that is written to stays bounded."""
    gpu = fake_gpu(tmp_path)
    code = textwrap.dedent("""
        import mmap, os, resource
        mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)  # PROT_NONE
        try:
            mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000)  # MAP_NORESERVE
            print("written memory unbounded")
        except OSError as error:
            print("written memory bounded:", error.strerror)
        with open("/proc/self/comm", "w") as comm:
            comm.write("probe")
        driver = os.environ["LD_LIBRARY_PATH"].split(":")[0]
        print(open(os.path.join(driver, "libcuda.so.1")).read(), os.environ["TRITON_LIBCUDA_PATH"] == driver)
        print(resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY, os.path.exists("/sys/devices"))
    """)
    done = subprocess.run(wrap([sys.executable, "-c", code], course["work"], gpu=gpu), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["written memory bounded: Cannot allocate memory", "the driver True", "True True"]


@pytest.mark.skipif(importlib.util.find_spec("triton") is None and not os.environ.get("CI"),
                    reason="triton is not installed (the optional extra: pip install '.[kernels]')")
def test_triton_finds_the_driver_in_a_gpu_machines_sandbox(course, tmp_path):
    """Triton looks for libcuda.so.1 itself (``ldconfig -p``, else LD_LIBRARY_PATH, which the sandbox
    once cleared: on issue 22's H100 it found none); in the sandbox it finds the driver's folder."""
    gpu = fake_gpu(tmp_path)
    code = "from triton.backends.nvidia.driver import libcuda_dirs; print(libcuda_dirs())"
    done = subprocess.run(wrap([sys.executable, "-c", code], course["work"], gpu=gpu), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([gpu.libraries[0]])


def test_without_a_gpu_the_sandbox_gets_none_of_it(course, tmp_path):
    """The same code on a machine without a GPU: no /sys, /proc read-only, RLIMIT_AS (the 16 GiB
    reservation fails), no driver folder."""
    code = textwrap.dedent("""
        import mmap, os
        try:
            mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)  # PROT_NONE
        except OSError as error:
            print("reservation refused:", error.strerror)
        try:
            open("/proc/self/comm", "w").write("probe")
        except OSError as error:
            print("/proc:", error.strerror)
        print(os.path.exists("/sys/devices"), "LD_LIBRARY_PATH" in os.environ)
    """)
    done = subprocess.run(wrap([sys.executable, "-c", code], course["work"], gpu=sandbox.Gpu()), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["reservation refused: Cannot allocate memory", "/proc: Read-only file system",
                                        "False False"]


def test_the_probe_says_whether_cuda_works_in_the_sandbox():
    """What decides the grading device: CUDA computes in the sandbox (on a GPU machine, the GPU's
    name), or it does not (here: None, and grading runs on the CPU, saying so)."""
    import torch

    from grader import devices

    assert devices.sandbox_gpu() == (torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)


def test_the_driver_is_found_where_the_machine_finds_it(tmp_path):
    """libcuda.so.1's folders, as ``ldconfig -p`` lists it (Triton asks it) and as LD_LIBRARY_PATH
    holds it (how the borrowed H100 finds its driver): each once, in that order, real paths; a
    folder without it is left out."""
    listed, cached, empty = tmp_path / "listed", tmp_path / "cached", tmp_path / "empty"
    for folder in (listed, cached, empty):
        folder.mkdir()
    for folder in (listed, cached):
        (folder / "libcuda.so.1").write_text("")
    (tmp_path / "link").symlink_to(listed)
    ldconfig = (f"604 libs found in cache `/etc/ld.so.cache'\n\tlibcudart.so.12 (libc6,x86-64) => /x/libcudart.so.12\n"
                f"\tlibcuda.so.1 (libc6,x86-64) => {cached}/libcuda.so.1\n")
    assert sandbox.libcuda_folders(ldconfig, f"{empty}:{tmp_path / 'link'}:{cached}") == (str(cached), str(listed))
    assert sandbox.libcuda_folders("", "") == ()


def test_refuses_without_the_sandbox_and_says_why(course, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    reason = check_available.__wrapped__()
    assert reason == "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    monkeypatch.setattr(sandbox, "check_available", lambda: reason)
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap.*--no-sandbox"):
        workflow.autograde("ex3_freeing", root=course["root"])


@pytest.mark.skipif(importlib.util.find_spec("triton") is None and not os.environ.get("CI"),
                    reason="triton is not installed (the optional extra: pip install '.[kernels]')")
def test_triton_runs_its_kernels(course):
    """Exercise 9's kernels are graded here: Triton's interpreter (no GPU), with the numpy it needs,
    or Triton's compiler, whose cache goes to $HOME (/tmp, private). The kernel lives in a file, as
    the grader gives a learner's definitions their text: Triton reads a kernel's source."""
    with open(os.path.join(course["work"], "double.py"), "w") as file:
        file.write(textwrap.dedent("""
            import os
            import torch
            if not torch.cuda.is_available():
                os.environ["TRITON_INTERPRET"] = "1"
            import triton
            import triton.language as tl


            @triton.jit
            def double(x_ptr, n, BLOCK: tl.constexpr):
                columns = tl.arange(0, BLOCK)
                tl.store(x_ptr + columns, tl.load(x_ptr + columns, mask=columns < n) * 2, mask=columns < n)
        """))
    try:
        done = run(course, """
            import torch
            from double import double
            x = torch.arange(5.0, device="cuda" if torch.cuda.is_available() else "cpu")
            double[(1,)](x, 5, BLOCK=8)
            print(x.tolist())
        """)
    finally:
        os.remove(os.path.join(course["work"], "double.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[0.0, 2.0, 4.0, 6.0, 8.0]"


# --- the grading server: one sandbox grades a worker's submissions one after another ------------

FOLDER = ROOT / "solutions" / "ex3_freeing"
LOOK = """
import os, resource
scratch = os.path.dirname(os.getcwd())  # the server's own folder: named anew for each server
def tree(top):
    found = []
    for folder, dirs, files in os.walk(top):
        found += [os.path.join(folder, name).replace(scratch, "SCRATCH") for name in dirs + files]
        dirs[:] = [name for name in dirs if not os.path.ismount(os.path.join(folder, name))]
    return sorted(found)
seen = {"cwd": tree("."), "tmp": tree("/tmp"), "shm": tree("/dev/shm"),
        "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
        "limits": [list(resource.getrlimit(getattr(resource, n))) for n in sorted(dir(resource)) if n.startswith("RLIMIT_")],
        "nice": os.getpriority(os.PRIO_PROCESS, 0), "cpus": sorted(os.sched_getaffinity(0))}
import ctypes
keyctl = ctypes.CDLL(None).syscall
seen["marks"] = [path for path in (".", "/tmp", "/dev/shm")
                 if os.stat(path).st_mtime_ns == 12345 * 10**9 or os.listxattr(path)]
seen["keys"] = [keyctl(250, 11, keyring, None, 0) for keyring in (-3, -4, -5)]  # KEYCTL_READ: session, user, user-session
seen["network"] = [open(f"/proc/net/{table}").read() for table in ("dev", "snmp", "tcp", "unix")]
"""


def job(*cells, seen="True"):
    """A job for this process's grading server, in the sandbox: each of ``cells`` runs unchecked (a
    locked cell), as learner code that escaped the static check would; returns the value of ``seen``
    after them, as the test cell's check saw it. A locked cell's error is not reported, so a cell
    ends by setting the name ``seen`` asks for: had it failed, the check sees a NameError instead."""
    plan = [{"kind": "locked", "id": f"job-{i}", "source": textwrap.dedent(code)} for i, code in enumerate(cells)]
    plan.append({"kind": "test", "id": "t", "source": f"check('seen', lambda lib: {seen})"})
    result = verdicts.run(FOLDER, plan, "minigrad", sandboxed=True)["t"]
    assert result["error"] is None and len(result["checks"]) == 1, result
    return result["checks"][0][1]


@pytest.fixture
def fresh():
    """What a job sees on a fresh server, and that server."""
    forkserver.discard()
    seen = job(LOOK, seen="seen")
    yield seen, forkserver.server(FOLDER, True)
    forkserver.discard()


LEAVINGS = {
    "files": """
        try:
            open("/dev/shm/segment", "w").write("left")
        except PermissionError:  # bubblewrap's /dev/shm is root's when the grader runs as root
            pass
        os.makedirs("/tmp/.triton/cache", exist_ok=True)
        open("/tmp/.triton/cache/kernel.so", "w").write("poisoned")
        open("minigrad.py", "w").write("raise SystemExit")
        os.makedirs("locked/inner/deeper")
        os.chmod("locked/inner", 0)
        os.chmod("locked", 0o500)
        left = True
    """,
    "metadata-and-keys": """
        import ctypes
        syscall, left = ctypes.CDLL(None).syscall, []
        for path in (".", "/tmp", "/dev/shm"):
            try:
                os.utime(path, (12345, 12345))
                left.append(f"times of {path}")
            except OSError:
                pass
            try:
                os.setxattr(path, "user.mark", b"1")
                left.append(f"attribute of {path}")
            except OSError:
                pass
        for keyring in (-3, -4, -5):  # add_key to the session, user and user-session keyrings
            if syscall(248, b"user", b"mark", b"1", 1, keyring) > 0:
                left.append(f"key in {keyring}")
        assert "key in -4" in left, left
    """,
    "process": """
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                import time
                while True:
                    open("/tmp/later", "w").write("still here")
                    time.sleep(0.01)
            os._exit(0)
        left = True
    """,
}


@pytest.mark.parametrize("leaving", LEAVINGS, ids=list(LEAVINGS))
def test_the_next_job_finds_nothing_a_job_left(fresh, leaving):
    """Files wherever the sandbox's uid may write (in folders it made unreadable), and a process
    that detached itself: the next job sees what a job on a fresh server sees, from the same server."""
    seen, server = fresh
    assert job("import os\n" + textwrap.dedent(LEAVINGS[leaving]), seen="left")
    assert job(LOOK, seen="seen") == seen
    assert forkserver.server(FOLDER, True) is server and server.process.poll() is None


@pytest.mark.parametrize("taking", [0, 5, 40])
def test_a_jobs_pid_is_where_its_place_puts_it_whatever_the_job_before_took(fresh, taking):
    """Processes and threads a job starts move the sandbox's PID counter, which the next job could read
    (its own PID): none, a few, or more than a job's stride (harness.PID_STRIDE; that server ends and
    a fresh one takes the PIDs up to the next job's place), the next job's PID is the same."""
    from grader.inside import harness

    assert job(f"import os, threading\nfor _ in range({taking}):\n    pid = os.fork()\n    if pid == 0:\n"
               "        os._exit(0)\n    os.waitpid(pid, 0)\n    thread = threading.Thread(target=int)\n"
               "    thread.start()\n    thread.join()\nleft = True", seen="left")
    place = forkserver._jobs_started
    assert job("import os\nseen = os.getpid()", seen="seen") == harness.PID_BASE + place * harness.PID_STRIDE


CHANGES = {
    "rlimit": "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (64, 64))",
    "nice": "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
    "affinity": "os.sched_setaffinity(os.getppid(), {min(os.sched_getaffinity(0))})",
    "scheduler": "os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))",
    "sysv-ipc": "import ctypes\nassert ctypes.CDLL(None).shmget(0, 4096, 0o1600) >= 0",  # IPC_PRIVATE, IPC_CREAT
    "network": "import socket\nserver = socket.create_server(('127.0.0.1', 0))\n"
               "client = socket.create_connection(server.getsockname())\nserver.accept()[0].close()\nclient.close()",
    "stopped": "import signal\nos.kill(os.getppid(), signal.SIGSTOP)",
    "killed": "import signal\nos.kill(os.getppid(), signal.SIGKILL)",
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_a_job_that_changes_the_server_ends_it(fresh, change, monkeypatch):
    """What a process of the server's own uid can do to it, or leave that it cannot remove: the
    server ends (or is ended, when it does not say it is ready in time), and the next job gets a
    fresh sandbox that sees what the first one did."""
    if change == "affinity" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the affinity cannot be narrowed")
    usual, discard = forkserver.READY_SECONDS, forkserver.discard

    def discard_then_wait_as_usual():  # for the fresh server that follows: on a busy machine it may need more than 5 s
        discard()
        monkeypatch.setattr(forkserver, "READY_SECONDS", usual)
    monkeypatch.setattr(forkserver, "READY_SECONDS", 5)  # a server that stays silent (stopped) is given up on after 5 s
    monkeypatch.setattr(forkserver, "discard", discard_then_wait_as_usual)
    seen, server = fresh
    try:
        assert job(f"import os, resource\n{CHANGES[change]}\nchanged = True", seen="changed") is True
    except verdicts.Stopped as stop:  # killed: the job dies with its sandbox, or it was done first
        assert change == "killed" and stop.how == "died"
    assert job(LOOK, seen="seen") == seen
    assert forkserver.server(FOLDER, True) is not server and server.process.poll() is not None


def test_a_job_cannot_reach_the_server():
    """The server is not dumpable: a job of the same uid cannot read its memory, its environment or
    its open files (among them the socket the grader gives jobs through), nor trace it."""
    outcomes = job("""
        import ctypes, errno, os
        server, outcomes = os.getppid(), []
        arguments = open(f"/proc/{server}/cmdline", "rb").read().split(b"\\0")
        control = arguments[arguments.index(b"--serve") + 1].decode()
        for path in ("mem", "environ", "fd", f"fd/{control}"):
            try:
                os.listdir(f"/proc/{server}/{path}") if path == "fd" else open(f"/proc/{server}/{path}", "rb").read(1)
                outcomes.append("read")
            except OSError as error:
                outcomes.append(errno.errorcode[error.errno])
        traced = ctypes.CDLL(None, use_errno=True).ptrace(16, server, 0, 0)  # PTRACE_ATTACH
        outcomes.append(errno.errorcode[ctypes.get_errno()] if traced else "traced")
    """, seen="outcomes")
    assert outcomes == ["EACCES"] * 4 + ["EPERM"]


def test_no_job_can_make_a_posix_message_queue():
    """The server cannot list them to clear them between jobs, so no process in the sandbox may
    make one (RLIMIT_MSGQUEUE 0)."""
    made = job("""
        import ctypes, errno, os
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
        rt.mq_open.restype = ctypes.c_int
        queue = rt.mq_open(b"/minigrad-mark", os.O_CREAT | os.O_RDWR, 0o600, None)
        made = "made" if queue >= 0 else errno.errorcode[ctypes.get_errno()]
    """, seen="made")
    assert made == "EMFILE"


def test_a_job_past_the_disk_bound_is_not_graded_and_the_next_is(fresh):
    """The working folder is a tmpfs of the sandbox's own (``wrap(private=True)``): a job that fills
    it writes nothing to the host's disk and ends "used more than 64 MiB of disk"."""
    seen, _ = fresh
    with pytest.raises(verdicts.Stopped) as stop:
        job("""
            try:
                for number in range(200):
                    with open(f"filler-{number}", "wb") as file:
                        file.write(b"x" * (1 << 20))
            except OSError:
                pass
            filled = True
        """, seen="filled")
    assert stop.value.how == "disk"
    assert job(LOOK, seen="seen") == seen


@pytest.mark.skipif(os.geteuid() != 0, reason="a memory cgroup needs root (or a delegated cgroup)")
def test_forked_children_past_the_memory_bound_end_not_graded_and_the_next_job_is_graded(fresh):
    """RLIMIT_AS bounds each process; the server's memory cgroup bounds them together: three
    children of 1.6 GiB each (4.8 GiB, each under the 4 GiB per-process limit) end the job
    "used more than 4 GiB of memory", and the next job runs on a fresh server."""
    seen, _ = fresh
    with pytest.raises(verdicts.Stopped) as stop:
        job("""
            import os, time
            children = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    held = b"x" * (1600 << 20)
                    time.sleep(5)
                    os._exit(0)
                children.append(pid)
            for pid in children:
                os.waitpid(pid, 0)
            done = True
        """, seen="done")
    assert stop.value.how == "memory"
    assert job(LOOK, seen="seen") == seen


def test_a_tree_too_deep_to_clean_ends_only_its_server(fresh):
    """A job that leaves a folder tree deeper than Python's recursion can walk: the server cannot
    clean it and ends; the job's own results stand, and the next job gets a fresh server."""
    seen, server = fresh
    assert job("""
        import os
        start = os.getcwd()
        for _ in range(1200):
            os.mkdir("d")
            os.chdir("d")
        os.chdir(start)
        left = True
    """, seen="left") is True
    assert job(LOOK, seen="seen") == seen
    assert forkserver.server(FOLDER, True) is not server


def test_sandbox_uids_differ_between_jobs_whose_pids_are_the_same(monkeypatch):
    """Two grading jobs on one node, each in a PID namespace of its own (pods, containers), can have
    the same pids; their slots (``autograde --shard I/N`` takes I + 1) keep their sandboxes' uids apart."""
    uids = {}
    for slot in ("1", "2"):
        monkeypatch.setenv(sandbox.SLOT, slot)
        uids[slot] = sandbox._unused_uid()
    assert uids["1"] >> 22 != uids["2"] >> 22 and all(1 << 30 <= uid < 1 << 31 for uid in uids.values())
