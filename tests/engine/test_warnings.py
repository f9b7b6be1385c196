"""torch's warn-once warnings (TORCH_WARN_ONCE): given once per process, or every time while
``set_warn_always(True)`` is in force. Once per process: each library runs in a fresh child process."""
import subprocess
import sys
import textwrap
import warnings

import pytest

from coursekit.testing import blamed, both


def run(script, lib):
    return subprocess.run([sys.executable, "-c", script, lib], capture_output=True, text=True, timeout=120).stdout


WARN_ONCE = textwrap.dedent("""
    import sys, warnings
    lib = __import__(sys.argv[1])
    for _ in range(2):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (x * x).sum().backward(create_graph=True)
        print([(w.category.__name__, str(w.message).split(" (Triggered internally at ")[0]) for w in caught])
""")


def test_backward_with_create_graph_warns_once_like_torch():
    """torch warns, once per process, that ``backward(create_graph=True)`` makes a reference cycle
    parameter -> .grad -> graph."""
    expected, actual = run(WARN_ONCE, "torch"), run(WARN_ONCE, "minigrad")
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected.count("UserWarning") == 1


def create_graph_warnings(lib, case):
    """What backward(create_graph=True) warns (here each time: torch's once is its own), and where: at a
    line of the library's own code that runs the engine, once the roots are checked (a gradient of the
    wrong shape is refused first, with no warning)."""
    x = lib.ones(2, requires_grad=True)
    grad = lib.ones(3) if case == "a gradient of the wrong shape" else lib.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.set_warn_always(True)
        try:
            error = None
            (x * 2).backward(grad, create_graph=True)
        except RuntimeError as raised:
            error = str(raised)
        finally:
            lib.set_warn_always(False)
    module = sys.modules[lib.autograd.backward.__module__]
    return error, [(w.category.__name__, str(w.message).split(" (Triggered internally at ")[0],
                    blamed(w, __file__, module)) for w in caught]


@pytest.mark.parametrize("case", ["roots that check out", "a gradient of the wrong shape"])
def test_create_graph_is_warned_about_where_torch_warns(case):
    expected, actual = both(create_graph_warnings, case)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert [where for *_, where in expected[1]] == (["library"] if case == "roots that check out" else [])


WARN_ALWAYS = textwrap.dedent("""
    import sys, warnings
    lib = __import__(sys.argv[1])
    for always in (True, True, False, False, True):
        lib.set_warn_always(always)
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (x * x).sum().backward(create_graph=True)
        print(lib.is_warn_always_enabled(), len(caught))
    for bad in (1, None):
        try:
            lib.set_warn_always(bad)
        except Exception as error:
            print(type(error).__name__, error)
""")


def test_set_warn_always_gives_the_create_graph_warning_every_time_like_torch():
    """``torch.set_warn_always(True)``: torch's warn-once warnings are given every time, and those
    given then don't use up the once."""
    expected, actual = run(WARN_ALWAYS, "torch"), run(WARN_ALWAYS, "minigrad")
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert expected.startswith("True 1\nTrue 1\nFalse 1\nFalse 0\nTrue 1\n")
