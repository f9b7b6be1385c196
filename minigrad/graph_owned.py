"""A custom Function's node before torch 2.13: owned by the graph, not by its ``ctx``.

Until torch 2.13 (PR #179924), the ``ctx`` of a Function torch runs in Python (a user's, checkpoint's,
a module's backward hooks') held its node weakly: the graph owned the node (the tensors it made, the
nodes with an edge to it, a running backward), and once the graph let go the node was freed, and a
``ctx`` kept past that (stashed in backward, or ``y.grad_fn`` kept after ``del y``) refuses what lived
on the node, in torch's words. minigrad's ctx is its node, as in 2.13; on an earlier torch such a
Function's node class has ``GraphOwned`` first among its bases, which looks for the graph's holders
when one of those attributes is asked for outside a backward.
"""
import gc
import weakref

from . import grad_mode
from .saved_tensors import ERR_BACKWARD_TWICE

Tensor = Node = None
"""minigrad's Tensor and Node, assigned by function.py (which imports this module) once they exist."""

ERR_INVALID = ("Attribute '{}' is invalid for this instance of _C._FunctionBase. Accessing this attribute directly on "
               "an instance of autograd.Function is a legacy access pattern that is no longer supported. For "
               "examples on how to use new\u2011style autograd functions, see "
               "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function ")
ERR_METADATA = (
    "You attempted to access the anomaly metadata of a custom autograd function but the underlying PyNode has "
    "already been deallocated.  The most likely reason this occurred is because you assigned x.grad_fn to a local "
    "variable and then let the original variable get deallocated.  Don't do that!  If you really have no way of "
    "restructuring your code so this is the case, please file an issue reporting that you are affected by this.")


class GraphOwned:
    """The node attributes a ctx refuses once the graph let go of its node (checked on torch 2.11)."""

    _holders = None
    """Weak references to what last held the node: the tensors it made (``outputs_made``), then the
    holder a search found. While one holds it still, nothing need be searched. None while forward
    runs, which holds the node."""
    _freed = False

    def _check(self, error):
        if graph_let_go(self):
            raise RuntimeError(error)

    @property
    def next_functions(self):
        self._check(ERR_INVALID.format("next_functions"))
        return self._next_functions

    @next_functions.setter
    def next_functions(self, edges):
        self._next_functions = edges

    @property
    def _input_metadata(self):
        self._check(ERR_INVALID.format("_input_metadata"))
        return self._metadata_of_inputs

    @_input_metadata.setter
    def _input_metadata(self, metadata):
        self._metadata_of_inputs = metadata

    @property
    def saved_tensors(self):
        self._check(ERR_BACKWARD_TWICE)
        return super().saved_tensors

    @property
    def _raw_saved_tensors(self):
        self._check(ERR_BACKWARD_TWICE)
        return super()._raw_saved_tensors

    @property
    def metadata(self):
        self._check(ERR_METADATA)
        return super().metadata

    def name(self):
        self._check(ERR_INVALID.format("name"))
        return self._node_name

    def _sequence_nr(self):
        self._check(ERR_INVALID.format("_sequence_nr"))
        return self._sequence_number

    def register_hook(self, hook):
        self._check(ERR_INVALID.format("register_hook"))
        return super().register_hook(hook)

    def register_prehook(self, hook):
        self._check(ERR_INVALID.format("register_prehook"))
        return super().register_prehook(hook)

    def __repr__(self):
        return f"<{self._node_name} object at {hex(id(self))}>"


def outputs_made(node, results):
    """The tensors among ``results`` that have ``node`` as grad_fn are its first holders."""
    node._holders = [weakref.ref(r) for r in results if isinstance(r, Tensor) and r._node is node]


def graph_let_go(node):
    """Whether nothing of the graph holds ``node`` any more: not forward, not a backward (any backward
    running counts as holding it), not a tensor with ``node`` as grad_fn, not a node with an edge to it
    that is held itself. Once let go, always: torch freed the node. (Where torch freed a chain at once,
    a tensor kept only by what a let-go node saved still counts here until that node is asked about.)"""
    if node._freed:
        return True
    if node._holders is None or grad_mode._state.graph_task is not None:
        return False
    if any(_holds(ref(), node) for ref in node._holders):
        return False
    holder = _find_holder(node)
    if holder is None:
        node._freed = True
    else:
        node._holders = [weakref.ref(holder)]
    return node._freed


def _holds(holder, node):
    """Whether ``holder`` (a tensor, a node, or None: gone) still holds ``node``: a tensor while ``node``
    is its grad_fn, a node (whose edges never change) while it is held itself."""
    if isinstance(holder, Tensor):
        return holder._node is node
    return holder is not None and not (isinstance(holder, GraphOwned) and graph_let_go(holder))


def _find_holder(node):
    """A tensor or a node that holds ``node``, found among the objects that refer to it (``gc.get_referrers``,
    a walk of the heap: only once its last known holder let go), or None."""
    referrers = gc.get_referrers(node)
    for referrer in referrers + _owners([r for r in referrers if type(r) is dict and r.get("_node") is node]):
        if isinstance(referrer, Tensor) and referrer._node is node:
            return referrer
    edges = [r for r in referrers if type(r) is tuple and len(r) == 2 and r[0] is node]
    edge_lists = [r for r in gc.get_referrers(*edges) if type(r) is tuple] if edges else []
    nodes = gc.get_referrers(*edge_lists) if edge_lists else []
    node_attributes = [h for h in nodes if type(h) is dict and ("next_functions" in h or "_next_functions" in h)]
    for holder in nodes + _owners(node_attributes):
        if isinstance(holder, Node) and _holds(holder, node):
            return holder
    return None


def _owners(attribute_dicts):
    """The objects whose attributes are kept in these dicts (where Python keeps them apart)."""
    return gc.get_referrers(*attribute_dicts) if attribute_dicts else []
