"""Relational databases: the schema (tables, keys, links), avatarization link by link with the
parents' assignment, and the metric scenarios across tables."""

from .linking import DatabaseAvatarizationResult, avatarize_database
from .schema import Database

__all__ = ["Database", "DatabaseAvatarizationResult", "avatarize_database"]
