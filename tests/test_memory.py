"""Issue 9, item 6: memory you can measure. minigrad.memory counts the storages live graphs keep for
backward; torch is measured through its saved-tensor hooks (memory.SavedBytes), and the two must
agree byte for byte on the same scenario."""
import subprocess
import sys
import textwrap

import pytest
import torch

import minigrad
from minigrad import memory


def mlp(lib, depth=2, width=32, batch=8):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(width, width) for _ in range(depth)]
    x = lib.randn(batch, width)

    def forward(x, layers=layers):
        for layer in layers:
            x = layer(x).tanh()
        return x
    return layers, x, forward


def saved_after(lib, scenario):
    """What the graphs of ``scenario(lib)`` hold after it ran: torch through its hooks, minigrad by its record."""
    if lib is torch:
        with memory.SavedBytes(torch) as saved:
            kept = scenario(lib)
        return saved.current, kept
    before = memory.saved_bytes()
    kept = scenario(lib)
    return memory.saved_bytes() - before, kept


SCENARIOS = {
    "mlp forward": lambda lib: mlp(lib)[2](mlp(lib)[1]).sum(),
    "a tensor saved by two nodes": lambda lib: (lambda x: x.exp() * x)(lib.randn(100, requires_grad=True)),
    "views of one storage": lambda lib: (lambda x: (x[:50] * x[50:]).sum() + (x.view(10, 10) @ x.view(10, 10)).sum())(
        lib.randn(100, requires_grad=True) * 1),
    "a python number is not counted": lambda lib: lib.randn(100, requires_grad=True) * 2.0,
    "nothing requires grad": lambda lib: lib.randn(100).exp() * 3,
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_saved_bytes_agree_with_torchs_hooks(name):
    expected = saved_after(torch, SCENARIOS[name])[0]
    actual = saved_after(minigrad, SCENARIOS[name])[0]
    assert actual == expected


def test_backward_frees_every_saved_byte_and_retain_graph_keeps_them():
    start = memory.saved_bytes()
    layers, x, forward = mlp(minigrad, depth=3)
    loss = forward(x).sum()
    held = memory.saved_bytes() - start
    assert held > 0
    loss.backward(retain_graph=True)
    assert memory.saved_bytes() - start == held
    loss.backward()
    assert memory.saved_bytes() == start


def test_dropping_a_graph_without_backward_frees_it():
    start = memory.saved_bytes()
    layers, x, forward = mlp(minigrad)
    loss = forward(x).sum()
    assert memory.saved_bytes() > start
    del loss
    assert memory.saved_bytes() == start


def logged_losses(lib, keep_tensor, steps=5):
    """The tutorial's loss logging: ``losses.append(loss)`` keeps every step's graph alive."""
    layers, x, forward = mlp(lib)
    losses, held = [], []
    measure = memory.SavedBytes(torch) if lib is torch else None
    if measure:
        measure.__enter__()
    start = 0 if measure else memory.saved_bytes()
    for _ in range(steps):
        loss = (forward(x) ** 2).mean()
        losses.append(loss if keep_tensor else loss.item())
        held.append((measure.current if measure else memory.saved_bytes()) - start)
    if measure:
        measure.__exit__(None, None, None)
    return held


@pytest.mark.parametrize("keep_tensor", [True, False], ids=["append(loss)", "append(loss.item())"])
def test_logging_the_loss_tensor_keeps_every_graph(keep_tensor):
    expected, actual = logged_losses(torch, keep_tensor), logged_losses(minigrad, keep_tensor)
    assert actual == expected
    if keep_tensor:
        growth = {after - before for before, after in zip(actual, actual[1:])}
        assert len(growth) == 1 and growth.pop() > 0, "grows by one graph's activations per step"
    else:
        assert len(set(actual)) == 1, "stays flat"


def peak_of_a_step(lib, checkpointed):
    layers, x, forward = mlp(lib, depth=8, width=64, batch=16)
    x.requires_grad_()

    def step():
        h = x
        for layer in layers:
            body = (lambda h, layer=layer: (layer(h).tanh() * 2).exp())
            h = lib.utils.checkpoint.checkpoint(body, h, use_reentrant=False) if checkpointed else body(h)
        h.sum().backward()

    if lib is torch:
        with memory.SavedBytes(torch) as saved:
            step()
        return saved.peak
    memory.reset_peak()
    base = memory.saved_bytes()
    step()
    return memory.peak_saved_bytes() - base


def test_checkpointing_lowers_the_peak_as_much_as_in_torch():
    plain = {lib.__name__: peak_of_a_step(lib, False) for lib in (torch, minigrad)}
    checkpointed = {lib.__name__: peak_of_a_step(lib, True) for lib in (torch, minigrad)}
    assert plain["minigrad"] == plain["torch"]
    assert checkpointed["minigrad"] == checkpointed["torch"]
    assert checkpointed["minigrad"] < plain["minigrad"] / 2


def test_the_record_starts_with_the_graphs_alive_when_first_asked():
    """In a fresh process: graphs made before the first call are counted, and so is their release."""
    code = textwrap.dedent("""
        import minigrad
        from minigrad import memory
        x = minigrad.randn(1000, requires_grad=True)
        y = x.exp()
        print(memory.saved_bytes())
        y.sum().backward()
        print(memory.saved_bytes())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["4000", "0"], done.stderr


def test_the_record_starts_past_a_refused_inference_tensor():
    """An inference tensor refused for saving leaves no half-made entry for the record to find when it
    starts, even while the error (and the frames of its traceback) is kept."""
    code = textwrap.dedent("""
        import minigrad
        from minigrad import memory
        with minigrad.inference_mode():
            frozen = minigrad.ones(2)
        w = minigrad.ones(2, requires_grad=True)
        try:
            w * frozen
        except RuntimeError as error:
            kept = error
        print(memory.saved_bytes())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0"], done.stderr


def test_the_record_starts_past_a_pack_hook_that_raised():
    """A pack hook that raises leaves a half-made entry that the error's traceback keeps alive: the
    record, started after, skips it."""
    code = textwrap.dedent("""
        import gc
        import minigrad
        from minigrad import memory
        gc.disable()
        def refuse(tensor):
            raise ValueError("no")
        w = minigrad.ones(4, requires_grad=True)
        try:
            with minigrad.autograd.graph.saved_tensors_hooks(refuse, lambda packed: packed):
                w * w
        except ValueError as error:
            kept = error
        print(memory.saved_bytes())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0"], done.stderr
