"""Parameter advice: one ``advise`` sweep against what a user does without it, running
``avatarize`` + ``privacy_metrics`` + ``signal_metrics`` once per candidate k, in one run.

The mixed table of ``_common.make_mixed_table`` (10 continuous + 10 categorical columns) at
10^4 and 10^5 rows, candidates k = 5, 10, 20, 30, 50, ncp = 5, seed 0; each job in a fresh
interpreter (``_common.measure_isolated``, after an untimed warm-up on 1,000 rows). Both give
the same metrics (the sweep is exact): the largest difference between their privacy values is
printed. Target: the sweep at 10^5 rows within 5x one ``avatarize`` + ``privacy_metrics`` call
(at k = 20).

    python benchmarks/bench_advise.py --markdown
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pandas as pd
from _common import make_mixed_table, measure_isolated, print_tables

from gpu_avatar.metrics.catalogue import PRIVACY_TARGETS
from gpu_avatar.parameters import ADVICE_CANDIDATES


def make_warm_table(n_rows: int, seed: int) -> pd.DataFrame:
    """The table, after an untimed run of every step on 1,000 rows (compiled kernels loaded)."""
    import gpu_avatar as ga

    df = make_mixed_table(n_rows, seed)
    small = df.head(1000)
    ga.advise(small, candidates=[5, 10], seed=seed)
    ga.avatarize(small, k=5, seed=seed).privacy_metrics()
    return df


def run_sweep(df: pd.DataFrame, candidates: list[int], ncp: int, seed: int) -> dict[str, Any]:
    import gpu_avatar as ga

    advice = ga.advise(df, candidates=candidates, ncp=ncp, seed=seed)
    return {"k": advice.k, "privacy": advice.candidates[list(PRIVACY_TARGETS)].to_dict("index")}


def run_loop(df: pd.DataFrame, candidates: list[int], ncp: int, seed: int) -> dict[str, Any]:
    """What a user without advice runs: one full avatarization and its metrics per k."""
    import gpu_avatar as ga

    privacy, calls = {}, {}
    for k in candidates:
        start = time.perf_counter()
        result = ga.avatarize(df, k=k, ncp=ncp, seed=seed)
        values = result.privacy_metrics().to_frame()["value"]
        calls[k] = time.perf_counter() - start  # one avatarize + privacy_metrics call
        result.signal_metrics()
        privacy[k] = values.to_dict()
    return {"privacy": privacy, "one_call": calls.get(20, calls[candidates[0]])}


def largest_difference(a: dict, b: dict) -> float:
    gaps = [abs(a[k][m] - b[k][m]) for k in a for m in a[k]
            if pd.notna(a[k][m]) and pd.notna(b[k][m])]
    return max(gaps) if gaps else 0.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--candidates", type=int, nargs="+", default=list(ADVICE_CANDIDATES))
    parser.add_argument("--ncp", type=int, default=5, help="projection axes (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="data and avatar seed (default: 0)")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = parser.parse_args(argv)

    headers = ["rows", "job", "seconds", "peak MB", "x one call", "advised k", "max metric diff"]
    rows = []
    for n in args.sizes:
        work = dict(candidates=args.candidates, ncp=args.ncp, seed=args.seed)
        sweep = measure_isolated(make_warm_table, run_sweep, (n, args.seed), work)
        print(f"{n:>10,} rows  advise sweep  {sweep.seconds:8.2f} s", flush=True)
        loop = measure_isolated(make_warm_table, run_loop, (n, args.seed), work)
        print(f"{n:>10,} rows  loop          {loop.seconds:8.2f} s", flush=True)
        one = loop.details["one_call"]
        gap = largest_difference(sweep.details["privacy"], loop.details["privacy"])
        rows.append([f"{n:,}", "advise (one sweep)", f"{sweep.seconds:.2f}",
                     f"{sweep.peak_mb:,.0f}", f"{sweep.seconds / one:.1f}",
                     str(sweep.details["k"]), f"{gap:.1e}"])
        rows.append([f"{n:,}", f"avatarize + metrics x {len(args.candidates)}",
                     f"{loop.seconds:.2f}", f"{loop.peak_mb:,.0f}", f"{loop.seconds / one:.1f}",
                     "-", "-"])
    print_tables(f"Advice over k = {args.candidates}, ncp = {args.ncp}, seed = {args.seed}, "
                 "mixed table (10 continuous + 10 categorical columns); 'x one call': seconds / "
                 "one avatarize + privacy_metrics call at k = 20 (target for the sweep at 10^5 "
                 "rows: <= 5)", headers, rows, args.markdown,
                 ["gpu_avatar", "numpy", "pandas", "numba"])


if __name__ == "__main__":
    main()
