"""Relational databases: the schema (tables, keys, links), avatarization link by link with the
parents' assignment, and the metric scenarios across tables."""

from .linking import avatarize_database
from .results import DatabaseAvatarizationResult
from .schema import Database

__all__ = ["Database", "DatabaseAvatarizationResult", "avatarize_database"]
