"""Exercise 9's kernels (issue 36, item 4): Triton compiles a kernel from its text, out of the run-time
guards' reach, so the learner's kernels run in a process of their own (grader/inside/kernel_process.py) and the
static check (grader/inside/graded_code.py) holds what a kernel's text may do. Each attack below got full
marks, unflagged, when the grading process ran Triton's interpreter itself."""
import os

import pytest
import torch

from grader import verdicts
from grader.inside import kernel_process
from support import graded_exercise, unguarded  # noqa: F401 - a fixture

if not torch.cuda.is_available():  # before Triton is imported, as in tests/engine/test_kernels.py
    os.environ["TRITON_INTERPRET"] = "1"
import triton.language as tl  # noqa: E402 - after TRITON_INTERPRET

EXERCISE = "ex9_gpu_kernel"


@pytest.fixture(scope="module")
def exercise(tmp_path_factory):
    """(folder, source notebook, reference solutions, torch's expected results, cell numbers) of exercise 9."""
    folder, source, reference, expected = graded_exercise(tmp_path_factory.mktemp("kernels"), EXERCISE)
    numbers = {c.metadata["nbgrader"]["grade_id"]: number for number, c in enumerate(source.cells, 1)
               if c.metadata.get("nbgrader", {}).get("solution")}
    return folder, source, reference, expected, numbers


def grade(exercise, solutions):
    """{test id: (passed, why)} of the reference with ``solutions`` in place of its parts."""
    folder, source, reference, expected, numbers = exercise
    cells = verdicts.plan(source, {**reference, **solutions})
    return verdicts.compare(expected, verdicts.run(folder, cells, "minigrad", numbers=numbers))


def test_the_reference_gets_full_marks_from_the_kernel_process(exercise):
    """Under the audit hook (harness.watch), which ``@triton.jit`` passes: it reads the kernel's code
    and source once, as a trusted reader."""
    assert grade(exercise, {}) == {test: (True, "") for test in exercise[3] if not test.startswith("_")}


@pytest.mark.parametrize("line, event", [
    # the escape Triton's interpreter offered (it recompiles a function's text), called directly
    ("InterpretedFunction(reach)[(1,)]()", "object.__getattr__"),
    ("compile('1', 'mine', 'eval')", "compile"),
    ("open('/etc/hostname')", "open /etc/hostname"),
])
def test_with_the_guards_off_the_audit_hook_ends_a_kernel_escape_not_graded(exercise, unguarded, line, event):
    """Exercise 9 has the second layer too: with the first off, what a Triton import offers graded code
    (its interpreter, already imported in the grading process) ends the run."""
    reference = exercise[2]["Softmax"]
    escape = reference.replace("        data = x._data\n", f"        {line}\n        data = x._data\n", 1)
    escape = "from triton.runtime.interpreter import InterpretedFunction\n" + escape + "\n\ndef reach():\n    pass\n"
    with pytest.raises(verdicts.NotGraded) as stopped:
        grade(exercise, {"Softmax": escape})
    inserted = escape.splitlines().index(f"        {line}") + 1
    assert str(stopped.value) == (f"graded code {verdicts.DENIALS['audit']} at cell {exercise[4]['Softmax']} "
                                  f"line {inserted} (flagged: tried while it ran)")
    assert stopped.value.detail == f"`{event}`"


def test_a_name_tritons_interpreter_plants_in_the_learners_namespace_reaches_nothing(exercise):
    """Triton's interpreter copied its module's globals into the kernel's globals, the learner's
    namespace, once a kernel had run: ``InterpretedFunction`` among them, which recompiles any
    function's text without the guards (here a read of ``collections._sys``). No interpreter runs
    in the grading process now: the name is not defined, and the grade is the honest one, the kernels'."""
    reference = exercise[2]["Softmax"]
    escape = reference.replace("        data = x._data\n", "        InterpretedFunction(reach)()\n        data = x._data\n", 1)
    escape += "\n\ndef reach():\n    import collections\n    return collections._sys\n"
    graded = grade(exercise, {"Softmax": escape})
    assert {test: passed for test, (passed, _) in graded.items()} == {
        "test-softmax_kernel": True, "test-softmax_kernel-hidden": True,
        "test-softmax_backward_kernel": True, "test-softmax_backward_kernel-hidden": True,
        "test-Softmax": False, "test-Softmax-hidden": False, "test-Softmax-graph": False, "test-Softmax-graph-hidden": False}
    assert "NameError: name 'InterpretedFunction' is not defined" in graded["test-Softmax"][1]


@pytest.mark.parametrize("line, construct", [
    ("Function.shape = 1", "Function.shape"),  # minigrad's Function, written unguarded by Triton's interpreter
    ("x_ptr.dtype = 1", "x_ptr.dtype"),
    ("columns = tl.arange(0, BLOCK)\n    columns[0] = 1", "columns[0]"),
    ("Function", "Function"),  # a name the kernel does not bind: the kernel process has none of the notebook's
    ("reach(x_ptr)", "reach(x_ptr)"),
    ("tl.program_id(0).to(tl.int64).item()", "tl.program_id(0).to(tl.int64).item()"),
])
def test_a_kernel_stores_only_to_its_own_names_and_calls_only_triton(exercise, line, construct):
    kernel = exercise[2]["softmax_kernel"].replace("    row = tl.program_id(0)", f"    {line}\n    row = tl.program_id(0)", 1)
    with pytest.raises(verdicts.NotGraded) as stopped:
        grade(exercise, {"softmax_kernel": kernel})
    inserted = kernel.splitlines().index(f"    {line.splitlines()[-1].strip()}") + 1  # the construct's line
    assert str(stopped.value) == f"`{construct}` at cell {exercise[4]['softmax_kernel']} line {inserted} is not allowed in graded code"


def test_the_kernel_process_keeps_nothing_but_its_socket_and_runs_kernels_on_copies_of_the_storages():
    """Forked with every file descriptor of the process that forks it open (here pytest's; in grading
    the job's cells and results pipe), it keeps only its socket; a launch writes back into the
    arguments' storages what the kernel stored, at the views' offsets, as Triton itself does."""
    kernels = kernel_process.start()
    try:
        x = torch.arange(8, dtype=torch.float64)
        kernels.jit(double)[(1,)](x[2:], x[:3], 3, BLOCK=4)  # out overlaps x's storage at offset 0
        assert x.tolist() == [4.0, 6.0, 8.0, 3.0, 4.0, 5.0, 6.0, 7.0]
        with pytest.raises(kernel_process.KernelError, match="NotImplementedError"):
            kernels.jit(stub)[(1,)](x)  # the kernel's error, and the kernel process goes on
        links = sorted(os.readlink(f"/proc/{kernels._pid}/fd/{fd}") for fd in os.listdir(f"/proc/{kernels._pid}/fd"))
        assert links[:3] == ["/dev/null"] * 3 and len(links) == 4 and links[3].startswith("socket:")
    finally:
        kernels.close()


def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    columns = tl.arange(0, BLOCK)
    tl.store(out_ptr + columns, tl.load(x_ptr + columns, mask=columns < n) * 2, mask=columns < n)


def stub(x_ptr):
    raise NotImplementedError()
