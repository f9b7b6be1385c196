"""The answer lines of the course, for the scans that look for them in what learners can read
(test_answers_stay_hidden.py: each release; test_hub.py: everything a hub learner can read).

**The answers** of exercise N: the lines the reference adds in each of its parts — the statements of
the part's bodies, which its stub replaces (of a part that earlier exercises already run, only the
lines between its ``NEW IN EXERCISE N`` markers) — and the lines between the solution markers of the
spec's ``answer`` cells. An answer that fixes code the exercise hands out, or follows a worked example
it points to (``GIVEN``), keeps only the lines it does not share with that code.

**Lines are compared normalised**: as tokens, so whitespace and comments do not count; each local
name of the reference (parameters, assigned names, nested functions) becomes one placeholder, so
that renaming variables hides no copy; attribute names, other names (modules, constants, builtins),
keywords, literals and operators are kept. A local assigned once from an attribute chain (``view =
self._view``) is also tried spelled out, as ``self._view.base`` in place of ``view.base``.

**Too generic to give anything away**: a line with fewer than ``DISTINCTIVE`` (6) tokens besides
placeholders and punctuation (``( ) [ ] { } , : . ;``). Left out: ``return self``, ``else:``,
``raise NotImplementedError(...)``, ``if x is not None:`` (4), ``x._version_counter.version += 1``
(4), ``raise RuntimeError(ERR_LEAF_INPLACE)`` (3: the error a part raises is named in its text
anyway), ``for i, (a, b) in enumerate(zip(xs, ys)):`` (4). Kept: ``ctx.save_for_backward(a if
need_b else None, b if need_a else None)`` (7), ``if view.base._requires_grad and view.base.grad_fn
is None:`` (10). Five would count idioms found all over minigrad, ``if grad.grad_fn is not None:``
and ``if self.rng is not None:``.
"""
import ast
import keyword
import re

from grader.build import ROOT
from grader.notebooks import cells_of
from grader.parts import NEW, exercise_number, exercise_specs, find_parts, solution_cell

EXERCISES = {spec.stem: exercise_number(spec) for spec in exercise_specs(ROOT)}
DISTINCTIVE = 6
PUNCTUATION = {"(", ")", "[", "]", "{", "}", ",", ":", ".", ";"}
PLACEHOLDER = "_"
TOKEN = re.compile(r"""[rRbBfFuU]{0,2}(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')  # a string
                       | \d[\w.]* | [^\W\d]\w*                             # a number, a name
                       | \*\*=? | //=? | -> | <<=? | >>=? | [-+*/%@&|^<>=!:]= | \.\.\. | \S""", re.X)
SOLUTION = re.compile(r"^[ ]*### BEGIN SOLUTION\n(.*?)^[ ]*### END SOLUTION", re.M | re.S)
# Code an exercise hands out as what an answer starts from, or follows: (file, definition or None
# for the whole file). Exercises 5, 6 and 10 have the learner fix a given function; exercise 9
# says "you write it the way the lesson's log-sum-exp is written", and gives softmax's launcher.
GIVEN = {
    "ex5_grad_modes": [("grader/exercises/ex5_grad_modes.py", "leaky_train_step")],
    "ex6_training": [("grader/exercises/ex6_training.py", "broken_fit")],
    "ex9_gpu_kernel": [("minigrad/kernels/triton_logsumexp.py", None),
                       ("minigrad/kernels/triton_softmax.py", "softmax_backward")],
    "ex10_capstone": [("grader/exercises/ex10_capstone.py", "broken_train")],
}


def local_names(code):
    """The names ``code``'s functions bind: parameters, assigned names, nested functions."""
    names = set()
    for function in ast.walk(ast.parse(code)):
        if isinstance(function, (ast.FunctionDef, ast.Lambda)):
            for node in ast.walk(function):
                if isinstance(node, ast.arg):
                    names.add(node.arg)
                elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    names.add(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.ExceptHandler)) and node is not function and node.name:
                    names.add(node.name)
    return names


def aliases(code):
    """Locals assigned once, from an attribute chain: {``view``: ``self._view``}."""
    tree = ast.parse(code)
    stored = [node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)]
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and stored.count(node.targets[0].id) == 1 and isinstance(node.value, ast.Attribute):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                found[node.targets[0].id] = ast.unparse(node.value)
    return found


def tokens(line):
    """``line``'s tokens up to a comment."""
    found = []
    for match in TOKEN.finditer(line):
        if match.group() == "#":
            break
        found.append(match.group())
    return found


def normalised(line, local):
    """``line``'s tokens, each name in ``local`` (not an attribute) as the placeholder."""
    found = tokens(line)
    return tuple(PLACEHOLDER if token in local and not keyword.iskeyword(token) and (i == 0 or found[i - 1] != ".")
                 else token for i, token in enumerate(found))


def distinctive(form):
    """Whether a normalised line holds enough to give something away (the module's docstring)."""
    return sum(token != PLACEHOLDER and token not in PUNCTUATION for token in form) >= DISTINCTIVE


def definition(path, name):
    """The text of ``name``'s top-level definition in ``path`` (the whole file for None)."""
    text = (ROOT / path).read_text()
    if name is None:
        return text
    (node,) = [node for node in ast.parse(text).body if getattr(node, "name", None) == name]
    return ast.get_source_segment(text, node)


def references():
    """(exercise number, part or answer, the lines it adds, the code they come from) of each."""
    found = []
    for part in find_parts(ROOT / "minigrad"):
        region = (ROOT / part.path).read_text()[slice(*part.span)]
        lines = ([line for block in NEW.finditer(region) for line in block["code"].splitlines()]
                 if part.before is not None else
                 [line for body in SOLUTION.findall(solution_cell(part)) for line in body.splitlines()])
        found.append((part.exercise, part.name, lines, part.code))
    for spec in exercise_specs(ROOT):
        for kind, args, body in cells_of(spec.read_text()):
            if kind == "answer":
                found.append((exercise_number(spec), args[0], [line for solution in SOLUTION.findall(body)
                                                               for line in solution.splitlines()], body))
    return found


def answers():
    """(exercise number, what, line, its normalised forms) for each distinctive line of an answer."""
    found = references()
    local = set().union(*(local_names(code) for _, _, _, code in found))
    given = {normalised(line, local) for specs in GIVEN.values() for path, name in specs
             for line in definition(path, name).splitlines()}
    numbers = {number: exercise for exercise, number in EXERCISES.items()}
    kept = []
    for number, what, lines, code in found:
        spelled = aliases(code)
        for line in lines:
            variants = {line} | {re.sub(rf"(?<![\w.]){name}\b", chain, line) for name, chain in spelled.items()}
            forms = {normalised(variant, local) for variant in variants}
            if any(distinctive(form) for form in forms) and not (numbers[number] in GIVEN and forms & given):
                kept.append((number, what, line.strip(), {form for form in forms if distinctive(form)}))
    return kept, local


ANSWERS, LOCAL = answers()
