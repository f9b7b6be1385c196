"""Issue 7: one module, one job, and the package's only import cycle is the inherent Tensor⇄Function."""
import ast
import re
import sys
from graphlib import CycleError, TopologicalSorter

from grader.build import ROOT

PACKAGE = ROOT / "minigrad"


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports():
    """Module -> the package modules it imports, anywhere in the file (inside functions too)."""
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                origin = node.module or ""
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    origin = ".".join(base + ([origin] if origin else []))
                # `from . import ops` imports the module ops; `from .tensor import Tensor`, the module tensor
                found |= {f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in paths else origin
                          for alias in node.names}
        graph[module] = {m for m in found if m in paths and m != module}
    return graph


def test_the_only_cycle_is_tensor_and_function():
    """Every cycle goes through function -> tensor (Function.apply wraps its result in a Tensor):
    without that one edge the import graph is acyclic."""
    graph = imports()
    assert "minigrad.tensor" in graph["minigrad.function"] and "minigrad.function" in graph["minigrad.tensor"]
    graph["minigrad.function"].discard("minigrad.tensor")
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"an import cycle besides tensor <-> function: {error.args[1]}") from None
    assert order


def test_engine_knows_nodes_only_by_their_interface():
    """The engine imports neither the ops, nor the node classes, nor Tensor (user_warnings, nothing of minigrad)."""
    assert imports()["minigrad.engine"] <= {"minigrad.broadcast", "minigrad.grad_mode", "minigrad.user_warnings"}
    assert not imports()["minigrad.user_warnings"]


def test_no_module_of_minigrad_is_over_600_lines():
    """What a learner reads stays readable: no module of minigrad over 600 lines."""
    long = {str(path.relative_to(ROOT)): n for path in (ROOT / "minigrad").rglob("*.py")
            if (n := len(path.read_text().splitlines())) > 600}
    assert not long, long


def test_architecture_names_every_module_and_only_what_exists():
    """ARCHITECTURE.md's module map is complete and true: each module of minigrad/, coursekit/ and grader/ is
    named there, and every path it names exists."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    modules = [path for folder in ("minigrad", "coursekit", "grader") for path in (ROOT / folder).rglob("*.py")
               if path.name not in ("__init__.py", "__main__.py") and "exercises" not in path.parts]
    missing = [str(path.relative_to(ROOT)) for path in modules if f"`{path.relative_to(ROOT)}`" not in text]
    assert not missing, f"ARCHITECTURE.md does not name: {missing}"
    named = re.findall(r"`((?:minigrad|coursekit|grader|course|hub)/[\w/.*-]*)`", text)
    gone = [path for path in named if not any(ROOT.glob(path.rstrip("/").replace("exN_", "ex*_")))]
    assert not gone, f"ARCHITECTURE.md names what does not exist: {gone}"


def test_what_runs_beside_learner_code_imports_nothing_of_the_grader():
    """grader/inside/ is staged beside each exercise's minigrad and copied from there into the sandbox
    (``parts.STAGED``), where the rest of the grader is not: its modules import one another
    relatively, and nothing else of the grader's, by any name it has (``grader.verdicts``,
    ``..verdicts``, or ``verdicts`` with grader/ on the path)."""
    grader = {"grader"} | {path.stem for path in (ROOT / "grader").iterdir()}
    found = []
    for path in (ROOT / "grader" / "inside").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                names = [] if node.level == 1 else ["." * node.level + (node.module or "")]
            else:
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names
                      if name.startswith("..") or name.split(".")[0] in grader]
    assert not found, found


def test_no_test_module_imports_another():
    """Tests share helpers through a support module (tests/grading/support.py; the engine's tests use
    coursekit.testing), never by importing another test module."""
    found = []
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[-1].startswith("test_")]
    assert not found, found


def test_the_engines_tests_need_only_torch():
    """tests/engine/ runs where only torch, pytest and hypothesis are installed (CI runs it so on the
    oldest torch minigrad follows, ``./run test tests/engine``): its modules and the conftest.py above
    them import the standard library, those, minigrad and coursekit.testing, nothing of the grader's or
    the course's."""
    allowed = set(sys.stdlib_module_names) | {"torch", "pytest", "hypothesis", "minigrad", "coursekit.testing",
                                              "conftest", "shim", "expected_failures", "not_ported"}
    found = []
    for path in [ROOT / "tests" / "conftest.py", *(ROOT / "tests" / "engine").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names
                      if name.split(".")[0] not in allowed and name not in allowed]
    assert not found, found


def test_the_readmes_screenshot_folders_are_in_a_clone_or_said_to_be_made_by_the_tests():
    """The browser tests write screenshots/ (git-ignored): a fresh clone has none of its folders."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "screenshots"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    for readme in (ROOT / "README.md", ROOT / "grader" / "README.md", ROOT / "ARCHITECTURE.md"):
        for folder, said in re.findall(r"`(screenshots/[^`]*)`([^).]*)", readme.read_text()):
            assert any(path.startswith(folder) for path in tracked) or said == ", which the test makes: a clone has none", \
                f"{readme.name}: `{folder}`{said}"
