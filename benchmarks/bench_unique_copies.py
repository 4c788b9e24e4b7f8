"""Copies of unique rows (``unique_copies``, issue #37.4): "keep" against "redraw" on coarse
all-categorical tables, where avatars often equal a row one person alone holds, and on the
published WBCD and AIDS settings, whose ranges the tests hold (hidden rate 92-95 %, median
local cloaking 9-12 on AIDS, 20-30 on WBCD).

Per table, mode and seed: the avatars identical to a unique row (``exact_copies_shared[1]``),
the avatars redrawn and those left, the hidden rate, the median local cloaking, the mean
Hellinger distance and the wall seconds of ``avatarize`` (CPU backend; the metrics not
timed). The tables:

- ``coarse``: 4,000 rows of six columns of 2 to 4 modalities (nwtco's shape), k = 50;
- ``aids categorical``: the bundled AIDS table's categorical columns (<= 10 distinct values),
  k = 20;
- ``aids``, ``wbcd``: tests/data with the published settings (k 20, ncp 5 and 2; WBCD's
  columns categorical, its metrics with ``Class`` only).

    .venv/bin/python benchmarks/bench_unique_copies.py --markdown
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import print_tables

import gpu_avatar as ga

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SEEDS = (0, 1, 2)


def tables() -> dict[str, tuple[pd.DataFrame, dict, dict, int, int]]:
    """name -> (table, avatarize types, metric types, k, ncp)."""
    rng = np.random.default_rng(0)
    sizes = (3, 2, 4, 3, 2, 4)
    coarse = pd.DataFrame({f"c{j}": rng.choice([f"m{v}" for v in range(m)], 4000,
                                                p=rng.dirichlet(np.ones(m)))
                           for j, m in enumerate(sizes)})
    every = {c: "categorical" for c in coarse.columns}
    aids = pd.read_csv(DATA / "aids.csv", sep=";").drop(columns="pidnum")
    aids_types = {c: "categorical" for c in aids.columns if aids[c].nunique() <= 10}
    categorical = aids[list(aids_types)]
    wbcd = pd.read_csv(DATA / "wbcd.csv").drop(columns="Sample_code_number")
    wbcd_types = {c: "categorical" for c in wbcd.columns}
    return {
        "coarse": (coarse, every, every, 50, 5),
        "aids categorical": (categorical, aids_types, aids_types, 20, 5),
        "aids": (aids, aids_types, aids_types, 20, 5),
        "wbcd": (wbcd, wbcd_types, {"Class": "categorical"}, 20, 2),
    }


def measure(df, types, metric_types, k, ncp, mode, seed) -> dict[str, float]:
    start = time.perf_counter()
    result = ga.avatarize(df, k=k, ncp=ncp, seed=seed, types=types, backend="cpu",
                          unique_copies=mode)
    seconds = time.perf_counter() - start
    privacy = ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, ncp=ncp,
                                 types=metric_types, check_alignment=False, backend="cpu")
    signal = result.signal_metrics()
    return {"copies": privacy.exact_copies_shared.get(1, 0),
            "redrawn": result.unique_copies_redrawn or 0,
            "left": result.unique_copies_stayed or 0,
            "hidden": privacy.hidden_rate, "cloaking": privacy.local_cloaking,
            "hellinger": signal.hellinger_mean, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    ga.avatarize(pd.DataFrame({"g": list("ab") * 10}), k=3, seed=0, backend="cpu",
                 unique_copies="redraw")  # compile the kernels before any timing
    rows = []
    for name, (df, types, metric_types, k, ncp) in tables().items():
        for mode in ("keep", "redraw"):
            runs = [measure(df, types, metric_types, k, ncp, mode, seed) for seed in SEEDS]
            column = {key: [run[key] for run in runs] for key in runs[0]}
            rows.append([
                name, len(df), k, mode,
                "/".join(str(c) for c in column["copies"]),
                "/".join(str(c) for c in column["redrawn"]),
                "/".join(f"{h:.1f}" for h in column["hidden"]),
                "/".join(f"{c:g}" for c in column["cloaking"]),
                f"{statistics.mean(column['hellinger']):.4f}",
                f"{statistics.median(column['seconds']):.2f}",
            ])
            print(" ".join(map(str, rows[-1])), flush=True)
    headers = ["table", "rows", "k", "unique_copies", "copies of unique rows (seeds 0/1/2)",
               "redrawn", "hidden rate %", "median local cloaking", "mean Hellinger",
               "avatarize s (median)"]
    print_tables("Copies of unique rows, keep against redraw (CPU backend, seeds 0, 1, 2)",
                 headers, rows, args.markdown, ["numpy", "pandas", "numba"])


if __name__ == "__main__":
    main()
