"""The single-table pipeline: encode -> project -> neighbours -> synthesise -> decode, in
batches for large tables."""

from .avatarize import AvatarizationResult, avatarize

__all__ = ["AvatarizationResult", "avatarize"]
