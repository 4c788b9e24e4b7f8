"""Streaming: a Parquet dataset avatarized batch by batch with bounded memory, locally or as
Dask tasks."""

from .run import ParquetAvatarization, avatarize_parquet

__all__ = ["ParquetAvatarization", "avatarize_parquet"]
