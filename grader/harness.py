"""Runs an exercise's checks in a process of its own and reports what each check() saw, as plain data.

``python harness.py FD`` is the grading process of a learner's submission (in the sandbox): it runs
the checks with minigrad and the learner's definitions, and nothing else — torch's side is run
by the grader, apart (``reference.py``). It reads its cells from standard input as code the grader
compiled (the grader checked the learner's definitions first, see ``minigrad/graded_code.py``): no test
text, no expected result and no file the grader trusts is ever within its reach. The learner's
definitions come with their own text, for ``inspect`` to find (Triton compiles a kernel from its
source). What it saw leaves, check by check, through the pipe ``FD``, which the grader reads while
it runs:

    ["cell", N]            cell N of the plan starts (the grader's watchdog times each cell)
    ["check", NAME, SEEN, MESSAGE]  a check of the current test cell, what it saw (plain data), and
                           whether it grades error messages word for word
    ["error", TEXT]        the current test cell raised
    ["done"]

The grader treats every message as untrusted: sizes, types and order are checked there.
"""
import json
import linecache
import marshal
import os
import sys

_dumps, _write, _type = json.dumps, os.write, type  # taken before any learner code runs
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


def serve(lib, fd):
    """Run the cells read from standard input with ``lib`` (torch or minigrad), reporting to ``fd``."""
    import minigrad
    from minigrad.testing import plain

    cells = marshal.loads(sys.stdin.buffer.read())

    def send(message):
        data = (_dumps(message) + "\n").encode()
        while data:
            data = data[_write(fd, data):]

    def check(name, scenario, *args, message=False):
        try:
            value = scenario(lib, *args)
        except Exception as error:  # noqa: BLE001 - the error is the result being compared
            value = error
        if lib is minigrad and _storage_requires_grad(value, minigrad.Tensor):
            seen = ["uses torch.autograd: a minigrad tensor's storage requires grad"]
        else:
            seen = strict(plain(value))
        send(["check", str(name), seen, message is True])

    namespace = {"__name__": "__main__"}
    for number, (kind, code, text) in enumerate(cells):
        send(["cell", number])
        if text is not None:
            linecache.cache[code.co_filename] = (len(text), None, text.splitlines(True), code.co_filename)
        if kind == "test":
            namespace["check"] = check
        try:
            exec(code, namespace)  # noqa: S102 - running the exercise is the point
        except BaseException as error:  # noqa: BLE001 - a failing cell is a result
            if kind == "test":
                send(["error", f"{_type(error).__name__}: {error}"[:2000]])
    send(["done"])


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


if __name__ == "__main__":
    import torch

    import minigrad as library

    torch.set_grad_enabled(False)  # torch's autograd does none of the learner's work (graded code can't turn it on)
    serve(library, int(sys.argv[1]))
