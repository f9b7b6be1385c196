"""The gradebook's own tables (records.py) under parallel grading: the first graders to save into a new
gradebook, or into one from before a column was added, change its schema at the same moment, and none
of them fails for it."""
import multiprocessing
import sqlite3
import time

import sqlalchemy as sa

from grader import records

GRADERS = 6


def _slow_schema_changes(conn, cursor, statement, *_):
    """Each change of the schema waits a moment first, as a loaded machine's would: without it the
    window between seeing that a table or column is missing and making it is too short to hit."""
    if statement.lstrip().startswith(("CREATE TABLE", "ALTER TABLE")):
        time.sleep(0.2)


def _save_after(barrier, db_url, student):
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", _slow_schema_changes)
    barrier.wait()  # every grader opens the gradebook at once
    records.save(db_url, "ex1_ops", student, records.Outcome(None),
                 [records.Check("test_a", 0, "a title", hidden=False, passed=True)])


def _grade_at_once(db_url):
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(GRADERS)
    graders = [context.Process(target=_save_after, args=(barrier, db_url, f"learner{i}")) for i in range(GRADERS)]
    for grader in graders:
        grader.start()
    for grader in graders:
        grader.join(60)
    assert [grader.exitcode for grader in graders] == [0] * GRADERS
    assert sorted(records.read(db_url, "ex1_ops")) == [f"learner{i}" for i in range(GRADERS)]
    assert len(records.read_checks(db_url, "ex1_ops")) == GRADERS


def test_graders_that_open_a_new_gradebook_at_once_all_save(tmp_path):
    _grade_at_once(f"sqlite:///{tmp_path / 'gradebook.db'}")


def test_graders_that_open_a_gradebook_from_before_the_outcomes_device_at_once_all_save(tmp_path):
    with sqlite3.connect(tmp_path / "gradebook.db") as connection:
        connection.execute("CREATE TABLE grader_outcomes (assignment VARCHAR(128), student VARCHAR(128), "
                           "graded BOOLEAN NOT NULL, reason TEXT NOT NULL, updated DATETIME NOT NULL, "
                           "PRIMARY KEY (assignment, student))")
    _grade_at_once(f"sqlite:///{tmp_path / 'gradebook.db'}")
    assert records.read(f"sqlite:///{tmp_path / 'gradebook.db'}", "ex1_ops")["learner0"].sandbox == ""
