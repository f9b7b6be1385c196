"""The parts of minigrad a learner writes: regions of the reference code marked

    # BEGIN EXERCISE <n>
    def or class ...
    # END EXERCISE <n>

From one region come the solution cell (signatures and docstrings kept, bodies between nbgrader's
solution markers) and the stub in a staged package (bodies replaced by NotImplementedError).

A region that code of earlier exercises runs (the engine's node call, say) marks what its exercise
adds with ``# BEGIN NEW IN EXERCISE <n>`` ... ``# END NEW IN EXERCISE <n>``: before exercise n,
staged packages hold the region without those blocks (minigrad as it was before the unit), not a stub.
"""
import ast
import hashlib
import json
import re
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .inside.policy import POLICIES, POLICY_FILE

MARK = re.compile(r"^(?P<indent>[ ]*)# (?P<kind>BEGIN|END) EXERCISE (?P<exercise>\d+)\n", re.M)
NEW = re.compile(r"^[ ]*# BEGIN NEW IN EXERCISE (?P<exercise>\d+)\n(?P<code>.*?)^[ ]*# END NEW IN EXERCISE (?P=exercise)\n",
                 re.M | re.S)


@dataclass
class Part:
    exercise: int
    path: Path  # the module, relative to the package's parent
    name: str  # "Mul", "sum_to", "BackwardFunction._unpack"
    code: str  # the region, dedented, without NEW markers: the reference solution
    before: str  # the region without its NEW blocks (the code before its exercise), or None
    indent: str
    span: tuple  # (start, end) character offsets of the region, markers included


def find_parts(package):
    """All marked regions under ``package`` (a directory), in file and line order."""
    parts = []
    for path in sorted(Path(package).rglob("*.py")):
        text = path.read_text()
        begin = None
        for match in MARK.finditer(text):
            if match["kind"] == "BEGIN":
                begin = match
                continue
            code = textwrap.dedent(text[begin.end():match.start()])
            owner = _enclosing_class(text[:begin.start()], begin["indent"])
            name = _defined_name(code)
            exercise = int(begin["exercise"])
            parts.append(Part(exercise, path.relative_to(Path(package).parent), f"{owner}.{name}" if owner else name,
                              NEW.sub(lambda new: new["code"], code), _before(code, exercise, path),
                              begin["indent"], (begin.start(), match.end())))
    return parts


def _before(code, exercise, path):
    """``code`` without what its exercise adds, or None when it marks nothing new."""
    blocks = list(NEW.finditer(code))
    if not blocks:
        return None
    for block in blocks:
        if int(block["exercise"]) != exercise:
            raise ValueError(f"{path}: NEW IN EXERCISE {block['exercise']} inside a part of exercise {exercise}")
    before = NEW.sub("", code)
    ast.parse(before)
    return before


def _enclosing_class(before, indent):
    if not indent:
        return None
    classes = re.findall(rf"^{indent[:-4]}class (\w+)", before, flags=re.M)
    return classes[-1]


def _defined_name(code):
    (node,) = ast.parse(code).body
    return node.name


def _rewrite_bodies(code, body_lines):
    """``code`` with each function's statements after its docstring replaced by ``body_lines(func)``."""
    lines = code.splitlines()
    (node,) = ast.parse(code).body
    functions = [node] if isinstance(node, ast.FunctionDef) else [n for n in node.body if isinstance(n, ast.FunctionDef)]
    for func in sorted(functions, key=lambda f: f.lineno, reverse=True):
        body = func.body[1:] if _has_docstring(func) else func.body
        first, last = body[0].lineno - 1, func.end_lineno
        indent = " " * body[0].col_offset
        lines[first:last] = [indent + line if line else line for line in body_lines(func, lines[first:last], indent)]
    return "\n".join(lines) + "\n"


def _has_docstring(func):
    first = func.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def solution_cell(part):
    """The notebook cell: the skeleton, with each body between nbgrader's solution markers."""
    def mark(func, body, indent):
        return ["### BEGIN SOLUTION", *(line[len(indent):] for line in body), "### END SOLUTION"]
    return _rewrite_bodies(part.code, mark).rstrip("\n")


def stub(part):
    """The part the learner has to write: signatures and docstrings, bodies that raise."""
    message = f"{part.name} is yours to write: implement this in exercise {part.exercise}"
    return _rewrite_bodies(part.code, lambda func, body, indent: [f"raise NotImplementedError({message!r})"])


def stage_package(package, destination, current):
    """Copy ``package`` to ``destination`` with the parts of exercise ``current`` and later stubbed.

    Earlier exercises' parts stay as reference code: the learner wrote them already.
    """
    destination = Path(destination)
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(package, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    by_file = {}
    for part in find_parts(package):
        by_file.setdefault(part.path, []).append(part)
    for path, parts in by_file.items():
        target = destination / Path(*path.parts[1:])
        text = target.read_text()
        for part in reversed(parts):
            start, end = part.span
            if part.exercise < current:
                code = part.code
            elif part.exercise > current and part.before is not None:
                code = part.before
            else:
                code = stub(part)
            text = text[:start] + textwrap.indent(code, part.indent) + text[end:]
        target.write_text(text)


def exercise_specs(root):
    """The exercises' specs in the course's order (ex2 before ex10)."""
    return sorted((root / "grader" / "exercises").glob("ex*.py"), key=exercise_number)


def exercise_number(spec):
    return int(spec.stem.split("_")[0][2:])


STAGED = {"minigrad": "minigrad", "coursekit": "coursekit", "inside": "grader/inside"}
"""The folders staged beside each exercise's notebook, by name, from where in the course (minigrad with
the exercise's parts stubbed): the learner's kernel imports them, and they are all the grading
sandbox holds (``forkserver`` copies them there from the staged exercise): the engine, the course's
checks, and what runs beside learner code (``grader/inside/``)."""


def stage(root):
    """Stage each exercise's package into solutions/ and exercises/, unless the staged copies were
    made from the same sources (minigrad/, coursekit/ and grader/, checksummed into .course/staged).
    Returns whether it staged them."""
    stamp = root / ".course" / "staged"
    sources = hashlib.sha256()
    for path in sorted(path for folder in ("minigrad", "coursekit", "grader") for path in (root / folder).rglob("*.py")):
        sources.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    targets = [(root / folder / spec.stem / "minigrad", exercise_number(spec))
               for spec in exercise_specs(root) for folder in ("solutions", "exercises")]
    if stamp.exists() and stamp.read_text() == sources.hexdigest() and all(t.is_dir() for t, _ in targets):
        return False
    for target, number in targets:
        for name, source in STAGED.items():
            if name == "minigrad":
                stage_package(root / source, target, number)
            else:
                shutil.rmtree(target.parent / name, ignore_errors=True)
                shutil.copytree(root / source, target.parent / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        # graded(...) checks Validate as grading does: the grader's static check, and its run-time
        # guards with the policy of the exercise they are staged for, as data
        (target.parent / POLICY_FILE).write_text(json.dumps(POLICIES.get(target.parent.name, {})))
    stamp.parent.mkdir(exist_ok=True)
    stamp.write_text(sources.hexdigest())
    return True
