"""Exact k nearest neighbours (``search.py``) with one pair arithmetic shared by every engine
(``distances.py``)."""

from .search import nearest_neighbours, nearest_reference_distances

__all__ = ["nearest_neighbours", "nearest_reference_distances"]
