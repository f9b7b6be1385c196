"""Sequential and ModuleList: submodules in order, named "0", "1", ... (or as an OrderedDict names them)."""
from collections import OrderedDict

from .module import Module, _add_indent


class Sequential(Module):
    """Runs its modules one after the other, each on the previous one's output."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(modules):
                self.add_module(str(index), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        modules = list(self._modules.values())
        return modules[_checked_index(index, len(modules))]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """Holds modules so that the model registers them (a plain list would hide their parameters)."""

    def __init__(self, modules=None):
        super().__init__()
        self.extend(modules or ())

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(modules[index])
        return modules[_checked_index(index, len(modules))]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def __repr__(self):
        """torch's: a run of equal reprs is shown once, as ``(0-1): 2 x Block(...)``."""
        runs = []
        for index, module in enumerate(self):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        if not runs:
            return "ModuleList()"
        lines = [_add_indent(f"({start}): {text}" if start == end else f"({start}-{end}): {end - start + 1} x {text}",
                             2) for start, end, text in runs]
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


def _checked_index(index, size):
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of range")
    return index % size
