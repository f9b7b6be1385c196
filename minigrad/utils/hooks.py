"""Handles for registered hooks (``torch.utils.hooks.RemovableHandle``)."""


class RemovableHandle:
    """What ``register_hook`` returns: ``remove()`` unregisters the hook (a second call does nothing)."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)
