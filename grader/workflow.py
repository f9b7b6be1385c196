"""The instructor's commands, on nbgrader's Python API (NbGraderAPI): release, collect, autograde,
feedback, export, status.

What they add to nbgrader: every collected submission ends as *graded* (a score per test) or *not
graded: reason* (missing or invalid notebook, kernel died in cell N, timed out in cell N, ...),
never a silent 0.0; autograde runs submissions in parallel worker processes and shows progress.
The outcomes live in the gradebook's database, in a table of their own beside nbgrader's.
"""
import contextlib
import csv
import ctypes
import os
import re
import signal
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import nbformat
import sqlalchemy as sa

from . import build, forkserver, records
from .progress import each_exercise
from .sandbox import SLOT
from .build import ROOT
from .parts import STAGED

# nbgrader's gradebook code trips SQLAlchemy's session warnings on every read; they are harmless noise.
warnings.filterwarnings("ignore", category=sa.exc.SAWarning)

def course_api(root=ROOT, sandbox=True):
    """nbgrader's API, configured by grader/nbgrader_config.py of the course at ``root``
    (``sandbox=False``: learner code runs with the grader's rights)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(Path(root) / "grader")).load_config()
    config.VerdictExecute.sandbox = sandbox
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def _checked(result, action):
    if not result["success"]:
        raise RuntimeError(f"{action} failed:\n{result.get('error') or result.get('log')}")
    return result


def release(exercise, root=ROOT):
    """Put ``exercise`` into the exchange: released anew when its release there is missing or
    differs from exercises/ (an outdated release is replaced), else left as it is."""
    release_all(root, [exercise])


def release_all(root=ROOT, exercises=None):
    """Release each exercise (of ``exercises``, else all) whose release in the exchange is missing or
    differs from exercises/: a learner's own lab (``./run lab``) lists them all in its Assignment
    List, as after an instructor's release. The release folder is self-contained: the notebook, its
    staged minigrad and the guards Validate runs. A second or so each: it says which (stderr)."""
    build.stage(root)
    api = course_api(root)
    api.config.ExchangeReleaseAssignment.force = True  # an outdated release is replaced
    outbound = Path(api.config.Exchange.root) / api.coursedir.course_id / "outbound"

    def stale(exercise):
        released = outbound / exercise / f"{exercise}.ipynb"
        current = (Path(root) / "exercises" / exercise / f"{exercise}.ipynb").read_bytes()
        return not released.exists() or released.read_bytes() != current
    every = [spec.stem for spec in build.exercise_specs(root)]
    for exercise in each_exercise([name for name in exercises or every if stale(name)], "releasing into the exchange"):
        _checked(api.release_assignment(exercise), f"releasing {exercise}")


def register(root=ROOT, exercises=None):
    """Record in the gradebook each exercise (of ``exercises``, else all) it does not know yet (a fresh
    clone's, whose gradebook is new): nbgrader's autograde, and Formgrader's, grade only what
    generate_assignment recorded; a few seconds each, so it says which one it records (stderr).
    Returns the exercises it recorded."""
    from nbgrader.api import Gradebook, MissingEntry

    api = course_api(root)
    missing = []
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
        for exercise in [spec.stem for spec in build.exercise_specs(root)] if exercises is None else exercises:
            try:
                gradebook.find_assignment(exercise)
            except MissingEntry:
                missing.append(exercise)
    for exercise in each_exercise(missing, "recording in the gradebook"):
        build.generate(Path(root), exercise)
    build.stage(root)  # generate_assignment replaced the release folder, staged package included
    return missing


def collect(exercise, root=ROOT):
    """Take the learners' submissions from the exchange; says how many were new or newer."""
    register(root, [exercise])
    log = _checked(course_api(root).collect(exercise), f"collecting {exercise}").get("log") or ""
    new, updated = log.count("Collecting submission:"), log.count("Updating submission:")
    return f"collected {new + updated} submission{'' if new + updated == 1 else 's'} of {exercise} ({new} new, {updated} updated)"


# --- outcomes ----------------------------------------------------------------------------------

def _not_graded(api, exercise, student, reason):
    records.save(api.coursedir.db_url, exercise, student, records.Outcome(reason))


def outcomes(exercise, root=ROOT):
    """{student: None if graded else the reason it was not}."""
    return {student: outcome.reason for student, outcome in records.read(course_api(root).coursedir.db_url, exercise).items()}


# --- autograde ---------------------------------------------------------------------------------

def expected_notebooks(api, exercise):
    return sorted(p.name for p in (Path(api.coursedir.root) / api.coursedir.source_directory / exercise).glob("*.ipynb"))


def submitted_students(api, exercise):
    """Everyone with a collected submission folder for ``exercise``, graded or not."""
    submitted = Path(api.coursedir.root) / api.coursedir.submitted_directory
    return sorted(p.parent.name for p in submitted.glob(f"*/{exercise}") if p.is_dir())


def precheck(folder, notebooks):
    """Why a submission folder cannot be graded at all, or None."""
    for name in notebooks:
        path = folder / name
        if not path.exists():
            found = ", ".join(sorted(p.name for p in folder.glob("*.ipynb"))) or "no notebook"
            return f"missing notebook {name} (found: {found})"
        try:
            nbformat.validate(nbformat.reads(path.read_bytes().decode("utf-8"), as_version=4))
        except UnicodeDecodeError:
            return f"invalid notebook {name}: not UTF-8 text"
        except Exception as error:  # noqa: BLE001 - any parse or schema failure means the same here
            return f"invalid notebook {name}: {str(error).splitlines()[0][:200]}"
    return None


def _autograde_one(root, exercise, student, sandbox):
    """Worker: nbgrader's autograde of one submission (its verdicts decided by grader.verdicts, its
    outcome recorded in nbgrader's pipeline, or here when nbgrader itself failed)."""
    api = course_api(root, sandbox)
    api.coursedir.ignore = [*api.coursedir.ignore, *STAGED]  # graded from the source folder's: no copy per submission
    records.forget(api.coursedir.db_url, exercise, student)
    result = api.autograde(exercise, student, force=True, create=True)
    outcome = records.read(api.coursedir.db_url, exercise).get(student)
    if outcome is not None and (outcome.reason or result["success"]):
        return
    log = (result.get("log") or "") + (result.get("error") or "")
    saved = Path(api.coursedir.root, ".course", "logs", exercise, f"{student}.log")
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(log)
    _not_graded(api, exercise, student,
                f"autograde failed: {_error_line(log)} (nbgrader's log: {saved.relative_to(api.coursedir.root)})")


SETUP_FAILURES = ("autograde failed:", "grader error:")
"""How the reasons begin that are the grader's failures, not the learner's: a plain rerun grades those again."""

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _start_worker(grader, source, sandbox):
    """A worker's first acts. Ask the kernel to SIGKILL this worker when the grader process dies,
    even by ``kill -9`` — a worker left behind would grade for minutes with no one to record its
    results; its grading server dies with it (the sandbox runs with ``--die-with-parent``). Then
    start that server for the exercise's ``source`` folder: its import of torch runs while this
    worker imports nbgrader's."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != grader:  # the grader was already gone before the request took effect
        os._exit(1)
    with contextlib.suppress(Exception):  # a server that cannot start fails the submission that needs it, saying why
        forkserver.server(source, sandbox)


_ERROR = re.compile(r"^\s*(?:\w+\.)*(?P<line>(?P<name>[A-Z]\w*): .+)$", re.M)


def _error_line(log):
    """The exception that stopped nbgrader (a traceback's last line, ``name: message``), not its
    closing "Please see the above traceback" nor a warning."""
    errors = [m["line"] for m in _ERROR.finditer(log)
              if m["name"] != "NbGraderException" and not m["name"].endswith("Warning")]
    return errors[-1][:300] if errors else "no error message"


def available_cpus():
    """The CPUs this process may use: its affinity (a Slurm job's cpuset), within its cgroup's CPU
    quota (a container's or a pod's CPU limit), at least one."""
    cpus = len(os.sched_getaffinity(0))
    for quota_file, period_file in (("cpu.max", None), ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        with contextlib.suppress(OSError, ValueError):
            quota, *period = Path("/sys/fs/cgroup", quota_file).read_text().split()
            period = int(period[0] if period else Path("/sys/fs/cgroup", period_file).read_text())
            if quota not in ("max", "-1"):
                cpus = min(cpus, int(quota) // period)
    return max(cpus, 1)


class NotPrepared(Exception):
    """A shard started before ``prepare`` (its staging and tables would race the other shards')."""


def prepare(exercise, root=ROOT, sandbox=True):
    """What the shards of ``exercise``'s grading need, done once before they start, so that they do
    not race to do it: the staged packages, the exercise in the gradebook (nbgrader's tables and the
    outcomes'), torch's expected results in their cache (computed on this machine's grading device:
    prepare on a node like the shards')."""
    from .verdicts import prepare_expected

    register(root, [exercise])
    api = course_api(root, sandbox)
    records.read(api.coursedir.db_url, exercise)
    device = prepare_expected(api.config, exercise, expected_notebooks(api, exercise))
    count = len(submitted_students(api, exercise))
    return f"prepared {exercise}: {count} submission{'' if count == 1 else 's'}, expected results on {device}"


def _prepared(api, exercise):
    from nbgrader.api import Gradebook, MissingEntry

    if not (Path(api.coursedir.root) / api.coursedir.source_directory / exercise / "minigrad").is_dir():
        return False
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
        try:
            gradebook.find_assignment(exercise)
        except MissingEntry:
            return False
    return True


def final(reason):
    """Whether an outcome stands: graded, or not graded for the learner's doing. The grader's own
    failures ("autograde failed", "grader error") are graded again by a plain rerun."""
    return not (reason or "").startswith(SETUP_FAILURES)


def autograde(exercise, workers=None, root=ROOT, progress=print, sandbox=True, force=False, shard=None):
    """Grade every submitted folder of ``exercise`` (with ``shard`` (I, N), those at positions I, I + N,
    I + 2N, ... of their sorted names); each ends graded or not graded with a reason. Returns those
    of its submissions that still lack a final outcome (a rerun grades them).

    A rerun grades only the submissions without a final outcome: none yet (after a crash, say), or
    the grader's own failure (a setup fixed since); or all of them with ``force``. A shard expects
    ``prepare`` to have run (NotPrepared). ``workers`` defaults to the CPUs the job was given.
    Learner code runs in the sandbox; when it cannot be set up, grading refuses (SandboxUnavailable)
    unless ``sandbox=False``."""
    if sandbox:
        from .sandbox import SandboxUnavailable, check_available

        reason = check_available()
        if reason:
            raise SandboxUnavailable(f"cannot sandbox student code: {reason} (or grade with --no-sandbox)")
    api = course_api(root, sandbox)
    if shard is None:
        register(root, [exercise])  # and stages: nbgrader puts the source folder's staged minigrad beside each submission
    else:
        if not _prepared(api, exercise):
            raise NotPrepared(f"{exercise} is not prepared for shards: run `python -m grader prepare {exercise}` "
                              "once before they start")
        os.environ.setdefault(SLOT, str(shard[0] % 255 + 1))  # the workers' sandboxes: uids of this job's own
    submitted = Path(api.coursedir.root) / api.coursedir.submitted_directory
    mine = submitted_students(api, exercise)
    if shard is not None:
        mine = mine[shard[0]::shard[1]]
    finished = set() if force else {student for student, reason in outcomes(exercise, root).items() if final(reason)}
    students = [student for student in mine if student not in finished]
    notebooks = expected_notebooks(api, exercise)
    pending = []
    for student in students:
        reason = precheck(submitted / student / exercise, notebooks)
        if reason:
            _not_graded(api, exercise, student, reason)
        else:
            pending.append(student)
    if pending:
        _grade(api, exercise, root, pending, len(students), workers, sandbox, progress)
    results = outcomes(exercise, root)
    return [student for student in mine if student not in results or not final(results[student])]


def unfinished_shards(exercise, count, root=ROOT):
    """Which of ``count`` shards have submissions without a final outcome (a gather job reruns them)."""
    results = outcomes(exercise, root)
    students = submitted_students(course_api(root), exercise)
    return sorted({i % count for i, student in enumerate(students) if student not in results or not final(results[student])})


def _grade(api, exercise, root, pending, total, workers, sandbox, progress):
    """Grade ``pending`` in worker processes, saying how far it got of the ``total`` this run grades."""
    start, done = time.monotonic(), total - len(pending)
    source = Path(api.coursedir.root) / api.coursedir.source_directory / exercise
    with ProcessPoolExecutor(max_workers=workers or available_cpus(), mp_context=get_context("spawn"),
                             initializer=_start_worker, initargs=(os.getpid(), source, sandbox)) as pool:
        futures = {student: pool.submit(_autograde_one, str(root), exercise, student, sandbox) for student in pending}
        for student, future in futures.items():
            try:
                future.result()
            except Exception as error:  # noqa: BLE001 - a crashed worker is this submission's outcome
                _not_graded(api, exercise, student, f"grader error: {error}")
            done += 1
            elapsed = time.monotonic() - start
            remaining = elapsed / max(done, 1) * (total - done)
            progress(f"autograde {exercise}: {done}/{total} done, ETA {remaining:.0f} s")


# --- reports -----------------------------------------------------------------------------------

NOT_YET = "no autograde run has finished it yet"


def scores(exercise, root=ROOT):
    """One row per collected submission: student, status (graded, not graded, or not graded yet),
    score, max score, reason, the device its checks ran on, score per test."""
    from nbgrader.api import Gradebook

    api = course_api(root)
    results = records.read(api.coursedir.db_url, exercise)
    rows = []
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
        for student in sorted(set(results) | set(submitted_students(api, exercise))):
            outcome = results.get(student, records.Outcome(NOT_YET))
            reason = outcome.reason
            status = "not graded yet" if student not in results else "graded" if reason is None else "not graded"
            row = {"student": student, "exercise": exercise, "status": status, "score": "", "max_score": "",
                   "reason": reason or "", "device": outcome.device, "tests": {}}
            if reason is None:
                submission = gradebook.find_submission(exercise, student)
                row["score"], row["max_score"] = submission.score, submission.max_score
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.max_score_gradecell:
                            row["tests"][grade.name] = grade.score
            rows.append(row)
    return rows


def export(exercise, csv_path, histogram_path, root=ROOT):
    """grades.csv (reasons included) and a histogram of the graded scores."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = scores(exercise, root)
    tests = sorted({name for row in rows for name in row["tests"]})
    with open(csv_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "exercise", "status", "score", "max_score", "reason", *tests])
        for row in rows:
            writer.writerow([row["student"], row["exercise"], row["status"], row["score"], row["max_score"],
                             row["reason"], *(row["tests"].get(name, "") for name in tests)])
    graded = [row["score"] for row in rows if row["status"] == "graded"]
    top = max([row["max_score"] for row in rows if row["status"] == "graded"], default=1) or 1
    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.hist(graded, bins=min(int(top), 20) or 1, range=(0, top), color="tab:orange", edgecolor="black")
    axes.yaxis.get_major_locator().set_params(integer=True)
    not_graded = len(rows) - len(graded)
    axes.set_title(f"{exercise}: {len(graded)} graded" + (f", {not_graded} not graded" if not_graded else ""))
    axes.set_xlabel("score")
    axes.set_ylabel("submissions")
    figure.tight_layout()
    figure.savefig(histogram_path)
    plt.close(figure)


def status(exercise, root=ROOT):
    """Human-readable lines: one per submission, or one that says there is none yet."""
    rows = scores(exercise, root)
    if not rows:
        return [f"{exercise}: no submissions collected yet (learners submit from the Assignment List; "
                f"`collect {exercise}` takes theirs from the exchange)"]
    lines = []
    for row in rows:
        if row["status"] == "graded":
            lines.append(f"{row['student']}: graded {row['score']:g}/{row['max_score']:g}")
        elif row["status"] == "not graded yet":
            lines.append(f"{row['student']}: not graded yet")
        else:
            lines.append(f"{row['student']}: not graded: {row['reason']}")
    return lines


def feedback(exercise, root=ROOT):
    """Write the feedback of every graded submission and release it into the exchange, where each
    learner's Fetch Feedback (Assignment List) finds theirs; says for how many, and where."""
    api = course_api(root)
    _checked(api.generate_feedback(exercise), f"generating feedback for {exercise}")
    folder = Path(api.coursedir.root) / api.coursedir.feedback_directory
    written = sorted(path.parent.name for path in folder.glob(f"*/{exercise}"))
    said = f"wrote feedback for {len(written)} submission{'' if len(written) == 1 else 's'} of {exercise} in {folder}"
    exchange = Path(api.config.Exchange.root)
    if not exchange.is_dir():  # submissions that came by hand, not through an exchange: nowhere to release to
        return f"{said}; not released: there is no exchange at {exchange}"
    # nbgrader releases a page under a hash of the secret its submit wrote: one placed by hand has none
    by_hand = [student for student in written if not (folder / student / exercise / "submission_secret.txt").exists()]
    released = [student for student in written if student not in by_hand]
    for student in released:
        _checked(api.release_feedback(exercise, student), f"releasing {student}'s feedback of {exercise}")
    return "; ".join([said] + ["released: learners get theirs with Fetch Feedback in the Assignment List"] * bool(released)
                     + [f"not released for {', '.join(by_hand)} (not submitted through the exchange)"] * bool(by_hand))

