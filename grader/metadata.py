"""nbgrader's check of the cells' nbgrader metadata (``CheckCellMetadata``), with the schema's
validator built once per process.

nbgrader validates each cell with ``jsonschema.validate``, which first checks the schema itself
against JSON Schema's metaschema, again for every cell of every notebook: a sixth of a grading
worker's time (bench/autograde.py, exercise 3). The checks, their order and their messages stay
nbgrader's: a cell of another schema version goes to nbgrader's own ``validate_cell``.
"""
import traceback

import jsonschema
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheck


class _SchemaOnce(BaseMetadataValidator):
    """The schema check of a cell (``BaseMetadataValidator.validate_cell``), with the validator built once."""

    _schema_validator = None

    def validate_cell(self, cell):
        meta = cell.metadata.get("nbgrader")
        if meta is None or meta.get("schema_version", 0) != self.schema_version:
            return super().validate_cell(cell)  # nbgrader's own: no metadata, a schema too old or too new
        if _SchemaOnce._schema_validator is None:
            kind = jsonschema.validators.validator_for(self.schema)
            kind.check_schema(self.schema)
            _SchemaOnce._schema_validator = kind(self.schema)
        error = jsonschema.exceptions.best_match(_SchemaOnce._schema_validator.iter_errors(meta))
        if error is not None:
            raise error


class _Validator(MetadataValidator, _SchemaOnce):
    """nbgrader's validator, whose ``validate_cell`` (its rules on points, ids, markdown) calls the
    schema check next in line: ``_SchemaOnce``'s, placed before nbgrader's base class."""


class CheckCellMetadata(NbgraderCheck):
    def preprocess(self, nb, resources):
        try:
            _Validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg)
        return nb, resources
