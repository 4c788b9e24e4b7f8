"""``ga.distributed``: the streamed run and the exact privacy metrics on a Dask cluster
(gpu.md section 5). Dask itself is imported on first use (``pip install 'gpu_avatar[dask]'``)."""

from .avatarize import DaskExecutor, avatarize
from .metrics import distance_ranks, privacy_metrics

__all__ = ["DaskExecutor", "avatarize", "distance_ranks", "privacy_metrics"]
