"""The cost of the rules a release keeps (issue #27): ``avatarize(df, rules=[rule])`` for each
rule alone, and all of them, against the same release without rules, in the same process.

The table is ``_common.make_mixed_table`` (10 continuous, 10 categorical columns) plus what
the rules need: ``num_hi`` = num_0 plus a positive gap (Inequality, held by its encoding),
``flag`` = num_2 > 0 (Derived, encoding), ``total`` = num_1 + num_5 (SumTo, repaired), and
Range on num_4 and FixedCombinations of cat_1 and cat_2 (encoding). Each row gives the run's
seconds, the extra seconds over the release without rules, the seconds of the "rules" step
(checks, encoding, decoding and repairs) and the rows the repairs changed. One process, one
run per line (after a warm-up on 1,000 rows), with k = 20, ncp = 5, backend cpu.

    .venv/bin/python benchmarks/bench_rules.py                  # 1e5 and 1e6 rows
    .venv/bin/python benchmarks/bench_rules.py --sizes 100000   # quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import environment_lines, make_mixed_table, text_table

import gpu_avatar as ga

R = ga.rules
RULES = {
    "inequality": R.Inequality("num_0", "num_hi", strict=True),
    "derived": R.Derived("flag", "num_2 > 0"),
    "sum": R.SumTo(["num_1", "num_5"], "total"),
    "range": R.Range("num_4", -1e9, 1e9),
    "fixed_combinations": R.FixedCombinations(["cat_1", "cat_2"]),
}


def ruled_table(n_rows: int):
    df = make_mixed_table(n_rows)
    gap = np.random.default_rng(1).exponential(10.0, n_rows)
    df["num_hi"] = df["num_0"] + gap
    df["flag"] = df["num_2"] > 0
    df["total"] = df["num_1"] + df["num_5"]
    return df


def run(df, rules, args) -> tuple[float, float, int]:
    """Seconds of the run, of its rules step, and the rows its repairs changed."""
    start = time.perf_counter()
    result = ga.avatarize(df, k=args.k, ncp=args.ncp, seed=0, backend="cpu", rules=rules)
    seconds = time.perf_counter() - start
    return seconds, result.timings.get("rules", 0.0), sum(r.rows_repaired for r in result.rules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--ncp", type=int, default=5)
    args = parser.parse_args()
    run(ruled_table(1_000), list(RULES.values()), args)  # warm-up: compiled kernels loaded
    rows = []
    for n_rows in args.sizes:
        df = ruled_table(n_rows)
        plain, _, _ = run(df, None, args)
        rows.append([f"{n_rows:,}", "none", f"{plain:.2f}", "", "", ""])
        for name, rules in [*((n, [r]) for n, r in RULES.items()),
                            ("all", list(RULES.values()))]:
            seconds, step, repaired = run(df, rules, args)
            rows.append([f"{n_rows:,}", name, f"{seconds:.2f}", f"{seconds - plain:+.2f}",
                         f"{step:.2f}", f"{repaired:,}"])
            print(f"{n_rows:>10,} rows  {name:<20} {seconds:8.2f} s", flush=True)
    print()
    print(text_table(["rows", "rules", "seconds", "extra s", "rules step s", "rows repaired"],
                     rows))
    print("\n".join(environment_lines(("gpu_avatar", "numpy", "pandas"))))


if __name__ == "__main__":
    main()
