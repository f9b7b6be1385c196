"""Issue 37: ``autograd.graph.GradientEdge`` and ``get_gradient_edge`` — a place in the graph where a
gradient arrives, taken by autograd.grad and backward as one of their inputs — each scenario run
with torch and with minigrad."""
import warnings

import pytest

import minigrad
from coursekit.testing import assert_same


def edges_and_what_grad_makes_of_them(torch):
    """An edge names the node and input a tensor's gradient goes to (a leaf's: its AccumulateGrad),
    and stays there when the tensor moves on in place."""
    x = torch.tensor([1.0, 2.0], requires_grad=True).clone()
    edge = torch.autograd.graph.get_gradient_edge(x)
    seen = [(edge.node.name(), edge.output_nr, edge.ownership_token, isinstance(edge, tuple))]
    x *= 2
    seen.append(torch.autograd.grad(x.sum(), (edge, x)))
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    leaf_edge = torch.autograd.graph.get_gradient_edge(leaf)
    seen.append((leaf_edge.node.name(), leaf_edge.output_nr, torch.autograd.grad((leaf * 3).sum(), leaf_edge)))
    built = torch.autograd.graph.GradientEdge(x.grad_fn, x.output_nr)
    seen.append(torch.autograd.grad((x * x).sum(), built))
    try:
        torch.autograd.graph.get_gradient_edge(torch.ones(1))
    except RuntimeError as error:
        seen.append(str(error))
    return seen


def test_grad_to_gradient_edges():
    assert_same(edges_and_what_grad_makes_of_them)


def unused_edges(torch):
    """An edge the graph does not reach: None with allow_unused, torch's errors otherwise, and with
    materialize_grads (there is no tensor to make zeros like)."""
    x = torch.tensor([1.0, 2.0], requires_grad=True).clone()
    y = torch.tensor([3.0, 4.0], requires_grad=True).clone()
    edge_y = torch.autograd.graph.GradientEdge(y.grad_fn, y.output_nr)
    out = x.clone().sum()
    seen = [torch.autograd.grad(out, (x, edge_y), allow_unused=True, retain_graph=True)]
    for options in ({}, {"allow_unused": True, "materialize_grads": True}):
        try:
            torch.autograd.grad(out, (x, edge_y), retain_graph=True, **options)
        except RuntimeError as error:
            seen.append(str(error))
    return seen


def test_an_unused_gradient_edge():
    assert_same(unused_edges)


def backward_to_edges(torch):
    """backward's ``inputs=`` may name edges: the graph runs up to them, and they accumulate nothing
    (a tensor among the inputs still gets its .grad)."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a.clone()
    torch.autograd.backward((b * b).sum(), inputs=(torch.autograd.graph.get_gradient_edge(b), a))
    first = a.grad.clone()
    torch.autograd.backward((b * b).sum(), inputs=torch.autograd.graph.get_gradient_edge(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # b.grad of a non-leaf: None, as checked
        return first, a.grad, b.grad


def test_backward_to_gradient_edges():
    assert_same(backward_to_edges)


def test_a_gradient_edge_to_differentiate_is_refused_clearly():
    """torch differentiates an edge too, making its default gradient from the node's output metadata,
    which minigrad's nodes do not keep: minigrad says so, rather than failing on an attribute."""
    x = minigrad.tensor([1.0], requires_grad=True)
    edge = minigrad.autograd.graph.get_gradient_edge(x * 2)
    for differentiate in (lambda: minigrad.autograd.backward(edge), lambda: minigrad.autograd.grad(edge, x)):
        with pytest.raises(NotImplementedError, match="output 0 is a GradientEdge: minigrad takes GradientEdges"):
            differentiate()
