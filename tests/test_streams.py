"""The registry of the random streams: one id per purpose, and every stream of a run's seed
derived there."""

from __future__ import annotations

from pathlib import Path

import gpu_avatar
from gpu_avatar import streams


def test_no_two_purposes_share_a_stream():
    ids = {name: value for name, value in vars(streams).items()
           if name.isupper() and isinstance(value, int) and name != "ATTACK_ENTROPY"}
    assert sorted(ids.values()) == sorted(set(ids.values())), ids
    assert len(set(streams.ATTACK_STREAMS.values())) == len(streams.ATTACK_STREAMS)


def test_only_the_registry_derives_a_runs_streams():
    """A stream id written elsewhere could take one already in use (#37: 3 was drawn for the
    calibration of shares and for the pseudonyms)."""
    package = Path(gpu_avatar.__file__).parent
    deriving = [str(path.relative_to(package)) for path in package.rglob("*.py")
                if "spawn_key=(*" in path.read_text()]
    assert deriving == ["streams.py"]
