"""Inference: for each secret column, the secret of the nearest avatar on every other variable,
right when equal (categories, datetimes, timedeltas) or within ``INFERENCE_TOLERANCE`` of the
guess, relatively (numbers); the baseline guesses the secret of a random avatar."""

from __future__ import annotations

import numpy as np

from .results import AttackResult, attack_result
from .values import Values, nearest_avatars

INFERENCE_TOLERANCE = 0.05  # a number is guessed when within 5 % of the guess (anonymeter)


def guessed(guesses: np.ndarray, secrets: np.ndarray, exact: bool) -> np.ndarray:
    """Which guesses are right: equal (``exact``: categories, datetimes) or within
    ``INFERENCE_TOLERANCE`` of the guess, relatively (numbers); a missing guess of a missing
    secret is right."""
    both_missing = np.isnan(guesses) & np.isnan(secrets)
    with np.errstate(invalid="ignore"):
        if exact:
            right = guesses == secrets
        else:
            right = np.abs(guesses - secrets) <= INFERENCE_TOLERANCE * (np.abs(guesses) + 1e-12)
    return right | both_missing


def inference_attack(values: Values, scaled, secret: int, confidence, backend,
                     rng) -> AttackResult:
    """The inference of the variable at position ``secret`` from all the others; ``scaled``:
    the ``range_scaled`` pair of the originals and of the holdout, by name."""
    others = np.array([j for j in range(len(values.variables)) if j != secret])
    exact = bool(values.exact[secret])

    def successes(attacked, pair):
        nearest = nearest_avatars(pair, others, values.categorical, 1, backend)[:, 0]
        return int(guessed(values.avatars[nearest, secret], attacked[:, secret], exact).sum())

    n = len(values.original)
    random_avatars = rng.integers(0, len(values.avatars), size=n)
    baseline = int(guessed(values.avatars[random_avatars, secret], values.original[:, secret],
                           exact).sum())
    return attack_result("inference", values.variables[secret], n,
                         successes(values.original, scaled["original"]), len(values.holdout),
                         successes(values.holdout, scaled["holdout"]), baseline, confidence)

