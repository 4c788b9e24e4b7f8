"""Encoding: a pandas table <-> numeric arrays (continuous values, categorical codes, missing
indicators), and back with the original types.

- ``kinds.py``: the column kinds, detected from dtypes or declared, and the table checks;
- ``encoder.py``: ``TableEncoder`` (``partial_fit`` chunk by chunk, ``fit``, ``transform``,
  ``decode``);
- ``precision.py``: the precision continuous columns are released at (decimals, days, seconds);
- ``identifiers.py``: fresh values for identifier columns;
- ``pseudonyms.py``: pseudonyms of identifier values (fresh, integer, pattern, uuid4,
  constant, hmac, fake), one per original value, chunk by chunk.
"""

from .encoder import ColumnSpec, EncodedTable, TableEncoder
from .identifiers import IdentifierValues, fresh_identifiers
from .kinds import CATEGORICAL, CONTINUOUS, IDENTIFIER, KINDS, detect_kind, validate_table
from .pseudonyms import Pseudonym, Pseudonymizer, pseudonymize

__all__ = [
    "CATEGORICAL", "CONTINUOUS", "IDENTIFIER", "KINDS", "ColumnSpec", "EncodedTable",
    "IdentifierValues", "Pseudonym", "Pseudonymizer", "TableEncoder", "detect_kind",
    "fresh_identifiers", "pseudonymize", "validate_table",
]  # fmt: skip
