# The course's Validate (grader/lab/course_validate.py, beside this role's folder) replaces nbgrader's:
# jupyter_server_config.json enables it; this makes it importable in the server, and nowhere else.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
