"""Item 7: the nn subset — Module, Parameter, Linear (torch's init), MSELoss, L1Loss — against torch."""
import pytest

from parity import assert_same, graph_signature


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
