"""The course's Validate button: nbgrader's Validate, reported on one screen, without blocking the server.

A Jupyter server extension that takes over nbgrader's ``/assignments/validate`` (the lab's Validate
button posts there). nbgrader's own handler runs the notebook in the server's process, so the whole
server (file saves, other notebooks) waits for it; here the same ``nbgrader.validator.Validator``
runs in a child process (``python course_validate.py NOTEBOOK`` prints its results as JSON) while
the server goes on. Its results come back as one report:

- a header: how many visible checks fail, and which parts are not written yet (solution cells that
  still hold nbgrader's ``raise NotImplementedError()``);
- each failing check as the check wrote it (``minigrad.testing.difference``: the scenario, where the
  results first differ, torch's and minigrad's values there, the learner's own exception and their
  lines), the first ones in full, the others by their first line;
- for a notebook with no checks (a lesson), that there is nothing to validate.

nbgrader's dialog is kept (its frontend is nbgrader's lab extension, not ours): it shows a failing
cell as "The following cell failed:", the cell's source, then the error as HTML. The report goes
in one such entry: the header as its source, the checks as its error, with a style that hides the
"following cell" line, which would be untrue of a header. ``nbgrader validate`` on the command line
prints the same check reports, cell by cell (nbgrader's own layout; ``Validator.width`` is set so
that it cuts none of their lines).
"""
import asyncio
import html
import json
import os
import re
import sys

LINES = 14
"""Lines of check reports that fit the dialog: reports in full while they fit, then first lines."""
NOTHING_TO_VALIDATE = ("Nothing to validate: this notebook is a lesson, not an exercise. Its predict cells "
                       "check your answers as you run them. Validate checks an exercise (Assignments tab).")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _load_jupyter_server_extension(server_app):
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler
    from tornado import web

    root = os.path.realpath(os.path.expanduser(server_app.root_dir))

    class ValidateHandler(JupyterHandler):
        @web.authenticated
        async def post(self):
            path = self.get_argument("path", None) or self.get_json_body()["path"]
            fullpath = os.path.realpath(os.path.join(root, path))
            if os.path.commonpath([fullpath, root]) != root:
                raise web.HTTPError(403, "Access denied: path outside allowed directory")
            self.finish(json.dumps(await validate(fullpath)))

    base = server_app.web_app.settings["base_url"]
    server_app.web_app.add_handlers(".*$", [(url_path_join(base, "assignments/validate"), ValidateHandler),
                                            (url_path_join(base, "nbgrader_version"), NbGraderVersionHandler)])


def _jupyter_server_extension_points():
    return [{"module": "course_validate"}]


async def validate(path):
    """What the lab's Validate shows for the notebook at ``path`` (nbgrader's response format)."""
    notebook = _read(path)
    if notebook is None or not any(_nbgrader(cell).get("grade") for cell in notebook["cells"]):
        return {"success": False, "value": NOTHING_TO_VALIDATE}
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, path, cwd=os.path.dirname(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await child.communicate()
    if child.returncode != 0:
        return {"success": False, "value": err.decode(errors="replace")[-4000:]}
    results = json.loads(out)
    if "failed" not in results:
        return {"success": True, "value": results}
    return {"success": True, "value": {"failed": [one_screen(notebook, results["failed"])]}}


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


def main(path):
    """nbgrader's Validator on ``path``, with the configuration nbgrader's handler loads; its results as JSON."""
    from jupyter_core.paths import jupyter_config_path
    from nbgrader.apps import NbGrader
    from nbgrader.validator import Validator

    app = NbGrader()
    app.config_file_paths.append([os.getcwd(), *jupyter_config_path()])
    app.load_config_file()
    json.dump(Validator(config=app.config).validate(path), sys.stdout)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
