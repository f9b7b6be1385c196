"""``python -m grader build [--check]``: derive everything that comes from minigrad/ and the specs.

For each exercise grader/exercises/exN_name.py:
  solutions/exN_name/exN_name.ipynb   the nbgrader source notebook (parts' solutions + the spec's tests)
  exercises/exN_name/exN_name.ipynb   the student release, made by nbgrader's generate_assignment
                                      (which also records the exercise in the gradebook)
  {solutions,exercises}/exN_name/minigrad/
                                      the staged package: parts of exercise N and later are stubs
  {solutions,exercises}/exN_name/coursekit/
                                      the course's tools beside it (the checks, the pictures)
  {solutions,exercises}/exN_name/inside/
                                      what runs beside learner code (grader/inside/: the harness,
                                      the static check, the run-time guards and their policy)
  {solutions,exercises}/exN_name/policy.json
                                      the exercise's guard policy, which ``graded(...)`` applies with
                                      the static check and the guards in the learner's kernel, as
                                      grading does
  exercises/exN_name/expected.json    the reference's results of the from-reference checks, which
                                      Validate compares with (``verdicts.stage_expectations``)

The notebooks are committed; the staged packages are build outputs (git-ignored), made by
``python -m grader stage`` (``./run`` does it, and so do release and autograde).
``--check`` builds into a scratch copy and fails if any committed derived file differs.
"""
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from .notebooks import build_notebook
from . import parts, verdicts
from .inside.policy import POLICY_FILE
from .parts import STAGED, exercise_specs, find_parts

ROOT = Path(__file__).resolve().parent.parent
DERIVED = ("solutions", "exercises")


def nbgrader_env(root):
    """The environment nbgrader needs: grader/nbgrader_config.py on the Jupyter config path, and this
    Python's scripts folder first on PATH, since nbgrader starts console scripts (alembic) by name
    (so ``.venv/bin/python -m grader ...`` works without activating the venv)."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(root / "grader"), env.get("JUPYTER_CONFIG_PATH")]))
    env["PATH"] = os.pathsep.join(filter(None, [os.path.dirname(sys.executable), env.get("PATH")]))
    return env


def stage(root):
    """Stage each exercise's package beside its notebooks (``parts.stage``), then the reference's
    results of the checks Validate must not run with torch and the learner's program
    (``verdicts.stage_expectations``). Returns whether it staged anything."""
    staged = parts.stage(root)
    return bool(verdicts.stage_expectations(root)) or staged


def build(root=ROOT):
    marked = {part.name: part for part in find_parts(root / "minigrad")}
    for spec in exercise_specs(root):
        name = spec.stem
        source = root / "solutions" / name
        source.mkdir(parents=True, exist_ok=True)
        nbformat.write(build_notebook(spec.read_text(), marked), source / f"{name}.ipynb")
        generate(root, name)


def generate(root, name):
    """nbgrader's generate_assignment of exercise ``name``: its release in exercises/, and its
    notebooks, cells and points in the gradebook (which autograde and Formgrader read)."""
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force", "--log-level=ERROR"],
                   cwd=root, env=nbgrader_env(root), check=True)
    for notebook_path in (root / "exercises" / name).glob("*.ipynb"):
        _fix_cell_ids(notebook_path)


def _fix_cell_ids(path):
    """nbgrader gives cells new random ids on every run; give them back stable ones."""
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        cell.id = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell-{index}"
    nbformat.write(notebook, path)


def check(root=ROOT):
    """Build into a scratch copy; return the derived files that differ from the committed ones."""
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for folder in ("minigrad", "coursekit", "grader"):
            shutil.copytree(root / folder, scratch / folder, ignore=shutil.ignore_patterns("__pycache__"))
        build(scratch)
        return sorted(set(_differences(root, scratch)))


def _differences(root, scratch):
    for folder in DERIVED:
        committed, fresh = _files(root / folder), _files(scratch / folder)
        for relative in committed ^ fresh:
            yield f"{folder}/{relative}"
        for relative in committed & fresh:
            if not filecmp.cmp(root / folder / relative, scratch / folder / relative, shallow=False):
                yield f"{folder}/{relative}"


def _files(folder):
    """The committed derived files under a folder: not the READMEs (written by hand), nor what is
    staged beside each notebook (build outputs)."""
    staged = {(name,) for name in (*STAGED, POLICY_FILE, verdicts.EXPECTATIONS)}
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and p.name != "README.md" and p.relative_to(folder).parts[1:2] not in staged}
