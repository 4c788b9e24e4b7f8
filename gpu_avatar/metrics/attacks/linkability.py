"""Linkability: the attacker holds two sets of columns of the same people; an individual is
linked when one avatar is among the ``n_neighbours`` nearest of both halves (the baseline:
random avatars)."""

from __future__ import annotations

import numpy as np

from .results import AttackResult, attack_result
from .values import Values, nearest_avatars


def _linked(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Rows whose two neighbour lists share an avatar."""
    return (first[:, :, None] == second[:, None, :]).any(axis=(1, 2))


def _random_neighbours(n: int, n_avatars: int, k: int, rng) -> np.ndarray:
    """k distinct random avatars per row (redrawing rows with a repeat while repeats are rare,
    one draw without replacement per row otherwise)."""
    if k * k > n_avatars:
        return np.array([rng.choice(n_avatars, size=k, replace=False) for _ in range(n)])
    picks = rng.integers(0, n_avatars, size=(n, k))
    while k > 1:
        ordered = np.sort(picks, axis=1)
        repeated = np.nonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))[0]
        if repeated.size == 0:
            break
        picks[repeated] = rng.integers(0, n_avatars, size=(repeated.size, k))
    return picks


def linkability_attack(values: Values, scaled, halves, n_neighbours, confidence, backend,
                       rng) -> AttackResult:
    """The linkability attack through the two ``halves`` (column positions); ``scaled``: the
    ``range_scaled`` pair of the originals and of the holdout, by name."""

    def links(pair):
        first, second = (nearest_avatars(pair, half, values.categorical, n_neighbours,
                                         backend) for half in halves)
        return int(_linked(first, second).sum())

    n, n_control = len(values.original), len(values.holdout)
    n_avatars = len(values.avatars)
    baseline = int(_linked(_random_neighbours(n, n_avatars, n_neighbours, rng),
                           _random_neighbours(n, n_avatars, n_neighbours, rng)).sum())
    return attack_result("linkability", None, n, links(scaled["original"]), n_control,
                         links(scaled["holdout"]), baseline, confidence)

