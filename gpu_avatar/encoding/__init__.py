"""Encoding: a pandas table <-> numeric arrays (continuous values, categorical codes, missing
indicators), and back with the original types.

- ``kinds.py``: the column kinds, detected from dtypes or declared, and the table checks;
- ``encoder.py``: ``TableEncoder`` (``partial_fit`` chunk by chunk, ``fit``, ``transform``,
  ``decode``);
- ``precision.py``: the precision continuous columns are released at (decimals, days, seconds);
- ``identifiers.py``: fresh values for identifier columns.
"""

from .encoder import ColumnSpec, EncodedTable, TableEncoder
from .identifiers import IdentifierValues, fresh_identifiers
from .kinds import CATEGORICAL, CONTINUOUS, IDENTIFIER, KINDS, detect_kind, validate_table

__all__ = [
    "CATEGORICAL", "CONTINUOUS", "IDENTIFIER", "KINDS", "ColumnSpec", "EncodedTable",
    "IdentifierValues", "TableEncoder", "detect_kind", "fresh_identifiers", "validate_table",
]  # fmt: skip
