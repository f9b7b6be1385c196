"""Exercise 9's kernels, run in a process of their own: no Triton compiles learner text in the grading process.

Triton compiles a kernel from its text (its interpreter, without a GPU, rewrites and runs that
text), out of the run-time guards' reach; and the interpreter copies its own module's globals into
the kernel function's globals, the learner's namespace, among them ``InterpretedFunction``, which
recompiles any function's text without the guards. So in the grading process ``triton.jit`` is
``Kernels.jit`` (``harness.serve`` sets it, for minigrad's kernels and the learner's): it makes no
Triton kernel but a ``Kernel``, which holds the kernel's text (for the learner's, the definition the
static check allowed, ``graded_code._check_kernel``: it calls only Triton, reads only its own names,
stores only through ``tl.store``), and no Triton code runs there, which the audit hook holds to
(``harness.watch``: compiling text is refused, and reading a kernel's code is allowed to
``Kernels.jit`` alone). Launching one
sends that text and the arguments (each tensor as its storage's bytes, as Triton's interpreter
copies a storage to the host, and its offset, shape and strides; numbers as they are) to the kernel
process, which runs the kernel with Triton on copies of those storages and returns their bytes; the
grading process copies them back into the arguments' storages. Each kernel's globals there are a
fresh namespace of ``triton`` and ``tl``. The kernel process is forked by the grading process when a
job starts, before the job is read (``start``), and keeps only its socket: no cell, no results pipe,
nothing that reaches the grader; a kernel that breaks out of Triton there can only change what its
own launches return. Its replies are read as data (a JSON header, then exactly the bytes sent), never
unpickled or run.
"""
import ctypes
import importlib
import inspect
import json
import os
import signal
import socket
import struct
import textwrap
import types

HEADER = struct.Struct("!Q")
MAX_REPLY_HEADER = 1 << 16
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class KernelError(RuntimeError):
    """A kernel failed in the kernel process (its error, in words), or the kernel process ended."""


class Kernels:
    """The grading process's end of its kernel process (``start``)."""

    def __init__(self, channel, pid):
        self._channel, self._pid = channel, pid

    def jit(self, fn):
        """``@triton.jit`` for graded code: the kernel ``fn`` as a ``Kernel`` the kernel process runs.
        It reads the function's code and source (a reader the grading process's audit hook allows,
        ``harness.watch``), once: a launch reads neither."""
        if type(fn) is not types.FunctionType:
            raise TypeError("triton.jit takes a function")
        lines, first = inspect.getsourcelines(fn)
        return Kernel(self, fn, inspect.signature(fn), {"text": textwrap.dedent("".join(lines)), "first": first,
                                                         "name": fn.__name__, "filename": fn.__code__.co_filename})

    def launch(self, kernel, grid, args, kwargs):
        import torch

        storages, keys = [], {}

        def encoded(value):
            if type(value) in (torch.Tensor, torch.nn.Parameter):
                storage = value.untyped_storage()
                if storage.data_ptr() not in keys:
                    keys[storage.data_ptr()] = len(storages)
                    storages.append(torch.empty(0, dtype=torch.uint8, device=value.device).set_(storage))
                return ("tensor", keys[storage.data_ptr()], str(value.dtype).removeprefix("torch."),
                        value.storage_offset(), tuple(value.shape), value.stride())
            if type(value) in (int, float, bool, type(None)):
                return ("value", value)
            raise TypeError(f"a kernel takes torch tensors and numbers, not {type(value).__name__}")

        request = {**kernel._source, "grid": grid, "args": [encoded(a) for a in args],
                   "kwargs": {name: encoded(value) for name, value in kwargs.items()},
                   "storages": [[str(s.device), s.numel()] for s in storages]}
        try:
            _send(self._channel, json.dumps(request).encode())
            for storage in storages:
                self._channel.sendall(storage.cpu().numpy().tobytes())
            header = _receive(self._channel, MAX_REPLY_HEADER)
            reply = json.loads(header)
            if type(reply) is not dict or type(reply.get("error")) not in (str, type(None)):
                raise ValueError("not a reply")
            if reply["error"] is not None:
                raise KernelError(reply["error"][:2000])
            for storage in storages:
                data = _exactly(self._channel, storage.numel())
                if storage.numel():
                    storage.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
        except (OSError, ValueError, EOFError) as error:
            raise KernelError(f"the kernel process ended ({type(error).__name__})") from None

    def close(self):
        """End the kernel process, and reap it."""
        os.kill(self._pid, signal.SIGKILL)
        os.waitpid(self._pid, 0)


class Kernel:
    """A learner's ``@triton.jit`` kernel in the grading process: ``kernel[grid](*args, **kwargs)``
    runs it in the kernel process; ``fn`` is the function, as Triton's kernels have it; ``source``
    what the kernel process compiles (its text, name, file name and first line)."""

    def __init__(self, kernels, fn, signature, source):
        self._kernels, self.fn, self._signature, self._source = kernels, fn, signature, source

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            sizes = grid(self._signature.bind(*args, **kwargs).arguments) if callable(grid) else grid
            if type(sizes) is not tuple or not 1 <= len(sizes) <= 3 or any(type(size) is not int for size in sizes):
                raise TypeError("a kernel's grid is a tuple of 1 to 3 ints (or a function that returns one)")
            self._kernels.launch(self, sizes, args, kwargs)
        return launch


def prepare():
    """In the grading server, once: where no GPU can be (a CPU build of torch, no NVIDIA device),
    Triton's interpreter runs the kernels, and importing Triton now, with ``TRITON_INTERPRET`` set
    first (its language's own kernels, ``tl.max``'s among them, read it as they are made), spares
    every job and its kernel process the import. Elsewhere the kernel process decides (``_serve``)."""
    import torch

    if torch.version.cuda is None or not os.path.exists("/dev/nvidiactl"):
        os.environ["TRITON_INTERPRET"] = "1"
        importlib.import_module("triton.language")


def start():
    """Fork the kernel process; in the grading process, its ``Kernels``. The child closes every file
    descriptor but its end of the socket (the job's cells, not yet read, and its results pipe among
    them) before it does anything else, and dies with the grading process (a kernel that never ends
    included)."""
    ours, theirs = socket.socketpair()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        theirs.close()
        return Kernels(ours, pid)
    try:
        keep = theirs.fileno()
        os.closerange(0, keep)
        os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == parent:  # else the grading process died before that
            _serve(theirs)
    finally:
        os._exit(0)


def _serve(channel):
    """The kernel process: run each launch it is sent, until the socket closes."""
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"  # no GPU: Triton's interpreter runs the kernels
    import triton
    import triton.language as tl

    defined = {}
    while True:
        try:
            request = json.loads(_receive(channel, None))
            data = [_exactly(channel, size) for _, size in request["storages"]]
        except (OSError, EOFError, ValueError):
            return
        try:
            key = (request["filename"], request["first"], request["name"], request["text"])
            if key not in defined:
                defined[key] = _define(triton, tl, *key)
            storages = [_storage(torch, device, raw) for (device, _), raw in zip(request["storages"], data)]

            def decoded(value):
                if value[0] == "value":
                    return value[1]
                _, index, dtype, offset, shape, stride = value
                tensor = torch.empty(0, dtype=getattr(torch, dtype), device=storages[index].device)
                return tensor.set_(storages[index].untyped_storage(), offset, shape, stride)

            args = [decoded(a) for a in request["args"]]
            kwargs = {name: decoded(value) for name, value in request["kwargs"].items()}
            defined[key][tuple(request["grid"])](*args, **kwargs)
            reply, data = {"error": None}, [s.cpu().numpy().tobytes() for s in storages]
        except Exception as error:  # noqa: BLE001 - the kernel's error is its result
            reply, data = {"error": f"{type(error).__name__}: {error}"}, []
        try:
            _send(channel, json.dumps(reply).encode())
            for chunk in data:
                channel.sendall(chunk)
        except OSError:
            return


def _define(triton, tl, filename, first, name, text):
    """The kernel ``name`` from its text, in a fresh namespace of ``triton`` and ``tl``; its lines
    keep their numbers in the learner's cell, and ``linecache`` holds them for Triton (which reads
    a kernel's source with ``inspect``)."""
    import ast
    import linecache

    source = "\n" * (first - 1) + text
    tree = ast.parse(source)
    (definition,) = tree.body
    definition.decorator_list = []  # @triton.jit: applied here
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"triton": triton, "tl": tl}
    exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - the kernel process is where kernels run
    return triton.jit(namespace[name])


def _storage(torch, device, data):
    """A storage's bytes, as a uint8 tensor of its own (aligned as any allocation) on ``device``."""
    storage = torch.empty(len(data), dtype=torch.uint8, device=device)
    if data:
        storage.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    return storage


def _send(channel, payload):
    channel.sendall(HEADER.pack(len(payload)) + payload)


def _receive(channel, limit):
    (size,) = HEADER.unpack(_exactly(channel, HEADER.size))
    if limit is not None and size > limit:
        raise ValueError("a reply's header is too long")
    return _exactly(channel, size)


def _exactly(channel, size):
    parts = []
    while size:
        part = channel.recv(min(size, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        size -= len(part)
    return b"".join(parts)
