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

    The engine applies it to every gradient a node returns (as torch's validate_outputs does).
    """
    if grad.shape == shape:
        return grad
    lead = grad.dim() - len(shape)
    if lead:
        grad = grad.sum(tuple(range(lead)))
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad
# END EXERCISE 1
