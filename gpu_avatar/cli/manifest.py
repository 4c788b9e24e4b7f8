"""The manifest written next to ``gpu-avatar avatarize --unshuffled-output FILE``
(``FILE.manifest.json``): what the unshuffled avatars were made from (the originals' row
count and content hash, as read) and how (parameters, seed). ``gpu-avatar metrics`` and
``report`` check it when it is there: avatars measured against other originals than their
own would be scored against strangers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from ..errors import AvatarError

MANIFEST_SUFFIX = ".manifest.json"


def manifest_path(unshuffled: str | Path) -> Path:
    """Where the manifest of the unshuffled avatars file ``unshuffled`` lies."""
    unshuffled = Path(unshuffled)
    return unshuffled.with_name(unshuffled.name + MANIFEST_SUFFIX)


def table_hash(df: pd.DataFrame) -> str:
    """SHA-256 of a table's content: column names, dtypes and every value, row by row (pandas'
    value hashes: the same frame read again gives the same hash, whatever the file's bytes)."""
    digest = hashlib.sha256()
    digest.update(repr([(str(c), str(t)) for c, t in df.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def write_manifest(path: Path, original: pd.DataFrame, original_path: str, result: Any) -> None:
    """The manifest of ``result``'s unshuffled avatars, made from ``original`` (as read)."""
    manifest = {
        "what": "unshuffled avatars: row i is the avatar of original row i; sensitive, "
                "for metrics only, never release",
        "gpu_avatar": __version__,
        "original": {"path": str(original_path), "rows": len(original),
                     "sha256": table_hash(original)},
        "parameters": result.parameters.as_dict(),
        "seed": result.seed,
    }
    path.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")


def check_manifest(unshuffled: str | Path, original: pd.DataFrame,
                   original_path: str) -> dict[str, str] | None:
    """Refuse ``original`` (as read) when the manifest next to ``unshuffled``, if any, says
    its avatars were made from another table; returns the column kinds of the run it records
    (None without a manifest), so that the metrics measure what the run avatarized."""
    path = manifest_path(unshuffled)
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        made_from = manifest["original"]
        rows, sha256 = int(made_from["rows"]), str(made_from["sha256"])
        types = dict(manifest["parameters"]["types"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise AvatarError(f"{path}: not a readable manifest of unshuffled avatars ({error}); "
                          "remove it or write it again with gpu-avatar avatarize") from None
    if rows != len(original):
        raise AvatarError(
            f"{unshuffled} holds the avatars of a table of {rows} rows ({path}), but "
            f"{original_path} has {len(original)}: give the originals they were made from")
    if sha256 != table_hash(original):
        raise AvatarError(
            f"{unshuffled} holds the avatars of another table than {original_path} (their "
            f"manifest {path} records a different content hash of the originals, "
            f"{made_from.get('path', 'unnamed')!r}): give the originals they were made from, "
            "read with the same options")
    return types


def recorded_seed(unshuffled: str | Path) -> int | None:
    """The seed of the run that the manifest next to ``unshuffled`` records (None without
    one): it gives the release's row order (``synthesis.shuffle_order``) and its attacks'
    seed (``metrics.holdout.attack_seed``), for ``report --holdout`` to measure the risks
    that ``avatarize --holdout`` measured."""
    path = manifest_path(unshuffled)
    if not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["seed"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise AvatarError(f"{path}: not a readable manifest of unshuffled avatars ({error}); "
                          "remove it or write it again with gpu-avatar avatarize") from None
