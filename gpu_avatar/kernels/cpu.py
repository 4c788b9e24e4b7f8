"""The CPU's entry points to the compiled kernels (numba)."""

from .knn import nearest_others, nearest_others_of, verify_candidates
from .mixed import nearest_mixed
from .ranks import distance_ranks

__all__ = ["distance_ranks", "nearest_mixed", "nearest_others", "nearest_others_of",
           "verify_candidates"]  # fmt: skip
