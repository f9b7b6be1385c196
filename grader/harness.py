"""Runs an exercise's checks in a fresh process and writes what each check() saw, as plain JSON data.

``python harness.py PLAN RESULTS torch|minigrad [PROGRESS]`` (cwd: the exercise folder, whose
staged minigrad is imported; PROGRESS gets the id of the cell running). The grader runs it twice: with torch and the reference solutions, and with minigrad
and the learner's definitions; it compares the two outside both processes, so nothing a learner's
code patches (torch.equal, the test helpers, IPython, builtins, sys.modules) decides a verdict.

The learner's cells are reduced to definitions first: imports, functions, classes and assignments
to plain names. Statements that would run at the top level (patches included) are dropped.
"""
import ast
import json
import os
import sys

_dumps, _write, _open, _type = json.dumps, os.write, open, type  # taken before any learner code runs
PLAIN_TYPES = (type(None), bool, int, float, str)


def definitions_only(source):
    """The source with everything but definitions removed (also inside class bodies)."""
    tree = ast.parse(source)

    def keep(node, in_class=False):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return not in_class
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return all(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod", "property")
                       for d in node.decorator_list) and _constant_defaults(node.args)
        if isinstance(node, ast.ClassDef):
            node.body = [n for n in node.body if keep(n, in_class=True)] or [ast.Pass()]
            return not node.decorator_list and all(isinstance(b, ast.Name) for b in node.bases) and not node.keywords
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return all(isinstance(t, ast.Name) for t in targets) and _is_literal(node.value)
        return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)

    tree.body = [node for node in tree.body if keep(node)]
    return ast.unparse(tree)


def _is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return node is None


def _constant_defaults(arguments):
    return all(_is_literal(d) for d in arguments.defaults + [d for d in arguments.kw_defaults if d is not None])


def strict(value):
    """Plain data of exactly the JSON types; anything else (objects faking equality) becomes a marker."""
    kind = _type(value)
    if kind in PLAIN_TYPES:
        return value
    if kind in (list, tuple):
        return [strict(v) for v in value]
    if kind is dict and all(_type(k) is str for k in value):
        return {k: strict(v) for k, v in value.items()}
    return ["not plain data", kind.__name__]


def main(plan_path, results_path, library, progress_path=None):
    sys.path.insert(0, os.getcwd())
    import minigrad
    import torch
    from minigrad.testing import plain

    lib = torch if library == "torch" else minigrad
    with _open(plan_path) as handle:
        plan = json.load(handle)
    namespace = {"__name__": "__main__"}
    results, current = {}, None

    def check(name, scenario, *args):
        try:
            value = scenario(lib, *args)
        except Exception as error:  # noqa: BLE001 - the error is the result being compared
            value = error
        if library == "minigrad" and _storage_requires_grad(value, minigrad.Tensor):
            seen = ["uses torch.autograd: a minigrad tensor's storage requires grad"]
        else:
            seen = strict(plain(value))
        results[current]["checks"].append([name, seen])

    for cell in plan:
        if progress_path:  # which cell is running, for the grader's watchdog
            with _open(progress_path, "w") as handle:
                handle.write(cell["id"])
        source = definitions_only(cell["source"]) if cell["kind"] == "solution" else cell["source"]
        if cell["kind"] == "test":
            current = cell["id"]
            results[current] = {"checks": [], "error": None}
            namespace["check"] = check
        try:
            exec(compile(source, f"<{cell['id']}>", "exec"), namespace)  # noqa: S102 - running the exercise is the point
        except BaseException as error:  # noqa: BLE001 - a failing cell is a result
            if current is not None and cell["kind"] == "test":
                results[current]["error"] = f"{_type(error).__name__}: {error}"[:2000]
    results["_device"] = device_description(torch)
    with _open(results_path, "w") as handle:
        handle.write(_dumps(results))


def device_description(torch):
    """Which device the checks ran on: tests use ``DEVICE`` (the setup cell's), CUDA when there is one."""
    if torch.cuda.is_available():
        return f"CUDA ({torch.cuda.get_device_name(0)})"
    return "CPU (no CUDA device on the grading machine)"


def _storage_requires_grad(value, tensor_type):
    """Whether a minigrad tensor in ``value`` has storage that torch's autograd tracks."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tensor_type):
            data = item._data
            if data.requires_grad or data.grad_fn is not None:
                return True
        elif _type(item) in (list, tuple):
            stack.extend(item)
        elif _type(item) is dict:
            stack.extend(item.values())
    return False


if __name__ == "__main__":
    main(*sys.argv[1:5])
