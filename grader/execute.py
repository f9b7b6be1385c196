"""nbgrader's Execute preprocessor, as the course's autograde runs it: it says which cell the kernel
died in (nbgrader only says that the notebook failed, and leaves an empty grade behind), and
``SandboxedExecute`` runs the kernel in the sandbox (grader/sandbox.py)."""
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute as NbgraderExecute

from .sandbox import SandboxedKernelManager

DIED = "kernel died in cell {}"


class Execute(NbgraderExecute):
    def preprocess_cell(self, cell, resources, index):
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self.log.error(DIED.format(index + 1))
            raise


class SandboxedExecute(Execute):
    """``c.Execute.kernel_manager_class`` would not do: nbgrader 0.9.6's Execute passes
    ``kernel_manager_class=AsyncKernelManager`` to its constructor, and constructor arguments beat
    config; so the course's config names this preprocessor in nbgrader's autograde pipeline."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
