"""Submissions whose nbgrader cells were deleted or copied, repaired from the release before grading.

nbgrader 0.9.6 fails on both with a KeyError and no grade: its ``add_missing_cells`` puts a deleted
cell back after the previous *graded or answer* cell, and finds none when that is a locked cell
(as every test cell that follows a "plug" cell); its DeduplicateIds empties the nbgrader metadata of
all but the last copy of a cell, which ``add_missing_cells`` then reads. ``RestoreCells`` takes the
place of both, in the sanitizing steps before OverwriteCells: the last copy of a cell keeps its id
(as with DeduplicateIds, and as in the learner's kernel, where the last definition wins) and the
others become plain cells; a deleted cell comes back from the release at its place there — a test
cell as it was released (OverwriteCells then checks it as usual), an answer cell as its stub.
"""
import copy
import os

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

RESTORED_ANSWER = "# This answer cell was missing from the submission: the grader put back the released stub.\n"


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


class RestoreCells(NbGraderPreprocessor):
    release_directory = Unicode(help="the folder of released exercises (what learners fetched)").tag(config=True)

    def preprocess(self, nb, resources):
        names = resources["nbgrader"]
        release = nbformat.read(os.path.join(self.release_directory, names["assignment"], names["notebook"] + ".ipynb"),
                                as_version=4)
        last = {_grade_id(cell): index for index, cell in enumerate(nb.cells)}
        for index, cell in enumerate(nb.cells):
            grade_id = _grade_id(cell)
            if grade_id is not None and last[grade_id] != index:
                self.log.warning("cell %s appears more than once: only its last copy is graded", grade_id)
                del cell.metadata["nbgrader"]
        kept = {_grade_id(cell): cell for cell in nb.cells if _grade_id(cell) is not None}
        cells, position = list(nb.cells), 0
        for released in release.cells:
            grade_id = _grade_id(released)
            if grade_id is None:
                continue
            if grade_id in kept:
                position = next(i for i, cell in enumerate(cells) if cell is kept[grade_id]) + 1
                continue
            self.log.warning("cell %s is missing from the submission: put back from the release", grade_id)
            restored = copy.deepcopy(released)
            if restored.metadata.nbgrader.get("solution"):
                restored.source = RESTORED_ANSWER + restored.source
            cells.insert(position, restored)
            position += 1
        nb.cells = cells
        return nb, resources
