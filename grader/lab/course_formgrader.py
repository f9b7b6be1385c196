"""Formgrader's Autograde and Generate Feedback buttons, saying what they did (the instructor's lab).

nbgrader's handlers answer with the log of the app they ran, which Formgrader's modal shows under
"Log Output": a line per file copied, with absolute paths, and never the score nor what held the
learner's code. This Jupyter server extension takes over their routes, as course_validate takes over
Validate's (extensions load in the order of their names, and tornado answers with the first route
that matches), runs the same nbgrader API, and answers with the outcome instead: for Autograde the
submission's line of ``python -m grader status``, the device its checks ran on and the sandbox; for
Generate Feedback where each page was written. A failed run keeps nbgrader's log and traceback,
which say what went wrong."""
import json
import os


def _load_jupyter_server_extension(server_app):
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.formgrader.base import BaseApiHandler, check_notebook_dir, check_xsrf
    from tornado import web

    class Handler(BaseApiHandler):
        def answer(self, result, said):
            """nbgrader's answer, with ``said()`` for its log when it succeeded."""
            if result["success"]:
                result["log"] = said()
            self.write(json.dumps(result))

    class Autograde(Handler):
        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        def post(self, exercise, student):
            self.answer(self.api.autograde(exercise, student), lambda: graded(self.coursedir, exercise, student))

    class GenerateFeedback(Handler):
        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        def post(self, exercise, student):
            self.answer(self.api.generate_feedback(exercise, student), lambda: written(self.coursedir, exercise, [student]))

    class GenerateAllFeedback(Handler):
        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        def post(self, exercise):
            self.answer(self.api.generate_feedback(exercise), lambda: written(self.coursedir, exercise))

    base = url_path_join(server_app.web_app.settings["base_url"], "formgrader/api")
    server_app.web_app.add_handlers(".*$", [
        (url_path_join(base, "submission/([^/]+)/([^/]+)/autograde"), Autograde),
        (url_path_join(base, "assignment/([^/]+)/([^/]+)/generate_feedback"), GenerateFeedback),
        (url_path_join(base, "assignment/([^/]+)/generate_feedback"), GenerateAllFeedback)])


def _jupyter_server_extension_points():
    return [{"module": "course_formgrader"}]


def graded(coursedir, exercise, student):
    """What ``status`` says of ``student``'s submission, then where its checks ran and what held its code."""
    from pathlib import Path

    from grader import records, workflow

    said = [line for line in workflow.status(exercise, Path(coursedir.root)) if line.startswith(f"{student}: ")]
    record = records.read(coursedir.db_url, exercise).get(student)
    if record is not None and record.device:
        said += [f"device: {record.device}", f"sandbox: {record.sandbox}"]
    return "\n".join(said)


def written(coursedir, exercise, students=None):
    """Where each learner's feedback page is, in the course (Release Feedback hands it out)."""
    folder = os.path.join(coursedir.root, coursedir.feedback_directory)
    if students is None:
        students = sorted(name for name in os.listdir(folder) if os.path.isdir(os.path.join(folder, name, exercise)))
    return "\n".join(f"{student}: {os.path.join(coursedir.feedback_directory, student, exercise)}/" for student in students)
