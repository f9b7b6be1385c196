"""Issue 37: code that runs inside a backward asking the backward for more — a final callback
(``Variable._execution_engine.queue_callback``), a hook over several tensors
(``autograd.graph.register_multi_grad_hook``) — each scenario run with torch and with minigrad."""
import threading

from coursekit.testing import assert_same


def identity_queuing(torch, callback):
    """A custom Function whose backward queues ``callback`` and passes its gradient on."""
    engine = torch.autograd.Variable._execution_engine

    class QueueOnBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            engine.queue_callback(callback)
            return grad

    return QueueOnBackward.apply


def callbacks_run_after_every_node(torch):
    """A callback runs once the whole graph has run (the leaf's .grad is there), in backward's grad
    mode (create_graph's); one it queues runs too, after it."""
    seen = []
    a = torch.ones(2, requires_grad=True)
    engine = torch.autograd.Variable._execution_engine

    def callback():
        seen.append(("callback", torch.is_grad_enabled(), a.grad is not None))
        engine.queue_callback(lambda: seen.append("queued by the callback"))

    apply = identity_queuing(torch, callback)
    (apply(a) * 2).sum().backward()
    a.grad = None
    grads = torch.autograd.grad(apply(a).sum(), a, create_graph=True)
    return seen, grads


def test_final_callbacks_run_when_every_node_has_run():
    assert_same(callbacks_run_after_every_node)


def callback_outside_backward_and_errors(torch):
    """Outside a backward there is none to queue into; a callback's error is backward's, and stops
    the callbacks after it."""
    seen = []
    engine = torch.autograd.Variable._execution_engine
    try:
        engine.queue_callback(lambda: None)
    except RuntimeError as error:
        seen.append(str(error))

    def failing():
        engine.queue_callback(lambda: seen.append("after the error"))
        raise ValueError("callback failed")

    a = torch.ones(2, requires_grad=True)
    try:
        identity_queuing(torch, failing)(a).sum().backward()
    except ValueError as error:
        seen.append(str(error))
    return seen, a.grad


def test_queue_callback_outside_backward_and_a_failing_callback():
    assert_same(callback_outside_backward_and_errors)


def reentrant_callbacks(torch):
    """A backward started inside a backward has callbacks of its own: each runs at the end of the
    backward it was queued in."""
    order = []

    class Reentrant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            torch.autograd.Variable._execution_engine.queue_callback(lambda: order.append("outer"))
            inner = grad.detach().requires_grad_()
            with torch.enable_grad():
                identity_queuing(torch, lambda: order.append("inner"))(inner).sum().backward()
            order.append("inner backward returned")
            return grad

    Reentrant.apply(torch.ones(2, requires_grad=True)).sum().backward()
    return order


def test_a_reentrant_backward_runs_its_own_callbacks():
    assert_same(reentrant_callbacks)


def multi_grad_all(torch):
    """``mode="all"``: once per backward, when every tensor this backward computes has its
    gradient; None for the others (outside the graph, or not needed for ``inputs=``)."""
    t1, t2, t3, t4 = (torch.tensor([1.0, 2.0], requires_grad=True) for _ in range(4))
    calls = []
    handle = torch.autograd.graph.register_multi_grad_hook(
        (t1, t2, t3, t4), lambda grads: calls.append([None if g is None else g.tolist() for g in grads]))
    out = (t2 * t3).sum()
    out.backward(inputs=(t2, t3), retain_graph=True)
    out.backward(inputs=(t1, t4), retain_graph=True)  # none of the four runs: no call
    out.backward(inputs=(t1, t3), retain_graph=True)
    out.backward(retain_graph=True)
    (t1 * t2 * 3).sum().backward()
    handle.remove()
    out.backward()
    return calls


def test_multi_grad_hook_all():
    assert_same(multi_grad_all)


def multi_grad_all_non_leaves_and_grad(torch):
    """On non-leaf tensors, with autograd.grad too (a captured tensor counts); a leaf that
    autograd.grad captures is refused, as torch refuses it."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y, z = x * 2, x * 3
    calls = []
    torch.autograd.graph.register_multi_grad_hook(
        (y, z), lambda grads: calls.append([None if g is None else g.tolist() for g in grads]))
    (y * z).sum().backward(retain_graph=True)
    torch.autograd.grad((y * z).sum(), y, retain_graph=True)
    torch.autograd.grad((y * z).sum(), x, retain_graph=True)
    torch.autograd.graph.register_multi_grad_hook((x, y), lambda grads: calls.append("never"))
    try:
        torch.autograd.grad((y * z).sum(), x)
    except RuntimeError as error:
        calls.append(str(error))
    return calls


def test_multi_grad_hook_all_on_non_leaves_and_with_grad():
    assert_same(multi_grad_all_non_leaves_and_grad)


def multi_grad_any_and_refusals(torch):
    """``mode="any"``: the first gradient of each backward, once (a tensor that does not require grad
    is left out); an unknown mode, and a tensor with no gradient under "all", are refused."""
    x, w = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0], requires_grad=True)
    firsts = []
    torch.autograd.graph.register_multi_grad_hook((x, w, torch.ones(2)), lambda g: firsts.append(g.tolist()),
                                                  mode="any")
    (x * w * 2).sum().backward()
    (x * 5).sum().backward()
    refusals = []
    for tensors, mode in (((x,), "foo"), ((x, torch.ones(2)), "all")):
        try:
            torch.autograd.graph.register_multi_grad_hook(tensors, print, mode=mode)
        except (ValueError, AssertionError) as error:
            refusals.append((type(error).__name__, str(error)))
    return firsts, refusals


def test_multi_grad_hook_any_and_its_refusals():
    assert_same(multi_grad_any_and_refusals)


def multi_grad_in_threads(torch):
    """Backwards in several threads at once each count for themselves."""
    t1, t2 = torch.rand(2, requires_grad=True), torch.rand(2, requires_grad=True)
    calls, lock = [], threading.Lock()

    def hook(grads):
        with lock:
            calls.append([g is not None for g in grads])

    torch.autograd.graph.register_multi_grad_hook((t1, t2), hook)
    out = (t1 * t2).sum()
    threads = [threading.Thread(target=out.backward, kwargs={"retain_graph": True}) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return calls


def test_multi_grad_hook_in_concurrent_backwards():
    assert_same(multi_grad_in_threads)
