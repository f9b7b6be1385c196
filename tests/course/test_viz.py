"""coursekit.viz: the description of a backward graph is the same for torch's graph and minigrad's
(names, edges, saved tensors alive or freed), the stepper runs minigrad's own backward one node at a
time in torch's order with torch's gradients and freeing, and pictures render (checked by
structure, not pixels)."""
import gc
import threading
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import minigrad  # noqa: E402
from coursekit import viz  # noqa: E402
from minigrad import engine  # noqa: E402
from coursekit.viz.layout import layered  # noqa: E402
from coursekit.viz.picture import box_sizes  # noqa: E402
from coursekit.testing import outcome, plain  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def signature(graph):
    """What must agree between the libraries: node names and kinds, saved tensors by name and state,
    edges, roots (values are compared where the scenario's arithmetic is exact)."""
    return ([(n.name, n.kind, n.label, tuple((s.name, s.state) for s in n.saved)) for n in graph.nodes],
            [(e.source, e.slot, e.target, e.input_nr) for e in graph.edges], graph.roots)


def seed_001(lib):
    """The forum's graph: ``y = t @ a`` computed once, then two losses built from it in the loop."""
    measure = lib.nn.MSELoss()
    x = lib.tensor([1, 0], dtype=torch.float64)
    t = lib.eye(2, dtype=torch.float64, requires_grad=True)
    a = lib.ones(2, dtype=torch.float64, requires_grad=True)
    y = t @ a
    losses = [measure(t @ (x + y), x) for _ in range(2)]
    return losses, {"t": t, "a": a, "y": y, "loss0": losses[0], "loss1": losses[1]}


# --- the description: torch's graph and minigrad's read alike ------------------------------------

def seed_001_pictures(lib):
    """The seed-001 graph described before backward, after the first loss's backward, and after the
    second's (which fails)."""
    losses, names = seed_001(lib)
    pictures = [viz.describe(*losses, names=names)]
    losses[0].backward()
    pictures.append(viz.describe(*losses, names=names))
    pictures.append(outcome(losses[1].backward))
    pictures.append(viz.describe(*losses, names=names))
    return pictures, names["t"].grad, names["a"].grad


def test_seed_001_described_alike_before_and_after_backward():
    """Every field (values, shapes, bytes, grads: exact arithmetic here) agrees at each stage."""
    expected, actual = seed_001_pictures(torch), seed_001_pictures(minigrad)
    assert actual[0] == expected[0]
    assert plain(actual[1:]) == plain(expected[1:])


def test_seed_001_shows_the_shared_product_and_its_freed_tensors():
    """The forum's question answered by the picture: ``t @ a`` (MvBackward0, labelled y) is one node
    with an edge from each loss; the first backward frees what it saved, the second fails there."""
    (before, after_first, error, after_second), _, _ = seed_001_pictures(minigrad)
    y = next(n for n in before.nodes if n.label == "y")
    assert y.name == "MvBackward0" and len(before.incoming(y.id)) == 2
    assert {before.nodes[e.source].name for e in before.incoming(y.id)} == {"AddBackward0"}
    assert [(s.name, s.state, s.tensor.shape) for s in y.saved] == [("self", "alive", (2, 2)), ("vec", "alive", (2,))]
    assert [s.state for s in after_first.nodes[y.id].saved] == ["freed", "freed"]
    loss1 = next(n for n in after_first.nodes if n.label == "loss1")
    assert {s.state for s in loss1.saved} == {"alive"}
    assert error[0] == "error" and "second time" in error[2]
    assert {s.state for n in after_second.nodes for s in n.saved} == {"freed"}
    t = next(n for n in after_first.nodes if n.label == "t")
    assert t.kind == "leaf" and len(before.incoming(t.id)) == 3 and t.grad.values == [[3.0, 2.0], [3.0, 2.0]]


def test_retain_graph_keeps_every_saved_tensor_alive_in_both_libraries():
    def scenario(lib):
        losses, names = seed_001(lib)
        losses[0].backward(retain_graph=True)
        losses[1].backward(retain_graph=True)
        return viz.describe(*losses, names=names)

    expected, actual = scenario(torch), scenario(minigrad)
    assert actual == expected
    assert {s.state for n in actual.nodes for s in n.saved} == {"alive"}


SCENARIOS = {
    "diamond": lambda lib, x: (x * 2) * x.exp(),
    "y * y: two edges to one node": lambda lib, x: (lambda y: y * y)(x + 1),
    "leaf used thrice": lambda lib, x: x * x * x,
    "tanh and sigmoid of one h": lambda lib, x: (lambda h: h.tanh() * h.sigmoid())(x * 3),
    "matmul of views": lambda lib, x: x.reshape(2, 2) @ x.reshape(2, 2).t(),
    "div, log": lambda lib, x: (x / (x + 1)).log(),
    "slice times a reduced view": lambda lib, x: x[2:] * x.view(2, 2).sum(0),
    "max, abs, neg": lambda lib, x: (-(x - 1)).abs() * x.max(),
    "mse loss": lambda lib, x: lib.nn.MSELoss()(x, lib.zeros(4, dtype=torch.float64)),
}


@pytest.mark.parametrize("retain_graph", [False, True], ids=["freeing", "retain_graph"])
@pytest.mark.parametrize("build", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_described_alike_before_and_after_backward(build, retain_graph):
    def scenario(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
        out = build(lib, x).sum()
        before = signature(viz.describe(out, names={"x": x, "out": out}))
        out.backward(retain_graph=retain_graph)
        return before, signature(viz.describe(out, names={"x": x, "out": out}))

    expected, actual = scenario(torch), scenario(minigrad)
    assert actual == expected
    states = {state for node in expected[1][0] for _, state in node[3]}
    assert states <= ({"alive"} if retain_graph else {"freed"})


def custom_function(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = Cube.apply(x).sum()
    before = viz.describe(out)
    out.backward()
    return before, viz.describe(out)


def test_custom_function_saved_tensors_described_alike():
    """A custom Function's node names nothing it saved: its ``saved_tensors`` show instead."""
    expected, actual = custom_function(torch), custom_function(minigrad)
    assert actual == expected
    assert [(s.name, s.state) for s in actual[0].nodes[1].saved] == [("saved_tensors[0]", "alive")]
    assert [(s.name, s.state) for s in actual[1].nodes[1].saved] == [("saved_tensors", "freed")]


def edited_after_forward(lib):
    """Seed 000's mistake: a saved buffer edited in place (under no_grad) before backward."""
    emb = lib.ones(2)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * emb).sum()
    with lib.no_grad():
        emb.mul_(0.9)
    return viz.describe(loss)


def test_a_saved_tensor_edited_in_place_is_described_as_modified():
    expected, actual = edited_after_forward(torch), edited_after_forward(minigrad)
    assert actual == expected
    assert [(s.name, s.state) for s in actual.nodes[1].saved] == [("other", "modified")]


def test_a_chain_deeper_than_the_recursion_limit_is_described_and_laid_out():
    x = minigrad.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(3000):
        y = y + 1
    graph = viz.describe(y)
    assert len(graph.nodes) == 3001 and graph.nodes[-1].kind == "leaf"
    layout = layered([(1.0, 0.3)] * len(graph.nodes), [(e.source, e.target) for e in graph.edges])
    assert layout.top == tuple(sorted(layout.top))


# --- the layout ----------------------------------------------------------------------------------

def test_layout_keeps_boxes_apart_and_every_edge_pointing_down():
    losses, names = seed_001(minigrad)
    graph = viz.describe(*losses, names=names)
    sizes = list(box_sizes(graph).values())
    layout = layered(sizes, [(e.source, e.target) for e in graph.edges])
    boxes = [(x - w / 2, top, x + w / 2, top + h) for (w, h), x, top in zip(sizes, layout.x, layout.top)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], "boxes overlap"
    for edge, route in zip(graph.edges, layout.routes):
        assert route[0][1] == boxes[edge.source][3] and route[-1][1] == boxes[edge.target][1]
        assert all(p[1] <= q[1] for p, q in zip(route, route[1:]))
    y = next(n.id for n in graph.nodes if n.label == "y")
    assert all(layout.top[y] > layout.top[e.source] for e in graph.incoming(y))


# --- the engine's observer -----------------------------------------------------------------------

def test_observer_sees_each_node_in_order_and_changes_nothing():
    """``run_backward(observer=...)`` runs the same backward: same gradients, same freeing."""
    def build():
        x = minigrad.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        return x, (h.exp() + h * h).sum()

    x_plain, plain_loss = build()
    order = []
    for node in viz.graph.walk([plain_loss.grad_fn]):
        node.register_prehook(lambda grads, node=node: order.append(node.name()))
    plain_loss.backward()
    x, loss = build()
    seen = []

    def observer(node, grads, run):
        seen.append((node.name(), [g.tolist() for g in grads]))
        return run()

    roots, grads, retain_graph = minigrad.autograd.prepare_backward(loss)
    engine.run_backward(roots, grads, retain_graph, False, observer=observer)
    assert [name for name, _ in seen] == order
    assert seen[0] == ("SumBackward0", [1.0])
    assert x.grad.tolist() == x_plain.grad.tolist()
    assert signature(viz.describe(loss)) == signature(viz.describe(plain_loss))


# --- the stepper: minigrad's backward, one node at a time, as torch runs it -----------------------

def torch_trace(loss, roots):
    """What torch's engine does, node by node: (name, gradients in, gradients out), and the graph
    as described just before each node runs (torch frees a node's tensors right after it runs)."""
    trace, pictures = [], []
    for node in viz.graph.walk([loss.grad_fn]):
        node.register_prehook(lambda grads, node=node: pictures.append(signature(viz.describe(*roots))))
        node.register_hook(lambda sent, received, node=node: trace.append((node.name(), plain(received),
                                                                           plain(sent))))
    loss.backward()
    return trace, pictures


def stepper_trace(loss, roots):
    stepper = viz.Stepper(loss)
    trace, pictures = [], []
    while not stepper.done:
        pictures.append(signature(viz.describe(*roots)))
        step = stepper.step()
        trace.append((step.name, plain(step.received), plain(tuple(grad for _, _, grad in step.sent))))
    return trace, pictures, stepper


@pytest.mark.parametrize("build", [lambda lib: seed_001(lib)[0][0], *(
    lambda lib, build=build: build(lib, lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64,
                                                   requires_grad=True)).sum() for build in SCENARIOS.values())],
    ids=["seed 001", *SCENARIOS.keys()])
def test_stepper_runs_torchs_nodes_in_torchs_order_with_torchs_gradients_and_freeing(build):
    torch_loss = build(torch)
    expected_trace, expected_pictures = torch_trace(torch_loss, [torch_loss])
    loss = build(minigrad)
    trace, pictures, stepper = stepper_trace(loss, [loss])
    assert [name for name, _, _ in trace] == [name for name, _, _ in expected_trace]
    assert trace == expected_trace
    assert pictures == expected_pictures
    assert signature(viz.describe(loss)) == signature(viz.describe(torch_loss))
    assert [step.number for step in stepper.steps] == list(range(1, len(trace) + 1))


def test_stepper_on_seed_001_says_what_each_node_sent_and_freed():
    losses, names = seed_001(minigrad)
    stepper = viz.Stepper(losses[0], names=names)
    graph = stepper.describe()
    assert graph.nodes[stepper.next].label == "loss0"
    steps = stepper.run()
    assert [(s.name, s.freed) for s in steps] == [
        ("MseLossBackward0", ("self", "target")), ("MvBackward0", ("self", "vec")), ("AddBackward0", ()),
        ("MvBackward0", ("self", "vec")), ("torch::autograd::AccumulateGrad", ()),
        ("torch::autograd::AccumulateGrad", ())]
    y = next(n.id for n in graph.nodes if n.label == "y")
    assert steps[3].node == y
    t, a = (next(n.id for n in graph.nodes if n.label == name) for name in "ta")
    assert [(target, input_nr, grad.tolist()) for target, input_nr, grad in steps[3].sent] == [
        (t, 0, [[1.0, 1.0], [1.0, 1.0]]), (a, 0, [1.0, 1.0])]
    assert plain(steps[4].received) == (("tensor", [[3.0, 2.0], [3.0, 2.0]]),)  # both edges into t, summed
    assert stepper.done and stepper.next is None


def second_backward_of_seed_001(lib, step):
    """The forum's failure: the second loss's backward reaches the freed ``t @ a``."""
    losses, names = seed_001(lib)
    losses[0].backward()
    result = outcome(lambda: viz.Stepper(losses[1]).run()) if step else outcome(losses[1].backward)
    return result, viz.describe(*losses, names=names), names["t"].grad, names["a"].grad


def test_stepper_fails_where_torch_fails_and_leaves_what_torch_leaves():
    expected = second_backward_of_seed_001(torch, step=False)
    actual = second_backward_of_seed_001(minigrad, step=True)
    assert actual[0] == expected[0] and "second time" in expected[0][2]
    assert actual[1] == expected[1]
    assert plain(actual[2:]) == plain(expected[2:])


def test_the_failed_node_is_marked():
    losses, names = seed_001(minigrad)
    losses[0].backward()
    stepper = viz.Stepper(losses[1], names=names)
    with pytest.raises(RuntimeError, match="second time"):
        stepper.run()
    graph = stepper.describe()
    assert graph.nodes[stepper.failed].label == "y" and stepper.done
    assert [s.name for s in stepper.steps] == ["MseLossBackward0", "MvBackward0", "AddBackward0"]
    assert stepper.progress().failed == stepper.failed


def test_stepper_with_retain_graph_accumulates_as_torch_does():
    def scenario(lib, stepped):
        losses, names = seed_001(lib)
        for loss in losses:
            viz.Stepper(loss, retain_graph=True).run() if stepped else loss.backward(retain_graph=True)
        return viz.describe(*losses, names=names)

    assert scenario(minigrad, stepped=True) == scenario(torch, stepped=False)


def test_stepper_with_create_graph_builds_the_double_backward_graph_backward_builds():
    def scenario(stepped):
        x = minigrad.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        out = (x * x.exp()).sum()
        viz.Stepper(out, create_graph=True).run() if stepped else out.backward(create_graph=True)
        grad = x.grad
        x.grad = None
        grad.sum().backward()
        return signature(viz.describe(grad)), plain(x.grad)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # create_graph's reference cycle warning
        assert scenario(stepped=True) == scenario(stepped=False)


def test_the_worker_takes_the_callers_saved_tensor_hooks():
    """Grad mode state is thread-local: the stepper's worker starts with the caller's, so a double
    backward graph built while stepping packs its saved tensors with the caller's hooks."""
    def packs(stepped):
        x = minigrad.tensor([1.0, 2.0], requires_grad=True)
        out = (x * x).sum()
        packed = []
        with minigrad.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            viz.Stepper(out, create_graph=True).run() if stepped else out.backward(create_graph=True)
        return len(packed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert packs(stepped=True) == packs(stepped=False) > 0


def stepper_threads():
    return [t for t in threading.enumerate() if t.name == "coursekit.viz.Stepper"]


def test_close_and_abandoning_stop_the_worker():
    losses, _ = seed_001(minigrad)
    stepper = viz.Stepper(losses[0])
    stepper.step()
    stepper.close()
    assert stepper.done and not stepper_threads()
    assert minigrad.is_grad_enabled()
    abandoned = viz.Stepper(losses[1])
    abandoned.step()
    worker = stepper_threads()[0]
    del abandoned
    gc.collect()
    worker.join(timeout=10)
    assert not worker.is_alive()


def test_a_finished_stepper_refuses_to_step():
    x = minigrad.tensor([1.0], requires_grad=True)
    stepper = viz.Stepper(x * 2)
    assert len(stepper.run()) == 2
    with pytest.raises(RuntimeError, match="finished"):
        stepper.step()


# --- pictures -------------------------------------------------------------------------------------

def saved(ax, path):
    ax.figure.savefig(path, dpi=80)
    plt.close(ax.figure)
    return path.read_bytes()


def test_seed_001_pictures_render(tmp_path):
    for lib in (torch, minigrad):
        losses, names = seed_001(lib)
        png = saved(viz.draw(viz.describe(*losses, names=names), title=lib.__name__), tmp_path / "before.png")
        assert png.startswith(PNG) and len(png) > 10_000
        losses[0].backward()
        assert saved(viz.draw(viz.describe(*losses, names=names)), tmp_path / "after.png").startswith(PNG)


def test_side_by_side_on_given_axes(tmp_path):
    figure, axes = plt.subplots(1, 2, figsize=(12, 6))
    for ax, lib in zip(axes, (torch, minigrad)):
        losses, names = seed_001(lib)
        assert viz.draw(viz.describe(*losses, names=names), ax=ax, title=lib.__name__) is ax
    assert saved(axes[0], tmp_path / "side.png").startswith(PNG)


def test_stepper_pictures_keep_their_layout(tmp_path):
    losses, names = seed_001(minigrad)
    stepper = viz.Stepper(losses[0], names=names)
    boxes = []
    while True:
        ax = stepper.draw(title=f"after {len(stepper.steps)} steps")
        boxes.append(sorted((round(p.get_x(), 6), round(p.get_y(), 6), round(p.get_width(), 6)) for p in ax.patches
                            if type(p).__name__ == "Rectangle" and p.get_fill()))  # a row of a box each
        assert saved(ax, tmp_path / f"step{len(stepper.steps)}.png").startswith(PNG)
        if stepper.done:
            break
        stepper.step()
    assert all(b == boxes[0] for b in boxes)


def test_widget_steps_and_shows_the_error():
    losses, names = seed_001(minigrad)
    losses[0].backward()
    stepper = viz.Stepper(losses[1], names=names)
    widget = viz.stepper_widget(stepper, title="loss1.backward()")
    (next_button, run_button), status, picture = widget.children[0].children, widget.children[1], widget.children[2]
    first = bytes(picture.value)
    assert first.startswith(PNG) and status.value == ""
    next_button.click()
    assert len(stepper.steps) == 1 and bytes(picture.value) != first and "1. <b>MseLossBackward0</b>" in status.value
    run_button.click()
    assert stepper.done and next_button.disabled and run_button.disabled
    assert "RuntimeError" in status.value and "second time" in status.value
