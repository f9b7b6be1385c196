"""One record per graded submission, written by the grader (``VerdictExecute``) and read by the
instructor's commands and the feedback: {"device": where the checks ran, "not_graded": the reason
or None, "tests": {test id: [passed, why]}}. Kept apart from the grading code, so reading a record
imports neither torch nor the harness."""
from pathlib import Path


def record_path(root, exercise, student):
    """Where a submission's record lies, under the course's state folder."""
    return Path(root) / ".course" / "records" / exercise / f"{student}.json"
