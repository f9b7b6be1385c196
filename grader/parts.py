"""The parts of minigrad a learner writes: regions of the reference code marked

    # BEGIN EXERCISE <n>
    def or class ...
    # END EXERCISE <n>

From one region come the solution cell (signatures and docstrings kept, bodies between nbgrader's
solution markers) and the stub in a staged package (bodies replaced by NotImplementedError).
"""
import ast
import re
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

MARK = re.compile(r"^(?P<indent>[ ]*)# (?P<kind>BEGIN|END) EXERCISE (?P<exercise>\d+)\n", re.M)

# Parts that code of earlier exercises calls: before their exercise, the staged package ships this
# behaviour (minigrad as it was before the unit) instead of a stub that raises.
BEFORE = {
    "BackwardFunction._release_saved": ("Freeing comes in exercise 3: until then nothing is freed.", "return None"),
    "BackwardFunction._unpack": ("Before exercise 3 nothing is ever freed: unpack what was saved.",
                                 "return None if saved is None else saved.unpack(self)"),
}


@dataclass
class Part:
    exercise: int
    path: Path  # the module, relative to the package's parent
    name: str  # "Mul", "sum_to", "BackwardFunction._unpack"
    code: str  # the region, dedented
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
            code = text[begin.end():match.start()]
            owner = _enclosing_class(text[:begin.start()], begin["indent"])
            name = _defined_name(textwrap.dedent(code))
            parts.append(Part(int(begin["exercise"]), path.relative_to(Path(package).parent),
                              f"{owner}.{name}" if owner else name, textwrap.dedent(code), begin["indent"],
                              (begin.start(), match.end())))
    return parts


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


def stub(part, current):
    """The part in the staged package of exercise ``current``: raising if the learner has it to
    write now or later; for parts earlier code calls, the behaviour before their exercise."""
    if part.exercise > current and part.name in BEFORE:
        doc, body = BEFORE[part.name]
        return f'{part.code.splitlines()[0]}\n    """{doc}"""\n    {body}\n'
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
            code = part.code if part.exercise < current else stub(part, current)
            text = text[:start] + textwrap.indent(code, part.indent) + text[end:]
        target.write_text(text)
