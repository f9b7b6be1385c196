"""Broadcasting, seen from backward: an input broadcast to a bigger shape gets a gradient of that
bigger shape, which must be summed back down to the input's own shape."""


def expandable(shape, target):
    """Whether a tensor of ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    return all(n == 1 or n == m for n, m in zip(reversed(shape), reversed(target)))


# BEGIN EXERCISE 1
def sum_to(grad, shape):
    """Reduce a gradient shaped like a broadcast result to the shape of the input that was broadcast.

    The engine applies it to every gradient a node returns (as torch's validate_outputs does). As
    torch's ``at::sum_to``: one sum over every dim broadcasting made (the leading ones it added and
    those it stretched from 1), keeping them, then a view to ``shape`` if there were leading ones; so
    under create_graph the gradient's graph is torch's (SumBackward1, then ViewBackward0).
    """
    if grad.shape == shape:
        return grad
    if not shape:
        return grad.sum()
    lead = grad.dim() - len(shape)
    dims = [*range(lead)]
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.view(shape) if lead else grad
# END EXERCISE 1
