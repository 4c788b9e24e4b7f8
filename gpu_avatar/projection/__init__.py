"""Projection: FAMD, with PCA and MCA as its special cases, exact and chunked."""

from .projection import FAMD, MCA, PCA, Projection

__all__ = ["FAMD", "MCA", "PCA", "Projection"]
