"""Issue 37: ``torch.utils.checkpoint.checkpoint_sequential``, a sequence of modules or functions
cut into segments, each checkpointed but the last; each scenario run with torch and with minigrad."""
import warnings

import pytest

from coursekit.testing import assert_same, outcome


def segments(torch, use_reentrant, as_sequential):
    """The result and gradients, as without checkpointing; how often each function ran in forward
    and backward (a checkpointed segment runs again); the warnings given."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(3, 3) for _ in range(3)]
    calls = []

    def counted(i, function):
        def run(t):
            calls.append(i)
            return function(t)
        return run

    functions = [counted(i, layer) for i, layer in enumerate(layers)] + [counted(3, torch.tanh), counted(4, torch.exp)]
    x = torch.tensor([[0.1, -0.2, 0.3]], requires_grad=True)
    options = {} if use_reentrant is None else {"use_reentrant": use_reentrant}
    model = torch.nn.Sequential(*layers) if as_sequential else functions
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.utils.checkpoint.checkpoint_sequential(model, 2, x, **options)
        out.sum().backward()
    return (out, x.grad, [layer.weight.grad for layer in layers], calls,
            [(w.category.__name__, str(w.message), w.filename == __file__) for w in caught])


@pytest.mark.parametrize("use_reentrant", [None, True, False])
@pytest.mark.parametrize("as_sequential", [False, True])
def test_checkpoint_sequential_matches_torch(use_reentrant, as_sequential):
    assert_same(segments, use_reentrant, as_sequential, close=True)


def test_checkpoint_sequential_refuses_unknown_keywords_as_torch_does():
    def scenario(torch):
        x = torch.ones(2, requires_grad=True)
        run = torch.utils.checkpoint.checkpoint_sequential
        return (outcome(run, [torch.exp], 1, x, use_reentrant=False, preserve_rng_state=False, mode=1, other=2),
                run([torch.exp, torch.sin], 2, x, use_reentrant=False, preserve_rng_state=False))
    assert_same(scenario)
