"""Helpers of the rules' tests: avatars, neighbours, broken rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors

import gpu_avatar as ga
from gpu_avatar.rules import Neighbours


def avatars_of(df: pd.DataFrame, types: dict, k: int = 20) -> pd.DataFrame:
    """The unshuffled avatars of ``df`` (the kinds of ``types`` it still has)."""
    kinds = {c: kind for c, kind in types.items() if c in df.columns}
    return ga.avatarize(df, k=k, seed=0, types=kinds, backend="cpu").sensitive_unshuffled_avatars


def neighbours_of(df: pd.DataFrame, k: int = 5, seed: int = 0) -> Neighbours:
    """Each row's k nearest other rows (standardised numbers) with random weights: what an
    avatarization draws avatar i from."""
    numbers = df.select_dtypes("number").fillna(df.median(numeric_only=True))
    scaled = ((numbers - numbers.mean()) / numbers.std().replace(0, 1)).to_numpy()
    indices = NearestNeighbors(n_neighbors=k + 1).fit(scaled).kneighbors(scaled)[1][:, 1:]
    weights = np.random.default_rng(seed).exponential(size=indices.shape)
    return Neighbours(indices, weights / weights.sum(axis=1, keepdims=True))


def broken_count(rule, table: pd.DataFrame, originals: pd.DataFrame, exempt=None) -> int:
    exempt = np.zeros(len(table), dtype=bool) if exempt is None else exempt
    return int(rule.broken(table, originals, exempt).sum())
