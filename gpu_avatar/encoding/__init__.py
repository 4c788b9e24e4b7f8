"""Encoding: a pandas table <-> numeric arrays (continuous values, categorical codes, missing
indicators), and back with the original types."""

from .encoder import CATEGORICAL, CONTINUOUS, IDENTIFIER, KINDS, EncodedTable, TableEncoder

__all__ = ["CATEGORICAL", "CONTINUOUS", "IDENTIFIER", "KINDS", "EncodedTable", "TableEncoder"]
