"""Calibrated shares (``AvatarParameters.calibrate_shares``): the avatars keep the original's
missing shares and category shares.

A barycentre shrinks rare values: an avatar draws a value with the summed weight of its
neighbours holding it, and an individual with a rare value weighs little among the neighbours
of the others, so a condition held by 6 % of the rows comes out at 2 to 4 %, a column missing
in 6 % at 2 %. After the draws, the values are re-decided, variable by variable, against the
originals of the same batch:

- variables: each categorical column, its missing cells as one more value, and each other
  column with missing cells, missing or not;
- quotas: a value held by at least ``SHARE_FLOOR`` of the rows and at least k rows gets its
  original count, and so do missing cells, however few (a column's missing rate is part of
  its signal, even under 1 %). A rarer value is never raised: dropping one held by under
  ``SHARE_FLOOR`` stays within ``share_tolerance``, and one held by fewer than k rows would
  be raised mostly on its own holders' avatars (few of their neighbours hold it), bringing
  avatars back to their originals (such values are better grouped: ``rare_modalities``).
  The rows this leaves are shared among the others by their counts;
- which avatars change: those holding a value above its quota, each to a value below its
  quota that one of its neighbours holds; the changes are drawn, seeded, without
  replacement, each with weight its likelihood ratio (the new value's summed neighbour
  weight over the old one's), so the avatars most likely to hold a value are the most likely
  to get it. An avatar keeps a value its neighbours hold: a value no remaining candidate's
  neighbours hold stays under its quota (``SignalMetrics.shares_off`` names what stays off),
  except missing cells, given to the avatars nearest their holders (``_missing_near_holders``).
"""

from __future__ import annotations

import numpy as np

from ..encoding import TableEncoder
from ..metrics.signal import SHARE_FLOOR
from ..parallel import on_threads
from ..synthesis import calibration_uniforms


def calibrate_shares(
    encoder: TableEncoder,
    original_codes: np.ndarray,
    avatar_codes: np.ndarray,
    neighbours: np.ndarray,
    weights: np.ndarray,
    seed: np.random.SeedSequence,
) -> np.ndarray:
    """``avatar_codes`` (n, pk: the encoder's categorical codes, then its missing indicators)
    with their shares calibrated on ``original_codes`` (the same layout, the same rows),
    given each avatar's ``neighbours`` (n, k, rows of ``original_codes``) and ``weights``."""
    from ..synthesis_kernels import apply_changes, calibration_candidates

    variables = _variables(encoder)
    if not variables:
        return avatar_codes
    n = len(original_codes)
    original = np.empty((len(variables), n), _narrowest(max(m for *_, m in variables)))
    for j, variable in enumerate(variables):
        original[j] = _combined(original_codes, *variable)
    avatars = np.stack([_combined(avatar_codes, *v) for v in variables])
    neighbours = np.ascontiguousarray(neighbours, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    uniforms = calibration_uniforms(len(variables), n, seed)
    floor = float(max(SHARE_FLOOR * n, neighbours.shape[1]))  # one compiled kind of number

    def one(j: int) -> None:  # variables are independent: their order changes no bit
        missing = variables[j][2] if variables[j][1] is not None else -1
        need = rebalance(j, missing)
        if missing >= 0 and need[missing] > 0:  # then the others rebalanced around them
            _missing_near_holders(original[j], avatars[j], missing, int(need[missing]),
                                  neighbours, weights, uniforms[j])
            rebalance(j, missing)

    def rebalance(j: int, missing: int) -> np.ndarray:
        """Variable ``j``'s changes, in key order; what each value still needs."""
        need, rows, values, keys = calibration_candidates(
            original[j], avatars[j], variables[j][2] + (missing >= 0), neighbours, weights,
            uniforms[j], floor, missing)
        # In key order; most candidates are never reached (the changes are a few per cent of
        # them), so the keys are sorted a slice at a time: the smallest ``taken`` first,
        # found by a partition, then the rest only if some value still needs rows.
        done, p = 0, keys.size
        while done < p and need.max() > 0:
            taken = min(p - done, max(4 * int(need[need > 0].sum()), 1024, done))  # doubling
            if done + taken < p:
                cut = np.partition(keys, done + taken - 1)[done + taken - 1]
                order = np.flatnonzero(keys <= cut)
                order = order[np.argsort(keys[order], kind="stable")][done:]
            else:
                order = np.argsort(keys, kind="stable")[done:]
            apply_changes(order, rows, values, avatars[j], need)
            done += order.size
        return need

    on_threads(one, range(len(variables)))
    out = avatar_codes.copy()
    for (code, indicator, m), values in zip(variables, avatars, strict=True):
        if indicator is not None:
            out[:, indicator] = values == m
        if code is not None:  # a missing cell keeps its drawn code: decode leaves it out
            out[:, code] = np.where(values == m, out[:, code], values)
    return out


def _missing_near_holders(original: np.ndarray, avatars: np.ndarray, missing: int,
                          count: int, neighbours: np.ndarray, weights: np.ndarray,
                          uniforms: np.ndarray) -> None:
    """``count`` more missing cells, which no avatar that could change has among its
    neighbours (a row with a rare missing cell lies apart, and is never its own neighbour):
    given to the avatars of the holders' own neighbours, drawn as above with the weight the
    holder's avatar gives each; if too few, to those of their neighbours, and so on."""
    seen = np.zeros(len(original), dtype=bool)
    near = np.flatnonzero(original == missing)
    seen[near] = True
    while near.size and count:
        rows, reach = neighbours[near].ravel(), weights[near].ravel()
        keys = -np.log(uniforms[rows]) / np.maximum(reach, 1e-300)
        for i in rows[np.argsort(keys, kind="stable")]:
            if avatars[i] != missing:
                avatars[i], count = missing, count - 1
                if not count:
                    return
        near = np.unique(rows[~seen[rows]])
        seen[near] = True


def _narrowest(top: int) -> type:
    """The integer type of the codes 0..``top`` the kernel gathers at random rows: int16 where
    they fit (2.4x faster than int64 at 10^6 rows: more of them stay in cache), else int32."""
    return np.int16 if top <= np.iinfo(np.int16).max else np.int32


def _variables(encoder: TableEncoder) -> list[tuple[int | None, int | None, int]]:
    """(code column, indicator column, modalities) of every variable calibrated: a
    categorical column (its indicator if it has one), a continuous column's indicator (one
    value: present)."""
    first_indicator = len(encoder.categorical_columns_)
    indicators = {c: first_indicator + j for j, c in enumerate(encoder.indicator_columns_)}
    variables = [(j, indicators.get(c), len(encoder.specs_[c].modalities))
                 for j, c in enumerate(encoder.categorical_columns_)]
    variables += [(None, indicators[c], 1) for c in encoder.continuous_columns_
                  if c in indicators]
    return variables


def _combined(codes: np.ndarray, code: int | None, indicator: int | None, m: int) -> np.ndarray:
    """A variable's values: its codes, ``m`` where missing."""
    values = codes[:, code] if code is not None else np.zeros(len(codes), dtype=np.int64)
    return values if indicator is None else np.where(codes[:, indicator] == 1, m, values)
