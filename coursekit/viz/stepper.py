"""minigrad's backward, one node at a time: which node fires next, what it receives and sends, what it frees.

A ``Stepper`` runs the real backward — ``engine.run_backward``, prepared by
``autograd.prepare_backward`` as ``backward()`` prepares it — with an ``observer`` that stops before
each node until ``step()`` lets it go. The engine's loop is a plain loop (``backprop``, written by
the learners in exercise 2), and a callback cannot pause a loop that calls it, so the backward runs
on a worker thread. The two threads never run at once: the worker reports and waits for a command
before each node and after it, the caller waits for each report, so every run does the same
things in the same order (a generator would need the loop itself to yield: a second copy of the engine).

A stepper holds the gradients it shows, so a leaf's AccumulateGrad copies its gradient where a plain
backward may adopt it (as torch's does when nothing else holds it): the values are the same.
"""
import queue
import threading
import weakref
from dataclasses import dataclass

from minigrad import autograd, engine, grad_mode
from .picture import Progress, box_sizes, draw
from .graph import describe_nodes, saved_entries, tensor_info, walk


@dataclass(frozen=True)
class Step:
    """What one node did: ``received``, the gradients of its outputs as the engine handed them over
    (None: none arrived); ``sent``, per edge in ``next_functions``, (target id or None, input_nr,
    gradient or None); ``freed``, the names of the saved tensors freed when it ran."""

    number: int
    node: int
    name: str
    received: tuple
    sent: tuple
    freed: tuple


class Stepper:
    """``backward()`` of ``tensors`` (same arguments), paused before each node of the graph.

    ``next`` is the id (in ``describe()``) of the node that fires next, ``done`` whether backward
    has finished; ``step()`` runs one node, ``run()`` the rest, ``steps`` lists what ran. An error
    in a node is raised by the ``step()`` that ran it and ends the backward, as it would end
    ``backward()``; ``failed`` is then that node's id.
    """

    def __init__(self, tensors, grad_tensors=None, retain_graph=None, create_graph=False, names=None):
        roots, grads, retain_graph = autograd.prepare_backward(tensors, grad_tensors, retain_graph, create_graph)
        self._roots = [node for node, _ in roots]
        self._nodes = walk(self._roots)
        self._ids = {node: i for i, node in enumerate(self._nodes)}
        self._names = names
        self.steps = []
        self.failed = None
        self._sent = {}
        self._sizes = {}
        self._commands, self._reports = queue.Queue(), queue.Queue()
        worker = threading.Thread(target=_backward, daemon=True, name="coursekit.viz.Stepper",
                                  args=(roots, grads, retain_graph, create_graph, dict(vars(grad_mode._state)),
                                        self._commands, self._reports))
        worker.start()
        self._worker = worker
        self._finalizer = weakref.finalize(self, self._commands.put, _STOP)
        self._pending = self._report()

    @property
    def done(self):
        return self._pending is None

    @property
    def next(self):
        return None if self._pending is None else self._ids[self._pending[0]]

    def step(self):
        """Run the next node; what it did (a ``Step``)."""
        if self._pending is None:
            raise RuntimeError("backward has finished: there is no node left to run")
        node, received = self._pending
        node_id = self._ids[node]
        self._pending = None
        before = saved_entries(node)
        self._commands.put(_GO)
        try:
            (sent,) = self._report()
        except Exception:
            self.failed = node_id
            raise
        after = {saved.name: saved.state for saved in saved_entries(node)}
        freed = tuple(s.name for s in before if s.state != "freed" and after.get(s.name, "freed") == "freed")
        edges = tuple((None if target is None else self._ids[target], input_nr, grad)
                      for (target, input_nr), grad in zip(node.next_functions, sent))
        for slot, (target, _, grad) in enumerate(edges):
            if target is not None:
                self._sent[(node_id, slot)] = None if grad is None else tensor_info(grad)
        step = Step(len(self.steps) + 1, node_id, node.name(), tuple(received), edges, freed)
        self.steps.append(step)
        self._commands.put(_GO)
        self._pending = self._report()
        return step

    def run(self):
        """Run every node left; their ``Step``s."""
        steps = []
        while not self.done:
            steps.append(self.step())
        return steps

    def close(self):
        """Abandon the backward where it is (the nodes that ran stay run, as after an error)."""
        self._pending = None
        self._finalizer()
        self._worker.join()

    def describe(self):
        """The graph now, as ``viz.describe`` gives it (same ids as ``next`` and the steps)."""
        return describe_nodes(self._nodes, self._roots, self._names)

    def progress(self):
        """What the picture shows of the backward so far."""
        last = self.steps[-1] if self.steps else None
        received = () if self._pending is None else tuple(
            None if grad is None else tensor_info(grad) for grad in self._pending[1])
        return Progress({step.node: step.number for step in self.steps}, self.next, received, dict(self._sent),
                        frozenset((last.node, name) for name in last.freed) if last else frozenset(), self.failed)

    def draw(self, ax=None, title=None):
        """The graph now, with the backward under way on it. Boxes only grow from one picture to
        the next, so the layout stays put as the stepper runs."""
        graph = self.describe()
        for node_id, (w, h) in box_sizes(graph).items():
            old = self._sizes.get(node_id, (0.0, 0.0))
            self._sizes[node_id] = (max(w, old[0]), max(h, old[1]))
        return draw(graph, ax=ax, title=title, progress=self.progress(), at_least=self._sizes)

    def _report(self):
        """The worker's next report: what the node about to run receives, or what the node that ran
        sent; None when backward has finished. An error of the backward is raised here."""
        kind, *rest = self._reports.get()
        if kind in ("done", "error"):
            self._worker.join()
            if kind == "error":
                raise rest[0]
            return None
        return rest


_GO, _STOP = "go", "stop"


class _Stopped(Exception):
    """Raised in the worker by ``close()``: unwinds the backward like an error would."""


def _backward(roots, grads, retain_graph, create_graph, state, commands, reports):
    """The worker: backward as ``backward()`` runs it, reporting to the stepper around each node.

    It starts with its caller's grad mode state (thread-local), as torch's engine threads do. It
    holds the queues, not the stepper, so a stepper nobody holds is collected, and its finalizer
    stops the worker."""
    vars(grad_mode._state).update(state)

    def wait():
        if commands.get() == _STOP:
            raise _Stopped

    def observer(node, received, run):
        reports.put(("next", node, list(received)))
        wait()
        sent = run()
        reports.put(("ran", sent))
        wait()  # while the stepper reads what the node did
        return sent

    try:
        engine.run_backward(roots, grads, retain_graph, create_graph, observer=observer)
    except _Stopped:
        return
    except Exception as error:  # noqa: BLE001 - handed to the thread that steps, which raises it
        reports.put(("error", error))
        return
    reports.put(("done",))
