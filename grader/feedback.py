"""Feedback that keeps hidden tests hidden: nbgrader's feedback shows every test cell as autograded,
hidden tests included. This preprocessor (run by GenerateFeedback, after GetGrades) replaces the
hidden part of each test cell and its outputs by "hidden test — passed/failed — N points", and
opens the feedback with the device the submission was graded on (from its record)."""
import html
import json
import re

from nbformat.v4 import new_markdown_cell, new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from .records import record_path

HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[^\n]*\n?", re.S)


class HideHiddenTests(NbGraderPreprocessor):
    course_root = Unicode(help="the course's root folder").tag(config=True)

    def preprocess(self, nb, resources):
        record = record_path(self.course_root, resources["nbgrader"]["assignment"], resources["nbgrader"]["student"])
        if record.exists():
            device = json.loads(record.read_text())["device"]
            nb.cells.insert(0, new_markdown_cell(f"*Graded on {html.escape(device)}.*"))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or "### BEGIN HIDDEN TESTS" not in cell.source:
            return cell, resources
        points = meta.get("points", 0)
        score = meta.get("score", 0)
        verdict = "passed" if score == points else "failed"
        cell.source = HIDDEN.sub(f"# hidden test — {verdict} — {points:g} point{'' if points == 1 else 's'}\n",
                                 cell.source).rstrip("\n")
        cell.outputs = [new_output("stream", name="stdout",
                                   text=f"hidden test — {verdict} — {score:g}/{points:g} points\n")]
        return cell, resources
