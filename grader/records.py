"""What grading leaves per submission: one outcome row, in the gradebook's database beside nbgrader's
tables (which hold the scores). Kept apart from the grading code, so reading it imports neither torch
nor the harness.

An outcome says whether the submission was graded or not and why, where its checks ran and what held
the learner's code. It is written once per grading, whichever route graded it (``python -m grader
autograde``, nbgrader's own ``autograde``, Formgrader's Autograde button):
``verdicts.VerdictExecute`` when the submission cannot be graded, ``verdicts.RecordOutcome`` once
nbgrader has saved its scores, ``workflow`` when nbgrader itself failed. It is read by ``status``,
``export``, the feedback (the device), the selftest, and autograde's reruns (which grade only what
has no final outcome).
"""
import functools
from dataclasses import dataclass
from datetime import datetime, timezone

import sqlalchemy as sa

OUTCOMES = sa.Table(
    "grader_outcomes", sa.MetaData(),
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("graded", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("device", sa.Text, nullable=False, default=""),
    sa.Column("sandbox", sa.Text, nullable=False, default=""),
    sa.Column("updated", sa.DateTime, nullable=False),
)


@dataclass(frozen=True)
class Outcome:
    reason: str | None  # None: graded
    device: str = ""  # where the checks ran ("" when they never did)
    sandbox: str = ""  # what held the learner's code


@functools.cache
def _engine(db_url):
    """The gradebook's engine (one per process), with the outcomes' table in it."""
    engine = sa.create_engine(db_url)
    try:
        _make_table(engine)
    except sa.exc.DBAPIError:  # another grader made it (or a column) at the same moment: it is there now
        _make_table(engine)
    return engine


def _make_table(engine):
    OUTCOMES.create(engine, checkfirst=True)
    columns = {column["name"] for column in sa.inspect(engine).get_columns(OUTCOMES.name)}
    with engine.begin() as connection:  # a gradebook from before the table had these columns
        for name in ("device", "sandbox"):
            if name not in columns:
                connection.execute(sa.text(f"ALTER TABLE {OUTCOMES.name} ADD COLUMN {name} TEXT NOT NULL DEFAULT ''"))


def _this(exercise, student):
    return (OUTCOMES.c.assignment == exercise) & (OUTCOMES.c.student == student)


def save(db_url, exercise, student, outcome):
    """``student``'s submission of ``exercise`` ended with ``outcome`` (replacing any before)."""
    with _engine(db_url).begin() as connection:
        connection.execute(OUTCOMES.delete().where(_this(exercise, student)))
        connection.execute(OUTCOMES.insert().values(
            assignment=exercise, student=student, graded=outcome.reason is None, reason=outcome.reason or "",
            device=outcome.device, sandbox=outcome.sandbox, updated=datetime.now(timezone.utc)))


def forget(db_url, exercise, student):
    """The submission is being graded again: it has no outcome until this grading ends."""
    with _engine(db_url).begin() as connection:
        connection.execute(OUTCOMES.delete().where(_this(exercise, student)))


def read(db_url, exercise):
    """{student: Outcome} for every submission of ``exercise`` that has one."""
    with _engine(db_url).connect() as connection:
        rows = connection.execute(OUTCOMES.select().where(OUTCOMES.c.assignment == exercise)).fetchall()
    return {row.student: Outcome(None if row.graded else row.reason, row.device, row.sandbox) for row in rows}
