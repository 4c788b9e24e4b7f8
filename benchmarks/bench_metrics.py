"""Exact privacy distance metrics (local cloaking, hidden rate, DCR, NNDR) against a fixed top-k.

Data (synthetic, deterministic): the originals are ``n`` points of a 5-D standard Gaussian, as
if already projected on ncp = 5 axes; each avatar is its original plus Gaussian noise of
standard deviation ``noise * (n / 10^4) ** (-1/5)`` per axis. The ``n ** (-1/5)`` factor keeps
the expected number of points inside a ball of that radius constant across sizes (in 5-D the
neighbour spacing shrinks like ``n ** (-1/5)``), just as the Avatar method's k-neighbour
synthesis keeps the local cloaking steady whatever the size; the default ``--noise 0.4`` gives a
hidden rate near 89 % and a median local cloaking near 18, close to the published avatars
(AIDS 92.9 % / 11, WBCD 92.7 % / 24), with the usual long tail of large counts.

Jobs, side by side at each size:

- ``exact``: ``gpu_avatar.reductions.distance_ranks(x, y, backend, engine="auto")``, the one
  reduction behind local cloaking, hidden rate, distance to closest (DCR) and closest
  distances ratio (NNDR); the engine that "auto" picks is shown (the compiled "kdtree": its
  kernels are compiled into numba's disk cache before any timing, and loaded in each job's
  process before its timing, like the imports).
  ``--engines auto brute kdtree`` adds a job per named engine ("exact kdtree", ...).
- ``privacy_metrics``: the full public call ``gpu_avatar.privacy_metrics(originals, avatars,
  ncp=5)`` on the same points as a 5-column table (its own PCA metric projection, the
  reduction, the closest-rate percentile, the direct-match metrics).
- ``sklearn top-k``: the obvious alternative, as the reference code does it: scikit-learn
  ``NearestNeighbors`` (default algorithm, all cores) fitted on the concatenated originals and
  avatars and asked for a fixed ``--baseline-k`` neighbours (default 4000, capped at 2n) of
  every original. Local cloaking = avatars listed before the own avatar (all avatars listed
  when the own one lies beyond the k-th neighbour: a censored count); hidden = the first avatar
  listed is not the own one. DCR / NNDR: ``NearestNeighbors(n_neighbors=2)`` fitted on the
  originals, queried with the avatars. The n x k result is neither exact for large counts nor
  bounded in memory: the job is skipped above ``--baseline-max-rows`` rows or when its estimated
  need exceeds 80 % of the available memory, and the table says how much it would need.

Each job runs in its own freshly spawned interpreter, which builds the inputs (not measured),
then is timed around the computation only. "peak MB" is that process's peak resident memory
during the computation (interpreter, libraries and inputs included, shown as "start MB"; the
parent's memory is never counted). For the baseline, "LC equal %" is the share of originals
whose local cloaking equals the exact one and "hidden equal %" likewise for the hidden flag
(``privacy_metrics`` measures in its own PCA projection of the table, standardised columns, so
its counts are close to, not equal to, those on the raw points).

Dense mixed table (``--mixed-rows``, default 200,000; issue 16): ``make_mixed_table`` (20 mixed
columns, ``_common.py``) avatarized with k = 20, ncp = 5, then ``privacy_metrics`` of its
unshuffled avatars, in one process: both times, their ratio (target: metrics within 3x the
avatarization) and whether the local cloaking and hidden flags of ``CHECKED_ROWS`` random rows
equal those of the array tiles (``reductions.tile_pass``, their own code path) on the same
coordinates (untimed). In this
table's metric space the avatars sit in dense clouds (median local cloaking ~40, mean ~600, a
long tail to ~10^5).

Run from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/bench_metrics.py                  # 1e4, 1e5, 1e6 rows
    .venv/bin/python benchmarks/bench_metrics.py --sizes 10000    # quick check, < 1 minute
    .venv/bin/python benchmarks/bench_metrics.py --markdown       # also for RESULTS.md

Issue 3's target: 10^6 rows exact in under 60 s on 2 cores, under 4 GB.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
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
from gpu_avatar.backend import CPU
from gpu_avatar.metrics import reductions
from gpu_avatar.metrics.privacy import metric_coordinates
from gpu_avatar.neighbours.distances import rowwise_squared

NCP = 5
EXACT_ENGINES = ("auto", "brute", "kdtree", "numba")
PACKAGES = ("gpu_avatar", "numpy", "pandas", "scipy", "scikit-learn")
BASELINE_BYTES_PER_CELL = 24  # per neighbour listed; measured ~19 B at 10^4 rows, k = 4000
REFERENCE_ROWS = 10_000  # the noise scale is --noise at this size
MIXED_K = 20
CHECKED_ROWS = 2000  # of the dense mixed table, compared with the array tiles


# ------------------------------------------------------------------------------ inputs
def make_points(n_rows: int, seed: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Originals (n, 5) standard Gaussian and avatars = originals + scaled Gaussian noise."""
    rng = np.random.default_rng(seed)
    originals = rng.standard_normal((n_rows, NCP))
    scale = noise * (n_rows / REFERENCE_ROWS) ** (-1.0 / NCP)
    avatars = originals + scale * rng.standard_normal((n_rows, NCP))
    return originals, avatars


def make_tables(n_rows: int, seed: int, noise: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The same points as two tables with continuous columns c0..c4."""
    originals, avatars = make_points(n_rows, seed, noise)
    columns = [f"c{j}" for j in range(NCP)]
    return pd.DataFrame(originals, columns=columns), pd.DataFrame(avatars, columns=columns)


# -------------------------------------------------------------------------------- jobs
def _summary(cloaking: np.ndarray, hidden: np.ndarray) -> dict:
    return {
        "local_cloaking": cloaking,
        "hidden": hidden,
        "hidden_rate": 100.0 * float(np.mean(hidden)),
        "median_lc": float(np.median(cloaking)),
    }


def run_exact(points: tuple[np.ndarray, np.ndarray], backend: str, engine: str) -> dict:
    """The exact reduction (``engine`` "auto" or a named one); DCR and NNDR medians as well."""
    resolved = gpu_avatar.resolve_backend(backend)
    originals, avatars = points
    ranks = reductions.distance_ranks(originals, avatars, resolved, engine=engine)
    if engine == "auto":
        engine = reductions.auto_engine(resolved, len(originals))
    ratio = np.ones_like(ranks.closest)
    np.divide(ranks.closest, ranks.second_closest, out=ratio, where=ranks.second_closest > 0)
    return {
        **_summary(ranks.local_cloaking, ranks.hidden),
        "engine": f"{engine} ({resolved.name})",
        "dcr": float(np.median(ranks.closest)),
        "nndr": float(np.median(ratio)),
    }


def run_privacy_metrics(tables: tuple[pd.DataFrame, pd.DataFrame], backend: str) -> dict:
    """The full public call on the same points as tables."""
    originals, avatars = tables
    resolved = gpu_avatar.resolve_backend(backend)
    pm = gpu_avatar.privacy_metrics(originals, avatars, ncp=NCP, backend=resolved)
    return {
        **_summary(pm.local_cloaking_per_individual, pm.hidden_per_individual),
        "engine": f"{reductions.auto_engine(resolved, len(originals))} ({resolved.name})",
        "dcr": pm.distance_to_closest,
        "nndr": pm.closest_distances_ratio,
    }


def run_baseline(points: tuple[np.ndarray, np.ndarray], k: int) -> dict:
    """Fixed top-k on the concatenated sets, as the reference code does (see the docstring)."""
    originals, avatars = points
    n = len(originals)
    rows = np.arange(n)
    k = min(k, 2 * n)
    index = NearestNeighbors(n_neighbors=k, n_jobs=-1).fit(np.vstack([originals, avatars]))

    neighbours = index.kneighbors(originals, return_distance=False)
    is_avatar = neighbours >= n
    is_own = neighbours == (rows + n)[:, None]
    found = is_own.any(axis=1)
    own_position = np.argmax(is_own, axis=1)
    avatars_seen = np.cumsum(is_avatar, axis=1, dtype=np.int32)
    first_avatar = np.argmax(is_avatar, axis=1)  # 0 (an original) where none is listed
    cloaking = np.where(found, avatars_seen[rows, own_position] - 1, avatars_seen[:, -1])
    hidden = ~found | (neighbours[rows, first_avatar] != rows + n)
    del neighbours, is_avatar, is_own, avatars_seen, index

    two_closest = NearestNeighbors(n_neighbors=2, n_jobs=-1).fit(originals)
    distances, _ = two_closest.kneighbors(avatars)
    closest, second_closest = distances[:, 0], distances[:, 1]
    ratio = np.ones_like(closest)
    np.divide(closest, second_closest, out=ratio, where=second_closest > 0)
    return {
        **_summary(cloaking.astype(np.int64), hidden),
        "engine": f"NearestNeighbors k={k}",
        "dcr": float(np.median(closest)),
        "nndr": float(np.median(ratio)),
        "censored": int((~found).sum()),
    }


def run_mixed(table: pd.DataFrame, backend: str) -> dict:
    """Avatarize, then measure the privacy metrics, each timed; then the engine check."""
    resolved = gpu_avatar.resolve_backend(backend)
    start = time.perf_counter()
    result = gpu_avatar.avatarize(table, k=MIXED_K, ncp=NCP, seed=0, backend=resolved)
    avatarize_seconds = time.perf_counter() - start
    avatars = result.sensitive_unshuffled_avatars
    start = time.perf_counter()
    pm = gpu_avatar.privacy_metrics(table, avatars, ncp=NCP, backend=resolved)
    metrics_seconds = time.perf_counter() - start
    x, (y,), _ = metric_coordinates(table, [avatars], NCP, None, "mean", resolved)
    x, y = resolved.to_numpy(x), resolved.to_numpy(y)
    rows = np.sort(np.random.default_rng(0).permutation(len(x))[:CHECKED_ROWS])
    own = rowwise_squared(x, y, np)
    cloaking, hidden, _ = reductions.tile_pass(x, y, own, rows, CPU, reductions.default_tile(CPU),
                                               columns=False)  # fmt: skip
    return {
        "avatarize": avatarize_seconds,
        "metrics": metrics_seconds,
        "engine": reductions.auto_engine(resolved, len(table)),
        "hidden_rate": pm.hidden_rate,
        "median_lc": pm.local_cloaking,
        "mean_lc": float(pm.local_cloaking_per_individual.mean()),
        "identical": bool(
            np.array_equal(pm.local_cloaking_per_individual[rows], cloaking)
            and np.array_equal(pm.hidden_per_individual[rows], hidden)
        ),
    }


def warmed_mixed_table(n_rows: int) -> pd.DataFrame:
    """The table, with the avatarization's and the metrics' kernels loaded (untimed)."""
    small = make_mixed_table(500, seed=1)
    gpu_avatar.privacy_metrics(
        small, gpu_avatar.avatarize(small, k=MIXED_K, ncp=NCP).sensitive_unshuffled_avatars)
    compile_kernels()
    return make_mixed_table(n_rows, seed=0)


MIXED_HEADERS = ["rows", "engine", "avatarize s", "privacy_metrics s", "ratio", "hidden %",
                 "median LC", "mean LC", "identical to tiles", "peak MB"]  # fmt: skip


def mixed_row(n_rows: int, outcome: Measurement) -> list[str]:
    d = outcome.details
    return [
        f"{n_rows:,}",
        d["engine"],
        _number(d["avatarize"], 2),
        _number(d["metrics"], 2),
        f"{d['metrics'] / d['avatarize']:.2f}x",
        _number(d["hidden_rate"], 2),
        _number(d["median_lc"], 1),
        _number(d["mean_lc"], 1),
        "yes" if d["identical"] else "NO",
        _number(outcome.peak_mb, 0),
    ]


def baseline_gigabytes(n_rows: int, k: int) -> float:
    return BASELINE_BYTES_PER_CELL * n_rows * min(k, 2 * n_rows) / 1e9


def available_gigabytes() -> float:
    """MemAvailable from /proc/meminfo (inf where unknown)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    return math.inf


def measure(job: str, n_rows: int, args: argparse.Namespace) -> Measurement:
    data_args = (n_rows, args.seed, args.noise)
    if job.startswith("exact"):
        engine = job.removeprefix("exact").strip() or "auto"
        return measure_isolated(
            warmed_points, run_exact, data_args, {"backend": args.backend, "engine": engine}
        )
    if job == "privacy_metrics":
        return measure_isolated(
            warmed_tables, run_privacy_metrics, data_args, {"backend": args.backend}
        )
    return measure_isolated(make_points, run_baseline, data_args, {"k": args.baseline_k})


def skip_reason(job: str, n_rows: int, args: argparse.Namespace) -> str | None:
    if job == "privacy_metrics" and args.no_full:
        return "skipped (--no-full)"
    if job != "sklearn top-k":
        return None
    need = baseline_gigabytes(n_rows, args.baseline_k)
    if n_rows > args.baseline_max_rows or need > 0.8 * available_gigabytes():
        return f"skipped (needs {need:,.0f} GB)" if need >= 1 else f"skipped (needs {need:.1f} GB)"
    return None


# ---------------------------------------------------------------------------- printing
def _number(value: float, digits: int = 1) -> str:
    return "nan" if math.isnan(value) else f"{value:,.{digits}f}"


HEADERS = [
    "rows",
    "job",
    "engine",
    "seconds",
    "rows/s",
    "peak MB",
    "start MB",
    "hidden %",
    "median LC",
    "DCR",
    "NNDR",
    "LC equal %",
    "hidden equal %",
]


def build_rows(results: dict[tuple[int, str], Measurement | str]) -> list[list[str]]:
    table = []
    for (n_rows, job), outcome in results.items():
        if isinstance(outcome, str):
            table.append([f"{n_rows:,}", job, "", outcome] + [""] * (len(HEADERS) - 4))
            continue
        details = outcome.details
        agree_lc = agree_hidden = ""
        exact = next(
            (
                other
                for (size, name), other in results.items()
                if size == n_rows and name.startswith("exact") and isinstance(other, Measurement)
            ),
            None,
        )
        if job == "sklearn top-k" and isinstance(exact, Measurement):
            same_lc = details["local_cloaking"] == exact.details["local_cloaking"]
            same_hidden = details["hidden"] == exact.details["hidden"]
            agree_lc = _number(100.0 * same_lc.mean(), 2)
            agree_hidden = _number(100.0 * same_hidden.mean(), 2)
        table.append(
            [
                f"{n_rows:,}",
                job,
                details["engine"],
                _number(outcome.seconds, 2),
                _number(n_rows / outcome.seconds, 0),
                _number(outcome.peak_mb, 0),
                _number(outcome.start_mb, 0),
                _number(details["hidden_rate"], 2),
                _number(details["median_lc"], 1),
                _number(details["dcr"], 4),
                _number(details["nndr"], 4),
                agree_lc,
                agree_hidden,
            ]
        )
    return table


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000, 1_000_000],
        help="numbers of rows (default: 10000 100000 1000000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    parser.add_argument(
        "--noise",
        type=float,
        default=0.4,
        help="avatar noise per axis at 10^4 rows, scaled by n^(-1/5) (default: 0.4)",
    )
    parser.add_argument(
        "--backend", default="auto", help="gpu_avatar backend: auto, cpu or gpu (default: auto)"
    )
    parser.add_argument(
        "--baseline-k",
        type=int,
        default=4000,
        help="neighbours the top-k baseline asks for (default: 4000, as the reference code)",
    )
    parser.add_argument(
        "--baseline-max-rows",
        type=int,
        default=100_000,
        help="skip the top-k baseline above this many rows (default: 100000)",
    )
    parser.add_argument(
        "--engines",
        nargs="+",
        choices=EXACT_ENGINES,
        default=["auto"],
        help="exact engines to run, one job each (default: auto)",
    )
    parser.add_argument(
        "--mixed-rows",
        type=int,
        nargs="*",
        default=[200_000],
        help="rows of the dense mixed table job (default: 200000; none to skip)",
    )
    parser.add_argument("--no-full", action="store_true", help="skip the full privacy_metrics job")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    return parser.parse_args()


def compile_kernels() -> None:
    """Compile numba's kernels into its disk cache, or load them from it (untimed: a one-off
    per installation, then per process, like imports)."""
    points = make_points(100, 0, 0.4)
    reductions.distance_ranks(*points, engine="kdtree")


def warmed_points(n_rows: int, seed: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    compile_kernels()
    return make_points(n_rows, seed, noise)


def warmed_tables(n_rows: int, seed: int, noise: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    compile_kernels()
    return make_tables(n_rows, seed, noise)


def main() -> None:
    args = parse_args()
    compile_kernels()
    results: dict[tuple[int, str], Measurement | str] = {}
    exact_jobs = [
        "exact" if engine == "auto" else f"exact {engine}" for engine in dict.fromkeys(args.engines)
    ]
    for n_rows in args.sizes:
        for job in [*exact_jobs, "privacy_metrics", "sklearn top-k"]:
            reason = skip_reason(job, n_rows, args)
            if reason is not None:
                results[n_rows, job] = reason
                print(f"{n_rows:>10,} rows  {job:<16}  {reason}", flush=True)
                continue
            run_and_record(results, (n_rows, job), 16, measure, job, n_rows, args)

    mixed = []
    for n_rows in args.mixed_rows:
        outcome = measure_isolated(
            warmed_mixed_table, run_mixed, (n_rows,), {"backend": args.backend}
        )
        mixed.append(mixed_row(n_rows, outcome))
        print(f"{n_rows:>10,} rows  dense mixed table: {' '.join(mixed[-1][2:5])}", flush=True)

    rows = build_rows(results)
    title = (
        f"Local cloaking + hidden rate + DCR + NNDR, ncp = {NCP}, 5-D Gaussian originals, "
        f"avatars = originals + noise ({args.noise} at 10^4 rows, x (n/10^4)^(-1/5)), "
        f"seed = {args.seed}; baseline: scikit-learn top-{args.baseline_k}"
    )
    print(f"\n{title}\n")
    print(text_table(HEADERS, rows))
    mixed_title = (
        f"Dense mixed table (make_mixed_table, 20 columns): avatarize k = {MIXED_K}, ncp = {NCP}, "
        "then privacy_metrics of the unshuffled avatars, one process"
    )
    if mixed:
        print(f"\n{mixed_title}\n")
        print(text_table(MIXED_HEADERS, mixed))
    if args.markdown:
        print(f"\n## bench_metrics\n\n{title}.\n")
        print("\n".join(environment_lines(PACKAGES)))
        print(f"\n{markdown_table(HEADERS, rows)}")
        if mixed:
            print(f"\n{mixed_title}.\n\n{markdown_table(MIXED_HEADERS, mixed)}")


if __name__ == "__main__":
    main()
