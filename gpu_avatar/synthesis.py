"""Synthesis: avatar = randomly weighted barycentre of an individual's k neighbours.

Weights (docs/spec/method.md, section 3.5): ``P_j = E_j * 2^(-pi_j) / d_ij`` with
``E_j ~ Exp(1)`` and ``pi`` a random permutation of 1..k, normalised to sum to 1. A zero
distance (at most ``DISTANCE_EPSILON``: an exact duplicate) is, by ``zero_distance``,
replaced by ``DISTANCE_EPSILON`` (``"paper"``): duplicates take all the weight, so a
duplicated row's avatar is that row; or raised to the row's nearest non-zero distance
(``"bounded"``; all k at zero: equal distances): a duplicate weighs as the nearest distinct
neighbour would. Rows with no zero distance get the same weights under both rules.

With all components kept, the barycentre of the coordinates is the barycentre of the encoded
table (the projection is affine and invertible on the data's span), so continuous values are
the weighted mean of the neighbours' values, and a categorical value is drawn with probability
equal to the summed weight of the neighbours holding it (``"draw"``) or taken as the modality
of largest weight (``"argmax"``).

Random numbers are drawn on the host, block by block of ``RANDOM_BLOCK`` rows from a child of
the run's ``SeedSequence``, so the result depends only on the seed (not on chunk sizes nor on
the backend, nor on the order in which ``random_weights`` runs its blocks: on threads).
"""

from __future__ import annotations

import numpy as np

from . import parallel, streams
from .backend import Backend
from .errors import AvatarError
from .parameters import CATEGORICAL_RULES, ZERO_DISTANCE_RULES, check_choice

DISTANCE_EPSILON = 1e-12
RANDOM_BLOCK = 1 << 16
UNIQUE_COPY_ATTEMPTS = 8  # redraws of an avatar that copies a unique row, at most


def _block_generator(seed: np.random.SeedSequence, stream: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(streams.child(seed, stream, *key))


def random_weights(
    distances: np.ndarray,
    seed: np.random.SeedSequence,
    first_row: int,
    zero_distance: str,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Host-side random weights for rows ``first_row..`` (a block-aligned slice), (b, k),
    written to ``out`` if given; ``zero_distance`` as in the module docstring."""
    b, k = distances.shape
    if first_row % RANDOM_BLOCK:
        raise AvatarError("internal: weights must be drawn from a block-aligned row")
    check_choice("zero_distance", zero_distance, ZERO_DISTANCE_RULES)
    weights = np.empty((b, k)) if out is None else out
    halves = np.exp2(-np.arange(k + 1.0))  # 2^-rank, exact powers of two

    def block(start: int) -> None:  # divisors row by row: a block's own, cache-sized
        stop = min(start + RANDOM_BLOCK, b)
        rng = _block_generator(seed, streams.WEIGHTS, (first_row + start) // RANDOM_BLOCK)
        exponential = rng.exponential(1.0, size=(stop - start, k))
        ranks = random_ranks(rng.random((stop - start, k - 1)))
        raw = exponential * halves[ranks] / divisors(distances[start:stop], zero_distance)
        weights[start:stop] = raw / raw.sum(axis=1, keepdims=True)

    parallel.on_threads(block, range(0, b, RANDOM_BLOCK))
    return weights


def divisors(distances: np.ndarray, zero_distance: str) -> np.ndarray:
    """The distances the weights divide by, (b, k): a zero one (``<= DISTANCE_EPSILON``)
    replaced by the rule ``zero_distance`` (module docstring); the others kept."""
    check_choice("zero_distance", zero_distance, ZERO_DISTANCE_RULES)
    if zero_distance == "paper":
        return np.maximum(distances, DISTANCE_EPSILON)
    nonzero = np.where(distances > DISTANCE_EPSILON, distances, np.inf).min(axis=1, keepdims=True)
    return np.maximum(distances, np.where(np.isinf(nonzero), 1.0, nonzero))


def random_ranks(uniforms: np.ndarray) -> np.ndarray:
    """Per row, a random permutation of 1..k from k - 1 uniforms (Fisher-Yates: position i,
    from the last down, swaps with position floor(u_i (i + 1))), compiled
    (``synthesis_kernels.py``: 10x faster than numpy's per-row ``permuted``)."""
    from .synthesis_kernels import random_ranks as compiled

    return compiled(uniforms)


def draw_uniforms(
    n_rows: int, n_columns: int, seed: np.random.SeedSequence, first_row: int
) -> np.ndarray:
    """Uniform numbers in [0, 1) for the categorical draws of a block-aligned row slice (its
    blocks drawn on threads, as the weights)."""
    out = np.empty((n_rows, n_columns))

    def block(start: int) -> None:
        stop = min(start + RANDOM_BLOCK, n_rows)
        rng = _block_generator(seed, streams.DRAWS, (first_row + start) // RANDOM_BLOCK)
        out[start:stop] = rng.random((stop - start, n_columns))

    parallel.on_threads(block, range(0, n_rows, RANDOM_BLOCK))
    return out


def shuffle_order(n_rows: int, seed: np.random.SeedSequence) -> np.ndarray:
    """The permutation that turns unshuffled avatars into the released order."""
    return _block_generator(seed, streams.SHUFFLE, 0).permutation(n_rows)


def calibration_uniforms(
    n_variables: int, n_rows: int, seed: np.random.SeedSequence
) -> np.ndarray:
    """Uniform numbers in (0, 1], (variables, rows), for the draws of the calibration of
    shares (``pipeline/calibration.py``)."""
    uniforms = _block_generator(seed, streams.CALIBRATION, 0).random((n_variables, n_rows))
    return np.subtract(1.0, uniforms, out=uniforms)  # in place: no second array


def redraw_uniforms(
    rows: np.ndarray, n_values: int, seed: np.random.SeedSequence, attempt: int
) -> np.ndarray:
    """Uniform numbers in [0, 1), (len(rows), n_values), for the redraw ``attempt`` of the
    batch's ``rows`` (positions): row r's are row ``r % RANDOM_BLOCK`` of its block's
    generator, keyed by the attempt and the block, so they depend neither on the other rows
    redrawn nor on the threads."""
    out = np.empty((len(rows), n_values))
    blocks = rows // RANDOM_BLOCK
    for block in np.unique(blocks):
        mine = np.flatnonzero(blocks == block)
        offsets = rows[mine] - block * RANDOM_BLOCK
        rng = _block_generator(seed, streams.UNIQUE_COPIES, attempt, int(block))
        out[mine] = rng.random((int(offsets.max()) + 1, n_values))[offsets]
    return out


def redraw(
    continuous,
    codes,
    n_modalities: list[int],
    neighbour_indices,
    neighbour_distances,
    rows: np.ndarray,
    seed: np.random.SeedSequence,
    attempt: int,
    backend: Backend,
    categorical: str,
    zero_distance: str,
):
    """The avatars of the batch's ``rows`` drawn again (``unique_copies="redraw"``), weights
    of the same law as ``random_weights`` and categorical draws, from the redraw stream
    (``redraw_uniforms``): (continuous values, codes) as backend arrays, and the weights
    (host, (len(rows), k))."""
    xp = backend.xp
    k = neighbour_indices.shape[1]
    uniforms = redraw_uniforms(rows, 2 * k - 1 + codes.shape[1], seed, attempt)
    on_device = backend.asarray(rows)
    neighbours = xp.ascontiguousarray(backend.asarray(neighbour_indices)[on_device])
    distances = backend.to_numpy(backend.asarray(neighbour_distances)[on_device])
    ranks = random_ranks(np.ascontiguousarray(uniforms[:, k:2 * k - 1]))
    raw = -np.log1p(-uniforms[:, :k]) * np.exp2(-ranks) / divisors(distances, zero_distance)
    weights = raw / raw.sum(axis=1, keepdims=True)
    continuous = xp.ascontiguousarray(backend.asarray(continuous), dtype=xp.float64)
    codes = xp.ascontiguousarray(backend.asarray(codes), dtype=xp.int64)
    on_device_weights = backend.asarray(weights)
    if categorical == "draw":
        draws = backend.asarray(np.ascontiguousarray(uniforms[:, 2 * k - 1:]))
        out = backend.kernels.synthesize_block(backend, continuous, codes, neighbours,
                                               on_device_weights, draws)
    else:
        out = (_barycentre(continuous, neighbours, on_device_weights, xp),
               _argmax(codes, neighbours, on_device_weights, n_modalities, xp))
    return *out, weights


def synthesize(
    continuous,
    codes,
    n_modalities: list[int],
    neighbour_indices,
    neighbour_distances,
    seed: np.random.SeedSequence,
    backend: Backend,
    categorical: str,
    zero_distance: str,
    keep_weights: bool = False,
):
    """Avatar continuous values (n, pc) and categorical codes (n, pk) as backend arrays, and
    the weights (n, k) on the host if ``keep_weights`` (the calibration of shares needs
    them), else None; ``categorical`` and ``zero_distance`` as in ``AvatarParameters``."""
    check_choice("categorical", categorical, CATEGORICAL_RULES)
    xp = backend.xp
    n, k = neighbour_indices.shape
    # the kernels' argument types, made once here rather than by each window's call
    continuous = xp.ascontiguousarray(backend.asarray(continuous), dtype=xp.float64)
    codes = xp.ascontiguousarray(backend.asarray(codes), dtype=xp.int64)
    out_continuous = xp.empty(continuous.shape, dtype=xp.float64)
    out_codes = xp.empty(codes.shape, dtype=xp.int64)
    kept = np.empty((n, k)) if keep_weights else None
    # the random numbers of a window: a block per thread
    window = RANDOM_BLOCK * parallel.thread_count()
    for start in range(0, n, window):
        stop = min(start + window, n)
        host_distances = backend.to_numpy(neighbour_distances[start:stop])
        host_weights = random_weights(host_distances, seed, start, zero_distance,
                                      None if kept is None else kept[start:stop])  # fmt: skip
        weights = backend.asarray(host_weights)
        if categorical == "draw":  # one compiled pass over the block (synthesis_kernels.py)
            uniforms = backend.asarray(draw_uniforms(stop - start, codes.shape[1], seed, start))
            backend.kernels.synthesize_block(
                backend, continuous, codes,
                xp.ascontiguousarray(backend.asarray(neighbour_indices[start:stop])), weights,
                uniforms, (out_continuous[start:stop], out_codes[start:stop]),
            )  # fmt: skip
            continue
        for s0 in range(start, stop, backend.tile_rows):  # "argmax": array code
            s1 = min(s0 + backend.tile_rows, stop)
            rows = slice(s0 - start, s1 - start)
            neighbours = backend.asarray(neighbour_indices[s0:s1])
            out_continuous[s0:s1] = _barycentre(continuous, neighbours, weights[rows], xp)
            if codes.shape[1]:
                out_codes[s0:s1] = _argmax(codes, neighbours, weights[rows], n_modalities, xp)
    return out_continuous, out_codes, kept


def _barycentre(continuous, neighbours, weights, xp):
    """Weighted mean of the neighbours' values, (b, pc), one neighbour at a time (no (b, k, pc)
    temporary; the same sequence of elementwise operations on every backend)."""
    first = continuous[neighbours[:, 0]]
    total = weights[:, :1] * first
    low, high = first, first
    for j in range(1, neighbours.shape[1]):
        values = continuous[neighbours[:, j]]
        total = total + weights[:, j : j + 1] * values
        low, high = xp.minimum(low, values), xp.maximum(high, values)
    # Mathematically within the neighbours' range; the clip only removes rounding, so a
    # constant column stays exactly constant.
    return xp.clip(total, low, high)


def _argmax(codes, neighbours, weights, n_modalities, xp):
    """Each categorical value set to the modality of largest summed weight, (b, pk). The
    weights are added one neighbour at a time, each row into its own cells (no two writes to
    one cell at once, so the same sums on every backend, run after run: a weighted bincount
    is a float atomic add on a GPU)."""
    b, k = neighbours.shape
    rows = xp.arange(b)
    out = xp.empty((b, codes.shape[1]), dtype=xp.int64)
    for j, m in enumerate(n_modalities):
        frequencies = xp.zeros((b, m))
        for t in range(k):
            cells = codes[neighbours[:, t], j]
            frequencies[rows, cells] = frequencies[rows, cells] + weights[:, t]
        out[:, j] = frequencies.argmax(axis=1)
    return out
