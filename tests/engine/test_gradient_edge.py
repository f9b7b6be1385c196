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


def edges_as_roots(torch):
    """backward and autograd.grad differentiate an edge as the tensor it came from, even once that
    tensor is gone: ones for one element, the gradient given (cast to the tensor's dtype) otherwise,
    torch's errors for a wrong shape or a missing gradient; edges and tensors mixed."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    edge = torch.autograd.graph.get_gradient_edge(y)
    del y
    torch.autograd.backward(edge, retain_graph=True)
    seen = [x.grad.clone(), torch.autograd.grad(edge, x, retain_graph=True)]
    z = x * 3
    z_edge = torch.autograd.graph.get_gradient_edge(z)
    seen.append(torch.autograd.grad((z_edge, z.sum()), x, (torch.tensor([1.0, 2.0], dtype=torch.float64), None),
                                    retain_graph=True))
    for grads in (None, torch.ones(3)):
        try:
            torch.autograd.backward(z_edge, grads, retain_graph=True)
        except RuntimeError as error:
            seen.append(str(error))
    leaf_edge = torch.autograd.graph.get_gradient_edge(x)
    torch.autograd.backward(leaf_edge, torch.tensor([5.0, 6.0]))
    seen.append(x.grad)
    return seen


def test_gradient_edges_as_roots():
    assert_same(edges_as_roots)


def test_a_gradient_edge_it_did_not_make_is_refused_as_a_root_clearly():
    """torch reads a root's shape, dtype and device off its node, which minigrad's nodes do not keep:
    minigrad differentiates the edges get_gradient_edge made (it saw their tensors), and says so of others."""
    x = minigrad.tensor([1.0], requires_grad=True)
    y = x * 2
    edge = minigrad.autograd.graph.GradientEdge(y.grad_fn, y.output_nr)
    for differentiate in (lambda: minigrad.autograd.backward(edge), lambda: minigrad.autograd.grad(edge, x)):
        with pytest.raises(NotImplementedError, match="output 0 is a GradientEdge that get_gradient_edge did not make"):
            differentiate()
