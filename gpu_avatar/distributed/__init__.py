"""``ga.distributed``: the streamed run and the exact privacy metrics on a Dask cluster
(docs/spec/gpu.md, section 5). Dask itself is imported on first use
(``pip install 'gpu_avatar[dask]'``; GPUs: ``'gpu_avatar[dask-gpu]'``)."""

from .avatarize import DaskScheduler, avatarize
from .cluster import gpu_cluster
from .metrics import distance_ranks, privacy_metrics

__all__ = ["DaskScheduler", "avatarize", "distance_ranks", "gpu_cluster", "privacy_metrics"]
