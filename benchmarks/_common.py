"""Shared helpers for the benchmark scripts: synthetic data, isolated measurement, tables.

- ``make_mixed_table``: a deterministic synthetic table of continuous and categorical columns
  driven by a few latent Gaussian factors, so that it has structure (correlations, categories
  that depend on the continuous values) rather than pure noise.
- ``measure_isolated``: runs one job in a fresh interpreter (multiprocessing, spawn context) and
  returns its wall time and the peak resident memory of that process alone (the parent's memory
  is never counted).
- ``text_table`` / ``markdown_table`` / ``environment_lines``: printing.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def make_mixed_table(
    n_rows: int,
    seed: int = 0,
    n_continuous: int = 10,
    n_categorical: int = 10,
    n_factors: int = 3,
) -> pd.DataFrame:
    """A mixed table, identical for identical arguments.

    Continuous ``num_j``: linear combinations of ``n_factors`` latent standard Gaussians plus
    noise, on various scales; every fourth one is exponentiated (skewed, positive).
    Categorical ``cat_j``: 2 to 8 modalities (2 + j mod 7) with unequal frequencies; two out of
    three are quantile bins of a noisy latent score (so they correlate with the continuous
    columns), the rest are independent draws. Even ``j``: pandas ``category``; odd ``j``: text.
    """
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((n_rows, n_factors))
    columns: dict[str, Any] = {}

    loadings = rng.normal(size=(n_factors, n_continuous))
    noise = rng.uniform(0.3, 1.5, n_continuous)
    scales = 10.0 ** rng.uniform(-1, 3, n_continuous)
    offsets = rng.normal(0, 100, n_continuous)
    for j in range(n_continuous):
        latent = factors @ loadings[:, j] + noise[j] * rng.standard_normal(n_rows)
        if j % 4 == 3:
            columns[f"num_{j}"] = scales[j] * np.exp(latent / 2)
        else:
            columns[f"num_{j}"] = scales[j] * latent + offsets[j]

    for j in range(n_categorical):
        n_modalities = 2 + j % 7
        frequencies = rng.dirichlet(np.full(n_modalities, 3.0))
        if j % 3 == 2:
            codes = rng.choice(n_modalities, size=n_rows, p=frequencies)
        else:
            score = factors @ rng.normal(size=n_factors) + rng.standard_normal(n_rows)
            edges = np.quantile(score, np.cumsum(frequencies)[:-1])
            codes = np.searchsorted(edges, score)
        labels = [f"c{j}_{chr(ord('a') + m)}" for m in range(n_modalities)]
        if j % 2 == 0:
            columns[f"cat_{j}"] = pd.Categorical.from_codes(codes, categories=labels)
        else:  # an object array of shared label objects: 8 bytes a row, as text
            columns[f"cat_{j}"] = pd.Series(np.array(labels, dtype=object)[codes])
    return pd.DataFrame(columns)


# ----------------------------------------------------------------------------- memory
def _proc_status_kb(key: str) -> int | None:
    """A ``kB`` field of /proc/self/status (Linux), or None where there is none."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS to its current RSS (Linux >= 4.0); False where it
    cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int | None:
    """This process's peak RSS (VmHWM) in bytes, or None where /proc has none."""
    kb = _proc_status_kb("VmHWM")
    return None if kb is None else kb * 1024


def current_rss_mb() -> float:
    """Resident memory of this process now, in MB (nan where /proc is unavailable)."""
    kb = _proc_status_kb("VmRSS")
    return float("nan") if kb is None else kb / 1024


def peak_rss_mb() -> float:
    """Peak resident memory of this process (since start or the last reset), in MB."""
    kb = _proc_status_kb("VmHWM")
    if kb is not None:
        return kb / 1024
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024  # bytes on macOS


# ------------------------------------------------------------------------ isolation
@dataclass
class Measurement:
    """One isolated job: wall seconds of ``work``, memory in MB, and what ``work`` returned.

    ``start_mb`` is the process's RSS when ``work`` starts (interpreter, libraries and the
    inputs); ``peak_mb`` the peak RSS during ``work`` (start included).
    """

    seconds: float
    start_mb: float
    peak_mb: float
    details: dict[str, Any] = field(default_factory=dict)


def _run_measured(
    make_input: Callable[..., Any],
    input_args: tuple,
    work: Callable[..., dict[str, Any] | None],
    work_kwargs: dict[str, Any],
) -> Measurement:
    inputs = make_input(*input_args)
    gc.collect()
    reset_peak_rss()
    start_mb = current_rss_mb()
    start = time.perf_counter()
    details = work(inputs, **work_kwargs)
    seconds = time.perf_counter() - start
    return Measurement(seconds, start_mb, peak_rss_mb(), dict(details or {}))


def measure_isolated(
    make_input: Callable[..., Any],
    work: Callable[..., dict[str, Any] | None],
    input_args: Sequence[Any] = (),
    work_kwargs: dict[str, Any] | None = None,
) -> Measurement:
    """Run ``work(make_input(*input_args), **work_kwargs)`` in a fresh spawned interpreter.

    Only ``work`` is timed, and the peak RSS is reset just before it (where Linux allows), so
    building the inputs counts neither in the time nor in the peak. Both callables must be
    importable module-level functions (define them in the script, run it under
    ``if __name__ == "__main__":``). A job that crashes the child raises here.
    """
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        future = pool.submit(
            _run_measured, make_input, tuple(input_args), work, dict(work_kwargs or {})
        )
        return future.result()


# -------------------------------------------------------------------------- printing
def _cells(rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    return [[str(cell) for cell in row] for row in rows]


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table, right-aligned columns."""
    cells = _cells(rows)
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def _is_number(cell: str) -> bool:
    try:
        float(cell.replace(",", "").removesuffix("x"))
    except ValueError:
        return cell in ("", "-")
    return True


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown (GitHub) table: numeric columns right-aligned, text columns left-aligned."""
    cells = _cells(rows)
    align = [
        "---:" if all(_is_number(row[i]) for row in cells) else ":---" for i in range(len(headers))
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def environment_lines(packages: Sequence[str]) -> list[str]:
    """Date, machine, CPU count and package versions, as Markdown list items."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    versions = []
    for name in packages:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return [
        f"- date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.platform()} ({platform.machine()}), {_cpu_model()}",
        f"- CPUs: {os.cpu_count()} logical" + (f", {usable} usable" if usable else ""),
        f"- Python {platform.python_version()}; " + ", ".join(versions),
    ]


def print_tables(caption: str, headers: Sequence[str], rows: Sequence[Sequence[Any]],
                 markdown: bool, packages: Sequence[str]) -> None:
    """The results: a caption and a text table, then (``markdown``) the Markdown table and the
    environment lines RESULTS.md records."""
    print()
    print(caption)
    print()
    print(text_table(headers, rows))
    if markdown:
        print()
        print(markdown_table(headers, rows))
        print()
        print("\n".join(environment_lines(packages)))


def run_and_record(
    results: dict, key: tuple[int, str], width: int, run: Callable[..., Measurement], *args: Any
) -> None:
    """``results[key] = run(*args)`` with a progress line; a crashed or killed child is recorded as
    ``"failed: <error type>"`` and the benchmark goes on."""
    n_rows, label = key
    try:
        outcome = run(*args)
    except Exception as error:
        results[key] = f"failed: {type(error).__name__}"
        print(f"{n_rows:>10,} rows  {label:<{width}}  failed: {error!r}", flush=True)
        return
    results[key] = outcome
    print(
        f"{n_rows:>10,} rows  {label:<{width}}  {outcome.seconds:8.2f} s  "
        f"peak {outcome.peak_mb:8.0f} MB",
        flush=True,
    )


def same_parts(first: Path, second: Path) -> bool:
    """Whether two avatarize_parquet destinations hold the same part files, byte for byte."""
    parts = sorted(p.name for p in first.glob("part-*.parquet"))
    return parts == sorted(p.name for p in second.glob("part-*.parquet")) and all(
        (first / p).read_bytes() == (second / p).read_bytes() for p in parts)
