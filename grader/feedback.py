"""Feedback that keeps hidden tests hidden: nbgrader's feedback shows every test cell as autograded,
hidden tests included. This preprocessor (run by GenerateFeedback, after GetGrades) replaces the
hidden part of each test cell and its outputs by "hidden test — passed/failed — N points" and, when
it failed, the titles of its checks that failed (never their code, inputs or results); it names
each test by its scenarios (the names its ``check(...)`` calls give, a hidden test's from the note
above its hidden block, for the page's table of contents: templates/minigrad_feedback), and opens
the feedback with the device the submission was graded on (from its outcome, ``records``).

``SanitizeLearnerText`` runs wherever a learner's notebook becomes HTML on the instructor's side
(the feedback page, Formgrader's view: ``HTMLExporter.preprocessors``)."""
import ast
import html
import re
from urllib.parse import urlsplit

import nh3
from nbconvert.filters import markdown2html
from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell, new_output
from traitlets import Bool

from . import records

HIDDEN_START = "### BEGIN HIDDEN TESTS"
HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[^\n]*\n?", re.S)


class HideHiddenTests(Preprocessor):
    # nbconvert's Preprocessor, not nbgrader's NbGraderPreprocessor: that one redeclares
    # display_data_priority unconfigurable, so the HTMLExporter's default config for it
    # (NbConvertBase.display_data_priority) warned at every Generate Feedback.
    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        outcome = records.read(meta["db_url"], meta["assignment"]).get(meta["student"])
        if outcome is not None and outcome.device:
            nb.cells.insert(0, new_markdown_cell(f"*Graded on {html.escape(outcome.device)}.*"))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            return cell, resources
        if "### BEGIN HIDDEN TESTS" not in cell.source:
            ran = cell.metadata.get("minigrad", {}).get("checks")  # verdicts.VerdictExecute's: titles filled in
            cell.metadata["minigrad"] = {"test": "visible checks", "scenarios": ran or scenarios(cell.source)}
            return cell, resources
        failed = cell.metadata.get("minigrad", {}).get("failed checks", [])  # verdicts.VerdictExecute's
        cell.metadata["minigrad"] = {"test": "hidden checks", "scenarios": hidden_titles(cell.source)}
        points = meta.get("points", 0)
        score = meta.get("score", 0)
        verdict = "passed" if score == points else "failed"
        cell.source = HIDDEN.sub(f"# hidden test — {verdict} — {points:g} point{'' if points == 1 else 's'}\n",
                                 cell.source).rstrip("\n")
        told = "".join(f"failed: {name!r}\n" for name in failed) if verdict == "failed" else ""
        cell.outputs = [new_output("stream", name="stdout",
                                   text=f"hidden test — {verdict} — {score:g}/{points:g} points\n{told}")]
        return cell, resources


def hidden_titles(source):
    """The titles of a hidden test cell's checks, from the note above its hidden block (notebooks.py)."""
    return [ast.literal_eval(line[1:].strip()) for line in source.split(HIDDEN_START)[0].splitlines()[1:]
            if line.startswith("#   ")]


def scenarios(source):
    """The scenario names of a test cell's ``check(...)`` calls, as written (where grading did not
    record the titles as they ran)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [ast.literal_eval(node.args[0]) if isinstance(node.args[0], ast.Constant) else ast.unparse(node.args[0])
            for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"
            and node.args]


TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "pre", "code", "em", "strong", "b", "i", "ul", "ol", "li",
        "a", "blockquote", "table", "thead", "tbody", "tr", "th", "td", "img", "span", "div", "sub", "sup", "details",
        "summary"}
# class: markdown2html's code blocks are coloured by Pygments' classes (``<span class="k">``) and its
# headings carry an ``anchor-link``; no id: a learner's would clash with the page's own (``toc``).
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt"}, "*": {"class"}}
SCRIPTED = ("application/javascript", "text/javascript", "image/svg+xml")


class SanitizeLearnerText(Preprocessor):
    """Learner text as HTML without anything that runs: nbgrader's feedback and Formgrader templates
    render markdown cells and HTML outputs verbatim (nbconvert's ``sanitize_html`` holds for its own
    templates only), on the instructor's origin. Markdown cells become their HTML with only plain
    tags and attributes kept (nh3); HTML outputs likewise; script and SVG outputs are dropped."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = _clean(markdown2html(cell.source))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for kind in SCRIPTED:
                data.pop(kind, None)
            for kind in ("text/html", "text/markdown"):
                if kind in data:
                    text = "".join(data[kind]) if isinstance(data[kind], list) else data[kind]
                    data[kind] = _clean(markdown2html(text) if kind == "text/markdown" else text)
        return cell, resources


def _clean(text):
    return nh3.clean(text, tags=TAGS, attributes=ATTRIBUTES, url_schemes={"http", "https", "data"},
                     attribute_filter=_data_only_for_images)


def _data_only_for_images(tag, attribute, value):
    """nh3's schemes hold for every link: ``data:`` is kept only as an image's source (a picture
    the learner's notebook embeds), never as a link, whose page would be the learner's HTML. The URL
    is read as a browser reads it (``urlsplit`` drops tabs and newlines, and leading controls)."""
    if attribute in ("href", "src"):
        url = urlsplit(value)
        if url.scheme == "data" and not (tag == "img" and url.path.startswith("image/")):
            return None
    return value
