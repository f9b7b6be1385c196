"""What grading leaves per submission: one outcome row, in the gradebook's database beside nbgrader's
tables (which hold the scores). Kept apart from the grading code, so reading it imports neither torch
nor the harness.

An outcome says whether the submission was graded or not and why, where its checks ran and what held
the learner's code; beside it, in ``grader_checks``, a graded submission's result of each check
(``Check``: what ``python -m grader report`` counts across a class, never learner text). Both are
written together, once per grading, whichever route graded it (``python -m grader
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

METADATA = sa.MetaData()
OUTCOMES = sa.Table(
    "grader_outcomes", METADATA,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("graded", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("device", sa.Text, nullable=False, default=""),
    sa.Column("sandbox", sa.Text, nullable=False, default=""),
    sa.Column("updated", sa.DateTime, nullable=False),
)
CHECKS = sa.Table(
    "grader_checks", METADATA,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("test", sa.String(128), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("hidden", sa.Boolean, nullable=False),
    sa.Column("passed", sa.Boolean, nullable=False),
    sa.Column("difference", sa.Text, nullable=False, default=""),
    sa.Column("raised", sa.Text, nullable=False, default=""),
)


@dataclass(frozen=True)
class Outcome:
    reason: str | None  # None: graded
    device: str = ""  # where the checks ran ("" when they never did)
    sandbox: str = ""  # what held the learner's code


@dataclass(frozen=True)
class Check:
    """One check of a graded submission: its test cell and place in it, its title (as torch's run
    gave it), whether it is hidden and passed; of a visible check that failed, where its results first
    differ and the type of the exception the learner's code gave there ("" for a hidden one, whose
    feedback names only its title)."""
    test: str
    position: int
    title: str
    hidden: bool
    passed: bool
    difference: str = ""
    raised: str = ""


@functools.cache
def _engine(db_url):
    """The gradebook's engine (one per process), with the outcomes' and checks' tables in it (and the
    columns the outcomes' gained since its first release)."""
    engine = sa.create_engine(db_url)
    for table in METADATA.sorted_tables:
        _change_schema(engine, sa.schema.CreateTable(table), lambda: sa.inspect(engine).has_table(table.name))
    for name in ("device", "sandbox"):
        _change_schema(engine, sa.text(f"ALTER TABLE {OUTCOMES.name} ADD COLUMN {name} TEXT NOT NULL DEFAULT ''"),
                       lambda: name in {column["name"] for column in sa.inspect(engine).get_columns(OUTCOMES.name)})
    return engine


def _change_schema(engine, statement, done):
    """Run ``statement`` unless ``done()``. Graders that open a gradebook at once each try it: those
    that find it done after failing were beaten to it, by one that did it at the same moment."""
    if done():
        return
    try:
        with engine.begin() as connection:
            connection.execute(statement)
    except sa.exc.DBAPIError:
        if not done():
            raise


def _forget(connection, exercise, student):
    for table in (OUTCOMES, CHECKS):
        connection.execute(table.delete().where((table.c.assignment == exercise) & (table.c.student == student)))


def save(db_url, exercise, student, outcome, checks=()):
    """``student``'s submission of ``exercise`` ended with ``outcome`` and, graded, with the results
    ``checks`` (replacing any before), in one transaction: a report never counts half a submission."""
    with _engine(db_url).begin() as connection:
        _forget(connection, exercise, student)
        connection.execute(OUTCOMES.insert().values(
            assignment=exercise, student=student, graded=outcome.reason is None, reason=outcome.reason or "",
            device=outcome.device, sandbox=outcome.sandbox, updated=datetime.now(timezone.utc)))
        if checks:
            connection.execute(CHECKS.insert(), [dict(vars(check), assignment=exercise, student=student)
                                                 for check in checks])


def forget(db_url, exercise, student):
    """The submission is being graded again: it has no outcome (nor checks) until this grading ends."""
    with _engine(db_url).begin() as connection:
        _forget(connection, exercise, student)


def read(db_url, exercise):
    """{student: Outcome} for every submission of ``exercise`` that has one."""
    with _engine(db_url).connect() as connection:
        rows = connection.execute(OUTCOMES.select().where(OUTCOMES.c.assignment == exercise)).fetchall()
    return {row.student: Outcome(None if row.graded else row.reason, row.device, row.sandbox) for row in rows}


def read_checks(db_url, exercise):
    """{student: [Check, ...] in their order} for every graded submission of ``exercise`` with checks."""
    with _engine(db_url).connect() as connection:
        rows = connection.execute(CHECKS.select().where(CHECKS.c.assignment == exercise)
                                  .order_by(CHECKS.c.student, CHECKS.c.test, CHECKS.c.position)).fetchall()
    checks = {}
    for row in rows:
        checks.setdefault(row.student, []).append(Check(row.test, row.position, row.title, row.hidden, row.passed,
                                                        row.difference, row.raised))
    return checks
