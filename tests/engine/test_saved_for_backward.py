"""Issue 37: what a graph keeps for backward, edited in place under
``autograd.graph.allow_mutation_on_saved_tensors`` and let go of by a Function with
``clear_saved_tensors_on_access``; what ``grad_fn._raw_saved_*`` and ``_raw_saved_tensors`` show
of each entry (torch's SavedTensor objects); ``ctx.saved_variables``, the old name. Each scenario
run with torch and with minigrad."""
import math
import re
import warnings
import weakref

import pytest

import minigrad
from coursekit.testing import assert_same


def allow_mutation(torch):
    return torch.autograd.graph.allow_mutation_on_saved_tensors()


def counts(ctx):
    return len(ctx.tid_to_weakhandle), len(list(ctx.cloned.items())), len(list(ctx.original.items()))


EDITS = {
    "sin_": lambda b: b.sin_(),
    "exp_": lambda b: b.exp_(),
    "mul_ of a view": lambda b: b[1:].mul_(3),
    "setitem": lambda b: b.__setitem__(0, 5.0),
    "under no_grad": lambda b: b.mul_(2),
}


def edited_after_saving(torch, edit):
    """b saved by two nodes (the same handle), then edited: the graph still computes with b's
    values before the edit; what the context keeps at each step."""
    x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    steps = []
    with allow_mutation(torch) as ctx:
        b = x * 1
        out = (b * b).sum() + b.pow(2).sum()
        steps.append(counts(ctx))
        with torch.set_grad_enabled(edit != "under no_grad"):
            EDITS[edit](b)
        steps.append(counts(ctx))
        out.backward()
        steps.append(counts(ctx))
    return x.grad, b, steps, counts(ctx)


@pytest.mark.parametrize("edit", EDITS)
def test_a_saved_tensor_edited_in_place_is_cloned_first(edit):
    assert_same(edited_after_saving, edit, close=True)


def without_the_context(torch):
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    b = x * 1
    out = (b * b).sum()
    b.sin_()
    out.backward()


def test_without_the_context_the_edit_fails_backward():
    assert_same(without_the_context)


def view_at_an_offset(torch):
    """torch tells the memory an edit touches by its address: a saved view that starts further on is
    not cloned when its base is edited, and backward sees the new values (no version check: the
    graph keeps handles)."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with allow_mutation(torch) as ctx:
        b = x * 1
        view = b[1:]
        out = (view * view).sum()
        b.mul_(10)
        cloned = counts(ctx)
        out.backward()
    return cloned, x.grad


def test_a_saved_view_at_another_address_is_not_cloned():
    assert_same(view_at_an_offset)


def backward_elsewhere(torch, where):
    with allow_mutation(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        out = (x * x).sum()
    if where == "outside":
        out.backward()
    else:
        with allow_mutation(torch):
            out.backward()


@pytest.mark.parametrize("where", ["outside", "in another context"])
def test_backward_outside_the_context_that_recorded_the_graph(where):
    assert_same(backward_elsewhere, where)


def nested(torch):
    """A nested context is refused, and, as in torch, its exit switches the outer one off too."""
    seen = []
    with allow_mutation(torch):
        try:
            with allow_mutation(torch):
                pass
        except RuntimeError as error:
            seen.append(str(error))
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        out = (x * x).sum()
        try:
            out.backward()
        except AssertionError as error:
            seen.append(str(error))
    return seen


def test_nesting_is_refused():
    assert_same(nested)


def test_edits_pay_nothing_outside_the_context():
    """minigrad swaps the two methods every in-place edit goes through only while a context is in
    force, and puts them back however the block ends."""
    methods = minigrad.Tensor._mutate, minigrad.Tensor._record_inplace
    with pytest.raises(ValueError):
        with minigrad.autograd.graph.allow_mutation_on_saved_tensors():
            assert (minigrad.Tensor._mutate, minigrad.Tensor._record_inplace) != methods
            raise ValueError
    assert (minigrad.Tensor._mutate, minigrad.Tensor._record_inplace) == methods


# --- Function.clear_saved_tensors_on_access -------------------------------------------------------


def clearing_function(torch, clear=True):
    class Scale(torch.autograd.Function):
        clear_saved_tensors_on_access = clear

        @staticmethod
        def forward(ctx, t, w):
            out = t * w
            ctx.save_for_backward(t, None, out)
            return out

        @staticmethod
        def backward(ctx, grad):
            t, none, out = ctx.saved_tensors
            return grad * 2, None

    return Scale


def attempt(fn):
    try:
        return fn()
    except RuntimeError as error:
        return str(error)


def accesses(torch):
    """Each access of saved_tensors, in backward and through grad_fn, before and after backward."""
    Scale = clearing_function(torch)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    y = Scale.apply(x, 3.0)
    seen.append(attempt(lambda: len(y.grad_fn.saved_tensors)))
    seen.append(attempt(lambda: y.grad_fn.saved_tensors))
    seen.append(attempt(lambda: y.sum().backward()))  # backward's own access is the second
    y = Scale.apply(x, 3.0)
    seen.append(attempt(lambda: y.sum().backward(retain_graph=True)))
    seen.append(attempt(lambda: y.grad_fn.saved_tensors))
    y = Scale.apply(x, 3.0)
    with torch.no_grad():
        Scale.apply(x, 3.0)  # a forward that records nothing
    return seen, x.grad


def test_saved_tensors_can_be_read_once():
    assert_same(accesses)


def read_at_apply(torch):
    """torch reads the flag when the Function is applied: a graph keeps what it was then."""
    Scale = clearing_function(torch, clear=False)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    before = Scale.apply(x, 3.0)
    Scale.clear_saved_tensors_on_access = True
    after = Scale.apply(x, 3.0)
    Scale.clear_saved_tensors_on_access = False
    reads = []
    for y in (before, after):
        y.sum().backward(retain_graph=True)
        reads.append(attempt(lambda: len(y.grad_fn.saved_tensors)))
    return reads, type(after.grad_fn).__name__, after.grad_fn.name()


def test_the_flag_is_read_when_the_function_is_applied():
    assert_same(read_at_apply)


def never_read(torch):
    """A node whose backward never read what it saved frees it as any other: then the error is torch's
    "second time" one."""
    class Ignores(clearing_function(torch)):
        @staticmethod
        def backward(ctx, grad):
            return grad, None

    y = Ignores.apply(torch.tensor([1.0], requires_grad=True), 2.0)
    y.sum().backward()
    return attempt(lambda: y.grad_fn.saved_tensors)


def test_a_node_that_never_read_its_saved_tensors_frees_them_after_backward():
    assert_same(never_read)


def freed_in_backward(torch):
    """The tensor backward read dies with backward's last name for it, before the node does."""
    alive = []

    class Keeps(torch.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t.clone()

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            ref = weakref.ref(t)
            del t
            alive.append(ref() is not None)
            return grad

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Keeps.apply(x * 2)
    y.sum().backward()
    return alive, x.grad


def test_a_tensor_read_once_dies_with_backwards_reference():
    assert_same(freed_in_backward)


def raw_saved_entries(torch):
    """``data`` and ``unpack_hook`` of an entry: what pack returned and the unpack hook under
    saved_tensors_hooks; a saved input or leaf itself; a saved output's data, without its grad_fn
    but on its version counter; a wrapped number; None for both once backward freed the entry."""
    def pack(t):
        return ("packed", t)

    def unpack(packed):
        return packed[1]

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        b = a ** 2
    c = b.exp()
    d = c ** 2
    packed, output, saved_input = b.grad_fn._raw_saved_self, c.grad_fn._raw_saved_result, d.grad_fn._raw_saved_self
    square, doubled = a * a, a * 2  # (torch's SavedTensor must not outlive its node: kept here)
    seen = [packed.data[0], packed.data[1] is a, packed.unpack_hook is unpack, saved_input.data is c,
            saved_input.unpack_hook, output.unpack_hook, square.grad_fn._raw_saved_self.data is a,
            doubled.grad_fn._raw_saved_other.data]
    data = output.data
    seen += [data is c, data, data.requires_grad, data.grad_fn, data._version]
    e = a.exp()
    e_data = e.grad_fn._raw_saved_result.data
    with torch.no_grad():
        e.add_(1)
    seen.append((e_data._version, e_data))
    d.sum().backward()
    seen += [saved_input.data, saved_input.unpack_hook, packed.data, packed.unpack_hook]
    return seen


def test_raw_saved_entries_show_what_torch_shows():
    assert_same(raw_saved_entries)


def raw_saved_tensors(torch, saves):
    """A custom Function node's ``_raw_saved_tensors``: one SavedTensor per entry (None included),
    hooks on one of them, refused once backward freed them, as ``saved_tensors`` is. (A node that
    saved nothing has nothing freed in minigrad: torch refuses both there too, after backward.)"""
    class Saves(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if saves:
                ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Saves.apply(a)
    raw = y.grad_fn._raw_saved_tensors
    seen = [[isinstance(r, torch.autograd.SavedTensor) for r in raw], [r.data is a for r in raw]]
    if saves:
        seen.append(attempt(lambda: raw[1].register_hooks(lambda t: t, lambda t: t)))
        raw[0].register_hooks(lambda t: t * 3, lambda t: t / 3)
        seen += [y.grad_fn.saved_tensors, attempt(lambda: raw[0].register_hooks(lambda t: t, lambda t: t))]
        del raw  # (torch's SavedTensor must not outlive what it points to)
    y.sum().backward()
    if saves:
        seen += [attempt(lambda: y.grad_fn._raw_saved_tensors), attempt(lambda: y.grad_fn.saved_tensors)]
    return seen, a.grad


@pytest.mark.parametrize("saves", [True, False])
def test_raw_saved_tensors_of_a_custom_function(saves):
    assert_same(raw_saved_tensors, saves)


def keep(t):
    return t


def wrapped_numbers(torch, dtype, shape):
    """Python numbers in ops (``x * 2.5``): what ``_saved_other`` and ``_raw_saved_other.data`` show (torch's
    wrapped number, a float as float64 whatever the tensor's dtype, an int as int64) and the values, forward
    and backward, exactly (minigrad computes with a float in the tensor's own dtype where that gives
    torch's values: ``wrap_number``)."""
    x = torch.linspace(-3, 3, math.prod(shape), dtype=dtype).reshape(shape).requires_grad_()
    seen = []
    for number in (2.5, 1.0001, 0.1, -7.25e-3, 1e-40, 3):
        y = x * number
        z = (y + number) / number - number
        other, raw, divisor = y.grad_fn._saved_other, y.grad_fn._raw_saved_other.data, z.grad_fn.next_functions[0][0]
        seen += [other, other.dtype, raw, raw.dtype, divisor._saved_other.dtype, z, z.dtype]
        z.sum().backward()
        seen.append(x.grad)
        x.grad = None
    return seen


@pytest.mark.parametrize("dtype, shape", [(dtype, shape) for dtype in ("float32", "float64") for shape in ((), (6,), (2, 3))]
                         + [(dtype, shape) for dtype in ("float16", "bfloat16") for shape in ((6,), (2, 3))])
def test_a_python_number_is_saved_as_torch_wraps_it(dtype, shape):
    """(Not beside a 0-dim float16 or bfloat16 tensor: there minigrad's number, a 0-dim tensor of that dtype
    so that the result keeps it, is rounded to it, where torch's computes in float32.)"""
    assert_same(wrapped_numbers, getattr(minigrad, dtype), shape)


def register_hooks_arguments(torch):
    """What register_hooks takes: two callables by position, else torch's (pybind11's) TypeError,
    which names the arguments it was given; and SavedTensor() is refused. The message differs in
    the object's own repr only (its class's path), which the comparison leaves out."""
    raw = (torch.tensor([1.0], requires_grad=True) * torch.tensor([2.0])).grad_fn._raw_saved_other
    calls = [lambda: raw.register_hooks(keep), lambda: raw.register_hooks(1, 1),
             lambda: raw.register_hooks(keep, keep, keep), lambda: raw.register_hooks(keep, keep, extra=1),
             lambda: raw.register_hooks(pack_hook=keep, unpack_hook=keep), torch.autograd.SavedTensor]
    seen = []
    for call in calls:
        try:
            call()
        except (RuntimeError, TypeError) as error:
            message = re.sub(r" at 0x[0-9a-f]+", "", str(error))
            seen.append((type(error).__name__, message.replace(repr(raw).split(" at ")[0], "<SavedTensor object")))
    return seen


def test_register_hooks_takes_two_callables_as_torch_does():
    assert_same(register_hooks_arguments)


def saved_variables(torch):
    """``ctx.saved_variables``: the saved tensors, with torch's deprecation warning."""
    class Saves(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_variables
            return grad * y, grad * x

    a, b = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Saves.apply(a, b).sum().backward()
    return [(w.category.__name__, str(w.message), w.filename == __file__) for w in caught], a.grad, b.grad


def test_saved_variables_is_saved_tensors_with_a_deprecation_warning():
    assert_same(saved_variables)
