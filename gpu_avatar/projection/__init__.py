"""Projection: FAMD, with PCA and MCA as its special cases, exact and chunked
(``projection.py``), and the same as scikit-learn estimators on DataFrames
(``estimators.py``)."""

from .estimators import FAMD, MCA, PCA
from .projection import Projection

__all__ = ["FAMD", "MCA", "PCA", "Projection"]
