"""Issue 9, item 5: the tutorials' training code runs unchanged with ``import minigrad as torch`` and
gives torch's numbers: every expected value comes from running the same code with torch."""
import numpy
import pytest
from sklearn.datasets import load_digits

from coursekit.testing import assert_same, both, graph_signature, nearly_equal

# --- (a) the training loop -------------------------------------------------------------------


def training_loop(lib, zero_grad=True, steps=100):
    """The tutorial's loop: zero_grad, forward, loss, backward, clip, step; the gradient norm every 10 steps."""
    torch, nn, optim = lib, lib.nn, lib.optim
    torch.manual_seed(0)
    model = nn.Linear(10, 1)
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    inputs = torch.randn(32, 10)
    targets = torch.randn(32, 1)
    loss_history, grad_norms, clipped = [], [], []
    for step in range(steps):
        if zero_grad:
            optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss_history.append(loss.item())
        loss.backward()
        clipped.append(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0).item())
        optimizer.step()
        if step % 10 == 0:
            grad_norms.append(sum(p.grad.norm().item() ** 2 for p in model.parameters() if p.grad is not None) ** 0.5)
    return [loss_history, grad_norms, clipped, dict(model.state_dict()), [p._version for p in model.parameters()],
            graph_signature(loss)]


@pytest.mark.parametrize("zero_grad", [True, False], ids=["zero_grad", "accumulating"])
def test_training_loop_matches_torch(zero_grad):
    assert_same(training_loop, zero_grad)


def test_training_loop_under_no_grad_by_mistake():
    """Forward under no_grad builds no graph: backward fails with torch's message."""
    def scenario(lib):
        lib.manual_seed(0)
        model = lib.nn.Linear(10, 1)
        with lib.no_grad():
            loss = lib.nn.MSELoss()(model(lib.randn(32, 10)), lib.randn(32, 1))
        try:
            loss.backward()
        except RuntimeError as error:
            return [loss.requires_grad, loss.grad_fn, str(error)]
    expected, actual = both(scenario)
    assert actual == expected
    assert expected[2] == "element 0 of tensors does not require grad and does not have a grad_fn"


# --- (b) inference modes ---------------------------------------------------------------------


def inference_modes(lib):
    """The tutorial's MLP, smaller batch and fewer runs: default, no_grad, inference_mode."""
    torch, nn = lib, lib.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 1024), nn.ReLU(), nn.Linear(1024, 10))
    x = torch.randn(4, 1024)
    results = []
    for _ in range(2):
        default = model(x)
        with torch.no_grad():
            no_grad = model(x)
        with torch.inference_mode():
            inference = model(x)
        results.append([default.requires_grad, no_grad.requires_grad, inference.requires_grad,
                        inference.is_inference(), default.detach().requires_grad, default.sum().item(),
                        graph_signature(default), no_grad.grad_fn, default.detach(), no_grad, inference])
    return [repr(model), results]


def test_inference_modes_match_torch():
    assert_same(inference_modes, close=True)


# --- (c) the checkpoint tutorial's transformer, without checkpointing ------------------------


def transformer(lib, vocab=100, d_model=32, nhead=4, layers=2):
    torch, nn = lib, lib.nn

    class TransformerBlock(nn.Module):
        def __init__(self, d_model, nhead):
            super().__init__()
            self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

        def forward(self, x):
            attn_out, _ = self.attn(x, x, x)
            x = self.norm1(x + attn_out)
            return self.norm2(x + self.ff(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            self.layers = nn.ModuleList([TransformerBlock(d_model, nhead) for _ in range(layers)])
            self.out = nn.Linear(d_model, vocab)

        def forward(self, tokens):
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x)
            return self.out(x)

    torch.manual_seed(0)
    model = Model()
    tokens = torch.randint(0, vocab, (4, 64))
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.view(-1, vocab), tokens.view(-1))
    loss.backward()
    return [repr(model), loss, logits, graph_signature(loss), dict(model.named_parameters()),
            {name: p.grad for name, p in model.named_parameters()}]


def test_transformer_matches_torch():
    expected, actual = both(transformer)
    assert actual[0] == expected[0] and actual[3] == expected[3]
    assert nearly_equal(actual, expected, rel=1e-4, abs_=1e-5), "values or gradients differ from torch's"


# --- a real dataset: scikit-learn's digits ---------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    """8x8 images of digits (1797 of them, shipped inside scikit-learn), scaled to [0, 1], shuffled
    once (a fixed permutation), 1400 to train on and 397 held out."""
    data = load_digits()
    order = numpy.random.RandomState(0).permutation(len(data.target))
    images, labels = data.data[order] / 16.0, data.target[order]
    return images[:1400], labels[:1400], images[1400:], labels[1400:]


def train_on_digits(lib, digits, optimizer_name):
    """A 64-32-10 MLP, 10 epochs of mini-batches of 100 (slices); the loss of every step and the test accuracy."""
    torch, nn = lib, lib.nn
    train_x, train_y, test_x, test_y = digits
    torch.manual_seed(0)
    x, y = torch.tensor(train_x, dtype=torch.float32), torch.tensor(train_y)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    if optimizer_name == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(10):
        for start in range(0, len(train_y), 100):
            optimizer.zero_grad()
            loss = criterion(model(x[start:start + 100]), y[start:start + 100])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        predictions = model(torch.tensor(test_x, dtype=torch.float32)).argmax(dim=1)
    accuracy = (predictions == torch.tensor(test_y)).float().mean().item()
    return losses, accuracy


@pytest.mark.parametrize("optimizer_name", ["sgd", "adam"])
def test_mlp_learns_digits_as_torch_does(digits, optimizer_name):
    (torch_losses, torch_accuracy), (losses, accuracy) = both(train_on_digits, digits, optimizer_name)
    assert nearly_equal(losses, torch_losses, rel=1e-4, abs_=1e-5)
    assert nearly_equal(accuracy, torch_accuracy, rel=0, abs_=0.01)
    assert accuracy >= 0.9 and losses[-1] < losses[0] / 5
