"""nbgrader's configuration for the course (found through JUPYTER_CONFIG_PATH=grader, which
``./run`` and ``python -m grader`` set).

Sources (solutions + visible + hidden tests) live in solutions/, the student release in
exercises/; the gradebook, the exchange and the collected, autograded and feedback folders live
under the git-ignored .course/ at the repository root.
"""
import os
import sys

import nbgrader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the `grader` preprocessors named below, whichever way nbgrader was started
STATE = os.path.join(ROOT, ".course")
os.makedirs(STATE, exist_ok=True)  # sqlite creates the gradebook file, not its folder

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "minigrad"
c.CourseDirectory.root = ROOT
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.submitted_directory = os.path.join(".course", "submitted")
c.CourseDirectory.autograded_directory = os.path.join(".course", "autograded")
c.CourseDirectory.feedback_directory = os.path.join(".course", "feedback")
# MINIGRAD_GRADEBOOK_URL: a gradebook several machines share (PostgreSQL: grading shards), else
# SQLite in the course's state folder, where parallel graders on one machine wait their turn
c.CourseDirectory.db_url = os.environ.get("MINIGRAD_GRADEBOOK_URL") or \
    "sqlite:///" + os.path.join(STATE, "gradebook.db") + "?timeout=60"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "__pycache__", "*.pyc"]
# MINIGRAD_EXCHANGE: a shared exchange (a class on JupyterHub: hub/setup.sh), else the course's own
c.Exchange.root = os.environ.get("MINIGRAD_EXCHANGE") or os.path.join(STATE, "exchange")
# Collect takes a submission only from the account it names, and copies no link or file that is not
# the learner's own (grader/exchange.py).
c.ExchangeFactory.collect = "grader.exchange.TrustedCollect"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Deleted and copied nbgrader cells are repaired from the release (grader/repair.py) in place of
# nbgrader's DeduplicateIds and add_missing_cells, which fail on them with a KeyError.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput", "grader.repair.RestoreCells", "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells", "grader.metadata.CheckCellMetadata"]
c.RestoreCells.release_directory = os.path.join(ROOT, "exercises")
c.Execute.timeout = 120  # seconds per cell, when a learner presses Validate
c.Validator.width = 108  # a check's report has lines of up to 100 characters: `nbgrader validate` cuts none
# Autograde decides points with the verdict harness (grader/verdicts.py), in the sandbox, in place of
# executing the learner's notebook in a kernel, and records the outcome (graded, or not and why) for
# status and export; the rest is nbgrader's own pipeline. Every route to autograde runs it: our
# command line, nbgrader's, and Formgrader's Autograde button.
c.Autograde.autograde_preprocessors = [
    "grader.verdicts.VerdictExecute", "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor", "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades", "nbgrader.preprocessors.AssignLatePenalties",
    "grader.metadata.CheckCellMetadata", "grader.verdicts.RecordOutcome"]
c.VerdictExecute.course_root = ROOT
c.VerdictExecute.timeout = 30  # seconds a cell may run while graded
c.VerdictExecute.budget = 120  # seconds all its cells may run together (a reference run takes about 5)
# Learner text (markdown cells, outputs) reaches the feedback page and Formgrader, on the instructor's
# origin, only sanitised: both render with an HTMLExporter made from this config.
c.HTMLExporter.preprocessors = ["grader.feedback.SanitizeLearnerText"]
# The feedback page: nbgrader's, with tests named by their scenarios and outputs that wrap (its
# exporter is GenerateFeedback's child, so Formgrader's pages keep nbgrader's own templates).
NBGRADER_TEMPLATES = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates")
c.GenerateFeedback.HTMLExporter.template_name = "minigrad_feedback"
c.GenerateFeedback.HTMLExporter.extra_template_basedirs = [os.path.join(ROOT, "grader", "templates"), NBGRADER_TEMPLATES]
c.GenerateFeedback.HTMLExporter.extra_template_paths = [
    NBGRADER_TEMPLATES, os.path.join(NBGRADER_TEMPLATES, "..", "static", "node_modules", "bootstrap", "dist", "css")]
c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades", "grader.feedback.HideHiddenTests",
                                    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"]
