# The course's Validate (grader/lab/course_validate.py, beside this role's folder) replaces nbgrader's:
# jupyter_server_config.json enables it; this makes it importable in the server, and nowhere else.
# grader/lab/labextensions holds the lab extension minigrad-lab: "view feedback" opens the page, a
# passing Validate says what it passed (and what hidden checks are still to run), Fetch opens the notebook.
import os
import sys

lab = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, lab)
c = get_config()  # noqa: F821
c.LabApp.extra_labextensions_path = [os.path.join(lab, "labextensions")]
# No search for language servers (the course uses none): at each start it ran `npm prefix -g`, a
# Node.js process, wherever npm is installed (the hub's machine has it, for JupyterHub's proxy).
c.LanguageServerManager.autodetect = False
