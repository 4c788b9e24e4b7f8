"""Direct-match metrics (row and column direct-match protection, exact copies) on integer codes
(``gpu_avatar/metrics/matches.py``) against the 64-bit row hash and pandas' per-column
``value_counts`` / ``isin`` they replace (a copy of that code is kept here, for this
comparison only).

Data (deterministic): the originals are ``make_mixed_table(n, seed=0)`` (``_common.py``: 10
continuous float columns, 5 category and 5 text columns); the avatars ``make_mixed_table(n,
seed=1)``, then 1 % of their rows replaced by original rows (exact copies), ``num_0`` rounded
to integers in both tables (values shared by many rows) and 2 % of ``num_1`` and ``cat_1``
missing in both. Both jobs compute the same three metrics on all 20 columns; their values
must be identical ("same values").

Each job runs in its own freshly spawned interpreter, which builds the tables (not measured),
then is timed around the computation only: wall seconds, the process's CPU seconds (this
machine is shared: the CPU seconds move less with other load) and its peak resident memory.
``--repeat r`` runs each job r times and keeps the fastest.

    .venv/bin/python benchmarks/bench_direct_matches.py                  # 1e5 and 1e6 rows
    .venv/bin/python benchmarks/bench_direct_matches.py --sizes 100000   # a quick check
    .venv/bin/python benchmarks/bench_direct_matches.py --markdown       # also for RESULTS.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import make_mixed_table, measure_isolated, print_tables

import gpu_avatar as ga  # imported with the script, before any timing
from gpu_avatar.metrics import matches

PACKAGES = ("gpu_avatar", "numpy", "pandas")
COPIED, MISSING = 0.01, 0.02


def make_tables(n_rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The originals and the avatars of the module docstring."""
    original, avatars = make_mixed_table(n_rows, seed=0), make_mixed_table(n_rows, seed=1)
    rng = np.random.default_rng(2)
    copied = np.flatnonzero(rng.random(n_rows) < COPIED)
    for table in (original, avatars):
        table["num_0"] = table["num_0"].round()
        for name in ("num_1", "cat_1"):
            table.loc[rng.random(n_rows) < MISSING, name] = None
    for name in original.columns:
        column = avatars[name].copy()
        column.iloc[copied] = original[name].iloc[copied].to_numpy()
        avatars[name] = column
    return original, avatars


# ------------------------------------------------------------------ before: the row hash
def _row_keys(df: pd.DataFrame) -> np.ndarray:
    return pd.util.hash_pandas_object(df, index=False).to_numpy()


def hashed_direct_matches(original: pd.DataFrame, avatars: pd.DataFrame) -> dict:
    """privacy.py's direct-match functions before the integer codes (commit 8ae249e)."""
    per_variable = {}
    for column in original.columns:
        values = original[column]
        if values.dtype == np.float16:
            values = values.astype(np.float32)
        counts = values.value_counts(dropna=False)
        unique_values = counts.index[counts.to_numpy() == 1]
        exposed = values.isin(unique_values) & values.isin(avatars[column].dropna().unique())
        per_variable[str(column)] = 100.0 * (1.0 - exposed.to_numpy().mean())
    row = 100.0 * (1.0 - np.isin(_row_keys(original), _row_keys(avatars)).mean())
    held = pd.Series(_row_keys(original)).value_counts()
    shared = held.reindex(_row_keys(avatars), fill_value=0).to_numpy()
    counts = np.bincount(shared)
    copies = {int(s): int(counts[s]) for s in np.flatnonzero(counts) if s > 0}
    return {"column": per_variable, "row": row, "copies": copies}


# ---------------------------------------------------------------------------- the jobs
def run(tables: tuple[pd.DataFrame, pd.DataFrame], job: str, backend: str) -> dict:
    original, avatars = tables
    cpu = time.process_time()
    if job == "row hash (before)":
        values = hashed_direct_matches(original, avatars)
    else:
        direct = matches.direct_matches(original, avatars, ga.resolve_backend(backend))
        values = {"column": direct.column_protection, "row": direct.row_protection,
                  "copies": direct.exact_copies}  # fmt: skip
    return {"cpu": time.process_time() - cpu, "values": values}


JOBS = ("row hash (before)", "integer codes")
HEADERS = ["rows", "job", "seconds", "CPU seconds", "peak MB", "row protection %",
           "exact copies", "min column protection %", "same values"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=1, help="runs per job, the fastest kept")
    parser.add_argument("--backend", default="cpu", help="for the integer codes (default cpu)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    for n_rows in args.sizes:
        best = {}
        for _ in range(args.repeat):
            for job in JOBS:
                outcome = measure_isolated(make_tables, run, (n_rows,),
                                           {"job": job, "backend": args.backend})  # fmt: skip
                if job not in best or outcome.seconds < best[job].seconds:
                    best[job] = outcome
                print(f"{n_rows:>10,} rows  {job:<20} {outcome.seconds:8.2f} s "
                      f"({outcome.details['cpu']:.2f} s CPU)", flush=True)  # fmt: skip
        before = best[JOBS[0]].details["values"]
        for job in JOBS:
            outcome = best[job]
            values = outcome.details["values"]
            name = job if job == JOBS[0] else f"{job} ({args.backend})"
            rows.append([
                f"{n_rows:,}", name, f"{outcome.seconds:.2f}", f"{outcome.details['cpu']:.2f}",
                f"{outcome.peak_mb:,.0f}", f"{values['row']:.4f}",
                f"{sum(values['copies'].values()):,} {values['copies']}",
                f"{min(values['column'].values()):.4f}",
                "-" if job == JOBS[0] else "yes" if values == before else "NO",
            ])  # fmt: skip
    print_tables(
        "Direct-match metrics (20 columns: 10 float, 5 category, 5 text; 1 % of avatars copied, "
        "num_0 rounded, 2 % of num_1 and cat_1 missing)",
        HEADERS, rows, args.markdown, PACKAGES,
    )


if __name__ == "__main__":
    main()
