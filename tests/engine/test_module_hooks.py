"""nn.Module's full backward hooks (``register_full_backward_hook``, ``register_full_backward_pre_hook``)
against torch: when each runs, what it sees, what it may replace, and torch's errors and warnings."""
import warnings

import pytest

from coursekit.testing import assert_same, graph_signature


def two_in_two_out(lib):
    class TwoInTwoOut(lib.nn.Module):
        def forward(self, x, factor, y):
            return x * factor, "tag", y * y
    return TwoInTwoOut()


def test_hooks_run_in_torch_order_and_see_the_gradients():
    def scenario(lib):
        lib.manual_seed(0)
        log = []
        inner, outer = lib.nn.Linear(3, 2), lib.nn.Linear(2, 1)
        model = lib.nn.Sequential(inner, lib.nn.Tanh(), outer)
        for name, module in (("model", model), ("inner", inner), ("outer", outer)):
            module.register_full_backward_hook(lambda m, gi, go, name=name: log.append((name, "full", gi, go)))
            module.register_full_backward_pre_hook(lambda m, go, name=name: log.append((name, "pre", go)))
        model.register_full_backward_hook(lambda m, gi, go: log.append(("model", "first")), prepend=True)
        model.register_full_backward_pre_hook(lambda m, go: log.append(("model", "pre first")), prepend=True)
        x = lib.randn(4, 3, requires_grad=True)
        out = model(x)
        out.sum().backward()
        return [log, x.grad, graph_signature(out)]
    assert_same(scenario)


def test_several_inputs_and_outputs_non_tensors_are_none():
    def scenario(lib):
        log = []
        module = two_in_two_out(lib)
        module.register_full_backward_hook(lambda m, gi, go: log.append(("full", gi, go)))
        module.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go)))
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0], requires_grad=True)
        a, tag, b = module(x, 3.0, y)
        (a.sum() + b.sum() * 2).backward()
        return [log, tag, x.grad, y.grad, a._is_view(), type(a.grad_fn).__name__]
    assert_same(scenario)


def test_an_input_without_grad_and_an_output_not_used():
    def scenario(lib):
        log = []
        module = two_in_two_out(lib)
        module.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
        a, _, b = module(lib.tensor([1.0, 2.0], requires_grad=True), 2.0, lib.tensor([3.0]))
        a.sum().backward()
        return log
    assert_same(scenario)


def test_hooks_replace_grad_input_and_grad_output():
    def scenario(lib):
        layer = lib.nn.Linear(2, 2)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        seen = []
        layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
        layer.register_full_backward_pre_hook(lambda m, go: seen.append(go))
        layer.register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
        layer.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
        x = lib.tensor([[1.0, -1.0]], requires_grad=True)
        layer(x).sum().backward()
        return [seen, x.grad, layer.weight.grad, layer.bias.grad]
    assert_same(scenario)


def test_no_input_requires_grad_hooks_run_with_the_outputs():
    def scenario(lib, returns):
        log = []
        layer = lib.nn.Linear(2, 1)
        layer.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)) or returns)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer(lib.ones(1, 2)).sum().backward()
        return [log, [str(w.message) for w in caught], layer.bias.grad]
    for returns in (None, (None,)):
        assert_same(scenario, returns)
    assert_same(scenario, (1.0,))


def test_wrong_number_of_gradients_from_a_hook():
    def scenario(lib, pre):
        layer = lib.nn.Linear(2, 1)
        if pre:
            layer.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        else:
            layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        layer(lib.ones(1, 2, requires_grad=True)).sum().backward()
    assert_same(scenario, True)
    assert_same(scenario, False)


def test_in_place_on_the_output_or_in_forward_is_refused():
    def scenario(lib, where):
        class InPlace(lib.nn.Module):
            def forward(self, x):
                if where == "input":
                    x.mul_(2)
                return x * 1
        module = InPlace()
        module.register_full_backward_hook(lambda *_: None)
        out = module(lib.ones(2, requires_grad=True).clone())
        if where == "output":
            out.add_(1)
        out.sum().backward()
    assert_same(scenario, "output")
    assert_same(scenario, "input")


def test_removed_hooks_and_no_grad_calls_run_nothing():
    def scenario(lib):
        lib.manual_seed(0)
        log = []
        layer = lib.nn.Linear(2, 1)
        handle = layer.register_full_backward_hook(lambda *_: log.append("full"))
        pre = layer.register_full_backward_pre_hook(lambda *_: log.append("pre"))
        x = lib.ones(1, 2, requires_grad=True)
        with lib.no_grad():
            quiet = layer(x)
        layer(x).sum().backward()
        handle.remove()
        pre.remove()
        handle.remove()
        out = layer(x)
        out.sum().backward()
        return [log, quiet.requires_grad, type(out.grad_fn).__name__, x.grad]
    assert_same(scenario)


def test_output_not_a_tensor_or_tuple_warns():
    def scenario(lib):
        class ListOut(lib.nn.Module):
            def forward(self, x):
                return [x * 2]
        module = ListOut()
        module.register_full_backward_hook(lambda *_: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = module(lib.ones(2, requires_grad=True))
        return [[str(w.message) for w in caught], type(out[0].grad_fn).__name__]
    assert_same(scenario)


@pytest.mark.parametrize("hooked", [False, True])
def test_a_module_with_hooks_keeps_its_class_and_repr(hooked):
    def scenario(lib):
        layer = lib.nn.Linear(2, 1)
        if hooked:
            layer.register_full_backward_hook(lambda *_: None)
        return [type(layer).__name__, repr(layer), type(layer) is lib.nn.Linear]
    assert_same(scenario)


@pytest.mark.parametrize("first", ["full", "regular"])
def test_full_and_regular_backward_hooks_do_not_mix(first):
    def scenario(lib):
        layer = lib.nn.Linear(2, 1)
        kinds = {"full": layer.register_full_backward_hook, "regular": layer.register_backward_hook}
        kinds[first](lambda *_: None)
        kinds["regular" if first == "full" else "full"](lambda *_: None)
    assert_same(scenario)


@pytest.mark.parametrize("pre_hook", [False, True])
def test_regular_backward_hooks_see_the_first_output_node(pre_hook):
    """Linear's node is AddmmBackward0 (grad_input: bias, input, weight.T); with a pre-hook, the
    outputs' BackwardHookFunctionBackward."""
    def scenario(lib):
        lib.manual_seed(0)
        log = []
        layer = lib.nn.Linear(3, 2)
        layer.register_backward_hook(lambda m, gi, go: log.append((type(m).__name__, gi, go)))
        layer.register_backward_hook(lambda m, gi, go: (gi[0] * 2,) + gi[1:])
        if pre_hook:
            layer.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go)))
        x = lib.randn(4, 3, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = layer(x)
        out.sum().backward()
        return [log, x.grad, layer.bias.grad, [str(w.message) for w in caught]]
    assert_same(scenario)


@pytest.mark.parametrize("case", ["non-tensor input", "two outputs", "list output", "two nodes"])
def test_regular_backward_hooks_warn_where_torch_does(case):
    def scenario(lib):
        class Module(lib.nn.Module):
            def forward(self, x, k=2.0):
                if case == "two outputs":
                    return x * 2, x + 1
                if case == "list output":
                    return [x * 2]
                if case == "two nodes":
                    return (x * k).exp()
                return x * k
        module = Module()
        module.register_backward_hook(lambda *_: None)
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module(x, 3.0) if case == "non-tensor input" else module(x)
        return [(w.category.__name__, str(w.message)) for w in caught]
    assert_same(scenario)


def module_hook_returning_the_wrong_size(torch, kind):
    torch.manual_seed(0)
    linear = torch.nn.Linear(2, 2)
    if kind == "backward hook":
        linear.register_full_backward_hook(lambda module, grad_input, grad_output: (torch.ones(3),))
    else:
        linear.register_full_backward_pre_hook(lambda module, grad_output: (torch.ones(3),))
    linear(torch.ones(1, 2, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("kind", ["backward hook", "backward pre-hook"])
def test_a_module_hook_that_changes_a_gradients_size(kind):
    """Refused by the check of the node hook that calls it, which torch's error names: 'hook'."""
    assert_same(module_hook_returning_the_wrong_size, kind)
