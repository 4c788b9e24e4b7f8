"""Reading a hospital export: ``ga.read_table`` against ``pandas.read_csv``, in one run.

The file is written the way a French hospital exports it: ``;``-separated, decimal commas,
Windows-1252, day-first dates; columns: an integer key, an age with 10 % blanks, a weight to one
decimal, a sex, a visit date (8,000 distinct days), a category, a continuous measurement. Two
readers, each in a fresh interpreter (``_common.measure_isolated``, peak RSS of that process):

- ``pandas``: ``pd.read_csv(path)`` as a user would call it first (separator not given: one
  column of text), then ``pd.read_csv(path, sep=";", decimal=",", encoding="cp1252")`` when
  told everything (dates stay text: no date is parsed unless named);
- ``gpu_avatar``: ``ga.read_table(path)``, everything detected and the dates typed.

    python benchmarks/bench_reading.py --rows 100000 1000000 --markdown
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from _common import Measurement, measure_isolated, print_tables


def write_export(path: Path, n_rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "id": np.arange(n_rows),
        "age": pd.array(rng.integers(18, 90, n_rows), dtype="Int64"),
        "weight": rng.normal(70, 10, n_rows).round(1),
        "sex": rng.choice(["F", "M"], n_rows),
        "visit": pd.Timestamp("2000-01-01") + pd.to_timedelta(rng.integers(0, 8000, n_rows),
                                                              unit="D"),
        "ward": rng.choice(["cardiologie", "réanimation", "pédiatrie", "urgences"], n_rows),
        "crp": rng.lognormal(1, 1, n_rows),
    })
    frame.loc[rng.random(n_rows) < 0.1, "age"] = pd.NA
    frame.to_csv(path, sep=";", decimal=",", encoding="cp1252", index=False,
                 date_format="%d/%m/%Y")


def prepared(path: str) -> str:
    """The child's input: the path, with both libraries imported (not timed)."""
    import gpu_avatar  # noqa: F401

    return path


def read_with(path: str, reader: str) -> dict:
    if reader == "pandas (defaults)":
        frame = pd.read_csv(path, encoding="cp1252")
    elif reader == "pandas (told sep, decimal, encoding)":
        frame = pd.read_csv(path, sep=";", decimal=",", encoding="cp1252")
    else:
        import gpu_avatar as ga

        frame = ga.read_table(path)
    dates = sum(pd.api.types.is_datetime64_any_dtype(d) for d in frame.dtypes)
    numbers = sum(pd.api.types.is_numeric_dtype(d) for d in frame.dtypes)
    return {"columns": frame.shape[1], "numbers": numbers, "dates": dates}


READERS = ("pandas (defaults)", "pandas (told sep, decimal, encoding)", "gpu_avatar")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n_rows in args.rows:
            path = Path(folder) / f"export_{n_rows}.csv"
            write_export(path, n_rows)
            for reader in READERS:
                measured: Measurement = measure_isolated(prepared, read_with, (str(path),),
                                                         {"reader": reader})
                shape = measured.details
                rows.append([f"{n_rows:,}", reader, f"{measured.seconds:.2f}",
                             f"{measured.peak_mb:.0f}", shape["columns"], shape["numbers"],
                             shape["dates"]])
                print(f"{n_rows:>10,} rows  {reader:<38} {measured.seconds:7.2f} s", flush=True)
    print_tables("Reading a ';' / decimal-comma / Windows-1252 export (7 columns)",
                 ["rows", "reader", "seconds", "peak MB", "columns", "numeric", "dates"], rows,
                 args.markdown, ["pandas", "numpy", "pyarrow"])


if __name__ == "__main__":
    main()
