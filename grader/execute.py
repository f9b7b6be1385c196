"""nbgrader's Execute preprocessor, telling which cell the kernel died in (nbgrader only says that
the notebook failed, and leaves an empty grade behind)."""
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute as NbgraderExecute

DIED = "kernel died in cell {}"


class Execute(NbgraderExecute):
    def preprocess_cell(self, cell, resources, index):
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self.log.error(DIED.format(index + 1))
            raise
