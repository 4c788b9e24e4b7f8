"""Speed and memory of single-table avatarization: gpu_avatar (CPU backend) against a baseline.

For each size, a synthetic mixed table (10 continuous and 10 categorical columns with latent
structure, see ``_common.make_mixed_table``) is avatarized with k = 20, ncp = 5 by:

- ``gpu_avatar``: ``gpu_avatar.avatarize(df, k, ncp, seed, backend="cpu")``;
- ``baseline``: the same algorithm assembled from what a user would otherwise reach for: saiph's
  FAMD with all components (so saiph takes its exact ``scipy.linalg.svd`` path), keeping the
  first ``ncp`` coordinates; scikit-learn ``NearestNeighbors(n_neighbors=k + 1)`` (default
  algorithm), self dropped; then the Avatar weights ``E_j * 2^-pi_j / d_ij`` normalised, the
  weighted mean of the neighbours' continuous values and a weighted draw of each category,
  written plainly with numpy and pandas, and a shuffle of the rows.

Each job runs in its own freshly spawned interpreter, which imports every library, builds the
table and runs the job once on its first 1,000 rows (none of it measured: the warm-up loads
what is imported lazily, numba's compiled kernels from its disk cache included, and pays the
libraries' first-call costs; a cold process pays them once, about 0.8 s for gpu_avatar with
numba), then is timed around the avatarization only. "peak MB" is
that process's peak resident memory during the avatarization (it includes the interpreter,
the libraries and the input table, shown as "start MB"; the parent's memory is never
included). "speed-up" is the baseline's seconds over gpu_avatar's at the same size. A second
table gives gpu_avatar's own per-step timings (``result.timings``) and the baseline's steps.

Run from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/bench_tabular.py                      # 1e4, 1e5, 1e6 rows
    .venv/bin/python benchmarks/bench_tabular.py --sizes 10000        # quick check, < 1 minute
    .venv/bin/python benchmarks/bench_tabular.py --markdown           # also for RESULTS.md
    .venv/bin/python benchmarks/bench_tabular.py --sizes 100000 --repeats 5  # median of 5

Issue 2's target: at least 3 times the baseline's throughput at 1e5 and 1e6 rows, and 1e6 rows
in under 60 s with under 4 GB peak on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
import saiph
import scipy.spatial  # noqa: F401  (gpu_avatar imports it lazily: keep its import untimed)
from _common import (
    Measurement,
    environment_lines,
    make_mixed_table,
    markdown_table,
    measure_isolated,
    run_and_record,
    text_table,
)
from sklearn.neighbors import NearestNeighbors

import gpu_avatar

ENGINES = ("gpu_avatar", "baseline")
STEPS = ("fit", "projection", "neighbours", "synthesis", "decode")
PACKAGES = ("gpu_avatar", "numpy", "pandas", "scipy", "scikit-learn", "saiph")
DISTANCE_EPSILON = 1e-12  # a zero distance (duplicate rows) gets this, as in gpu_avatar


def _check_avatars(df: pd.DataFrame, avatars: pd.DataFrame) -> None:
    """Fail loudly rather than time something that is not a valid avatar table."""
    if avatars.shape != df.shape or not (avatars.dtypes == df.dtypes).all():
        raise RuntimeError(
            f"avatars have shape {avatars.shape} and dtypes {list(avatars.dtypes)}; "
            f"expected {df.shape} and {list(df.dtypes)}"
        )


def run_gpu_avatar(df: pd.DataFrame, k: int, ncp: int, seed: int) -> dict[str, dict[str, float]]:
    """Avatarize with gpu_avatar on the CPU; returns its per-step timings."""
    result = gpu_avatar.avatarize(df, k=k, ncp=ncp, seed=seed, backend="cpu")
    _check_avatars(df, result.avatars)
    return {"steps": dict(result.timings)}


def baseline_avatarize(
    df: pd.DataFrame, k: int, ncp: int, seed: int, steps: dict[str, float]
) -> pd.DataFrame:
    """The Avatar method from saiph + scikit-learn + plain numpy/pandas; fills ``steps``."""
    rng = np.random.default_rng(seed)
    n = len(df)

    start = time.perf_counter()
    coordinates, _model = saiph.fit_transform(df)  # nf=None: all components, exact SVD
    points = coordinates.to_numpy()[:, :ncp]
    steps["projection"] = time.perf_counter() - start

    start = time.perf_counter()
    distances, indices = NearestNeighbors(n_neighbors=k + 1).fit(points).kneighbors(points)
    is_self = indices == np.arange(n)[:, None]
    is_self[~is_self.any(axis=1), -1] = True  # self hidden behind duplicates: drop the farthest
    indices = indices[~is_self].reshape(n, k)
    distances = distances[~is_self].reshape(n, k)
    steps["neighbours"] = time.perf_counter() - start

    start = time.perf_counter()
    exponential = rng.exponential(1.0, size=(n, k))
    ranks = rng.permuted(np.tile(np.arange(1, k + 1), (n, 1)), axis=1)
    raw = exponential * 2.0**-ranks / np.maximum(distances, DISTANCE_EPSILON)
    weights = raw / raw.sum(axis=1, keepdims=True)
    cumulative = weights.cumsum(axis=1)
    rows = np.arange(n)
    avatars = {}
    for name in df.columns:
        column = df[name]
        if pd.api.types.is_numeric_dtype(column.dtype):
            avatars[name] = (weights * column.to_numpy(dtype=float)[indices]).sum(axis=1)
        else:  # draw one neighbour with probability w_ij and take its category
            chosen = (cumulative <= rng.random((n, 1))).sum(axis=1).clip(max=k - 1)
            avatars[name] = column.take(indices[rows, chosen]).reset_index(drop=True)
    steps["synthesis"] = time.perf_counter() - start

    start = time.perf_counter()
    result = pd.DataFrame(avatars, columns=df.columns)
    result = result.iloc[rng.permutation(n)].reset_index(drop=True)
    steps["decode"] = time.perf_counter() - start
    return result


def run_baseline(df: pd.DataFrame, k: int, ncp: int, seed: int) -> dict[str, dict[str, float]]:
    """Avatarize with the baseline; returns its per-step timings."""
    steps: dict[str, float] = {}
    _check_avatars(df, baseline_avatarize(df, k, ncp, seed, steps))
    return {"steps": steps}


JOBS = {"gpu_avatar": run_gpu_avatar, "baseline": run_baseline}
WARM_UP_ROWS = 1_000


def warmed_table(n_rows: int, seed: int, engine: str, k: int, ncp: int) -> pd.DataFrame:
    """The job's table, after one untimed run of the job on its first rows."""
    df = make_mixed_table(n_rows, seed)
    JOBS[engine](df.head(WARM_UP_ROWS).reset_index(drop=True), k=k, ncp=ncp, seed=seed)
    return df


def measure(engine: str, n_rows: int, args: argparse.Namespace) -> Measurement:
    return measure_isolated(
        warmed_table,
        JOBS[engine],
        input_args=(n_rows, args.seed, engine, args.k, args.ncp),
        work_kwargs=dict(k=args.k, ncp=args.ncp, seed=args.seed),
    )


def _median_run(outcomes: list[Measurement | str]) -> Measurement | str:
    """The run of median seconds (the upper one of an even count); a failure if any failed."""
    failures = [o for o in outcomes if isinstance(o, str)]
    if failures:
        return failures[0]
    ranked = sorted(outcomes, key=lambda outcome: outcome.seconds)
    return ranked[len(ranked) // 2]


def _number(value: float, digits: int = 1) -> str:
    return "nan" if math.isnan(value) else f"{value:,.{digits}f}"


def build_tables(
    results: dict[tuple[int, str], Measurement | str],
) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """Summary rows (one per size and engine) and per-step rows, formatted."""
    summary_headers = ["rows", "engine", "seconds", "rows/s", "peak MB", "start MB", "speed-up"]
    step_headers = ["rows", "engine", *STEPS]
    summary, steps = [], []
    for (n_rows, engine), outcome in results.items():
        if isinstance(outcome, str):  # "skipped" or "failed: ..."
            summary.append([f"{n_rows:,}", engine, outcome, "", "", "", ""])
            continue
        speed_up = ""
        baseline = results.get((n_rows, "baseline"))
        if engine == "gpu_avatar" and isinstance(baseline, Measurement):
            speed_up = f"{baseline.seconds / outcome.seconds:.1f}x"
        summary.append(
            [
                f"{n_rows:,}",
                engine,
                _number(outcome.seconds, 2),
                _number(n_rows / outcome.seconds, 0),
                _number(outcome.peak_mb, 0),
                _number(outcome.start_mb, 0),
                speed_up,
            ]
        )
        timings = outcome.details["steps"]
        steps.append(
            [f"{n_rows:,}", engine]
            + [_number(timings[s], 2) if s in timings else "-" for s in STEPS]
        )
    return summary_headers, summary, step_headers, steps


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000, 1_000_000],
        help="numbers of rows (default: 10000 100000 1000000)",
    )
    parser.add_argument("--k", type=int, default=20, help="neighbours (default: 20)")
    parser.add_argument("--ncp", type=int, default=5, help="projection axes (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="data and avatar seed (default: 0)")
    parser.add_argument(
        "--baseline-max-rows",
        type=int,
        default=1_000_000,
        help="skip the baseline above this many rows (default: 1000000)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs per size and engine, alternating engines; the median run is reported "
        "(default: 1; use 3 or 5 on a shared machine whose speed drifts)",
    )
    parser.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    results: dict[tuple[int, str], Measurement | str] = {}
    for n_rows in args.sizes:
        runs: dict[str, list[Measurement | str]] = {engine: [] for engine in ENGINES}
        for _ in range(args.repeats):
            for engine in ENGINES:
                if engine == "baseline" and n_rows > args.baseline_max_rows:
                    continue
                outcome: dict = {}
                run_and_record(outcome, (n_rows, engine), 10, measure, engine, n_rows, args)
                runs[engine].append(outcome[n_rows, engine])
        for engine, outcomes in runs.items():
            results[n_rows, engine] = _median_run(outcomes) if outcomes else "skipped"

    summary_headers, summary, step_headers, steps = build_tables(results)
    title = (
        "Avatarization of a mixed table (10 continuous + 10 categorical columns), "
        f"k = {args.k}, ncp = {args.ncp}, seed = {args.seed}"
        + (f", median of {args.repeats} alternating runs" if args.repeats > 1 else "")
    )
    print(f"\n{title}\n")
    print(text_table(summary_headers, summary))
    print("\nPer-step seconds\n")
    print(text_table(step_headers, steps))
    if args.markdown:
        print(f"\n## bench_tabular\n\n{title}.\n")
        print("\n".join(environment_lines(PACKAGES)))
        print(f"\n{markdown_table(summary_headers, summary)}\n")
        print(f"Per-step seconds:\n\n{markdown_table(step_headers, steps)}")


if __name__ == "__main__":
    main()
