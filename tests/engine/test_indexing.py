"""Advanced indexing, with both libraries: ``x[list]``, ``x[index tensor]``, ``x[mask]``, mixed with
ints, slices, None and ``...``, and ``x[key] = value`` with such keys (torch's index and index_put_).
Basic indexing's values and gradients are test_ops.py's INDEXING cases.

What each scenario returns is compared: values, gradients, the nodes' names and edges, what
IndexBackward0 and IndexPutBackward0 save, and torch's errors and warnings word for word.
"""
import warnings

import pytest

from coursekit.testing import assert_same

KEYS = {
    "list": lambda lib: [1, 0],
    "duplicates": lambda lib: [1, 1, 0, 1],
    "two_lists": lambda lib: ([1, 0], [2, 1]),
    "lists_broadcast": lambda lib: ([[1], [0]], [0, 2, 1]),
    "slice_then_list": lambda lib: (slice(1, None), [0, 2]),
    "whole_slice_then_list": lambda lib: (slice(None), [0, 2]),
    "list_slice_list": lambda lib: ([0, 1], slice(1, None), [3, 0]),
    "list_then_int": lambda lib: ([1, 0], Ellipsis, 2),
    "none_then_list": lambda lib: (None, [1]),
    "list_none_list": lambda lib: ([0, 1], None, [1, 2]),
    "ellipsis_then_list": lambda lib: (Ellipsis, [3, 1]),
    "index_tensor": lambda lib: lib.tensor([[0, 1], [1, 1]]),
    "0_dim_index_tensor": lambda lib: lib.tensor(1),
    "mask": lambda lib: lib.tensor([[True, False, True], [False, True, True]]),
    "mask_then_slice": lambda lib: (lib.tensor([[True, False, True], [False, True, True]]), slice(1, 3)),
    "mask_of_a_dim": lambda lib: (1, lib.tensor([True, False, True])),
    "list_of_bools": lambda lib: [True, False],
    "empty_list": lambda lib: [],
    "true": lambda lib: True,
    "false_and_int": lambda lib: (False, 0),
}


@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
def test_index_values_grads_and_graph(key, device):
    """The picked values, the gradient a random upstream gradient gives (summed where an element is
    picked twice), and the graph: IndexBackward0 after the basic views, not a view itself, saving
    the indices (None for a dim taken whole) and the input's sizes."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.randn(2, 3, 4, dtype=lib.float64, device=device, requires_grad=True)
        y = x[key(lib)]
        node = y.grad_fn
        saved = (node._saved_indices, node._saved_self_sym_sizes) if node.name() == "IndexBackward0" else None
        graph = node, node.next_functions, saved, y._is_view()
        y.backward(lib.randn_like(y))
        return y, x.grad, graph
    assert_same(scenario, device, close=True)


def test_index_of_a_view_and_create_graph(device):
    """Differentiating the gradient of an index: it is an accumulating index_put_ into zeros
    (IndexPutImplBackward0), whose own gradient indexes again."""
    def scenario(lib, device):
        x = lib.arange(12.0, device=device).view(3, 4).requires_grad_()
        y = x.t()[[1, 1, 3]]
        go = lib.ones(3, 3, device=device, requires_grad=True)
        (g,) = lib.autograd.grad(y, x, go, create_graph=True)
        node = g.grad_fn.next_functions[0][0]  # after the transpose's TBackward0
        graph = node, node.next_functions, node._saved_indices, node._saved_accumulate
        (gg,) = lib.autograd.grad(g, go, lib.arange(12.0, device=device).view(3, 4))
        return g, graph, gg
    assert_same(scenario, device)


ERRORS = {
    "out_of_range": lambda lib: [0, 5],
    "mask_shape": lambda lib: lib.tensor([True, False]),
    "float_index_tensor": lambda lib: lib.tensor([1.0]),
    "float": lambda lib: 1.5,
    "str": lambda lib: "a",
    "shape_mismatch": lambda lib: ([0, 1], [0, 1, 2]),
    "too_many": lambda lib: ([0], [0], [0], [0]),
    "mask_too_many": lambda lib: (lib.ones(2, 3, dtype=lib.bool), [0], [0]),
}


@pytest.mark.parametrize("key", ERRORS.values(), ids=ERRORS.keys())
def test_index_errors(key):
    assert_same(lambda lib: lib.zeros(2, 3, 4, requires_grad=True)[key(lib)])


def test_a_list_of_lists_is_a_tuple_with_torchs_warning():
    def scenario(lib):
        x = lib.arange(12.0).view(3, 4).requires_grad_()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = x[[[0, 1], [1, 2]]]
        return y, [(w.category.__name__, str(w.message).split(" (Triggered internally")[0]) for w in caught]
    assert_same(scenario)


def test_index_saves_the_indices_not_the_input():
    """Editing the indexed tensor in place leaves the index's backward intact (torch's issue 24853);
    editing an index tensor it saved is caught, and so is a second backward through a freed node."""
    def scenario(lib):
        results = []
        x = lib.zeros(3, requires_grad=True)
        t = x + 0
        mask = lib.tensor([1.0, 0, 1.0]) != 0
        t[mask] = t[mask] * 2
        t.backward(lib.ones(3))
        results.append(x.grad)
        i = lib.tensor([0, 1])
        y = (x * 1)[i]
        i.add_(1)
        try:
            y.sum().backward()
        except RuntimeError as error:
            results.append(error)
        y = x[[0, 0]]
        y.sum().backward()
        try:
            y.grad_fn._saved_indices
        except RuntimeError as error:
            results.append(error)
        return results
    assert_same(scenario)


SETITEM = {
    "list_number": (lambda lib: [0, 2], lambda lib: 5.0),
    "two_lists_tensor": (lambda lib: ([1, 0], [2, 1]), lambda lib: lib.tensor([7.0, 8.0])),
    "duplicates": (lambda lib: [1, 1], lambda lib: lib.tensor([[1.0], [2.0]])),
    "slice_and_list_broadcast": (lambda lib: (slice(None), [0, 3]), lambda lib: lib.ones(1, 1, 3, 2)),
    "int_then_list_copyslices": (lambda lib: (1, [0, 2]), lambda lib: lib.ones(2)),
    "mask_number": (lambda lib: lib.tensor([True, False, True]), lambda lib: 3.0),
    "mask_tensor": (lambda lib: lib.tensor([True, False, True]), lambda lib: lib.arange(8.0).view(2, 4)),
    "index_tensor_number_tensor": (lambda lib: lib.tensor([2]), lambda lib: lib.tensor(4.0)),
    "0_dim_index_tensor": (lambda lib: lib.tensor(1), lambda lib: lib.ones(4)),
    "wrong_shape": (lambda lib: [0, 1], lambda lib: lib.ones(3, 4)),
    "wrong_dtype": (lambda lib: [0, 1], lambda lib: lib.ones(2, 4, dtype=lib.float64)),
}


@pytest.mark.parametrize("key, value", SETITEM.values(), ids=SETITEM.keys())
@pytest.mark.parametrize("value_requires_grad", [False, True], ids=["value", "value_requiring_grad"])
def test_setitem(key, value, value_requires_grad, device):
    """``x[key] = value`` on a tensor that requires grad: an index_put_ (IndexPutBackward0, or a
    CopySlices around it when the key's basic part is a view), one version up; the input's gradient
    is zero where values went, value's the gradient there (summed over a broadcast)."""
    def scenario(lib, device):
        lib.manual_seed(0)
        x = lib.randn(3, 4, device=device, requires_grad=True)
        v = value(lib)
        if isinstance(v, lib.Tensor):
            v = v.to(device).requires_grad_(value_requires_grad)
        y = x * 2
        version = y._version
        y[key(lib)] = v
        node = y.grad_fn
        saved = (node._saved_indices, node._saved_accumulate) if node.name() == "IndexPutBackward0" else None
        graph = y._version - version, node, node.next_functions, saved
        y.backward(lib.randn_like(y))
        return y, graph, x.grad, getattr(v, "grad", None)
    assert_same(scenario, device, close=True)


def test_setitem_without_grad_and_on_a_leaf():
    """With nothing requiring grad the key is storage's; a leaf that requires grad refuses the edit."""
    def scenario(lib):
        x = lib.zeros(2, 3)
        x[lib.tensor([1]), [0, 2]] = lib.tensor([1.0, 2.0])
        x[x > 1] = 9.0
        leaf = lib.zeros(3, requires_grad=True)
        try:
            leaf[[0]] = 1.0
        except RuntimeError as error:
            return x, x._version, error
    assert_same(scenario)
