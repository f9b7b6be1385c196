"""The course's Validate button: nbgrader's Validate, reported on one screen, warm, without blocking the server.

A Jupyter server extension that takes over nbgrader's ``/assignments/validate`` (the lab's Validate
button posts there). nbgrader's own handler runs the notebook in a fresh kernel from the server's
own process: the whole server (saves, other notebooks) waits, and every Validate pays a kernel's
start and torch's import (about 2.5 CPU-seconds). Here a **checker** process, started when the
learner opens an exercise (a notebook beside its staged ``minigrad/``) or at the first Validate,
imports torch, IPython and nbgrader once, and later the parts of torch that torch imports on first
use once a Validate has needed them (``torch_lazy_imports``); it ends after ``IDLE`` seconds without
a Validate (it holds 200–310 MB, more than the learner's server). Each Validate is a fork of it
(``python course_validate.py --serve``) that runs the notebook's cells in an IPython shell of its own, in the
notebook's folder (its staged minigrad first on the path), and hands the notebook with its outputs
to nbgrader's ``Validator`` (``WarmValidator``: only its execution step differs), whose results come
back as JSON while the server goes on. On the hub the checker is the machine's, not the learner's:
each Validate is a fork of the zygote (``course_zygote``: one process that imported all this once for
every user, and forks as the user who asks), and a server starts a checker of its own only when
there is no zygote to ask. The results are shown as one report:

- a header: how many visible checks fail, and which parts are not written yet (solution cells that
  still hold nbgrader's ``raise NotImplementedError()``);
- each failing check as the check wrote it (``coursekit.testing.difference``: the scenario, where the
  results first differ, torch's and minigrad's values there, the learner's own exception and their
  lines), in full while they fit, then by their first line;
- when every visible check passes, not nbgrader's "Success! Your notebook passes all the tests.",
  which the hidden tests make untrue, but how many visible tests pass and, by their titles, the
  hidden checks that run only when the work is graded (``passing``). nbgrader's dialog has one fixed
  sentence for a pass; the lab extension ``minigrad-lab`` puts this one in its place,
  asking the server for it (``/minigrad/validate-summary``: the last Validate's);
- for a notebook with no checks (a lesson), that there is nothing to validate.

nbgrader's dialog is kept (its frontend is nbgrader's lab extension, not ours): it shows a failing
cell as "The following cell failed:", the cell's source, then the error as HTML. The report goes
in one such entry: the header as its source, the checks as its error, with a style that hides the
"following cell" line, which would be untrue of a header. ``nbgrader validate`` on the command line
prints the same check reports, cell by cell (nbgrader's own layout and kernel; ``Validator.width``
is set so that it cuts none of their lines), and on a pass nbgrader's own sentence.
"""
import ast
import asyncio
import contextlib
import html
import importlib
import io
import json
import os
import re
import select
import signal
import socket
import sys

LINES = 14
"""Lines of check reports that fit the dialog: reports in full while they fit, then first lines."""
NOTHING_TO_VALIDATE = ("Nothing to validate: this notebook is a lesson, not an exercise. Its predict cells "
                       "check your answers as you run them. Validate checks an exercise (Assignments tab).")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
IDLE = 600
"""Seconds a checker waits for the next Validate before it ends (the next one starts another)."""


def _load_jupyter_server_extension(server_app):
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler
    from tornado import web

    root = os.path.realpath(os.path.expanduser(server_app.root_dir))
    checker = Checker()
    last = {"summary": None}  # what the last Validate that passed says instead of nbgrader's "Success!"

    async def opened(logger, schema_id, data):
        """An exercise notebook opened: warm its checker up, for the Validate to come."""
        path = data.get("path") or ""
        if data.get("action") == "get" and path.endswith(".ipynb") and \
                os.path.isdir(os.path.join(root, os.path.dirname(path), "minigrad")):
            await checker.warm()

    server_app.event_logger.add_listener(
        schema_id="https://events.jupyter.org/jupyter_server/contents_service/v1", listener=opened)

    class ValidateHandler(JupyterHandler):
        @web.authenticated
        async def post(self):
            path = self.get_argument("path", None) or self.get_json_body()["path"]
            fullpath = os.path.realpath(os.path.join(root, path))
            if os.path.commonpath([fullpath, root]) != root:
                raise web.HTTPError(403, "Access denied: path outside allowed directory")
            answer = await validate(fullpath, checker)
            last["summary"] = answer.pop("summary", None)
            self.finish(json.dumps(answer))

    class SummaryHandler(JupyterHandler):
        @web.authenticated
        def get(self):
            self.finish(json.dumps(last))

    base = server_app.web_app.settings["base_url"]
    server_app.web_app.add_handlers(".*$", [(url_path_join(base, "assignments/validate"), ValidateHandler),
                                            (url_path_join(base, "minigrad/validate-summary"), SummaryHandler),
                                            (url_path_join(base, "nbgrader_version"), NbGraderVersionHandler)])


def _jupyter_server_extension_points():
    return [{"module": "course_validate"}]


class Checker:
    """The server's side of the checker: one Validate at a time, a line of JSON each way; a checker
    that ended (idle) or died is started again for the next Validate."""

    def __init__(self):
        self.process, self.lock = None, asyncio.Lock()

    async def warm(self):
        if os.path.exists(os.environ.get("MINIGRAD_ZYGOTE", "")):
            return  # the machine's zygote is warm for everyone
        async with self.lock:
            await self._start()

    async def _start(self):
        if self.process is None or self.process.returncode is not None:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--serve", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                limit=1 << 26)

    async def validate(self, path):
        """The checker's answer for ``path``: the machine's zygote's where there is one (the hub), else
        this server's checker's, asked twice of a checker that ended meanwhile (idle)."""
        with contextlib.suppress(KeyError, OSError):
            return await _ask_zygote(path)
        async with self.lock:
            for _ in range(2):
                await self._start()
                try:
                    self.process.stdin.write((json.dumps(path) + "\n").encode())
                    await self.process.stdin.drain()
                    line = await self.process.stdout.readline()
                except (BrokenPipeError, ConnectionResetError):
                    line = b""
                if line:
                    return json.loads(line)
                await self.process.wait()
        raise RuntimeError("the checker stopped before it answered, twice: see the server's log")


async def _ask_zygote(path):
    """``check(path)`` in a fork of the machine's zygote (``course_zygote``), as this server's user."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(os.environ["MINIGRAD_ZYGOTE"])
        request = {"job": "validate", "path": path, "cwd": os.path.dirname(path), "env": dict(os.environ)}
        socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    except BaseException:
        connection.close()
        raise
    reader, writer = await asyncio.open_unix_connection(sock=connection, limit=1 << 26)
    try:
        line = await reader.readline()
    finally:
        writer.close()
    if not line:
        raise RuntimeError("Validate's process ended before it answered: a cell may have ended it (exit(), "
                           "os._exit, a crash); run the notebook's cells to see which")
    return json.loads(line)


async def validate(path, checker):
    """What the lab's Validate shows for the notebook at ``path`` (nbgrader's response format)."""
    notebook = _read(path)
    if notebook is None or not any(_nbgrader(cell).get("grade") for cell in notebook["cells"]):
        return {"success": False, "value": NOTHING_TO_VALIDATE}
    try:
        answer = await checker.validate(path)
    except (RuntimeError, OSError, ValueError) as error:
        return {"success": False, "value": str(error)}
    if "error" in answer:
        return {"success": False, "value": answer["error"]}
    results = answer["results"]
    if "failed" not in results:
        return {"success": True, "value": results, "summary": passing(notebook)}
    return {"success": True, "value": {"failed": [one_screen(notebook, results["failed"])]}}


def passing(notebook):
    """What Validate says when every visible test passes: they pass, and the hidden checks (their
    titles, from the note the release keeps of each hidden block) run when the work is graded."""
    visible = [cell for cell in notebook["cells"]
               if _nbgrader(cell).get("grade") and not _nbgrader(cell)["grade_id"].endswith("-hidden")]
    hidden = [cell for cell in notebook["cells"] if _nbgrader(cell).get("grade_id", "").endswith("-hidden")]
    said = f"All {len(visible)} visible test{'' if len(visible) == 1 else 's'} pass."
    titles = [ast.literal_eval(line[1:].strip()) for cell in hidden for line in "".join(cell["source"]).splitlines()
              if line.startswith("#   ")]
    if hidden:
        points = sum(_nbgrader(cell).get("points", 0) for cell in hidden)
        said += (f"\n{len(titles)} hidden check{'' if len(titles) == 1 else 's'} ({points:g} point"
                 f"{'' if points == 1 else 's'}) run when you submit, not now:")
        said += "".join(f"\n  • {title}" for title in titles)
    return said


def one_screen(notebook, failed):
    """nbgrader's failed cells as one entry: the header as its source, the checks' reports as its error."""
    visible = [cell for cell in notebook["cells"]
               if _nbgrader(cell).get("grade") and not _nbgrader(cell)["grade_id"].endswith("-hidden")]
    unwritten = [_nbgrader(cell)["grade_id"].replace("-", ".") for cell in notebook["cells"]
                 if _nbgrader(cell).get("solution") and "raise NotImplementedError()" in "".join(cell["source"])]
    header = f"{len(failed)} of {len(visible)} visible checks fail."
    if unwritten:
        header += f" Not written yet: {', '.join(unwritten)}."
    shown = []
    for number, report in enumerate(_report(cell["raw_error"]) for cell in failed):
        room = LINES - len(shown) - (number < len(failed) - 1)  # the last line may have to say "and N more"
        if room < 1:
            shown.append(f"... and {len(failed) - number} more")
            break
        lines = report.splitlines()
        shown += lines if len(lines) <= room else lines[:1]
    text = "\n".join(shown)
    style = "<style>.validation-failed > div:first-child { display: none; }</style>"
    return {"source": header, "error": style + html.escape(text), "raw_error": text}


def _report(raw_error):
    """A check's report as it wrote it; any other error by its last lines."""
    text = ANSI.sub("", raw_error).strip()
    if "minigrad differs from torch" in "".join(text.splitlines()[1:2]) or text.startswith("not graded:"):
        return text
    return "\n".join(text.splitlines()[-4:])


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _read(path):
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, ValueError):
        return None


def serve():
    """The checker: import what a Validate needs once, then fork a child per notebook path read on
    standard input; the child writes the results as one line of JSON on standard output."""
    import torch  # noqa: F401 - imported once here, for every Validate's fork
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401
    from nbgrader.apps import NbGrader  # noqa: F401
    from nbgrader.validator import Validator  # noqa: F401

    results = os.fdopen(os.dup(1), "w")
    while select.select([sys.stdin], [], [], IDLE)[0]:
        line = sys.stdin.readline()
        if not line:
            break
        path = json.loads(line)
        before = set(sys.modules)
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(read_end)
            results.write(json.dumps(check(path)) + "\n")
            results.flush()
            os.write(write_end, "\n".join(torch_lazy_imports(before))[:select.PIPE_BUF].encode())
            os._exit(0)
        os.close(write_end)
        os.waitpid(child, 0)
        os.set_blocking(read_end, False)  # the fork wrote at most PIPE_BUF bytes, at once, before it ended
        try:  # (a process the cells left running may hold the pipe open: never wait for its end)
            learned = os.read(read_end, select.PIPE_BUF).decode().split()
        except BlockingIOError:
            learned = []
        os.close(read_end)
        for name in learned:  # after the answer: the learner's next Validate finds them imported
            with contextlib.suppress(Exception):
                importlib.import_module(name)


def check(path):
    """In a fork that imported torch, IPython and nbgrader: nbgrader's Validator on the notebook at
    ``path``, its cells run in this process (``run_cells``), with the config a server finds there."""
    from jupyter_core.paths import jupyter_config_path
    from nbgrader.apps import NbGrader
    from nbgrader.validator import Validator

    class WarmValidator(Validator):
        """nbgrader's Validator, whose execution step runs the cells in this process's IPython shell."""
        cell_timeout = 120

        def _preprocess(self, nb):
            return run_cells(nb, self.cell_timeout)

    nowhere = os.open(os.devnull, os.O_RDWR)
    os.dup2(nowhere, 0)  # the cells read no request, nor write into the answers
    os.dup2(nowhere, 1)
    os.chdir(os.path.dirname(path))
    app = NbGrader()
    app.config_file_paths.append([os.getcwd(), *jupyter_config_path()])
    app.load_config_file()
    validator = WarmValidator(config=app.config)
    validator.cell_timeout = app.config.Execute.get("timeout", WarmValidator.cell_timeout)
    try:
        return {"results": validator.validate(path)}
    except Exception as error:  # noqa: BLE001 - what stopped it is the answer
        return {"error": f"{type(error).__name__}: {error}"}


def torch_lazy_imports(before):
    """The torch modules this Validate imported that were not there at the fork, by the top of each
    new subtree: torch imports some parts only when first used (``backward(gradient)`` and
    ``autograd.grad`` import ``torch.fx.experimental.symbolic_shapes`` and sympy; checkpoint and
    optimizers, ``torch._dynamo``), about 0.3 and 0.9 CPU-seconds that each fork would pay again.
    The checker imports them once a Validate has shown its exercise needs them, so a checker
    holds them (about 36 and 77 MB) only for the exercises that use them."""
    new = {name for name in sys.modules if name.startswith("torch.") and name not in before}
    return sorted(name for name in new if name.rpartition(".")[0] not in new)


def run_cells(nb, timeout):
    """Run the code cells of ``nb`` as a kernel would (an IPython shell, grade cells' outputs kept as
    nbgrader reads them: errors, stderr, a result), each within ``timeout`` seconds, in this process
    (a fork: what the cells leave dies with it). The notebook's folder comes first on the path, so
    its staged minigrad is the one imported."""
    from IPython.core.interactiveshell import InteractiveShell
    from nbformat.v4 import new_output

    os.environ.update(NBGRADER_VALIDATING="1", NBGRADER_EXECUTION="validate")
    sys.path.insert(0, os.getcwd())
    sys.argv = ["validate"]
    shell = InteractiveShell.instance()

    def expired(signum, frame):
        raise TimeoutError(f"the cell ran past {timeout} seconds")

    signal.signal(signal.SIGALRM, expired)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        out, err = io.StringIO(), io.StringIO()
        signal.alarm(int(timeout))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = shell.run_cell(cell.source, store_history=False, silent=False)
        signal.alarm(0)
        # what the cell printed, as one stdout stream: nbgrader fails a cell that wrote to stderr, and
        # a warning (torch's, Triton's) is no failure to grading, which decides by the checks' results
        printed = out.getvalue() + err.getvalue()
        cell.outputs = [new_output("stream", name="stdout", text=printed)] if printed else []
        error = result.error_in_exec or result.error_before_exec
        if error is not None:
            lines = (error._render_traceback_() if hasattr(error, "_render_traceback_") else
                     shell.InteractiveTB.structured_traceback(type(error), error, error.__traceback__))
            cell.outputs.append(new_output("error", ename=type(error).__name__, evalue=str(error), traceback=lines))
        elif result.result is not None:
            cell.outputs.append(new_output("execute_result", data={"text/plain": repr(result.result)},
                                           execution_count=None))
    return nb


if __name__ == "__main__":
    serve()
