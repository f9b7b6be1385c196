"""What the class got wrong: ``python -m grader report EXERCISE``.

A score per learner says who to help; a teacher also needs *which misconception* the class holds.
For that the grader keeps, beside each graded submission's outcome, the result of each of its checks
(``kept_checks``, saved with the outcome by ``verdicts.RecordOutcome``, whichever route graded:
``records.Check``), and this report counts them across the class: per scenario, how many learners
fail it, where their results most often first differ from torch's (or what their code raised), and
the lesson section and forum question it comes from (``course/README.md``'s map from the seeds'
puzzles to lesson sections and tests). It reads the gradebook's database, so a class graded in
shards into the shared PostgreSQL gradebook reports the same.

Nothing a learner wrote is kept: a check is named by its title as torch's run gave it, a place in
its results by what torch's result holds there, an exception by a type name Python or torch's side
gives. A hidden check is kept as the feedback tells it: its title, passed or failed, nothing more.
"""
import base64
import builtins
import csv
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat

from coursekit.testing import first_difference, labelled, parts_of

from . import records
from .build import ROOT
from .verdicts import failed_checks, pointers

NOT_RUN = "did not run"
WHOLE = "the whole result"


def kept_checks(expected, actual, cells):
    """Each check of a graded submission as the gradebook keeps it (``records.Check``), from torch's
    results ``expected`` and the learner's ``actual``, as ``verdicts.compare`` judges them; ``cells``,
    the plan, names the places in a scenario's results (``verdicts.pointers``)."""
    kept = []
    for test_id, want in expected.items():
        if test_id.startswith("_"):
            continue
        hidden = test_id.endswith("-hidden")
        wrong = {index: (wanted, seen) for index, _, wanted, seen, _ in failed_checks(want, actual.get(test_id))}
        for index, (title, *_) in enumerate(want["checks"]):
            where, raised = "", ""
            if index in wrong and not hidden:
                where, raised = _first_difference(*wrong[index], pointers(cells, test_id, title)[1])
            kept.append(records.Check(test_id, index, title, hidden, index not in wrong, where, raised))
    return kept


def _first_difference(wanted, seen, labels):
    """(where a failed check's results first differ, the type of the exception the learner's code gave
    there or ""), told only in torch's terms: a key only the learner's result has is not named (its
    dict counts as where they differ), nor an exception type neither Python nor torch's side names."""
    if seen is None:
        return NOT_RUN, ""
    where, torch_part, part = first_difference(wanted, _within(wanted, seen))
    raised = ""
    if isinstance(part, (list, tuple)) and len(part) >= 2 and part[0] == "error":
        ours = isinstance(getattr(builtins, str(part[1]), None), type) or \
            isinstance(torch_part, (list, tuple)) and torch_part[:2] == part[:2]
        raised = str(part[1]) if ours else "an exception of its own class"
    return labelled(where, labels) if where else WHOLE, raised


def _within(wanted, seen):
    """``seen`` without the dict keys ``wanted`` does not have, wherever the two have the same shape."""
    if isinstance(wanted, dict) and isinstance(seen, dict):
        return {key: _within(wanted[key], value) for key, value in seen.items() if key in wanted}
    if isinstance(wanted, (list, tuple)) and type(seen) is type(wanted) and len(seen) == len(wanted):
        return type(seen)(_within(w, s) for w, s in zip(wanted, seen))
    return seen


# --- the course's map: seed puzzle -> lesson section -> graded test -----------------------------

def course_map(text):
    """[(exercise, {test ids}, {check titles}, lesson section, forum question)] from the tables of
    ``course/README.md``'s "Every seed puzzle" section: a row's last column names the graded tests
    (``ex1 `test-Mul-saved`: "title", ...``; after a ``;`` the same tests, unless it names others),
    the one three before it the lesson section, those before that the seed and its puzzle. A table
    names its unit in the heading above it; the rows of units 1-3 name their exercise."""
    entries, unit, in_table = [], "0", False
    for line in text.split("## Every seed puzzle", 1)[-1].splitlines():
        heading = re.match(r"### Units? (\d+)", line)
        if heading or not line.startswith("|"):
            unit, in_table = heading[1] if heading else unit, False
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if not in_table or not cells[0].strip("-: "):  # a table's header, or the line under it
            in_table = True
            continue
        lesson = cells[-3] if re.match(r"\d\d[ab]?\b", cells[-3]) else f"lesson {int(unit):02d} §{cells[-3]}"
        exercise, tests = f"ex{unit}", set()
        for segment in re.split(r';(?=[^"]*(?:"[^"]*"[^"]*)*$)', cells[-1]):  # a ";" outside a title
            named = re.match(r"\s*(ex\d+)\b", segment)
            exercise = named[1] if named else exercise
            tests = set(re.findall(r"`(test-[^`]+)`", segment)) or tests
            entries.append((exercise, tests, set(re.findall(r'"([^"]+)"', segment)), lesson, ": ".join(cells[:-3])))
    return entries


def lesson_of(entries, exercise, test_id, title):
    """(lesson sections, forum questions) of one scenario, each joined by "; ": the map's rows that
    name its check's title, else those that name its test."""
    number, base = exercise.split("_")[0], test_id.removesuffix("-hidden")
    found = [(title in titles, lesson, question) for named, tests, titles, lesson, question in entries
             if named == number and (base in tests or test_id in tests)]
    best = [entry for entry in found if entry[0]] or found
    return tuple("; ".join(dict.fromkeys(entry[i] for entry in best)) for i in (1, 2))


# --- the report --------------------------------------------------------------------------------

@dataclass
class Scenario:
    """One check of the exercise across the class."""
    test: str  # the test cell's grade id
    parts: list  # the parts it exercises
    title: str
    hidden: bool
    graded: int = 0  # submissions counted
    failing: list = field(default_factory=list)  # learners who fail it
    differences: Counter = field(default_factory=Counter)  # "where: raised" of each failing visible one
    lesson: str = ""
    question: str = ""

    @property
    def group(self):
        """The test, visible and hidden checks together, with the parts it exercises: the figure's groups."""
        return self.test.removesuffix("-hidden") + (f" — parts: {', '.join(self.parts)}" if self.parts else "")

    def common(self, count=3):
        """Its most common first differences: "where: Type ×n; ..." (hidden: "(hidden)")."""
        if self.hidden:
            return "(hidden)"
        return "; ".join(f"{text} ×{n}" for text, n in self.differences.most_common(count))


def scenarios(exercise, root=ROOT):
    """(the exercise's scenarios in the notebook's order, counted over every graded submission with
    kept checks; how many submissions are not graded)."""
    from .workflow import course_api

    db_url = course_api(root).coursedir.db_url
    source = nbformat.read(Path(root) / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    tests = {cell.metadata["nbgrader"]["grade_id"]: parts_of(cell.source) for cell in source.cells
             if cell.metadata.get("nbgrader", {}).get("grade")}
    order = {test: number for number, test in enumerate(tests)}
    readme = Path(root) / "course" / "README.md"  # a grading node's copy of the course may lack the lessons
    entries = course_map(readme.read_text()) if readme.exists() else []
    found = {}
    for student, checks in sorted(records.read_checks(db_url, exercise).items()):
        for check in checks:
            key = (order.get(check.test, len(order)), check.test, check.position)
            # a hidden cell names no parts: its visible one's
            parts = tests.get(check.test) or tests.get(check.test.removesuffix("-hidden"), [])
            scenario = found.setdefault(key, Scenario(check.test, parts, check.title, check.hidden))
            scenario.graded += 1
            if not check.passed:
                scenario.failing.append(student)
                if not check.hidden:
                    told = f"{check.difference}: {check.raised}" if check.raised else check.difference
                    scenario.differences[told] += 1
    for scenario in found.values():
        scenario.lesson, scenario.question = lesson_of(entries, exercise, scenario.test, scenario.title)
    not_graded = sum(outcome.reason is not None for outcome in records.read(db_url, exercise).values())
    return [found[key] for key in sorted(found)], not_graded


def _cut(text, width):
    return text if len(text) <= width else text[:width - 1] + "…"


def _failing(scenario):
    return f"{len(scenario.failing)}/{scenario.graded} ({len(scenario.failing) / max(scenario.graded, 1):.0%})"


def lines(exercise, found, not_graded):
    """The table ``report`` prints: a row per scenario, long cells cut (the CSV holds them whole)."""
    graded = max((scenario.graded for scenario in found), default=0)
    said = f"{exercise}: {graded} graded submission{'' if graded == 1 else 's'}" + \
        (f" ({not_graded} not graded, not counted)" if not_graded else "")
    if not found:
        return [f"{said}: no kept checks yet (autograde {exercise} first)"]
    header = ("test", "scenario", "failing", "most common first differences", "lesson section", "forum question")
    rows = [(scenario.test, _cut(scenario.title, 60) + " (hidden)" * scenario.hidden, _failing(scenario),
             _cut(scenario.common(2), 50), _cut(scenario.lesson, 40), _cut(scenario.question, 50))
            for scenario in found]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [said] + ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in [header, *rows]]


def write_csv(exercise, found, path):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["exercise", "test", "parts", "scenario", "hidden", "failing", "graded", "failing_percent",
                         "first_differences", "lesson_section", "forum_question"])
        for scenario in found:
            writer.writerow([exercise, scenario.test, " ".join(scenario.parts), scenario.title, scenario.hidden,
                             len(scenario.failing), scenario.graded,
                             f"{100 * len(scenario.failing) / max(scenario.graded, 1):.1f}",
                             scenario.common(len(scenario.differences)), scenario.lesson, scenario.question])


def figure(exercise, found, path):
    """A bar per scenario, the share of learners failing it, grouped under their test and its parts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(scenario.group for scenario in found))
    rows = [row for group in groups for row in [(group, None)] + [(None, s) for s in found if s.group == group]]
    plot, axes = plt.subplots(figsize=(10, 1.2 + 0.28 * len(rows)))
    positions = list(range(len(rows), 0, -1))
    for y, (group, scenario) in zip(positions, rows):
        if scenario is None:
            axes.text(0.5, y, _cut(group, 80), va="center", fontsize=8, fontweight="bold")
            continue
        rate = 100 * len(scenario.failing) / max(scenario.graded, 1)
        axes.barh(y, rate, color="tab:gray" if scenario.hidden else "tab:orange", edgecolor="black", linewidth=0.5)
        axes.text(rate + 1, y, f"{len(scenario.failing)}/{scenario.graded}", va="center", fontsize=8)
    axes.set_yticks(positions, ["" if scenario is None else _cut(scenario.title, 60) + " (hidden)" * scenario.hidden
                                for _, scenario in rows], fontsize=8)
    axes.set_ylim(0.4, len(rows) + 0.6)
    axes.set_xlim(0, 110)
    axes.set_xticks(range(0, 101, 20))
    axes.set_xlabel("learners failing the scenario (%): orange, a visible check; grey, a hidden one")
    graded = max((scenario.graded for scenario in found), default=0)
    axes.set_title(f"{exercise}: what the class got wrong ({graded} graded)", fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    plot.tight_layout()
    plot.savefig(path, dpi=110)
    plt.close(plot)


def notebook(exercise, found, said, figure_path, path):
    """The report as a notebook for the instructor's lab (File → Open from Path…): the table, then
    the figure, as outputs already there (no kernel needed to read it)."""
    def cell(text):
        return str(text).replace("|", "\\|").replace("\n", " ")

    table = ["| test | scenario | failing | most common first differences | lesson section | forum question |",
             "|---|---|---|---|---|---|"]
    table += [f"| {cell(s.test)} | {cell(s.title)}{' (hidden)' * s.hidden} | {_failing(s)} | {cell(s.common())} | "
              f"{cell(s.lesson)} | {cell(s.question)} |" for s in found]
    # the figure as the cell's output, its input folded away: the lab shows its one line as a caption
    image = nbformat.v4.new_code_cell(f"# the figure: learners failing each scenario, {Path(figure_path).name}",
                                      metadata={"jupyter": {"source_hidden": True}})
    image.outputs = [nbformat.v4.new_output("display_data", data={
        "image/png": base64.b64encode(Path(figure_path).read_bytes()).decode("ascii")})]
    made = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# {exercise}: what the class got wrong\n\n{said} Made by `./run grader "
                                      f"report {exercise}` on {datetime.now():%Y-%m-%d %H:%M}: run it again after "
                                      "grading again."),
        nbformat.v4.new_markdown_cell("\n".join(table)), image])
    # the lab's kernel, named so that opening it asks no "Select Kernel" (nothing in it needs running)
    made.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(made, path)


def report(exercise, csv_path, figure_path, notebook_path, root=ROOT):
    """The table's lines; writes the CSV, the figure and the notebook (when there is anything to count)."""
    found, not_graded = scenarios(exercise, root)
    said = lines(exercise, found, not_graded)
    if found:
        write_csv(exercise, found, csv_path)
        figure(exercise, found, figure_path)
        notebook(exercise, found, said[0] + ".", figure_path, notebook_path)
    return said
