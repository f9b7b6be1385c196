"""Item 8: grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode), thread-local as in torch."""
import threading

import pytest

from coursekit.testing import assert_same


def flags(t):
    return {"requires_grad": t.requires_grad, "grad_fn": t.grad_fn, "is_leaf": t.is_leaf}


MODES = {
    "no_grad": lambda lib, x: _in(lib.no_grad(), lambda: x * 2),
    "enable_grad-inside-no_grad": lambda lib, x: _in(lib.no_grad(), lambda: _in(lib.enable_grad(), lambda: x * 2)),
    "set_grad_enabled-False": lambda lib, x: _in(lib.set_grad_enabled(False), lambda: x * 2),
    "set_grad_enabled-True": lambda lib, x: _in(lib.set_grad_enabled(True), lambda: x * 2),
    "inference_mode": lambda lib, x: _in(lib.inference_mode(), lambda: x * 2),
    "inference_mode-False": lambda lib, x: _in(lib.inference_mode(False), lambda: x * 2),
    "detach": lambda lib, x: x.detach() * 2,
}


def _in(context, fn):
    with context:
        return fn()


@pytest.mark.parametrize("mode", MODES)
def test_mode_decides_whether_the_graph_is_recorded(mode):
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        y = MODES[mode](lib, x)
        return [flags(y), lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
    assert_same(scenario)


def test_no_grad_as_decorator_and_set_grad_enabled_as_a_call():
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)

        @lib.no_grad()
        def double(t):
            return t * 2

        inside = flags(double(x))
        lib.set_grad_enabled(False)
        off = [lib.is_grad_enabled(), flags(x * 2)]
        lib.set_grad_enabled(True)
        return [inside, off, lib.is_grad_enabled(), flags(x * 2)]
    assert_same(scenario)


def test_training_under_no_grad_records_nothing_and_backward_fails():
    """Seed 004: a loop accidentally wrapped in no_grad learns nothing; backward says why."""
    def scenario(lib):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 1)
        with lib.no_grad():
            loss = lib.nn.functional.mse_loss(model(lib.randn(4, 3)), lib.randn(4, 1))
        try:
            loss.backward()
        except RuntimeError as error:
            return [flags(loss), str(error), model.weight.grad]
    assert_same(scenario)


def test_inference_tensors_cannot_be_saved_for_backward():
    def scenario(lib):
        with lib.inference_mode():
            frozen = lib.ones(2)
        w = lib.ones(2, requires_grad=True)
        out = {"is_inference": frozen.is_inference(), "add": flags(w + frozen)}
        try:
            w * frozen
        except RuntimeError as error:
            out["mul"] = str(error)
        try:
            frozen._version
        except RuntimeError as error:
            out["version"] = str(error)
        out["clone-works"] = flags(w * frozen.clone())
        return out
    assert_same(scenario)


def test_grad_mode_is_thread_local():
    def scenario(lib):
        seen = []
        with lib.no_grad():
            worker = threading.Thread(target=lambda: seen.append(lib.is_grad_enabled()))
            worker.start()
            worker.join()
            seen.append(lib.is_grad_enabled())
        return seen
    assert_same(scenario)


# --- views made with grad mode off, then edited in place (torch's view creation meta) -------------

VIEW_BASES = {
    "leaf requiring grad": lambda lib: lib.ones(3, requires_grad=True),
    "non-leaf": lambda lib: lib.ones(3, requires_grad=True) * 1,
    "plain tensor": lambda lib: lib.ones(3),
}
MADE_IN = {"no_grad": lambda lib: lib.no_grad(), "inference_mode": lambda lib: lib.inference_mode()}
AFTERWARDS = {
    "nothing": lambda lib, base, view: None,
    "mul_ by a number": lambda lib, base, view: view.mul_(2),
    "mul_ by a tensor requiring grad": lambda lib, base, view: view.mul_(lib.ones(2, requires_grad=True)),
    "mul_ under no_grad": lambda lib, base, view: _in(lib.no_grad(), lambda: view.mul_(2)),
    "base edited under no_grad": lambda lib, base, view: _in(lib.no_grad(), lambda: base.mul_(2)),
    "a view of it, made with grad mode, edited": lambda lib, base, view: view[0].mul_(2),
    "setitem": lambda lib, base, view: view.__setitem__(0, 5.0),
    "a view of it, made under no_grad, edited": lambda lib, base, view: _view_in_mode_then_edit(lib, view),
}


def _view_in_mode_then_edit(lib, view):
    with lib.no_grad():
        inner = view[0]
    return inner.mul_(2)


def _attempt(fn):
    try:
        return fn()
    except RuntimeError as error:
        return ("error", str(error))


@pytest.mark.parametrize("after", AFTERWARDS)
@pytest.mark.parametrize("made_in", MADE_IN)
@pytest.mark.parametrize("base", VIEW_BASES)
def test_a_view_made_with_grad_mode_off(base, made_in, after):
    """Such a view requires grad as its base does but has no grad_fn and passes no gradient on;
    editing it in place with grad mode on, or reading its grad_fn after its memory changed, raises
    torch's "A view was created in no_grad mode ..." errors (the issue's case: a view of a leaf)."""
    def scenario(lib):
        b = VIEW_BASES[base](lib)
        with MADE_IN[made_in](lib):
            view = b[:2]
        seen = {"made": flags(view), "edit": _attempt(lambda: AFTERWARDS[after](lib, b, view))}
        seen["grad_fn after"] = _attempt(lambda: view.grad_fn)
        seen["values"] = view.detach().tolist() if hasattr(view, "detach") else None
        seen["use"] = _attempt(lambda: (view * 2).grad_fn)
        if b.requires_grad:
            seen["backward"] = _attempt(lambda: (b * 1).sum().backward())
        return seen
    assert_same(scenario)


# --- grad modes as decorators, as torch/utils/_contextlib.py makes them ------------------------------

def _modes_in_a_decorated_generator(lib, outer, mode):
    """Which grad mode each side of a decorated generator sees: the generator runs in its mode from
    each resumption to its next yield (next, send, throw and close alike), its caller in its own."""
    seen = []

    @mode()
    def generator():
        seen.append(("start", lib.is_grad_enabled()))
        try:
            received = yield 1
            seen.append(("sent", received, lib.is_grad_enabled()))
            try:
                yield 2
            except KeyError:
                seen.append(("thrown", lib.is_grad_enabled()))
            yield 3
        except GeneratorExit:
            seen.append(("closed", lib.is_grad_enabled()))
            raise

    with outer():
        running = generator()
        seen.append(("first", next(running), lib.is_grad_enabled()))
        seen.append(("second", running.send("hello"), lib.is_grad_enabled()))
        seen.append(("third", running.throw(KeyError), lib.is_grad_enabled()))
        running.close()
        seen.append(("after", lib.is_grad_enabled()))
    return seen


@pytest.mark.parametrize("outer, mode", [("enable_grad", "no_grad"), ("no_grad", "enable_grad"),
                                         ("no_grad", "inference_mode")])
def test_a_decorated_generator_runs_in_the_mode_only_while_it_runs(outer, mode):
    assert_same(lambda lib: _modes_in_a_decorated_generator(lib, getattr(lib, outer), getattr(lib, mode)))


def test_modes_decorate_without_parentheses_and_take_the_function():
    """``@torch.enable_grad``, ``torch.no_grad(f)``, ``torch.inference_mode(f)`` and
    ``torch.inference_mode(mode=f)`` decorate ``f``, as ``@mode()`` does."""
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)

        def double(t):
            return t * 2, lib.is_grad_enabled(), lib.is_inference_mode_enabled()

        seen = []
        for decorated in (lib.no_grad(double), lib.enable_grad(double), lib.inference_mode(double),
                          lib.inference_mode(mode=double), lib.inference_mode(False)(double)):
            with lib.no_grad():
                out, grad_enabled, inference = decorated(x)
            seen.append((flags(out), grad_enabled, inference, lib.is_inference(out), decorated.__name__))

        @lib.enable_grad
        def bare(t):
            return t * 2

        with lib.no_grad():
            seen.append(flags(bare(x)))
        return seen
    assert_same(scenario)


def test_decorating_a_class_warns_and_decorates_its_construction():
    def scenario(lib):
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")

            @lib.no_grad()
            class Model:
                def __init__(self):
                    self.in_init = lib.is_grad_enabled()

                def method(self):
                    return lib.is_grad_enabled()

            made = Model()
        return [(w.category.__name__, str(w.message)) for w in caught], made.in_init, made.method()
    assert_same(scenario)


def test_a_view_of_an_inference_tensor_does_not_require_grad():
    def scenario(lib):
        seen = []
        for requires_grad in (True, False):
            with lib.inference_mode():
                made = lib.ones(2, 3, requires_grad=requires_grad)
                view = made.view(-1)
                seen.append([flags(view), lib.is_inference(view), flags(made[0])])
            seen.append(flags(made.view(-1)))
        return seen
    assert_same(scenario)


# --- inference tensors and normal tensors mixed: views and in-place edits (torch's InferenceMode) ---

def test_a_view_of_an_inference_tensor_is_an_inference_tensor_and_no_view():
    """In inference mode or out of it: no base, no version counter, no gradient (torch gives inference
    tensors no view metadata)."""
    def scenario(lib):
        seen = []
        for requires_grad in (True, False):
            with lib.inference_mode():
                made = lib.ones(1, 2, 3, requires_grad=requires_grad)
                inside = [made.view(-1), made.transpose(0, 1), made[0]]
            for view in inside + [made.view(-1), made.view_as(made), made[0], made.transpose(0, 1)]:
                seen.append([view._is_view(), view._base, lib.is_inference(view), flags(view)])
        return seen
    assert_same(scenario)


IN_PLACE = {
    "add_": lambda lib, t: t.add_(2),
    "add_ of a tensor requiring grad": lambda lib, t: t.add_(lib.ones(1, 2, 3, requires_grad=True)),
    "mul_ by a tensor requiring grad": lambda lib, t: t.mul_(lib.ones(1, 2, 3, requires_grad=True)),
    "copy_": lambda lib, t: t.copy_(lib.full((1, 2, 3), 5.0)),
    "transpose_": lambda lib, t: t.transpose_(0, 1),
    "setitem": lambda lib, t: t.__setitem__(0, 5.0),
}


@pytest.mark.parametrize("edit", IN_PLACE)
@pytest.mark.parametrize("requires_grad", [True, False])
def test_an_inference_tensor_edited_in_place(requires_grad, edit):
    """Inside inference mode it stays an inference tensor. Outside, torch edits it and then refuses
    ("Inplace update to inference tensor outside InferenceMode ..."): its values or sizes have changed.
    A leaf that requires grad is refused by autograd's check first, but for transpose_."""
    def scenario(lib):
        with lib.inference_mode():
            inside = lib.ones(1, 2, 3, requires_grad=requires_grad)
            IN_PLACE[edit](lib, inside)
            outside = lib.ones(1, 2, 3, requires_grad=requires_grad)
        refused = _attempt(lambda: IN_PLACE[edit](lib, outside))
        return [lib.is_inference(inside), flags(inside), inside, refused, lib.is_inference(outside), outside]
    assert_same(scenario)


EDITS = {"add_": lambda lib, t: t.add_(2), "transpose_": lambda lib, t: t.transpose_(0, 1)}


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("requires_grad", [True, False])
def test_a_normal_tensor_in_inference_mode(requires_grad, edit):
    """A normal tensor stays one there: edited in place, its version goes up (nothing is recorded);
    its views are views (of views, too) that share its version counter and require grad as it does.
    Such a view made there, edited in place outside, or read for its grad_fn after its base was
    edited outside, raises torch's "A view was created in inference mode ..." errors when the base
    requires grad (the direct and the indirect case of torch's handle_view_on_rebase)."""
    def scenario(lib):
        a = lib.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with lib.inference_mode():
            EDITS[edit](lib, a)
            view = a.view(-1)
            inner = view.view(-1)
            same = a.view_as(a)
            made = [[v._is_view(), v._base is a, lib.is_inference(v), flags(v)] for v in (a, view, inner, same)]
        product = _attempt(lambda: flags(view * 2))
        with lib.inference_mode():
            inner.add_(2)
            versions = [a._version, inner._version, flags(a)]
        direct = _attempt(lambda: EDITS[edit](lib, same))
        base_edited = _attempt(lambda: EDITS[edit](lib, a))
        indirect = _attempt(lambda: view.grad_fn)
        return [made, product, versions, direct, base_edited, indirect, a]
    assert_same(scenario)


def test_an_inference_tensor_mixed_with_normal_tensors_in_place():
    """``a.mul_(c)`` saves the inference tensor c when a requires grad: refused; else a plain edit."""
    def scenario(lib):
        seen = []
        for requires_grad in (True, False):
            a = lib.ones(1, 2, 3, requires_grad=requires_grad).clone()
            with lib.inference_mode():
                c = lib.full((1, 2, 3), 3.0)
            seen.append([_attempt(lambda: a.mul_(c)), a, a._version, flags(a)])
        return seen
    assert_same(scenario)


def test_set_multithreading_enabled():
    """As a call, a block (which puts back what was in force when it was made) and a decorator; each
    thread has its own switch. minigrad's backward runs on the calling thread whatever it says."""
    def scenario(lib):
        autograd, seen = lib.autograd, []
        with autograd.set_multithreading_enabled(False):
            seen.append(autograd.is_multithreading_enabled())
            autograd.set_multithreading_enabled(True)
            seen.append(autograd.is_multithreading_enabled())
        seen.append(autograd.is_multithreading_enabled())

        @autograd.set_multithreading_enabled(False)
        def inside():
            return autograd.is_multithreading_enabled()
        seen.append(autograd.is_multithreading_enabled())  # making the decorator switched it off
        autograd.set_multithreading_enabled(True)
        seen.append(inside())
        seen.append(autograd.is_multithreading_enabled())

        autograd.set_multithreading_enabled(False)
        elsewhere = []
        thread = threading.Thread(target=lambda: elsewhere.append(autograd.is_multithreading_enabled()))
        thread.start()
        thread.join()
        seen.append((autograd.is_multithreading_enabled(), elsewhere))
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        autograd.set_multithreading_enabled(True)
        return seen, x.grad
    assert_same(scenario)


def set_grad_enabled_with(torch, value):
    with torch.set_grad_enabled(value):
        return (torch.ones(1, requires_grad=True) * 2).requires_grad


@pytest.mark.parametrize("value", [True, False, 1, None, "no"], ids=repr)
def test_set_grad_enabled_takes_a_bool(value):
    assert_same(set_grad_enabled_with, value)
