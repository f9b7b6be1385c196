"""What grading leaves per submission, written by the grader, read by the instructor's commands and
the feedback; kept apart from the grading code, so reading either imports neither torch nor the harness.

- The record, ``.course/records/EXERCISE/STUDENT.json``: {"device": where the checks ran, "sandbox":
  what held the learner's code, "not_graded": the reason or None, "tests": {test id: [passed, why]}}.
- The outcome, in the gradebook's database beside nbgrader's tables (``grader_outcomes``): graded, or
  not graded and why. Every route to autograde writes it: ``python -m grader autograde``, nbgrader's
  own ``autograde`` and Formgrader's Autograde button (``verdicts.VerdictExecute`` and
  ``verdicts.RecordOutcome``, in nbgrader's pipeline).
"""
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa

OUTCOMES = sa.Table(
    "grader_outcomes", sa.MetaData(),
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("graded", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("updated", sa.DateTime, nullable=False),
)


def record_path(root, exercise, student):
    """Where a submission's record lies, under the course's state folder."""
    return Path(root) / ".course" / "records" / exercise / f"{student}.json"


def _engine(db_url):
    engine = sa.create_engine(db_url)
    OUTCOMES.create(engine, checkfirst=True)
    return engine


def save_outcome(db_url, exercise, student, reason):
    """Record that ``student``'s submission of ``exercise`` was graded (``reason`` None) or not, and why."""
    with _engine(db_url).begin() as connection:
        connection.execute(OUTCOMES.delete().where((OUTCOMES.c.assignment == exercise) & (OUTCOMES.c.student == student)))
        connection.execute(OUTCOMES.insert().values(assignment=exercise, student=student, graded=reason is None,
                                                    reason=reason or "", updated=datetime.now(timezone.utc)))


def read_outcomes(db_url, exercise):
    """{student: None if graded else the reason it was not}."""
    with _engine(db_url).connect() as connection:
        rows = connection.execute(OUTCOMES.select().where(OUTCOMES.c.assignment == exercise)).fetchall()
    return {row.student: None if row.graded else row.reason for row in rows}
