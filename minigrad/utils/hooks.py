"""Handles for registered hooks (``torch.utils.hooks.RemovableHandle``)."""


class RemovableHandle:
    """What ``register_hook`` returns: ``remove()`` unregisters the hook (a second call does nothing).
    ``hooks`` is the list that holds ``hook``, or a module's dict of hooks and ``hook``'s key in it."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            if isinstance(self._hooks, dict):
                del self._hooks[self._hook]
            else:
                self._hooks.remove(self._hook)
