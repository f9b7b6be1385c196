"""Item 7: the nn subset — Module, Parameter, Linear (torch's init), MSELoss, L1Loss — against torch."""
import math
import warnings

import pytest

from coursekit.testing import assert_same, graph_signature


def test_linear_initialisation_and_parameters_match_torch():
    def scenario(lib):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        return [dict(layer.named_parameters()), [p.requires_grad for p in layer.parameters()],
                [p.is_leaf for p in layer.parameters()], repr(layer)]
    assert_same(scenario)


@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 4, 3)], ids=["1d", "2d", "3d"])
def test_linear_forward_backward_and_graph_match_torch(shape):
    def scenario(lib):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        x = lib.randn(*shape, dtype=lib.float32, requires_grad=True)
        y = layer(x)
        y.sum().backward()
        return [y, graph_signature(y), x.grad, layer.weight.grad, layer.bias.grad]
    assert_same(scenario)


@pytest.mark.parametrize("loss", ["MSELoss", "L1Loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(loss, reduction):
    def scenario(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 2, dtype=lib.float64, requires_grad=True)
        target = lib.randn(3, 2, dtype=lib.float64)
        out = getattr(lib.nn, loss)(reduction=reduction)(x, target)
        out.backward(lib.ones_like(out))
        return [out, graph_signature(out), x.grad]
    assert_same(scenario)


def test_functional_losses_match_torch():
    def scenario(lib):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        t = lib.tensor([0.5, 0.5, 0.5], requires_grad=True)
        mse, l1 = lib.nn.functional.mse_loss(x, t), lib.nn.functional.l1_loss(x, t)
        (mse + l1).backward()
        return [mse, l1, graph_signature(mse), graph_signature(l1), x.grad, t.grad]
    assert_same(scenario)


def mse_with(lib, shapes, reduction):
    """mse_loss of an input and a target of the given shapes: torch's warning where they differ, the
    broadcast (an ExpandBackward0 for each that grows), the loss, its gradients, and under create_graph the
    nodes of the gradients (torch's fused MseLossBackwardBackward0, the target's with the two swapped),
    what they save, and the gradients of a sum of the gradients (values, and their nodes' names)."""
    lib.manual_seed(0)
    x, t = (lib.randn(*shape, dtype=lib.float64, requires_grad=True) for shape in shapes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = lib.nn.functional.mse_loss(x, t, reduction=reduction)
    grad_output = lib.randn(loss.shape, dtype=lib.float64, requires_grad=True)
    firsts = lib.autograd.grad(loss, (x, t), grad_output, create_graph=True)
    nodes = [g.grad_fn for g in firsts]
    saved = [(n._saved_reduction, n._saved_grad_output, n._saved_self, n._saved_target) for n in nodes
             if n.name() == "MseLossBackwardBackward0"]
    seconds = lib.autograd.grad(sum((g * g).sum() for g in firsts), (x, t, grad_output))
    return ([str(w.message) for w in caught], loss, graph_signature(loss), loss.grad_fn._saved_reduction, firsts,
            [graph_signature(g) for g in firsts], saved, seconds)


@pytest.mark.parametrize("shapes", [((3, 2), (3, 2)), ((3, 1), (1, 2)), ((3, 2), (2,))], ids=["same", "both", "target"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_broadcasts_and_differentiates_twice_as_torch(shapes, reduction):
    assert_same(mse_with, shapes, reduction)


def test_mse_loss_of_shapes_that_do_not_broadcast():
    def scenario(lib):
        with warnings.catch_warnings(record=True):
            return lib.nn.functional.mse_loss(lib.ones(3, 2), lib.ones(4, 2))
    assert_same(scenario)


def test_weights_settable_under_no_grad_and_zero_grad():
    def scenario(lib):
        layer = lib.nn.Linear(2, 1)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor([[1.0, 2.0]]))
            layer.bias.fill_(0.5)
        out = layer(lib.tensor([[3.0, 4.0]]))
        out.sum().backward()
        before = [layer.weight.grad, layer.bias.grad, layer.weight._version]
        layer.zero_grad()
        return [out, before, layer.weight.grad, layer.bias.grad]
    assert_same(scenario)


def test_submodules_register_their_parameters():
    def scenario(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.hidden = lib.nn.Linear(3, 4)
                self.out = lib.nn.Linear(4, 1)

            def forward(self, x):
                return self.out(self.hidden(x).relu())

        lib.manual_seed(0)
        net = Net()
        y = net(lib.randn(2, 3))
        y.sum().backward()
        return [[name for name, _ in net.named_parameters()], y, [p.grad for p in net.parameters()]]
    assert_same(scenario)


def test_parameter_wraps_a_tensor_and_requires_grad():
    def scenario(lib):
        p = lib.nn.Parameter(lib.ones(2))
        q = lib.nn.Parameter(lib.ones(2), requires_grad=False)
        return [p.requires_grad, p.is_leaf, q.requires_grad, repr(p)]
    assert_same(scenario)


# --- issue 9: the Module API, the new modules, clipping -------------------------------------

def small_net(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2))


def test_module_tree_walks_as_torch():
    def scenario(lib):
        net = small_net(lib)
        shared = lib.nn.Linear(2, 2)
        holder = lib.nn.ModuleList([shared, shared, lib.nn.GELU()])
        return [[name for name, _ in net.named_children()], [name for name, _ in net.named_modules()],
                [type(m).__name__ for m in net.modules()], [type(m).__name__ for m in net.children()],
                [name for name, _ in net.named_parameters()], [name for name, _ in net.named_parameters(recurse=False)],
                [name for name, _ in holder.named_parameters()], list(holder.state_dict()), len(list(holder.modules())),
                repr(net), repr(holder), len(net), type(net[1]).__name__, repr(net[1:3]), type(holder[-1]).__name__]
    assert_same(scenario)


def test_train_eval_and_requires_grad_():
    def scenario(lib):
        net = small_net(lib)
        modes = [m.training for m in net.eval().modules()] + [m.training for m in net.train().modules()]
        frozen = [p.requires_grad for p in net.requires_grad_(False).parameters()]
        count = len(list(net.parameters()))
        net[0].requires_grad_()
        try:
            net.train("yes")
        except ValueError as error:
            message = str(error)
        return [modes, frozen, count, [p.requires_grad for p in net.parameters()], message]
    assert_same(scenario)


def test_parameters_include_those_not_requiring_grad_and_zero_grad():
    def scenario(lib):
        net = small_net(lib)
        net[0].weight.requires_grad_(False)
        out = net(lib.randn(3, 4)).sum()
        out.backward()
        before = [p.grad for p in net.parameters()]
        net.zero_grad(set_to_none=False)
        zeroed = [(p.grad, p.grad._version) if p.grad is not None else None for p in net.parameters()]
        net.zero_grad()
        return [len(list(net.parameters())), before, zeroed, [p.grad for p in net.parameters()]]
    assert_same(scenario)


def test_state_dict_and_load_state_dict():
    def scenario(lib):
        net = small_net(lib)
        state = net.state_dict()
        other = small_net(lib)
        with lib.no_grad():
            for p in other.parameters():
                p.fill_(0.5)
        result = other.load_state_dict(state)
        return [list(state), dict(state), [p.requires_grad for p in state.values()], repr(result),
                dict(other.state_dict()), [p._version for p in other.parameters()], tuple(result)]
    assert_same(scenario)


@pytest.mark.parametrize("change", ["missing", "unexpected", "shape", "both_not_strict"])
def test_load_state_dict_errors_as_torch(change):
    def scenario(lib):
        net = small_net(lib)
        state = dict(net.state_dict())
        if change in ("missing", "both_not_strict"):
            del state["2.0.bias"], state["3.weight"]
        if change in ("unexpected", "both_not_strict"):
            state["3.extra"] = lib.zeros(1)
            state["9.weight"] = lib.zeros(1)
        if change == "shape":
            state["0.bias"] = lib.zeros(3)
        try:
            return repr(net.load_state_dict(state, strict=change != "both_not_strict"))
        except RuntimeError as error:
            return error
    assert_same(scenario)


def test_module_to_double_float_and_device(device):
    def scenario(lib, device):
        net = small_net(lib)
        weight = net[0].weight
        net(lib.randn(2, 4)).sum().backward()
        net.double()
        doubled = [weight.dtype, weight.grad.dtype, net[0].weight is weight, weight._version]
        out = net.to(device)(lib.randn(2, 4, dtype=lib.float64, device=device))
        net.float()
        return [doubled, out, weight.dtype, str(weight.device), net.to(lib.float64) is net, weight.dtype]
    assert_same(scenario, device)


@pytest.mark.parametrize("module", ["ReLU", "Tanh", "Sigmoid", "GELU", "GELU_tanh", "LayerNorm", "Embedding",
                                    "Dropout", "Dropout_eval"])
def test_layers_match_torch(module, device):
    def scenario(lib, device):
        nn = lib.nn
        lib.manual_seed(0)
        layer = {"ReLU": nn.ReLU(), "Tanh": nn.Tanh(), "Sigmoid": nn.Sigmoid(), "GELU": nn.GELU(),
                 "GELU_tanh": nn.GELU(approximate="tanh"), "LayerNorm": nn.LayerNorm(5),
                 "Embedding": nn.Embedding(7, 5, padding_idx=-1), "Dropout": nn.Dropout(0.25),
                 "Dropout_eval": nn.Dropout(0.25).eval()}[module].to(device)
        if module == "Embedding":
            x = lib.tensor([[0, 6, 3], [6, 2, 2]], device=device)
        else:
            x = lib.randn(3, 5, device=device, requires_grad=True)
        y = layer(x)
        y.backward(lib.randn_like(y))
        return [repr(layer), dict(layer.named_parameters()), y, graph_signature(y),
                {name: p.grad for name, p in layer.named_parameters()}, None if module == "Embedding" else x.grad]
    assert_same(scenario, device, close=True)


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "sequence_first"])
@pytest.mark.parametrize("average", [True, False], ids=["averaged", "per_head"])
def test_multihead_attention_matches_torch(batch_first, average, device):
    """Same seed, same parameters in the same order; then output, weights, graph and every gradient."""
    def scenario(lib, device):
        lib.manual_seed(0)
        attention = lib.nn.MultiheadAttention(8, 2, batch_first=batch_first, device=device)
        x = lib.randn(2, 5, 8, device=device, requires_grad=True)
        out, weights = attention(x, x, x, average_attn_weights=average)
        (out.sum() + (weights * weights).sum()).backward()
        return [repr(attention), dict(attention.named_parameters()), out, weights, graph_signature(out),
                graph_signature(weights), x.grad, {name: p.grad for name, p in attention.named_parameters()}]
    assert_same(scenario, device, close=True)


def test_multihead_attention_dropout_draws_as_torch():
    def scenario(lib):
        lib.manual_seed(0)
        attention = lib.nn.MultiheadAttention(8, 2, dropout=0.5)
        x = lib.randn(5, 2, 8)
        return list(attention(x, x, x))
    assert_same(scenario, close=True)


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type, device):
    def scenario(lib, device):
        net = small_net(lib).to(device)
        (net(lib.randn(3, 4, device=device)) * 10).sum().backward()
        total = lib.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.5, norm_type=norm_type)
        return [total, [p.grad for p in net.parameters()], [p.grad._version for p in net.parameters()]]
    assert_same(scenario, device, close=True)


def test_clip_grad_value_and_nothing_to_clip():
    def scenario(lib):
        net = small_net(lib)
        empty = lib.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        net(lib.randn(3, 4)).sum().backward()
        lib.nn.utils.clip_grad_value_(net.parameters(), 0.1)
        huge = net[0].weight
        huge.grad.fill_(float("inf"))
        try:
            lib.nn.utils.clip_grad_norm_(huge, 1.0, error_if_nonfinite=True)
        except RuntimeError as error:
            message = str(error)
        return [empty, [p.grad for p in net.parameters()], [p.grad._version for p in net.parameters()], message]
    assert_same(scenario)


def buffers(torch):
    class Codebook(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(2, 3)
            self.register_buffer("embedding", torch.ones(3, 4))
            self.register_buffer("scratch", torch.zeros(2), persistent=False)

    model = Codebook()
    names = [name for name, _ in model.named_buffers()]
    keys = list(model.state_dict())
    parameters = [name for name, _ in model.named_parameters()]
    state = {key: value * 2 for key, value in model.state_dict().items()}
    model.load_state_dict(state)
    model.embedding = model.embedding + 1
    loaded = model.embedding, model.proj.weight.shape
    model.double()
    return names, keys, parameters, loaded, model.embedding.dtype, model.scratch.dtype, list(model.buffers())


def test_buffers_are_kept_saved_loaded_and_moved_as_torch_does():
    assert_same(buffers)


TARGETS = {
    "class indices": lambda torch: torch.tensor([0, 2]),
    "class indices as floats": lambda torch: torch.tensor([0.0, 2.0]),
    "class indices as int32": lambda torch: torch.tensor([0, 2], dtype=torch.int32),
    "integers shaped like the input": lambda torch: torch.zeros(2, 3, dtype=torch.int64),
}


def cross_entropy_of(torch, target):
    return torch.nn.functional.cross_entropy(torch.ones(2, 3, requires_grad=True), TARGETS[target](torch))


@pytest.mark.parametrize("target", TARGETS)
def test_what_cross_entropy_takes_as_targets(target):
    """A target shaped like the input holds probabilities (which must be floats); any other holds
    class indices, of dtype int64 (or uint8)."""
    assert_same(cross_entropy_of, target)


def softmax_without_a_dim(torch, name, dims):
    import warnings
    shape = [2, 3, 4][:dims]
    x = torch.arange(float(math.prod(shape))).reshape(shape)
    x.requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = getattr(torch.nn.functional, name)(x)
    return y, y.grad_fn, [(warning.category.__name__, str(warning.message)) for warning in caught]


@pytest.mark.parametrize("dims", [0, 1, 2, 3])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_without_a_dim_picks_torchs_with_a_warning(name, dims):
    assert_same(softmax_without_a_dim, name, dims)
