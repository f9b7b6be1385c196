"""What a hook may return in place of a gradient, checked as torch's ``_call_hooks`` checks it: for a
tensor's hooks (a leaf's, a non-leaf's, beside retain_grad) and a node's pre-hooks and hooks, and
for post-accumulate-grad hooks. Each case is written once and run with both libraries."""
import functools

import pytest

from coursekit.testing import assert_same

RETURNS = {
    "None": lambda torch, grad: None,
    "the same gradient": lambda torch, grad: grad,
    "a new gradient like it": lambda torch, grad: grad * 2,
    "another size": lambda torch, grad: torch.ones(3),
    "a broadcastable size": lambda torch, grad: torch.ones(1, 2),
    "a 0-dim tensor": lambda torch, grad: torch.ones(()),
    "another dtype": lambda torch, grad: grad.double(),
    "bfloat16": lambda torch, grad: grad.to(torch.bfloat16),
    "an integer dtype": lambda torch, grad: grad.to(torch.int64),
    "another device": lambda torch, grad: torch.ones(2, device="meta"),
    "one that requires grad": lambda torch, grad: grad * torch.ones(2, requires_grad=True),
    "a number": lambda torch, grad: 1,
    "a list": lambda torch, grad: [grad],
}


def hooked(torch, where, returns, named):
    def replace(grad):
        return RETURNS[returns](torch, grad)

    def hook(*args):
        if where.startswith("a node's"):
            gradients = args[0]
            return (replace(gradients[0]), *gradients[1:]) if returns != "a list" else [replace(gradients[0])]
        if where == "a post-accumulate-grad hook":
            return replace(args[0].grad)
        return replace(args[0])

    hook = hook if named else functools.partial(hook)
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    if where == "a leaf's":
        x.register_hook(hook)
    elif where in ("a non-leaf's", "a non-leaf's, retaining its grad"):
        y.register_hook(hook)
        if where.endswith("grad"):
            y.retain_grad()
    elif where == "a node's pre-hook":
        y.grad_fn.register_prehook(hook)
    elif where == "a node's hook":
        y.grad_fn.register_hook(hook)
    else:
        x.register_post_accumulate_grad_hook(hook)
    (y * 3).sum().backward()
    return x.grad, y.grad if where.endswith("grad") else None


@pytest.mark.parametrize("named", [True, False], ids=["a function", "a partial (no __name__)"])
@pytest.mark.parametrize("returns", RETURNS)
@pytest.mark.parametrize("where", ["a leaf's", "a non-leaf's", "a non-leaf's, retaining its grad", "a node's pre-hook",
                                   "a node's hook", "a post-accumulate-grad hook"])
def test_what_a_hook_returns(where, returns, named):
    """None or the gradient itself change nothing; a tensor must be like the gradient it replaces
    (type, device, size: torch names the hook, or "<unknown>"); a node's hooks return a tuple of as
    many; a post-accumulate-grad hook returns None (or its tensor)."""
    assert_same(hooked, where, returns, named)


def single_bare_gradient_from_a_node_hook(torch, where):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    register = y.grad_fn.register_prehook if where == "pre-hook" else y.grad_fn.register_hook
    register(lambda *args: args[0][0] * 2)
    y.sum().backward()
    return x.grad


@pytest.mark.parametrize("where", ["pre-hook", "hook"])
def test_a_node_hook_returns_a_tuple(where):
    assert_same(single_bare_gradient_from_a_node_hook, where)


def replacing_no_gradient(torch):
    x = torch.ones(2, requires_grad=True)
    first, second = x.split(1)
    second.register_hook(lambda grad: torch.ones(1))
    first.sum().backward()
    return x.grad


def test_a_hook_may_not_make_up_a_missing_gradient():
    assert_same(replacing_no_gradient)
