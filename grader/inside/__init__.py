"""What runs beside learner code: the harness (``harness.py``), the run-time guards (``guards.py``)
with their policy as data (``policy.py``), and the static check (``graded_code.py``), which Validate
applies in the learner's kernel.

This folder is copied as it is beside each exercise's staged minigrad (``parts.STAGED``), and from
there into the sandbox: it imports nothing of the rest of the grader (tests/course/test_structure.py
checks), only the standard library, RestrictedPython, torch, minigrad, coursekit and itself.
"""
