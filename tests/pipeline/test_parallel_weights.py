"""``synthesis.random_weights`` draws its blocks on threads: the same bits as drawing them one
after another, whatever the number of blocks (a partial last block included) and the
zero-distance rule."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar import parallel, streams, synthesis
from gpu_avatar.synthesis import RANDOM_BLOCK


def use_threads(monkeypatch, count: int) -> None:
    """Blocks on ``count`` threads, whatever the cores of the runner."""
    monkeypatch.setattr(parallel, "thread_count", lambda: count)


def serial_weights(distances, seed, first_row, zero_distance):
    """``random_weights`` as it was: one block after another on the calling thread."""
    b, k = distances.shape
    distances = synthesis.divisors(distances, zero_distance)
    weights = np.empty((b, k))
    halves = np.exp2(-np.arange(k + 1.0))
    for start in range(0, b, RANDOM_BLOCK):
        stop = min(start + RANDOM_BLOCK, b)
        rng = synthesis._block_generator(
            seed, streams.WEIGHTS, (first_row + start) // RANDOM_BLOCK
        )
        exponential = rng.exponential(1.0, size=(stop - start, k))
        ranks = synthesis.random_ranks(rng.random((stop - start, k - 1)))
        raw = exponential * halves[ranks] / distances[start:stop]
        weights[start:stop] = raw / raw.sum(axis=1, keepdims=True)
    return weights


@pytest.mark.parametrize(
    "rows", [RANDOM_BLOCK - 5, RANDOM_BLOCK, 2 * RANDOM_BLOCK + 17, 5 * RANDOM_BLOCK]
)
def test_blocks_on_threads_give_the_serial_bits(rows, monkeypatch):
    use_threads(monkeypatch, 4)  # threads even on a 1-core runner
    threads, generator = set(), synthesis._block_generator

    def spy(*args):
        threads.add(threading.current_thread().name)
        return generator(*args)

    monkeypatch.setattr(synthesis, "_block_generator", spy)
    rng = np.random.default_rng(rows)
    distances = rng.exponential(size=(rows, 6))
    distances[::7, :2] = 0.0  # duplicates: the two rules differ on these rows
    seed = np.random.SeedSequence(11)
    for rule in ("paper", "bounded"):
        got = synthesis.random_weights(distances, seed, 2 * RANDOM_BLOCK, rule)
        threads_used = set(threads)
        expected = serial_weights(distances, seed, 2 * RANDOM_BLOCK, rule)
        np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))
    if rows > RANDOM_BLOCK:  # more than one block: they did run on the pool's threads
        assert threads_used - {threading.main_thread().name}


def test_k_20_over_sixteen_blocks(monkeypatch):
    """The benchmark's shape, k = 20, on the cores there are and on 3 threads."""
    rng = np.random.default_rng(0)
    distances = rng.exponential(size=(16 * RANDOM_BLOCK, 20))
    seed = np.random.SeedSequence(5)
    expected = serial_weights(distances, seed, 0, "paper")
    got = synthesis.random_weights(distances, seed, 0, "paper")
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))
    use_threads(monkeypatch, 3)
    got = synthesis.random_weights(distances, seed, 0, "paper")
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))


def test_an_error_in_a_block_is_raised(monkeypatch):
    use_threads(monkeypatch, 2)

    def broken(uniforms):
        raise RuntimeError("block failed")

    monkeypatch.setattr(synthesis, "random_ranks", broken)
    with pytest.raises(RuntimeError, match="block failed"):
        synthesis.random_weights(np.ones((3 * RANDOM_BLOCK, 4)), np.random.SeedSequence(0), 0,
                                 "paper")  # fmt: skip


def test_avatars_do_not_depend_on_the_number_of_cores(monkeypatch):
    """``synthesize`` draws a window of blocks (one per core) at a time: the same avatars
    with one core or four."""
    rng = np.random.default_rng(0)
    n = 2 * RANDOM_BLOCK + 99
    df = pd.DataFrame({"a": rng.normal(size=n) + 0.5, "b": rng.normal(size=n) + 0.5,
                       "c": rng.choice(list("xyz"), n)})
    avatars = []
    for cores in (1, 4):
        use_threads(monkeypatch, cores)
        avatars.append(ga.avatarize(df, k=5, seed=3).sensitive_unshuffled_avatars)
    pd.testing.assert_frame_equal(*avatars)
