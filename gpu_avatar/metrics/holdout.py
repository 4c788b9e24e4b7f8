"""Training rows and a holdout, drawn before avatarization.

Attack-based risks compare an attack on the originals behind a release with the same attack on
individuals who are not in it (the holdout): only what the release adds counts. The holdout is
drawn at random, without replacement, before anything is avatarized, and never released.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, AvatarTypeError
from ..parameters import check_number, seed_sequence
from ..streams import ATTACK_ENTROPY

MIN_TRAINING_ROWS = 3  # what avatarize needs: a row and its k >= 2 neighbours


def attack_seed(run_seed: int) -> int:
    """The seed of a run's attacks (``prepare_release``, ``advise`` with a holdout, the
    command line): drawn from the run's seed on a stream of its own (not the avatars' draws),
    a plain integer that ``attack_metrics(seed=)`` and ``gpu-avatar attacks --seed`` take to
    measure the same risks."""
    return int(np.random.SeedSequence([run_seed, ATTACK_ENTROPY]).generate_state(1)[0])


def split_holdout(
    df: pd.DataFrame, fraction: float = 0.2, seed: Any = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(training, holdout)``: ``fraction`` of the rows (rounded, at least one) drawn at random
    for the holdout, the others for training, both in the input's order with its index (the
    input is not modified). The same ``seed`` draws the same split."""
    if not isinstance(df, pd.DataFrame):
        raise AvatarTypeError(f"split_holdout expects a pandas DataFrame, got {type(df).__name__}")
    fraction = check_number("fraction", fraction, 0.0, 1.0)
    n = len(df)
    n_holdout = max(1, round(fraction * n))
    if fraction in (0.0, 1.0) or n - n_holdout < MIN_TRAINING_ROWS:
        raise AvatarError(
            f"fraction = {fraction:g} of {n} rows leaves {n - n_holdout} training row(s) and "
            f"{n_holdout} holdout row(s): choose 0 < fraction < 1 that keeps at least "
            f"{MIN_TRAINING_ROWS} training rows"
        )
    rng = np.random.default_rng(seed_sequence(seed))
    held = np.zeros(n, dtype=bool)
    held[rng.choice(n, size=n_holdout, replace=False)] = True
    return df.iloc[~held].copy(), df.iloc[held].copy()
