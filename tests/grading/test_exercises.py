"""Issue 3: the exercises are derived from minigrad/ and grade as intended under nbgrader's real
generate_assignment + autograde: a typical mistake -> partial credit with a message naming the
scenario. That every reference gets full marks, every untouched release zero and every kept wrong
version less than full, through the same nbgrader pipeline: test_selftest.py (the grader's selftest).
That the release hides the answers: test_answers_stay_hidden.py."""
import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest

from grader import selftest, verdicts
from grader.build import ROOT, exercise_specs, nbgrader_env
from grader.devices import grading_device
from grader.sandbox import check_available
from support import reference_solutions, submission_like

EXERCISES = [spec.stem for spec in exercise_specs(ROOT)]

# One typical mistake per exercise: (part, reference text, mistaken text, a test that must fail, its message).
MISTAKES = {
    "ex1_ops": ("save_factors", "ctx.save_for_backward(a if need_b else None, b if need_a else None)",
                "ctx.save_for_backward(a, b)", "test-Mul-saved", "'a * b, only a requires grad'"),
    "ex2_engine": ("backprop", "buffer[input_nr] = grad if buffer[input_nr] is None else buffer[input_nr] + grad",
                   "buffer[input_nr] = grad", "test-shared-node", "'a node shared by two paths'"),
    "ex3_freeing": ("BackwardFunction-_release_saved", "tuple(None if s is None else _FREED for s in self._saved)",
                    "tuple(_FREED for s in self._saved)", "test-seed-003", "'seed 003: m = k after backward'"),
    "ex4_versions": ("Tensor-_inplace", "    if not recording:\n",
                     "    if self._requires_grad and self.grad_fn is None:\n"
                     "        raise RuntimeError(ERR_LEAF_INPLACE)\n    if not recording:\n",
                     "test-leaf", "'an update under no_grad, as optimizers do'"),
    "ex5_grad_modes": ("_Mode-_exit", "_state.grad_enabled = self._was_grad_enabled", "_state.grad_enabled = True",
                       "test-nesting", "'enable_grad inside no_grad'"),
    "ex6_training": ("SGD-_update", 'state["momentum_buffer"] = grad.clone().detach()',
                     'state["momentum_buffer"] = grad.clone().detach().mul_(1 - group["dampening"])', "test-sgd-options",
                     "'SGD(momentum=0.9, dampening=0.3): the first step is not dampened'"),
    "ex7_custom_functions": ("StableLogSumExp", "return grad_output.unsqueeze(ctx.dim) * softmax, None",
                             "return grad_output * softmax, None", "test-lse",
                             "'the tutorial's randn(3, 10) over dim 1'"),
    "ex8_checkpoint": ("_Frame-unpack", "    if holder.value is None:\n        self.recompute()", "    self.recompute()",
                       "test-body-runs", "'a counter in the body: forward, backward, early stop'"),
    "ex9_gpu_kernel": ("softmax_kernel", "shift = tl.max(top, 0)", "shift = 0.0", "test-softmax_kernel",
                       "'large values'"),
    "ex10_capstone": ("fixed_train", "loss.backward()", "loss.backward(retain_graph=True)", "test-memory",
                      "'10 steps of 50: bytes held at each report'"),
}


def unmet(exercise):
    """Why ``exercise`` cannot be graded here: a module it requires is missing (exercise 9 without
    Triton), except on CI, which installs every extra; None when it can."""
    source = nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    return None if os.environ.get("CI") else verdicts.unmet_requirements(source)


GRADABLE = [exercise for exercise in EXERCISES if not unmet(exercise)]
ON_THIS_MACHINE = [pytest.param(exercise, marks=pytest.mark.skipif(bool(unmet(exercise)), reason=str(unmet(exercise))))
                   for exercise in EXERCISES]


def test_every_exercise_has_a_mistake_case():
    assert sorted(MISTAKES) == sorted(EXERCISES)


def test_derived_files_are_up_to_date():
    done = subprocess.run([sys.executable, "-m", "grader", "build", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A scratch course: nbgrader's gradebook knows the exercises, as after an instructor's generate."""
    root = tmp_path_factory.mktemp("course")
    for folder in ("minigrad", "coursekit", "grader", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    if check_available():  # no bubblewrap here: grade as plain nbgrader would, with the same pipeline
        with open(root / "grader" / "nbgrader_config.py", "a") as config:
            config.write("c.VerdictExecute.sandbox = False\n")
    _nbgrader(root, "generate_assignment", "*", "--force")  # every exercise (nbgrader globs the name)
    return root


def _nbgrader(root, *args):
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"], cwd=root,
                          env=nbgrader_env(root), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def _submission(root, exercise, student, change_solution):
    """Submit the released folder, with each solution cell's code replaced by ``change_solution(id, code)``."""
    folder = root / ".course" / "submitted" / student / exercise
    shutil.copytree(root / "exercises" / exercise, folder)
    reference = reference_solutions(root, exercise)
    path = folder / f"{exercise}.ipynb"
    submission_like(path, change_solution, reference)


def _mistaken(exercise):
    part, right, wrong, _, _ = MISTAKES[exercise]

    def change(grade_id, reference, released):
        if grade_id != part:
            return reference
        assert right in reference
        return reference.replace(right, wrong, 1)
    return change


@pytest.fixture(scope="module")
def graded(course):
    """Each exercise's typical mistake, autograded by nbgrader; returns the gradebook's scores."""
    from nbgrader.api import Gradebook

    for exercise in GRADABLE:
        _submission(course, exercise, "mistake", _mistaken(exercise))
    _nbgrader(course, "autograde", "*", "--force")
    scores = {}
    with Gradebook("sqlite:///" + str(course / ".course" / "gradebook.db")) as gradebook:
        for exercise in GRADABLE:
            submission = gradebook.find_submission(exercise, "mistake")
            scores[exercise] = (submission.score, submission.max_score)
    return scores


@pytest.mark.parametrize("exercise", ON_THIS_MACHINE)
def test_a_typical_mistake_gets_partial_credit_and_says_why(graded, course, exercise):
    score, max_score = graded[exercise]
    assert 0 < score < max_score
    _, _, _, failing_test, message = MISTAKES[exercise]
    notebook = nbformat.read(course / ".course" / "autograded" / "mistake" / exercise / f"{exercise}.ipynb", 4)
    (cell,) = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == failing_test]
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert errors and message in errors[0].evalue and "minigrad differs from torch" in errors[0].evalue



# The programs an exercise gives to fix (a training loop), and the answer cell that fixes each.
BROKEN_PROGRAMS = [("ex5_grad_modes", "leaky_train_step", "train_step"), ("ex6_training", "broken_fit", "fixed_fit"),
                   ("ex10_capstone", "broken_train", "fixed_train")]


def test_every_program_given_to_fix_is_listed():
    given = sorted((exercise, name) for exercise in EXERCISES
                   for cell in nbformat.read(ROOT / "exercises" / exercise / f"{exercise}.ipynb", as_version=4).cells
                   if not cell.metadata.get("nbgrader", {}).get("solution")
                   for name in re.findall(r"^def ((?:broken|leaky)_\w+)\(", cell.source, re.M))
    assert given == sorted((exercise, broken) for exercise, broken, _ in BROKEN_PROGRAMS)


@pytest.mark.parametrize("exercise, broken, fixed", BROKEN_PROGRAMS)
def test_the_broken_program_submitted_as_its_fix_fails_validate_and_loses_points(tmp_path, exercise, broken, fixed):
    """Issue 34: where the learner fixes a given program (a training loop), Validate's torch side is
    the reference's, not the learner's program run with torch: the program left as given fails
    Validate, as it loses points at grading."""
    if unmet(exercise):
        pytest.skip(unmet(exercise))
    release = nbformat.read(ROOT / "exercises" / exercise / f"{exercise}.ipynb", as_version=4)
    given = next(c.source for c in release.cells if f"def {broken}(" in c.source)
    program = given[given.index(f"def {broken}("):].split("\n\n\n")[0].replace(f"def {broken}(", f"def {fixed}(", 1)
    source = nbformat.read(ROOT / "solutions" / exercise / f"{exercise}.ipynb", as_version=4)
    answers = {**verdicts.solution_cells(source, without_markers=True), fixed: program}
    notebook = nbformat.from_dict(release)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in answers:
            cell.source = answers[cell.metadata["nbgrader"]["grade_id"]]
    root = tmp_path / "course"
    for folder in ("grader", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    said = selftest.validated(root, exercise, {"learner": notebook}, 1)["learner"]
    assert said and "visible checks fail" in said, said
    expected = verdicts.expected_results(ROOT / "solutions" / exercise, f"{exercise}.ipynb", tmp_path / "expected.json",
                                         grading_device(False))
    results = verdicts.compare(expected, verdicts.run(ROOT / "solutions" / exercise, verdicts.plan(source, answers),
                                                      "minigrad"))
    assert [test for test, (passed, _) in results.items() if not passed]


REJECTED_IN_KERNEL = "`import os` at the cell of _release_saved, line {line} is not allowed in graded code"


@pytest.mark.parametrize("filled, verdict", [("reference", "Success! Your notebook passes all the tests."),
                                             (None, "NotImplementedError"),
                                             ("import os", REJECTED_IN_KERNEL)],
                         ids=["implemented", "untouched", "rejected-construct"])
def test_learner_validate_on_exercise_3(course, filled, verdict):
    """What the Validate button runs (nbgrader's validator), on the learner's copy of exercise 3: a
    construct grading would reject is named, as grading names it, before the learner submits."""
    exercise = "ex3_freeing"
    learner = course / "learner" / str(filled)
    shutil.copytree(course / "exercises" / exercise, learner)
    if filled:
        _fill_in(course, exercise, learner / f"{exercise}.ipynb")
    if filled == "import os":
        notebook = nbformat.read(learner / f"{exercise}.ipynb", as_version=4)
        (cell,) = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == MISTAKES[exercise][0]]
        cell.source = cell.source.replace('"""\n', '"""\n    import os\n', 1)
        nbformat.write(notebook, learner / f"{exercise}.ipynb")
        verdict = verdict.format(line=cell.source.splitlines().index("    import os") + 1)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(learner / f"{exercise}.ipynb")],
                          cwd=learner, env=nbgrader_env(course), capture_output=True, text=True, timeout=300)
    assert verdict in done.stdout, done.stdout + done.stderr


def _fill_in(root, exercise, path):
    """The learner's work: the released notebook with each solution cell written as the reference."""
    submission_like(path, lambda grade_id, reference, released: reference, reference_solutions(root, exercise))


def test_without_triton_exercise_9_says_how_to_get_it():
    """What Validate shows where Triton is not installed: the setup cell's error names the extra
    (grading says "not graded: the exercise needs triton ...": tests/grading/test_verdicts.py)."""
    notebook = nbformat.read(ROOT / "exercises" / "ex9_gpu_kernel" / "ex9_gpu_kernel.ipynb", as_version=4)
    (setup,) = [c.source for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"]
    code = f"import sys\nsys.modules['triton'] = None  # import triton fails, as when it is not installed\n{setup}"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "solutions" / "ex9_gpu_kernel", capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: Exercise 9 needs Triton, minigrad's optional extra: pip install -e '.[kernels]' "
        "(or MINIGRAD_EXTRAS=kernels ./run lab), then restart the kernel")


def test_only_the_exercises_that_require_triton_use_it():
    """The course works without Triton: no other exercise's spec mentions it."""
    for spec in exercise_specs(ROOT):
        text = spec.read_text()
        assert ("triton" in text.lower()) == text.startswith("# %% requires triton"), spec.name


def test_the_capstone_s_hashed_key_words_are_its_key_words():
    """Exercise 10's Validate compares the hashes of a learner's words with ``HASHED_KEY_WORDS`` (so the
    release shows no key word); grading's hidden check reads the words themselves (``KEY_WORDS``, in
    the hidden block). The two must agree, and every key word must be one the check can see: lower
    case, one word or two."""
    spec = (ROOT / "grader" / "exercises" / "ex10_capstone.py").read_text()
    found = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(spec).body
             if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in
             ("SALT", "HASHED_KEY_WORDS", "KEY_WORDS")}
    assert len(found["KEY_WORDS"]) == len(found["HASHED_KEY_WORDS"]) == 5
    for words, hashes in zip(found["KEY_WORDS"], found["HASHED_KEY_WORDS"]):
        for group, hashed in zip(words, hashes):
            assert all(re.fullmatch(r"[a-z0-9_]+( [a-z0-9_]+)?", word) for word in group), group
            assert set(hashed.split()) == {
                hashlib.sha256((found["SALT"] + word).encode()).hexdigest()[:12] for word in group}, group
