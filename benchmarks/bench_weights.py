"""Synthesis weights (``synthesis.random_weights``) drawn with the blocks on threads, against
the same loop run one block after another (the previous code, kept here for this comparison
only). Both must give the same bits.

Data: ``n`` rows of k neighbour distances (default 10^6 x 20, i.i.d. exponential, seed 0);
the weights of every 65,536-row block drawn from the block's child of
``SeedSequence(0)``, the ranks shuffled by the compiled kernel (as ``avatarize`` does on the
CPU). "one block a call" is how ``synthesize`` asks for them today (one call per block, so one
block at a time whatever ``random_weights`` does): the end-to-end gain needs ``synthesize`` to
ask for several blocks a call.

The jobs run in one freshly spawned interpreter (inputs and numba's compilation not timed),
interleaved ``--repeat`` times (default 10: this machine is shared, and interleaving exposes
every job to the same load); the fastest and the median wall seconds of each, and the CPU
seconds of its fastest run.

    .venv/bin/python benchmarks/bench_weights.py --markdown
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time

import numpy as np
from _common import measure_isolated, print_tables

from gpu_avatar import synthesis  # imported with the script, before any timing

PACKAGES = ("gpu_avatar", "numpy", "numba")
RULE = "paper"


def serial_weights(distances, seed, first_row, zero_distance):
    """``random_weights`` before the threads: one block after another."""
    b, k = distances.shape
    distances = synthesis.divisors(distances, zero_distance)
    weights = np.empty((b, k))
    halves = np.exp2(-np.arange(k + 1.0))
    for start in range(0, b, synthesis.RANDOM_BLOCK):
        stop = min(start + synthesis.RANDOM_BLOCK, b)
        rng = synthesis._block_generator(
            seed, synthesis._STREAM_WEIGHTS, (first_row + start) // synthesis.RANDOM_BLOCK
        )
        exponential = rng.exponential(1.0, size=(stop - start, k))
        ranks = synthesis.random_ranks(rng.random((stop - start, k - 1)))
        raw = exponential * halves[ranks] / distances[start:stop]
        weights[start:stop] = raw / raw.sum(axis=1, keepdims=True)
    return weights


def make_distances(n_rows: int, k: int) -> np.ndarray:
    distances = np.random.default_rng(0).exponential(size=(n_rows, k))
    synthesis.random_weights(distances[:100], np.random.SeedSequence(0), 0, RULE)
    return distances  # the rank kernel compiled or loaded above, untimed


def one_job(distances: np.ndarray, job: str) -> tuple[np.ndarray, float, float]:
    seed = np.random.SeedSequence(0)
    wall, cpu = time.perf_counter(), time.process_time()
    if job == "serial (before)":
        weights = serial_weights(distances, seed, 0, RULE)
    elif job == "threads":
        weights = synthesis.random_weights(distances, seed, 0, RULE)
    else:  # one block a call, as synthesize asks
        weights = np.empty_like(distances)
        for start in range(0, len(distances), synthesis.RANDOM_BLOCK):
            stop = min(start + synthesis.RANDOM_BLOCK, len(distances))
            weights[start:stop] = synthesis.random_weights(
                distances[start:stop], seed, start, RULE
            )
    return weights, time.perf_counter() - wall, time.process_time() - cpu


def run(distances: np.ndarray, repeat: int) -> dict:
    """Every job ``repeat`` times, interleaved: per job the wall seconds of each run, the
    CPU seconds of the fastest and the weights' digest."""
    results = {job: {"walls": [], "cpu": None, "digest": None} for job in JOBS}
    for _ in range(repeat):
        for job in JOBS:
            weights, wall, cpu = one_job(distances, job)
            result = results[job]
            if not result["walls"] or wall < min(result["walls"]):
                result["cpu"] = cpu
            result["walls"].append(wall)
            result["digest"] = hashlib.sha256(weights.tobytes()).hexdigest()
            del weights
    return results


JOBS = ("serial (before)", "threads", "threads, one block a call")
HEADERS = ["rows", "k", "blocks", "job", "fastest s", "median s", "CPU s (fastest)",
           "speed-up (median)", "same bits"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=10, help="interleaved runs per job")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    for n_rows in args.sizes:
        outcome = measure_isolated(make_distances, run, (n_rows, args.k), {"repeat": args.repeat})
        results = outcome.details
        blocks = -(-n_rows // synthesis.RANDOM_BLOCK)
        before = results[JOBS[0]]
        for job in JOBS:
            result = results[job]
            median = statistics.median(result["walls"])
            rows.append([
                f"{n_rows:,}", args.k, blocks, job, f"{min(result['walls']):.2f}",
                f"{median:.2f}", f"{result['cpu']:.2f}",
                f"{statistics.median(before['walls']) / median:.2f}x",
                "-" if job == JOBS[0] else "yes" if result["digest"] == before["digest"] else "NO",
            ])  # fmt: skip
            print(f"{n_rows:>10,} rows  {job:<26} fastest {min(result['walls']):.2f} s, "
                  f"median {median:.2f} s", flush=True)  # fmt: skip
    print_tables(
        f"Synthesis weights, k = {args.k}, zero_distance = {RULE!r}, compiled rank shuffle, "
        f"{args.repeat} interleaved runs",
        HEADERS, rows, args.markdown, PACKAGES,
    )


if __name__ == "__main__":
    main()
