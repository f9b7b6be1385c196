"""Graded code under run-time guards (grader/inside/guards.py): one submission per attack class, each written
so that the static check (grader/inside/graded_code.py) lets it through, each ending "not graded" with
the construct, the cell and the line it was tried at — and the honest submissions keep their grades.

Each hostile body runs inside exercise 3's ``_release_saved`` (grading runs the learner's
definitions, so hostile code hides in a function body the engine calls), then frees as the
reference does: were the guard missing, the submission would get full marks."""
import shutil

import nbformat
import pytest

from grader import verdicts
from grader.build import ROOT
from grader.inside.graded_code import definitions, violation
from support import flagged, graded_exercise, unguarded  # noqa: F401 - a fixture

EXERCISE = "ex3_freeing"
PART = "BackwardFunction-_release_saved"
RIGHT = "    if self._saved:\n        self._saved = tuple(None if s is None else _FREED for s in self._saved)\n"


@pytest.fixture(scope="module")
def exercise(tmp_path_factory):
    """(folder, source notebook, reference solutions, torch's expected results) of exercise 3."""
    return graded_exercise(tmp_path_factory.mktemp("guards"), EXERCISE)


def release_saved(body):
    """_release_saved that runs ``body`` first (lines 2 on), then frees as the reference does."""
    return "def _release_saved(self):\n" + "".join(f"    {line}\n" for line in body.splitlines()) + RIGHT


def grade(exercise, solutions):
    folder, source, reference, expected = exercise
    cells = verdicts.plan(source, {**reference, **solutions})
    return verdicts.compare(expected, verdicts.run(folder, cells, "minigrad", numbers={PART: 7}))


# By class: (the body of _release_saved, the construct named, its line in the cell)
ATTACKS = {
    # private aliases modules keep of sys, os, builtins: an open-ended graph a static check can't list
    "private-alias-of-sys": ("import collections\nmodules = collections._sys.modules", "collections._sys", 3),
    "alias-through-minigrad": ("import minigrad.engine\nuser_warnings = minigrad.engine.user_warnings",
                               "minigrad.engine.user_warnings", 3),
    "alias-of-torch-internals": ("import minigrad.function\nlibrary = minigrad.function.torch\nlibrary._refs",
                                 "minigrad.function.torch", 3),
    # strings a library evaluates
    "annotation-evaluated": ("import typing\ntyping.get_type_hints(_release_saved)", "typing.get_type_hints", 3),
    "format-reaches-an-attribute": ("'{0._data.untyped_storage}'.format(self._saved[0].tensor)", "Tensor.untyped_storage", 2),
    "format-builds-a-dunder": ("('{0._' + '_class__}').format(1)", "int.__class__", 2),
    "unbound-format": ("str.format('{0._data.untyped_storage}', self._saved[0].tensor)", "str.format", 2),
    "super-of-a-torch-class": ("import torch\ntensor = self._saved[0].tensor._data\n"
                               "super(torch.Tensor, tensor).requires_grad_", "super.requires_grad_", 4),
    # public members that are not safe: files, imports from strings, sharing memory
    "public-serialization": ("import torch\nloader = torch.serialization", "torch.serialization", 3),
    "submodule-import": ("import torch.testing", "import torch.testing", 2),
    "tensor-to-numpy": ("array = self._saved[0].tensor._data.numpy()", "Tensor.numpy", 2),
    "tensor-storage": ("storage = self._saved[0].tensor._data.untyped_storage()", "Tensor.untyped_storage", 2),
    # exceptions carry the objects they failed on
    "exception-object": ("try:\n    self.nothing_here\nexcept AttributeError as error:\n    found = error.obj",
                         "AttributeError.obj", 5),
    # writes to trusted singletons and modules, through names the static check cannot tell
    "write-anomaly-state": ("import minigrad\nstate = minigrad.grad_mode.anomaly\nstate.enabled = True",
                            "minigrad.grad_mode", 3),
    "write-module-through-a-name": ("import minigrad.engine\nengine = minigrad.engine\nengine.run_node = None",
                                    "minigrad.engine.run_node = ...", 4),
    "write-a-class": ("import minigrad\nsaved = minigrad.Tensor\nsaved.tolist = None", "minigrad.Tensor", 3),
    "write-a-saved-tensor": ("tensor = self._saved[0].tensor\ntensor.grad = None", "Tensor.grad = ...", 3),
    # the course's own helpers, and imports nothing graded needs
    "read-the-ledger": ("import minigrad.memory", "import minigrad.memory", 2),
    "import-from-private": ("from collections import _sys", "collections._sys", 2),
    # trusted code acting for the learner: minigrad beyond what the exercise needs, unbound methods
    "minigrad-beyond-the-exercise": ("import minigrad.nn", "import minigrad.nn", 2),
    "minigrad-member-beyond-the-exercise": ("import minigrad\nmodule = minigrad.nn", "minigrad.nn", 3),
    # a node minigrad built for trusted code is no ctx of the learner's: not its data, not its methods
    "write-a-trusted-node": ("self.note = 1", "SumBackward0.note = ...", 2),
    "write-a-trusted-node-method": ("self.apply = None", "SumBackward0.apply = ...", 2),
    # nor does minigrad write on it for the learner: an op's static forward takes any ctx, a private
    # method writes the state of what it is bound to (some, of a foreign object it is given)
    "trusted-op-forward": ("self._forward_cls.forward(self, None)", "Sum.forward", 2),
    "trusted-op-backward-through-super": ("op = self._forward_cls\nsuper(op, op).backward", "super.backward", 3),
    "private-method-of-a-node": ("self._save((), ())", "SumBackward0._save", 2),
    "private-method-of-a-tensor": ("self._saved[0].tensor._take_history(self, 0)", "Tensor._take_history", 2),
}
# torch's autograd doing the learner's work, by route (issue 21, item 2)
AUTOGRAD_ROUTES = {
    "functorch-private": ("import torch\ngrad = torch._functorch", "torch._functorch", 3),
    "tensor-backward": ("self._saved[0].tensor._data.sum().backward()", "Tensor.backward", 2),
    "tensor-requires-grad": ("self._saved[0].tensor._data.requires_grad_()", "Tensor.requires_grad_", 2),
    "tensor-hook": ("self._saved[0].tensor._data.register_hook(print)", "Tensor.register_hook", 2),
    "grad-mode-switch": ("import torch\ntorch.is_grad_enabled", "torch.is_grad_enabled", 3),
    "torch-function": ("import torch\nfunction = torch.nn", "torch.nn", 3),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS) + sorted(AUTOGRAD_ROUTES))
def test_an_attack_the_static_check_lets_through_ends_not_graded_and_flagged(exercise, attack):
    body, construct, line = {**ATTACKS, **AUTOGRAD_ROUTES}[attack]
    code = release_saved(body)
    assert violation(definitions(code), "cell 7") is None  # the run-time guard is what stops it
    with pytest.raises(verdicts.NotGraded) as stopped:
        grade(exercise, {PART: code})
    assert str(stopped.value) == flagged(construct, 7, line) and stopped.value.detail == f"`{construct}`"


def test_a_denial_caught_by_the_learner_still_ends_not_graded(exercise):
    code = release_saved("try:\n    import collections\n    collections._sys\nexcept BaseException:\n    pass")
    with pytest.raises(verdicts.NotGraded) as stopped:
        grade(exercise, {PART: code})
    assert str(stopped.value) == flagged("collections._sys", 7, 4) and stopped.value.detail == "`collections._sys`"


@pytest.mark.parametrize("cell, construct, line", [
    ("import torch\n\nclass Storage(torch.Tensor):\n    pass", "class Storage(Tensor)", 3),
    ("from minigrad.ops import Reshaping\n\nclass Deputy(Reshaping):\n    method = 'backward'", "import minigrad.ops", 1),
    ("class Deputy(KeyError):\n    pass", "class Deputy(KeyError)", 1),  # readable, not a base exercise 3 names
])
def test_learner_classes_derive_only_from_what_the_exercise_names(exercise, cell, construct, line):
    """A torch.Tensor subclass could pose as storage; a subclass of a minigrad op could steer the
    op's own code (``Reshaping`` calls ``getattr(storage, cls.method)``). The reason the learner
    sees names no name of theirs (the class's could carry what a hidden check did)."""
    with pytest.raises(verdicts.NotGraded) as stopped:
        grade(exercise, {PART: cell + "\n\n" + release_saved("pass")})
    assert str(stopped.value) == flagged(construct, 7, line) and stopped.value.detail == f"`{construct}`"
    assert construct.split()[1].split("(")[0] not in str(stopped.value)


def test_honest_code_keeps_its_grade(exercise):
    """The reference, and a body that uses what graded code may: private attributes of minigrad's
    objects, plain data's methods, str.format with fields, caught exceptions' args, augmented
    assignment of attributes and items."""
    honest = release_saved("counts = {'n': 0}\ncounts['n'] += len(self._saved)\n"
                           "text = '{0} of {n}'.format(self.name(), n=counts['n'])\n"
                           "try:\n    {}['x']\nexcept KeyError as error:\n    missing = error.args[0].upper()\n"
                           "import math\nsquare = math.sqrt(4.0) ** 2")
    assert all(passed for passed, _ in grade(exercise, {}).values())
    assert all(passed for passed, _ in grade(exercise, {PART: honest}).values())


def test_an_honest_mistake_is_graded_not_flagged(exercise):
    """An attribute that does not exist raises AttributeError as in Python: a wrong answer, graded."""
    wrong = release_saved("self._saved[0].no_such_thing")
    results = grade(exercise, {PART: wrong})
    assert not all(passed for passed, _ in results.values())
    assert any("AttributeError" in why for _, why in results.values())


@pytest.mark.parametrize("write", ["entry = None\nentry.value = 1", "pair = (1, 2)\npair[0] = 3"],
                         ids=["an attribute of None", "an item of a tuple"])
def test_a_write_python_itself_refuses_is_graded_not_flagged(exercise, write):
    """A write to None or a tuple fails in Python itself (AttributeError, TypeError): a holder the
    learner forgot may be None, an honest bug, which costs the checks that meet it."""
    results = grade(exercise, {PART: release_saved(write)})
    assert not all(passed for passed, _ in results.values())
    assert any("AttributeError" in why or "TypeError" in why for _, why in results.values())


NOT_ALLOWED_BUILTIN = "NameError: the builtin `id` is not allowed in graded code"


def test_a_builtin_graded_code_may_not_use_is_a_name_error_that_says_so(exercise):
    """``id`` is left out of graded code's builtins: calling it is an honest mistake, graded (not
    flagged), whose NameError says why the name is missing, not that it does not exist; the report
    shows the learner's line, not the guard's."""
    results = grade(exercise, {PART: release_saved("key = id(self)")})
    told = [why for passed, why in results.values() if not passed and "your code raised" in why]
    assert told and all(f"your code raised {NOT_ALLOWED_BUILTIN}\n" in why for why in told), told
    assert all(why.endswith("\n    in _release_saved, line 2: key = id(self)") for why in told), told


@pytest.mark.parametrize("cell", [release_saved("id = len\nkey = id(self._saved)"),
                                  "def id(node):\n    return 0\n\n\n" + release_saved("key = id(self)")],
                         ids=["a local", "a global of the cell"])
def test_a_name_graded_code_binds_itself_is_not_the_builtin(exercise, cell):
    assert all(passed for passed, _ in grade(exercise, {PART: cell}).values())


def test_validate_says_a_builtin_is_not_allowed_as_grading_does(tmp_path, monkeypatch):
    """``graded(...)`` remakes a learner's cell under the same guards in their kernel (with the grader's
    ``inside/`` and the exercise's policy staged beside minigrad, found here as the kernel finds them:
    the exercise's folder on the path)."""
    import sys

    from coursekit.testing import graded

    monkeypatch.syspath_prepend(str(ROOT / "solutions" / EXERCISE))
    cell = tmp_path / "cell.py"
    cell.write_text("def key(node):\n    return id(node)\n\n\ndef own_key(node):\n    id = len\n    return id(node)\n")
    learner = {}
    exec(compile(cell.read_text(), str(cell), "exec"), learner)  # noqa: S102 - as the kernel runs the cell
    try:
        with pytest.raises(NameError) as raised:
            graded(learner["key"])([1, 2])
        assert f"{type(raised.value).__name__}: {raised.value}" == NOT_ALLOWED_BUILTIN
        assert graded(learner["own_key"])([1, 2]) == 2
    finally:  # no later test finds the staged copy imported
        for name in [name for name in sys.modules if name.split(".")[0] == "inside"]:
            del sys.modules[name]


def test_validate_names_a_denied_construct_as_grading_does(tmp_path):
    """``graded(...)`` in the plug cells remakes the learner's definitions under the same guards in
    their kernel (inside/ is staged beside the exercise's minigrad), so Validate says what grading
    will: the construct, the cell and its line."""
    import subprocess
    import sys

    from grader.build import nbgrader_env

    folder = tmp_path / EXERCISE
    shutil.copytree(ROOT / "solutions" / EXERCISE, folder)
    path = folder / f"{EXERCISE}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    part = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == PART)
    part.source = release_saved("import collections\ncollections._sys")
    nbformat.write(notebook, path)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "validate", path.name], cwd=folder, env=nbgrader_env(ROOT),
                          capture_output=True, text=True, timeout=300)
    assert "VALIDATION FAILED" in done.stdout, done.stdout + done.stderr
    assert "`collections._sys` at the cell of _release_saved, line 3 is not allowed in graded" in done.stdout


def test_a_part_keeps_a_record_of_its_own_naming_but_sets_nothing_of_minigrads():
    """``records`` (exercises 5 and 8): a grad mode or a checkpoint's frame takes attributes of the
    learner's naming (what ``_enter`` remembers, the rerun's count), not those its class defines
    (a mode's ``_args``, its methods; a frame's methods), nor anything on the class itself; and
    exercise 8's early stop may be an ``Exception`` of the learner's own, no other exercise's."""
    import sys

    from grader.inside.guards import Denied, Guards
    from grader.inside.policy import POLICIES
    from minigrad.grad_mode import _Mode, no_grad
    from minigrad.utils.checkpoint import _Frame

    denied = []
    modes = Guards(POLICIES["ex5_grad_modes"], lambda *where: denied.append(where), set(), sys._getframe)
    mode = no_grad()
    assert modes.writable(mode, "_outer") and modes.writable(mode, "_was_grad_enabled")
    assert not any(modes.writable(mode, name) for name in ("_args", "_set", "_enter", "__call__"))
    assert not modes.writable(_Mode, "_outer")
    frames = Guards(POLICIES["ex8_checkpoint"], lambda *where: denied.append(where), set(), sys._getframe)
    frame = _Frame(len, [], {}, None)
    assert frames.writable(frame, "filled") and not frames.writable(frame, "recompute")
    assert not modes.writable(frame, "filled")  # exercise 5 keeps no record on a frame
    assert issubclass(frames.metaclass("Refilled", (Exception,), {}), Exception)
    with pytest.raises(Denied):
        Guards(POLICIES["ex3_freeing"], lambda *where: denied.append(where), set(), sys._getframe).metaclass(
            "Refilled", (Exception,), {})
    assert [(kind, construct) for kind, construct, *_ in denied] == [("base", "class Refilled(Exception)")]


def test_a_container_minigrad_keeps_is_read_only_to_graded_code():
    """A tensor's hooks, a node's metadata, an AccumulateGrad's hooks by output: graded code reading one
    gets a read-only copy (lists as tuples, dicts as mapping proxies, the containers inside frozen too),
    so that no item write, no method and no trusted function it is handed to (``heapq.heappush``)
    changes minigrad's; where the part keeps its own state in one (exercise 6: an optimizer's), the
    policy's writes give it as it is."""
    import heapq
    import sys

    import minigrad
    from grader.inside.guards import Guards
    from grader.inside.policy import POLICIES

    guarded = Guards(POLICIES["ex3_freeing"], lambda *where: None, set(), sys._getframe)
    leaf = minigrad.tensor([1.0], requires_grad=True)
    leaf.register_hook(abs)
    node = (leaf * 2).grad_fn
    hooks, metadata = guarded.getattr(leaf, "_hooks"), guarded.getattr(node, "metadata")
    by_output = guarded.getattr(node.next_functions[0][0], "_tensor_pre_hooks")
    with pytest.raises(TypeError):
        heapq.heappush(hooks, abs)
    with pytest.raises(TypeError):
        heapq.heappush(by_output[0], abs)
    with pytest.raises(AttributeError):
        guarded.getattr(hooks, "append")
    with pytest.raises(TypeError):
        guarded.write(metadata)["planted"] = 1  # Python refuses it: an honest bug's cost, not a denial
    assert leaf._hooks == [abs] and node.metadata == {} and node.next_functions[0][0]._tensor_pre_hooks == {0: [abs]}
    training = Guards(POLICIES["ex6_training"], lambda *where: None, set(), sys._getframe)
    optimizer = minigrad.optim.SGD([leaf], lr=0.1)
    assert training.getattr(optimizer, "state") is optimizer.state
    assert training.getattr(optimizer, "param_groups") is optimizer.param_groups


# The second layer: the grading process's audit hook (harness.watch), tested with the guards off —
# the learner's cells compiled as plain Python, in a namespace with every builtin.
AUDITED = {  # (the body of _release_saved, the audited event, its line in the cell)
    "exec-of-text": ("exec('found = 1')", "compile", 2),
    "compile": ("code = compile('1', 'mine', 'eval')", "compile", 2),
    "import-a-new-module": ("import wave", "import wave", 2),
    "open-a-file": ("open('/etc/hostname').read()", "open /etc/hostname", 2),
    "ctypes": ("import ctypes\nctypes.CDLL(None)", "ctypes.dlopen", 3),
    "sys-getframe": ("import sys\nsys._getframe(0).f_back", "sys._getframe", 3),
    "traceback-frame": ("try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    error.__traceback__.tb_frame",
                        "object.__getattr__", 5),
    "generator-frame": ("def walk():\n    yield\nwalk().gi_frame", "object.__getattr__", 4),
    "code-object": ("_release_saved.__code__", "object.__getattr__", 2),
    "os-system": ("import os\nos.system('true')", "os.system", 3),
    "gc-walk": ("import gc\ngc.get_objects()", "gc.get_objects", 3),
    "caught": ("try:\n    open('/etc/hostname')\nexcept BaseException:\n    pass", "open /etc/hostname", 3),
}


@pytest.mark.parametrize("attack", sorted(AUDITED))
def test_with_the_guards_off_the_audit_hook_ends_an_escape_not_graded(exercise, unguarded, attack):
    body, event, line = AUDITED[attack]
    with pytest.raises(verdicts.NotGraded) as stopped:
        grade(exercise, {PART: release_saved(body)})
    assert str(stopped.value) == (f"graded code {verdicts.DENIALS['audit']} at cell 7 line {line} "
                                  "(flagged: tried while it ran)")
    assert stopped.value.detail == f"`{event}`"


def test_with_the_guards_off_honest_code_keeps_its_grade_under_the_audit_hook(exercise, unguarded):
    """What honest checks raise (torch's lazy CUDA calls read the stack, the report of what the
    learner's code raised reads its traceback and source lines) passes the hook."""
    assert all(passed for passed, _ in grade(exercise, {}).values())
    results = grade(exercise, {PART: release_saved("self._saved[0].no_such_thing")})
    told = [why for passed, why in results.values() if not passed]
    assert told and all(why.endswith("\n    in _release_saved, line 2: self._saved[0].no_such_thing")
                        for why in told if "your code raised" in why), told
