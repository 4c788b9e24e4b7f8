"""Attack-based risks: ``ga.attack_metrics`` against anonymeter 1.1.0 (what a user runs
otherwise), on the same release, in one run.

The mixed table of ``_common.make_mixed_table`` (10 continuous + 10 categorical columns), split
80/20 by ``split_holdout`` (seed 0), the training rows avatarized (k = 20, ncp = 5, seed 0; not
timed). Both run singling out (univariate and multivariate, 500 queries, 3 columns),
linkability (the variables split in two halves, 1 neighbour) and inference of ``num_0`` and
``cat_1`` from every other variable. gpu_avatar attacks EVERY training row (and every holdout
row); anonymeter attacks a sample of ``len(holdout)`` rows of each (its ``n_attacks`` cannot
exceed the holdout). gpu_avatar runs in a fresh interpreter after an untimed warm-up on 1,000
rows; anonymeter in its own interpreter (``tests/metrics/anonymeter_oracle.py`` in
``.venv-anonymeter``, ``make .venv-anonymeter/.installed``), timed from start to end (its
numba compilation, a few seconds, included). The largest gap between the two risk estimates
and whether every pair of confidence intervals overlaps are printed.

    python benchmarks/bench_attacks.py --markdown
    python benchmarks/bench_attacks.py --sizes 2000 10000 --anonymeter-max-rows 10000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import make_mixed_table, measure_isolated, print_tables

REPO = Path(__file__).resolve().parents[1]
ORACLE = REPO / "tests" / "metrics" / "anonymeter_oracle.py"
SECRETS = ["num_0", "cat_1"]
QUERIES = 500


def make_release(n_rows: int, seed: int):
    """Training rows, their avatars and the holdout; the attacks warmed up on 1,000 rows."""
    import gpu_avatar as ga

    training, holdout = ga.split_holdout(make_mixed_table(n_rows, seed), 0.2, seed=seed)
    avatars = ga.avatarize(training, k=20, ncp=5, seed=seed).avatars
    ga.attack_metrics(training.head(800), avatars.head(800), holdout.head(200), seed=seed,
                      secrets=SECRETS, singling_out_queries=50)
    return training, avatars, holdout


def run_ours(release, seed: int) -> dict[str, Any]:
    import gpu_avatar as ga

    risks = ga.attack_metrics(*release, secrets=SECRETS, singling_out_queries=QUERIES,
                              seed=seed)
    return {(r.attack if r.secret is None else f"inference:{r.secret}"):
            (r.risk, r.risk_low, r.risk_high) for r in risks.results}


def run_anonymeter(python: str, n_rows: int, seed: int) -> tuple[float, dict[str, Any]]:
    import gpu_avatar as ga

    training, holdout = ga.split_holdout(make_mixed_table(n_rows, seed), 0.2, seed=seed)
    avatars = ga.avatarize(training, k=20, ncp=5, seed=seed).avatars
    variables = list(training.columns)
    middle = len(variables) // 2
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for name, table in (("original", training), ("avatars", avatars),
                            ("holdout", holdout)):
            table.to_csv(folder / f"{name}.csv", index=False)
        (folder / "config.json").write_text(json.dumps({
            "categorical": [c for c in variables if c.startswith("cat_")], "secrets": SECRETS,
            "halves": [variables[:middle], variables[middle:]], "n_attacks": len(holdout),
            "singling_out_queries": QUERIES, "n_cols": 3, "seed": seed,
        }))  # fmt: skip
        start = time.perf_counter()
        subprocess.run([python, str(ORACLE), str(folder)], check=True)
        seconds = time.perf_counter() - start
        theirs = json.loads((folder / "anonymeter.json").read_text())
    return seconds, {k: (v["risk"], v["low"], v["high"]) for k, v in theirs.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000, 30_000])
    parser.add_argument("--anonymeter-max-rows", type=int, default=10_000,
                        help="run anonymeter up to this size (default 10,000)")
    parser.add_argument("--anonymeter-python", default=str(REPO / ".venv-anonymeter" / "bin" /
                                                           "python"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = parser.parse_args(argv)

    headers = ["rows", "job", "rows attacked", "seconds", "peak MB", "max risk gap",
               "intervals overlap"]
    rows = []
    for n in args.sizes:
        ours = measure_isolated(make_release, run_ours, (n, args.seed), {"seed": args.seed})
        print(f"{n:>10,} rows  gpu_avatar  {ours.seconds:8.2f} s", flush=True)
        n_training = n - max(1, round(0.2 * n))
        gap, overlap = "-", "-"
        if n <= args.anonymeter_max_rows:
            seconds, theirs = run_anonymeter(args.anonymeter_python, n, args.seed)
            print(f"{n:>10,} rows  anonymeter  {seconds:8.2f} s", flush=True)
            mine = ours.details
            gap = f"{max(abs(mine[k][0] - theirs[k][0]) for k in theirs):.3f}"
            overlap = "yes" if all(mine[k][1] <= theirs[k][2] and theirs[k][1] <= mine[k][2]
                                   for k in theirs) else "no"
            rows.append([f"{n:,}", "anonymeter 1.1.0", f"{n - n_training:,} + {n - n_training:,}",
                         f"{seconds:.2f}", "-", "-", "-"])
        rows.append([f"{n:,}", "ga.attack_metrics", f"{n_training:,} + {n - n_training:,}",
                     f"{ours.seconds:.2f}", f"{ours.peak_mb:,.0f}", gap, overlap])
    print_tables(f"Singling out (2 modes, {QUERIES} queries), linkability, inference of "
                 f"{SECRETS}; 'rows attacked': training + holdout rows", headers, rows,
                 args.markdown, ["gpu_avatar", "numpy", "scipy", "pandas"])


if __name__ == "__main__":
    main()
