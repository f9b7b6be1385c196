"""Issue 9: minigrad.optim against torch.optim: the same updates, state, versions, groups and errors."""
import copy
import sys

import pytest

from coursekit.testing import assert_same, blamed, both

SGD_OPTIONS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.1, "momentum": 0.9, "dampening": 0.5},
    {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    {"lr": 0.1, "weight_decay": 0.1, "maximize": True},
]
ADAM_OPTIONS = [
    {},
    {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6},
    {"lr": 0.01, "weight_decay": 0.1},
    {"lr": 0.01, "amsgrad": True},
    {"lr": 0.01, "maximize": True},
    {"lr": 0.01, "foreach": True},  # torch's default on CUDA: _multi_tensor_adam
    {"lr": 0.01, "foreach": True, "amsgrad": True, "maximize": True, "weight_decay": 0.1},
    {"lr": 0.01, "foreach": False},
]


def steps(lib, device, name, options, count=5):
    """A few steps of a small model, one parameter frozen (no gradient): parameters, state, versions."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1)).to(device)
    model[2].bias.requires_grad_(False)
    optimizer = getattr(lib.optim, name)(model.parameters(), **options)
    x, y = lib.randn(8, 3, device=device), lib.randn(8, 1, device=device)
    for _ in range(count):
        optimizer.zero_grad()
        lib.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    state = [optimizer.state[p] for p in model.parameters() if p in optimizer.state]
    return [dict(model.named_parameters()), state, [p._version for p in model.parameters()], repr(optimizer),
            [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups],
            [[p._version for p in s.values()] for s in state]]


@pytest.mark.parametrize("options", SGD_OPTIONS, ids=lambda o: "-".join(o))
def test_sgd_matches_torch(options, device):
    assert_same(steps, device, "SGD", options, close=True)


@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=lambda o: "-".join(o) or "defaults")
def test_adam_matches_torch(options, device):
    assert_same(steps, device, "Adam", options, close=True)


def test_param_groups_closure_and_zero_grad():
    def scenario(lib):
        lib.manual_seed(0)
        first, second = lib.nn.Linear(2, 2), lib.nn.Linear(2, 1)
        optimizer = lib.optim.SGD([{"params": first.parameters()}, {"params": second.parameters(), "lr": 0.5}],
                                  lr=0.1, momentum=0.5)
        x = lib.randn(4, 2)

        def closure():
            optimizer.zero_grad()
            loss = second(first(x)).pow(2).mean()
            loss.backward()
            return loss
        losses = [optimizer.step(closure) for _ in range(3)]
        optimizer.zero_grad(set_to_none=False)
        zeroed = [p.grad for p in first.parameters()]
        optimizer.zero_grad()
        return [losses, [g["lr"] for g in optimizer.param_groups], [len(g["params"]) for g in optimizer.param_groups],
                dict(first.named_parameters()), dict(second.named_parameters()), zeroed, first.weight.grad]
    assert_same(scenario, close=True)


@pytest.mark.parametrize("make", [
    lambda lib, p: lib.optim.SGD([], lr=0.1),
    lambda lib, p: lib.optim.SGD(p, lr=0.1),
    lambda lib, p: lib.optim.SGD([p * 2], lr=0.1),
    lambda lib, p: lib.optim.SGD([p, 1], lr=0.1),
    lambda lib, p: lib.optim.SGD([p], lr=-1),
    lambda lib, p: lib.optim.SGD([p], momentum=-1),
    lambda lib, p: lib.optim.SGD([p], weight_decay=-1),
    lambda lib, p: lib.optim.SGD([p], nesterov=True),
    lambda lib, p: lib.optim.SGD([{"params": [p]}, {"params": [p]}]),
    lambda lib, p: lib.optim.Adam([p], lr=-1),
    lambda lib, p: lib.optim.Adam([p], eps=-1),
    lambda lib, p: lib.optim.Adam([p], betas=(1.0, 0.9)),
    lambda lib, p: lib.optim.Adam([p], betas=(0.9, -0.1)),
    lambda lib, p: lib.optim.Adam([p], weight_decay=-1),
], ids=["empty", "tensor", "non_leaf", "not_a_tensor", "lr", "momentum", "weight_decay", "nesterov", "two_groups",
        "adam_lr", "adam_eps", "beta1", "beta2", "adam_weight_decay"])
def test_bad_arguments_fail_as_in_torch(make):
    def scenario(lib):
        return make(lib, lib.nn.Parameter(lib.ones(2)))
    assert_same(scenario)


def optimizer_in_backward(lib, steps=3):
    """An optimizer per parameter, stepped by the parameter's post-accumulate-grad hook (the step runs
    in backward, the gradient freed at once), against a copy made after the hooks were registered,
    trained the usual way: a copy has no hooks, so it steps only by its own optimizer."""
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    optimizers = {p: lib.optim.Adam([p], lr=0.1) for p in model.parameters()}

    def step(p):
        optimizers[p].step()
        optimizers[p].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]
    reference = copy.deepcopy(model)
    reference_optimizer = lib.optim.Adam(reference.parameters(), lr=0.1)
    x = lib.rand(4, 3)
    seen = []
    for removed in (False, True):
        if removed:
            for handle in handles:
                handle.remove()
        for _ in range(steps):
            model(x).sum().backward()
            reference(x).sum().backward()
            reference_optimizer.step()
            reference_optimizer.zero_grad()
            seen.append([list(model.parameters()), [p.grad for p in model.parameters()], list(reference.parameters()),
                         [p._version for p in model.parameters()]])
    return seen


def test_an_optimizer_stepped_in_backward_by_post_accumulate_grad_hooks():
    assert_same(optimizer_in_backward, close=True)


def duplicate_parameters(torch, optimizer):
    """Warned about, at the line of the optimizer's own __init__ that set up its groups, as torch does."""
    import warnings
    x = torch.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(torch.optim, optimizer)([x, x], lr=0.1)
    module = sys.modules[getattr(torch.optim, optimizer).__module__]
    return [(str(warning.message), blamed(warning, __file__, module)) for warning in caught]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_a_group_with_a_parameter_twice_is_warned_about(optimizer):
    expected, actual = both(duplicate_parameters, optimizer)
    assert actual == expected, f"\ntorch:    {expected}\nminigrad: {actual}"
    assert [where for _, where in expected] == ["library"]
