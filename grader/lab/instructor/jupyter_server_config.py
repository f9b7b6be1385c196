# The course's Validate (grader/lab/course_validate.py, beside this role's folder) replaces nbgrader's,
# and course_formgrader.py makes Formgrader's Autograde and Generate Feedback say their outcome:
# jupyter_server_config.json enables both; this makes them importable in the server, and nowhere else.
# grader/lab/labextensions holds the lab extensions: one opens the page "view feedback" points at, one
# says what a passing Validate passed (and what hidden checks are still to run).
import os
import sys

lab = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, lab)
c = get_config()  # noqa: F821
c.LabApp.extra_labextensions_path = [os.path.join(lab, "labextensions")]
