"""The random streams of a run, one id per purpose: every draw seeded by a run's
``SeedSequence`` comes from its child ``(*spawn_key, stream, *indices)`` (``child``), so no
two purposes share draws and a new purpose changes none of the others'. A new purpose takes a
new id here (``tests/test_streams.py`` checks that none is taken twice).

Beside these: a database's table ``i`` is avatarized as a run of its own seeded by the child
``(i,)`` of the database's sequence (``relational/linking.py``), and the attacks draw from
children of their own seed (``ATTACK_STREAMS``; that seed: ``metrics/holdout.attack_seed``).
"""

from __future__ import annotations

import numpy as np

WEIGHTS = 0  # synthesis: the barycentres' random weights, by block of rows
DRAWS = 1  # synthesis: the draws of categorical values, by block of rows
SHUFFLE = 2  # synthesis: the release order
CALIBRATION = 3  # synthesis: the uniforms of the calibration of shares
PSEUDONYMS = 4  # pipeline/apart: the pseudonyms drawn for a column, by its position
BATCH_PLAN = 5  # pipeline/batches: the batch plan
BATCHES = 6  # pipeline/batches: each batch's seed, by its index
RULES = 7  # pipeline/rules: the repairs' draws, by application
UNIQUE_COPIES = 8  # synthesis: the redraws of copies of unique rows, by attempt and block

# The attacks' draws (metrics/attacks): children of the attacks' seed, not of a run's.
ATTACK_STREAMS = {"singling out": 0, "linkability": 1, "inference": 2}
ATTACK_ENTROPY = 0xA77AC  # the attacks' seed: drawn from [the run's seed, this]


def child(sequence: np.random.SeedSequence, stream: int,
          *indices: int) -> np.random.SeedSequence:
    """The seed of purpose ``stream`` (its ``indices``: a block, a batch, a column) of the
    run seeded by ``sequence``; derived, not spawned: the same every time it is asked."""
    return np.random.SeedSequence(sequence.entropy,
                                  spawn_key=(*sequence.spawn_key, stream, *indices))
