"""The grading process and what the grader trusts of it (grader/verdicts.py, grader/inside/harness.py), and
the static check of graded code (grader/inside/graded_code.py).

The runs here use cells the course writes (locked and test cells are never checked), so they can do
what learner code cannot: die, sleep, write to the results pipe. That is how each way a run can
end is shown to end with its reason, whatever the grading process sends."""
import importlib.util
import os

import nbformat
import pytest
import torch

from grader import records, verdicts
from grader.build import ROOT
from grader.devices import Device, choose, grading_device
from grader.inside.graded_code import definitions, violation

FOLDER = ROOT / "solutions" / "ex3_freeing"  # its staged minigrad is what the runs import


def cells(*sources):
    """A plan: locked cells, then a test cell "t" that checks one scenario."""
    plan = [{"kind": "locked", "id": f"locked-{i}", "source": source} for i, source in enumerate(sources)]
    return plan + [{"kind": "test", "id": "t", "source": "check('one', lambda lib: lib.ones(2).tolist())"}]


def stopped(plan, **limits):
    with pytest.raises(verdicts.Stopped) as stop:
        verdicts.run(FOLDER, plan, "minigrad", **limits)
    return stop.value.how, stop.value.cell


def test_a_run_reports_each_check_of_each_test_cell():
    assert verdicts.run(FOLDER, cells("x = 1"), "minigrad") == {"t": {"checks": [["one", [1.0, 1.0], False, []]],
                                                                      "error": None}}


def test_the_exception_the_learners_code_raised_reaches_the_report():
    """What the learner's code raised in minigrad's run (here, a part left as nbgrader's stub) comes
    with the check, told with its lines; the report of the failing check shows it."""
    plan = [{"kind": "solution", "id": "part", "source": "def part(x):\n    raise NotImplementedError()"},
            {"kind": "test", "id": "t", "source": "from coursekit.testing import outcome\n"
             "check('calls part', lambda lib: {'value': 1, 'part': outcome(lambda: part(1))})"}]
    expected = {"t": {"checks": [["calls part", {"value": 1, "part": 2}, False, []]], "error": None}}
    actual = verdicts.run(FOLDER, plan, "minigrad")
    assert actual["t"]["checks"][0][3] == [["NotImplementedError", [
        "  your code raised NotImplementedError (a part not written yet)",
        "    in part, line 2: raise NotImplementedError()"]]]  # the test's lines: no text in the learner's process
    assert verdicts.compare(expected, actual)["t"] == (False, "'calls part'\n  minigrad differs from torch at ['part']\n"
                                                             "  torch:    2\n  minigrad: NotImplementedError\n"
                                                             "  your code raised NotImplementedError (a part not "
                                                             "written yet)\n"
                                                             "    in part, line 2: raise NotImplementedError()")


def test_a_process_that_dies_is_reported_in_its_cell():
    assert stopped(cells("x = 1", "import os\nos._exit(3)")) == ("died", "locked-1")


def test_a_cell_that_runs_too_long_is_stopped():
    assert stopped(cells("import time\ntime.sleep(60)"), cell_timeout=2) == ("timeout", "locked-0")


def test_the_whole_run_has_a_budget_that_new_cells_do_not_extend():
    """Each cell stays within its own timeout; together they pass the budget."""
    plan = cells(*["import time\ntime.sleep(1.5)"] * 6)
    how, cell = stopped(plan, cell_timeout=3, budget=6)
    assert how == "budget" and cell.startswith("locked-")


def test_more_results_than_the_budget_stop_the_run(monkeypatch):
    monkeypatch.setattr(verdicts, "RESULTS_BUDGET", 1 << 16)
    plan = cells() + [{"kind": "test", "id": "u", "source": "for i in range(100):\n    check('big', lambda lib: 'x' * 4096)"}]
    assert stopped(plan) == ("results", "u")


@pytest.mark.parametrize("message", [
    b'["cell", 5]\n',  # a cell out of order: the watchdog would time the wrong cell
    b'["check", "forged", true]\n',  # a check outside a test cell
    b'["done"]\n',  # done before the last cell ran
    b'{"t": {"checks": [], "error": null}}\n',  # not a message at all
    b'not json\n',
    b'[["cell"], 1]\n',
    b'["denied", "the hidden check wants 42", "x", "locked-1", 1]\n',  # a denial's kind is one of DENIALS
    b'["denied", ["read"], "x", "locked-1", 1]\n',
], ids=["cell-out-of-order", "check-outside-a-test", "early-done", "not-a-message", "not-json", "odd-kind",
        "denial-of-no-kind", "denial-kind-not-text"])
def test_what_the_grading_process_sends_is_checked_before_it_counts(message):
    """A cell that writes to the results pipe (what learner code would need an escape to do)."""
    plan = cells("x = 1", f"import os, sys\nos.write(int(sys.argv[-1]), {message!r})")
    assert stopped(plan) == ("garbled", "locked-1")


def test_the_grading_process_gets_code_not_the_text_of_the_tests():
    """The plan reaches the grading process as compiled code: the cells' source lines (a hidden
    test's text) are not in what it reads, only the names and constants the code itself needs."""
    plan = cells("def helper(lib):\n    return lib.ones(3)")
    payload = verdicts.compiled(plan)
    assert b"check('one'" not in payload and b"return lib.ones" not in payload
    assert b"helper" in payload  # the code is there, as code


@pytest.mark.parametrize("code, construct", [
    ("import os", "import os"),
    ("from os import path", "from os import path"),
    ("from . import ops", "from . import ops"),
    ("from minigrad.function import sys", "from minigrad.function import sys"),
    ("import minigrad.function as f\ndef g():\n    return f.sys", "f.sys"),
    ("def f(x=print('now')):\n    pass", "print('now')"),
    ("def f() -> print('now'):\n    pass", "print('now')"),
    ("@print\ndef f():\n    pass", "@print"),
    ("class A(metaclass=type):\n    pass", "class A(metaclass=type):"),
    ("class A:\n    print('now')", "print('now')"),
    ("class A:\n    def __init_subclass__(cls):\n        pass", "def __init_subclass__"),
    ("def f(x):\n    return x.__class__", "x.__class__"),
    ("def f(x):\n    return getattr(x, '__class__')", "getattr(x, '__class__')"),
    ("def f(x, name):\n    return getattr(x, name)", "getattr(x, name)"),
    ("def f():\n    g = getattr", "getattr"),
    ("def f():\n    return eval('1')", "eval"),
    ("def f():\n    return open('x')", "open"),
    ("def f():\n    torch.set_grad_enabled(True)", "torch.set_grad_enabled"),
    ("def f():\n    return torch.func", "torch.func"),
    ("def f():\n    return torch.load('x')", "torch.load"),
    ("from torch import autograd", "from torch import autograd"),
    ("def f():\n    torch.equal = None", "torch.equal"),
    ("def f():\n    from minigrad import engine\n    engine.backprop = None", "engine.backprop"),
    ("def f():\n    global check", "global check"),
    ("def f():\n    return (i for i in ()).gi_frame", "(i for i in ()).gi_frame"),
    ("def f(x):\n    return '{0.__class__}'.format(x)", "'{0.__class__}'"),
    # Triton (exercise 9): its two imports, @triton.jit, and tl's functions; nothing else of it, and
    # the names triton and tl for Triton alone (else tl.load could be torch.load)
    ("import triton.runtime.build", "import triton.runtime.build"),
    ("from triton.runtime import build", "from triton.runtime import build"),
    ("from triton import jit", "from triton import jit"),
    ("import triton as tr", "import triton as tr"),
    ("import triton.language as language", "import triton.language as language"),
    ("import torch as tl", "import torch as tl"),
    ("from torch import load as tl", "from torch import load as tl"),
    ("def f():\n    return triton.knobs", "triton.knobs"),
    ("def f():\n    return tl.core.typing", "tl.core"),
    ("def f():\n    return tl.extra", "tl.extra"),
    ("def f():\n    language = tl", "tl"),
    ("def f(tl):\n    return tl.load('x')", "tl"),
    ("def f():\n    tl = torch\n    return tl.load('x')", "tl"),
    ("def f():\n    return [tl.load('x') for tl in (torch,)]", "tl"),
    ("def f():\n    try:\n        pass\n    except Exception as tl:\n        pass", "tl"),
    ("def tl():\n    pass", "tl"),
    ("def f():\n    tl.load = torch.load", "tl.load"),
    ("def f():\n    return getattr(tl, 'load')", "getattr(tl, 'load')"),
    ("def f():\n    return triton.jit(f)", "triton.jit"),
    ("@triton.jit(debug=True)\ndef f():\n    pass", "@triton.jit(debug=True)"),
    ("@triton.autotune\ndef f():\n    pass", "@triton.autotune"),
    # a kernel's text is compiled again by Triton, out of the run-time guards' reach: it reads only
    # tl's and triton's members and KERNEL_ATTRIBUTES of anything else
    ("@triton.jit\ndef k(x_ptr):\n    x_ptr.handle.data", "x_ptr.handle.data"),
    ("@triton.jit\ndef k(x_ptr):\n    return x_ptr.dtype.element_ty.fp_mantissa_width", "x_ptr.dtype.element_ty.fp_mantissa_width"),
    # ... calls only those, tl.*(...).to(...) and a few builtins, reads no name but its own, stores
    # only to its local names, and defines and imports nothing
    ("@triton.jit\ndef k(x_ptr):\n    x_ptr.dtype = tl.int64", "x_ptr.dtype"),
    ("@triton.jit\ndef k(x_ptr):\n    print(x_ptr)", "print(x_ptr)"),
    ("@triton.jit\ndef k(x_ptr):\n    return helper", "helper"),
    ("@triton.jit\ndef k(x_ptr):\n    import math", "import math"),
    ("@triton.jit\ndef k(x_ptr):\n    f = lambda v: v", "lambda v: v"),
])
def test_graded_code_rejects_each_construct_naming_it(code, construct):
    line = next(i for i, text in enumerate(code.splitlines(), start=1) if construct.lstrip("@") in text)
    assert violation(definitions(code), "cell 4") == f"`{construct}` at cell 4 line {line} is not allowed in graded code"


@pytest.mark.parametrize("code", [
    "import heapq\nfrom minigrad.function import _FREED, Function",
    "class Mul(Function):\n    node_name = 'MulBackward0'\n    @staticmethod\n    def forward(ctx, a, b=None):\n"
    "        ctx.shape = a.shape\n        return getattr(a, '_data') * b._data",
    "def f(node):\n    heap = []\n    heapq.heappush(heap, node)\n    return heap",
    "x = 3\nos.system('top-level statements are dropped, not run')",
    "class Ema:\n    def __init__(self, decay):\n        self.decay = decay\n    def __repr__(self):\n        return 'Ema'",
    "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    row = tl.program_id(0).to(tl.int64)\n    columns = tl.arange(0, BLOCK)\n"
    "    x = tl.load(x_ptr + row * n + columns, mask=columns < n, other=float('-inf'))\n"
    "    tl.store(out_ptr + row, tl.max(tl.exp(x), 0))\n"
    "def block(n):\n    return min(triton.next_power_of_2(n), triton.cdiv(n, 2) * 2)",
])
def test_graded_code_keeps_what_minigrad_code_needs(code):
    assert violation(definitions(code), "cell 4") is None


def test_the_learners_definitions_come_with_their_text():
    """Exercise 9's kernels are sent to their process as text, which ``@triton.jit`` finds with
    ``inspect`` (a reader the audit hook allows): the definitions of a solution cell reach the grading
    process with their text (and nothing else of the cell does)."""
    plan = [{"kind": "solution", "id": "part", "source": "import triton\nimport triton.language as tl\n"
             "@triton.jit\ndef kernel(x_ptr):\n    tl.store(x_ptr, 1)\nprint('dropped')"},
            {"kind": "test", "id": "t", "source": "check('source', lambda lib: kernel._source['text'])"}]
    assert verdicts.run(ROOT / "solutions" / "ex9_gpu_kernel", plan, "minigrad")["t"]["checks"] == [
        ["source", "@triton.jit\ndef kernel(x_ptr):\n    tl.store(x_ptr, 1)\n", False, []]]


def test_an_exercise_whose_modules_are_missing_is_not_graded(tmp_path):
    """An exercise that requires a module the grading machine lacks (exercise 9: Triton) is "not
    graded: reason", recorded, before torch's run (whose results would be cached)."""
    import nbformat

    notebook = nbformat.v4.new_notebook(metadata={"minigrad": {"requires": ["no_module_named_like_this"]}})
    (tmp_path / "solutions" / "exN").mkdir(parents=True)
    nbformat.write(notebook, tmp_path / "solutions" / "exN" / "exN.ipynb")
    step = verdicts.VerdictExecute(course_root=str(tmp_path), sandbox=False)
    reason = "the exercise needs no_module_named_like_this, which the grading machine does not have installed"
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with pytest.raises(verdicts.NotGraded, match=reason):
        step.preprocess(notebook, {"nbgrader": {"assignment": "exN", "notebook": "exN", "student": "ada", "db_url": db_url}})
    assert not (tmp_path / ".course" / "expected").exists()
    # one outcome, for status, export, feedback and reruns, whatever route graded it
    assert records.read(db_url, "exN") == {"ada": records.Outcome(reason, grading_device(False).description,
                                                                  "none (--no-sandbox)")}


def test_the_run_whose_errors_reach_feedback_holds_no_hidden_test():
    """Visible and hidden checks run apart (``verdicts.apart``): the run of the visible ones, whose
    errors the learner's feedback shows, holds no code of a hidden one (here the visible test, trusted
    code, looks for it in the harness's plan); the hidden run can use what a visible cell defined."""
    probe = ("import sys\nscenario = lambda lib: 1\nframe = sys._getframe()\n"
             "while 'cells' not in frame.f_locals:\n    frame = frame.f_back\n"
             "check('hidden code here', lambda lib: sum('SECRET' in code.co_consts for _, code, _ in frame.f_locals['cells']))")
    plan = [{"kind": "locked", "id": "setup", "source": "x = 1"},
            {"kind": "test", "id": "t", "source": probe},
            {"kind": "test", "id": "t-hidden", "source": "name = 'SECRET'\ncheck('uses t', lambda lib: [scenario(lib), name])"}]
    runs = verdicts.apart(plan)
    assert [[cell["kind"] for cell in cells] for cells in runs] == [["locked", "test"], ["locked", "support", "test"]]
    results = {}
    for cells in runs:
        results.update(verdicts.run(FOLDER, cells, "minigrad"))
    assert results == {"t": {"checks": [["hidden code here", 0, False, []]], "error": None},
                       "t-hidden": {"checks": [["uses t", [1, "SECRET"], False, []]], "error": None}}


def test_the_grading_device_is_one_both_runs_can_use():
    """Issue 22: on an H100 the sandbox saw no CUDA device, so the learner's code ran on the CPU
    against torch's results computed on CUDA, and right answers lost. Now CUDA is chosen only where
    the sandbox can use it too; where it cannot, torch's run is hidden the GPU and the record says
    the checks ran on the CPU."""
    assert choose(None, None) == Device("cpu", "CPU (no CUDA device on the grading machine)")
    blind = choose("NVIDIA H100 80GB HBM3", None)
    assert blind == Device("cpu", "CPU (checked on CPU: no CUDA device in the sandbox, though the machine has "
                                  "a NVIDIA H100 80GB HBM3)")
    assert blind.environment() == {"CUDA_VISIBLE_DEVICES": ""}
    sighted = choose("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")
    assert sighted == Device("cuda", "CUDA (NVIDIA H100 80GB HBM3)") and sighted.environment() == {}


def test_torchs_run_sees_the_device_the_learners_run_sees():
    plan = [{"kind": "test", "id": "t", "source": "import os, torch\n"
             "check('cuda', lambda lib: [torch.cuda.is_available(), os.environ.get('CUDA_VISIBLE_DEVICES')])"}]
    seen = verdicts.run(FOLDER, plan, "torch", environment=choose("NVIDIA H100 80GB HBM3", None).environment())
    assert seen == {"t": {"checks": [["cuda", [False, ""], False, []]], "error": None}}


@pytest.mark.skipif(importlib.util.find_spec("triton") is None and not os.environ.get("CI"),
                    reason="triton is not installed (the optional extra: pip install '.[kernels]')")
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_exercise_9_compiles_its_kernels_on_a_gpu_and_interprets_them_only_without(device):
    """The setup cell of exercise 9 chooses DEVICE and Triton's interpreter from what its process
    sees: on the grading device's CPU (the GPU hidden, or none), the interpreter; with a GPU, none."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    folder = ROOT / "solutions" / "ex9_gpu_kernel"
    source = nbformat.read(folder / "ex9_gpu_kernel.ipynb", as_version=4)
    setup = next(cell for cell in verdicts.plan(source, {}) if cell["kind"] == "locked")
    plan = [setup, {"kind": "test", "id": "t", "source": "import os\n"
                    "check('choice', lambda lib: [DEVICE, os.environ.get('TRITON_INTERPRET')])"}]
    chosen = choose(device if device == "cuda" else None, device if device == "cuda" else None)
    seen = verdicts.run(folder, plan, "torch", environment=chosen.environment())
    assert seen["t"]["checks"][0][1] == [device, None if device == "cuda" else "1"]


def test_a_result_on_another_device_than_torchs_differs():
    """``plain`` names the device of a tensor off the CPU: the same values on cpu are not torch's on cuda:0."""
    expected = {"t": {"checks": [["a * b on DEVICE", ["tensor", [2.0], "cuda:0"], False, []]], "error": None}}
    actual = {"t": {"checks": [["a * b on DEVICE", ["tensor", [2.0]], False, []]], "error": None}}
    assert verdicts.compare(expected, actual)["t"] == (False, "'a * b on DEVICE'\n  minigrad differs from torch\n"
                                                             "  torch:    tensor([2.0], cuda:0)\n"
                                                             "  minigrad: tensor([2.0])")
    assert verdicts.compare(expected, expected)["t"] == (True, "")


def test_outside_a_check_no_exception_is_kept():
    """outcome() keeps the exceptions it catches only while a check runs (for its report): elsewhere
    (lessons, the test suite) an exception's frames, and the tensors they hold, are not kept alive."""
    import coursekit.testing
    import minigrad

    coursekit.testing.outcome(lambda: 1 / 0)
    assert coursekit.testing._raised is None
    with pytest.raises(coursekit.testing.CheckFailed):
        coursekit.testing.check("fails", lambda lib: coursekit.testing.outcome(lambda: 1 / 0) if lib is minigrad else 1)
    assert coursekit.testing._raised is None


@pytest.fixture(scope="module")
def graded_like_learners(tmp_path_factory):
    """``grade(exercise, part, right, wrong)``: the reports of exercise's test cells with the reference
    but ``right`` replaced by ``wrong`` in ``part``, as grading writes them (failing cells only)."""
    cache = tmp_path_factory.mktemp("expected")

    def grade(exercise, part, right, wrong):
        folder = ROOT / "solutions" / exercise
        source = nbformat.read(folder / f"{exercise}.ipynb", as_version=4)
        reference = verdicts.solution_cells(source, without_markers=True)
        assert reference[part].count(right) == 1
        plan = verdicts.plan(source, {**reference, part: reference[part].replace(right, wrong)})
        expected = verdicts.expected_results(folder, f"{exercise}.ipynb", cache / f"{exercise}.json",
                                             grading_device(False))
        actual = verdicts.run(folder, plan, "minigrad")
        return {test: why for test, (passed, why) in verdicts.compare(expected, actual, plan).items() if not passed}
    return grade


def test_a_version_bumped_before_the_kernel_is_told_by_part_and_by_what_the_scenario_recorded(graded_like_learners):
    """Issue 35's walk: the report named "[1]"; it names y._version, and the parts to look at."""
    why = graded_like_learners("ex4_versions", "Tensor-_inplace",
                               "    self._record_inplace(function, *args)\n    self._version_counter.version += 1",
                               "    self._version_counter.version += 1\n    self._record_inplace(function, *args)")
    assert why["test-version-bump"] == (
        "'a failed recorded in-place op does not bump'\n  minigrad differs from torch at y._version (result [1])\n"
        "  torch:    0\n  minigrad: 1\n  parts this test exercises: Tensor._mutate, Tensor._inplace")


def test_a_wrong_value_is_told_by_key_with_the_parts_and_the_frames_by_qualified_name(graded_like_learners):
    """A wrong gradient names the scenario's key; an error in a class's method names Class.method,
    and none of the checks' own frames (the harness's ``check``)."""
    why = graded_like_learners("ex1_ops", "Mul", "grad * a if a is not None", "grad * a * 2 if a is not None")
    lines = why["test-Mul-saved"].splitlines()
    assert lines[:2] == ["'a * b, only b requires grad'", "  minigrad differs from torch at ['grads'][1] tensor element [0]"]
    assert lines[-1] == "  parts this test exercises: save_factors, Mul"
    why = graded_like_learners("ex1_ops", "Mul", "grad * a if a is not None", "grad * aa if a is not None")
    lines = why["test-Mul-saved"].splitlines()
    assert "  your code raised NameError: name 'aa' is not defined" in lines
    assert any(line.startswith("    in Mul.backward, line ") for line in lines), lines
    assert not any(line.startswith("    in check,") for line in lines), lines
    assert lines[-1] == "  parts this test exercises: save_factors, Mul"


def test_an_error_inside_a_property_is_told_where_it_was_raised(graded_like_learners):
    """An AttributeError in ``_unpack``, which a node's ``saved_tensors`` property calls, reaches the
    report as the learner's own error, at their line: not as the node's missing ``saved_tensors``."""
    why = graded_like_learners("ex3_freeing", "BackwardFunction-_unpack", "saved.unpack(self)", "saved.unpak(self)")
    lines = why["test-second-backward"].splitlines()
    assert lines[1] == "  minigrad differs from torch"  # the first backward raised: the whole scenario differs
    assert "  your code raised AttributeError: 'SavedTensor' object has no attribute 'unpak'" in lines
    assert "    in _unpack, line 8: return saved.unpak(self)" in lines
    assert "no attribute 'saved_tensors'" not in why["test-second-backward"]
    assert lines[-1] == "  parts this test exercises: BackwardFunction._release_saved, run_node, BackwardFunction._unpack"


def test_the_feedback_names_each_visible_check_with_its_title_filled_in():
    """Issue 35's walk: the feedback's per-cell summary showed f'seed 004: {edit} …' as written."""
    from grader.feedback import HideHiddenTests

    titles = [f"seed 004: {edit} on a leaf that requires grad" for edit in ("x += 1", "x.mul_(2)", "x[0] = 5.")]
    expected = {"test-leaf": {"checks": [[title, 0, False, []] for title in titles], "error": None}}
    source = nbformat.read(ROOT / "solutions" / "ex4_versions" / "ex4_versions.ipynb", as_version=4)
    cell = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test-leaf")
    assert "f\"seed 004: {edit} on a leaf that requires grad\"" in cell.source
    cell.metadata["minigrad"] = verdicts.checks_told("test-leaf", expected, expected)
    cell, _ = HideHiddenTests().preprocess_cell(cell, {}, 0)
    assert cell.metadata["minigrad"]["scenarios"] == titles


# These checks exercise: Tensor._mutate, Tensor._inplace
def version_recorded(lib):
    version = 0 if lib.__name__ == "torch" else 1
    return lib.ones(1), version


def test_in_the_learners_kernel_a_report_names_the_parts_and_what_the_scenario_recorded():
    """Validate's side (``check`` in the kernel): the parts from the calling cell's line (here, this
    file's), the label from the scenario's text (the line above ``version_recorded``)."""
    import coursekit.testing

    with pytest.raises(coursekit.testing.CheckFailed) as failed:
        coursekit.testing.check("a version", version_recorded)
    assert str(failed.value) == ("'a version'\n  minigrad differs from torch at version (result [1])\n"
                                 "  torch:    0\n  minigrad: 1\n  parts this test exercises: Tensor._mutate, Tensor._inplace")
