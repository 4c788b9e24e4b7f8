"""Speed and memory of multi-table avatarization, side by side with SDV's HMASynthesizer.

A generated parent/child database (see ``make_database``): parents with mixed columns (age,
sex, income, region), children with mixed columns that depend on their parent (amount, kind,
weekday, duration), children per parent from a skewed, zero-inflated distribution (many
parents without child, a long tail of very active ones). Default: 10^4 parents, 10^6 children.

- ``gpu_avatar``: ``avatarize_database`` with the link's method ``linear_sum_assignment``,
  k = 20, ncp = 5, run in a freshly spawned interpreter (``_common.measure_isolated``): the
  seconds of ``avatarize_database`` alone, the peak resident memory of that process during the
  call (building the data is not counted), per-table steps (from the result's timings; "link"
  is the rest of the table's time: enrichment, relinking, new keys), and the cardinality
  similarity (1 - KS statistic of children per parent, zeros included) and referential
  integrity, both recomputed on the released tables.
- ``sdv``: ``HMASynthesizer(metadata).fit(tables)`` then a sample at scale 1, for each child
  count of ``--sdv-children`` (parents in the same ratio as the main run, at least 100), each
  run in its own process killed after ``--sdv-timeout`` seconds; bigger sizes are not tried
  once one fails or times out. gpu_avatar is run on the same databases for comparison.

SDV is optional and pulls in torch: keep it out of the project's environment, e.g.

    python3 -m venv /tmp/sdv-venv
    /tmp/sdv-venv/bin/pip install torch==2.13.0 sdv   # a CPU torch wheel first, if you can
    /tmp/sdv-venv/bin/pip install -e .

and point ``--sdv-python`` at that interpreter (default: the one running this script).

Run from the repository root:

    .venv/bin/python benchmarks/bench_multitable.py --sdv-python /tmp/sdv-venv/bin/python
    .venv/bin/python benchmarks/bench_multitable.py --parents 1000 --children 50000 \\
        --sdv-children 1000                                   # quick check, about a minute
    ... --markdown                                            # also print for RESULTS.md
    .venv/bin/python benchmarks/bench_multitable.py --parents 100000 --children 10000000 \
        --child-batch-size 1000000                            # issue 6: 10^7 children

Issue 6's target there: the run fits in bounded memory (the single-table scale target: < 4 GB).

Issue 4's target: the 10^6-children run in under 5 minutes on 2 cores, under 8 GB.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import (
    Measurement,
    current_rss_mb,
    environment_lines,
    markdown_table,
    measure_isolated,
    peak_rss_mb,
    reset_peak_rss,
    text_table,
)

PACKAGES = ("gpu_avatar", "numpy", "pandas", "scipy", "scikit-learn")
MIN_SDV_PARENTS = 100
TARGET_CHILDREN, TARGET_SECONDS, TARGET_MB = 1_000_000, 300, 8000
BOUNDED_TARGET_MB = 4_000  # issue 6, above 10^6 children (the single-table scale target)
RESULT_TAG = "BENCH_RESULT "


# ------------------------------------------------------------------------------- data
def make_database(n_parents: int, n_children: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``parent`` (p_id, age, sex, income, region) and ``child`` (c_id, p_id, amount, kind,
    weekday, duration), identical for identical arguments.

    Children per parent: multinomial over a zero-inflated Gamma(0.6) activity that grows with
    age, so about 15 % of the parents have no child and a few have many.
    """
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(50, 15, n_parents), 18, 95)
    sex = rng.choice(np.array(["F", "M"], dtype=object), n_parents)
    income = rng.lognormal(10 + 0.01 * (age - 50) + 0.1 * (sex == "M"), 0.5)
    regions = np.array(["north", "south", "east", "west", "centre"], dtype=object)
    region = rng.choice(regions, n_parents, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    parent = pd.DataFrame(
        {
            "p_id": np.arange(n_parents, dtype=np.int64),
            "age": age.round(1),
            "sex": sex,
            "income": income,
            "region": pd.Categorical(region, categories=regions),
        }
    )
    activity = rng.gamma(0.6, 1.0, n_parents) * (1 + (age - 18) / 50)
    activity[rng.random(n_parents) < 0.15] = 0.0
    counts = rng.multinomial(n_children, activity / activity.sum())
    owner = rng.permutation(np.repeat(np.arange(n_parents), counts))
    old = age[owner] > 65
    kinds = np.array(["consultation", "lab", "imaging", "surgery"], dtype=object)
    kind_index = np.where(
        rng.random(n_children) < 0.3 + 0.3 * old, rng.integers(1, 4, n_children), 0
    )
    weekdays = np.array(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], dtype=object)
    child = pd.DataFrame(
        {
            "c_id": np.arange(n_children, dtype=np.int64),
            "p_id": owner.astype(np.int64),
            "amount": income[owner] / 1000 * rng.gamma(2.0, 1.0, n_children) * (1 + kind_index),
            "kind": kinds[kind_index],
            "weekday": pd.Categorical(rng.choice(weekdays, n_children), categories=weekdays),
            "duration": rng.gamma(2.0, 10.0, n_children) + 0.2 * age[owner],
        }
    )
    return {"parent": parent, "child": child}


def children_per_parent(foreign_keys: pd.Series, parent_keys: pd.Series) -> np.ndarray:
    """Children of every parent, zeros included (foreign keys with no parent are ignored)."""
    return foreign_keys.value_counts().reindex(parent_keys, fill_value=0).to_numpy()


def link_quality(original: dict, synthetic: dict) -> dict[str, float]:
    """Cardinality similarity (1 - KS, zeros included) and % of child rows with a parent."""
    from scipy.stats import ks_2samp

    before = children_per_parent(original["child"]["p_id"], original["parent"]["p_id"])
    after = children_per_parent(synthetic["child"]["p_id"], synthetic["parent"]["p_id"])
    integrity = synthetic["child"]["p_id"].isin(synthetic["parent"]["p_id"]).mean()
    return {
        "cardinality_similarity": float(1.0 - ks_2samp(before, after).statistic),
        "referential_integrity": 100.0 * float(integrity),
    }


def make_database_args(n_parents: int, n_children: int, seed: int) -> dict[str, pd.DataFrame]:
    return make_database(n_parents, n_children, seed)


# -------------------------------------------------------------------------- gpu_avatar
class _TableClock(logging.Handler):
    """Records when ``avatarize_database`` starts each table (its INFO log line)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.starts: list[tuple[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("avatarizing table"):
            self.starts.append((str(record.args[0]), time.perf_counter()))


def run_gpu_avatar(
    tables: dict[str, pd.DataFrame],
    k: int,
    ncp: int,
    seed: int,
    backend: str,
    block_size: int | None = None,
    child_batch_size: int | None = None,
) -> dict[str, Any]:
    """``avatarize_database`` on the parent/child database; seconds of that call alone."""
    import gpu_avatar as ga
    from gpu_avatar.relational.assignment import default_block_size

    db = ga.Database()
    db.add_table("parent", tables["parent"], primary_key="p_id")
    db.add_table("child", tables["child"], primary_key="c_id")
    db.add_link("parent", "p_id", "child", "p_id", method="linear_sum_assignment")
    logger = logging.getLogger("gpu_avatar")
    clock = _TableClock()
    logger.addHandler(clock)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    start = time.perf_counter()
    options = {} if block_size is None else {"assignment_block_size": block_size}
    if child_batch_size is not None:
        options["overrides"] = {"child": {"batch_size": child_batch_size}}
    result = ga.avatarize_database(db, k=k, ncp=ncp, seed=seed, backend=backend, **options)
    end = time.perf_counter()
    logger.removeHandler(clock)

    per_table = {}
    bounds = [t for _, t in clock.starts[1:]] + [end]
    for (name, begin), stop in zip(clock.starts, bounds, strict=True):
        steps = dict(result.table_results[name].timings)
        steps["link"] = (stop - begin) - sum(steps.values())
        steps["total"] = stop - begin
        per_table[name] = steps
    for name, original in tables.items():
        released = result.tables[name]
        if released.shape != original.shape or not (released.dtypes == original.dtypes).all():
            raise RuntimeError(f"{name}: the avatar table differs in shape or dtypes")
    report = result.links[0]
    return {
        "seconds": end - start,
        "backend": result.parameters.backend,
        "block_size": block_size or default_block_size(len(tables["child"]),
                                                       len(tables["parent"])),
        "tables": per_table,
        "link": {
            "n_blocks": report.n_blocks,
            "total_cost": report.total_cost,
            "reported_cardinality_similarity": report.cardinality_similarity,
            "reported_referential_integrity": report.referential_integrity,
        },
        **link_quality(tables, result.tables),
    }


def measure_gpu_avatar(n_parents: int, n_children: int, args) -> Measurement:
    return measure_isolated(
        make_database_args,
        run_gpu_avatar,
        input_args=(n_parents, n_children, args.seed),
        work_kwargs=dict(
            k=args.k,
            ncp=args.ncp,
            seed=args.seed,
            backend=args.backend,
            block_size=args.block_size,
            child_batch_size=args.child_batch_size,
        ),
    )


# -------------------------------------------------------------------------------- SDV
def sdv_metadata(tables: dict[str, pd.DataFrame]):
    """Explicit metadata: keys are ids, the rest numerical or categorical."""
    from sdv.metadata import Metadata

    def columns(frame, key, foreign=()):
        out = {}
        for name in frame.columns:
            if name == key or name in foreign:
                out[name] = {"sdtype": "id"}
            elif pd.api.types.is_numeric_dtype(frame[name].dtype):
                out[name] = {"sdtype": "numerical"}
            else:
                out[name] = {"sdtype": "categorical"}
        return out

    return Metadata.load_from_dict(
        {
            "METADATA_SPEC_VERSION": "V1",
            "tables": {
                "parent": {"primary_key": "p_id", "columns": columns(tables["parent"], "p_id")},
                "child": {
                    "primary_key": "c_id",
                    "columns": columns(tables["child"], "c_id", foreign=("p_id",)),
                },
            },
            "relationships": [
                {
                    "parent_table_name": "parent",
                    "parent_primary_key": "p_id",
                    "child_table_name": "child",
                    "child_foreign_key": "p_id",
                }
            ],
        }
    )


def sdv_worker(n_parents: int, n_children: int, seed: int) -> None:
    """Run in a child process: fit and sample HMA, print the result as one JSON line."""
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from sdv.multi_table import HMASynthesizer

    tables = make_database(n_parents, n_children, seed)
    metadata = sdv_metadata(tables)
    reset_peak_rss()
    start_mb = current_rss_mb()
    start = time.perf_counter()
    synthesizer = HMASynthesizer(metadata, verbose=False)
    synthesizer.fit(tables)
    fitted = time.perf_counter()
    if hasattr(synthesizer, "sample_scale"):  # SDV >= 2.0
        synthetic = synthesizer.sample_scale(scale=1.0)
    else:
        synthetic = synthesizer.sample(scale=1.0)
    sampled = time.perf_counter()
    result = {
        "seconds": sampled - start,
        "fit": fitted - start,
        "sample": sampled - fitted,
        "start_mb": start_mb,
        "peak_mb": peak_rss_mb(),
        "rows": {name: len(frame) for name, frame in synthetic.items()},
        **link_quality(tables, synthetic),
    }
    print(RESULT_TAG + json.dumps(result), flush=True)


def sdv_version(python: str) -> str | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sdv; print(sdv.__version__)"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def measure_sdv(n_parents: int, n_children: int, args) -> dict[str, Any] | str:
    """The worker's result, or a string saying how it ended (timed out, failed)."""
    command = [
        args.sdv_python,
        str(Path(__file__).resolve()),
        "--sdv-worker",
        "--parents",
        str(n_parents),
        "--children",
        str(n_children),
        "--seed",
        str(args.seed),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=args.sdv_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the worker and anything it started
        process.communicate()
        return f"timed out after {args.sdv_timeout:g} s"
    for line in stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    return f"failed (exit {process.returncode}): {last[:120]}"


# --------------------------------------------------------------------------- printing
def _number(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.{digits}f}"


def summary_row(engine, n_parents, n_children, outcome) -> list[str]:
    if isinstance(outcome, str):
        return [engine, f"{n_parents:,}", f"{n_children:,}", "-", "-", "-", "-", outcome]
    if isinstance(outcome, Measurement):
        seconds, peak = outcome.details["seconds"], outcome.peak_mb
        details = outcome.details
    else:
        seconds, peak, details = outcome["seconds"], outcome["peak_mb"], outcome
    return [
        engine,
        f"{n_parents:,}",
        f"{n_children:,}",
        _number(seconds, 2),
        _number(peak, 0),
        _number(details["cardinality_similarity"], 3),
        _number(details["referential_integrity"], 1),
        "ok",
    ]


SUMMARY_HEADERS = [
    "engine",
    "parents",
    "children",
    "seconds",
    "peak MB",
    "cardinality sim.",
    "ref. integrity %",
    "status",
]


def step_table(measurement: Measurement) -> tuple[list[str], list[list[str]]]:
    """Per table: the avatarization's own steps (whatever it times), link, total."""
    tables = measurement.details["tables"]
    steps: list[str] = []
    for timings in tables.values():
        steps += [s for s in timings if s not in ("link", "total") and s not in steps]
    rows = [
        [name] + [_number(timings.get(s), 2) for s in (*steps, "link", "total")]
        for name, timings in tables.items()
    ]
    return ["table", *steps, "link", "total"], rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parents", type=int, default=10_000, help="default: 10000")
    parser.add_argument("--children", type=int, default=1_000_000, help="default: 1000000")
    parser.add_argument("--k", type=int, default=20, help="neighbours (default: 20)")
    parser.add_argument("--ncp", type=int, default=5, help="projection axes (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="data and avatar seed (default: 0)")
    parser.add_argument("--backend", default="auto", help="gpu_avatar backend (default: auto)")
    parser.add_argument(
        "--block-size",
        type=int,
        default=None,
        help="gpu_avatar's assignment_block_size (default: the library's)",
    )
    parser.add_argument(
        "--child-batch-size",
        type=int,
        default=None,
        help="avatarize the child table in batches of this many rows (default: one batch)",
    )
    parser.add_argument(
        "--sdv-children",
        type=int,
        nargs="*",
        default=[1_000, 10_000, 100_000],
        help="child counts for SDV, increasing (default: 1000 10000 100000; none: skip SDV)",
    )
    parser.add_argument(
        "--sdv-timeout", type=float, default=600, help="seconds per SDV run (default: 600)"
    )
    parser.add_argument(
        "--sdv-python",
        default=sys.executable,
        help="the Python interpreter that has SDV (default: this one)",
    )
    parser.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    parser.add_argument("--sdv-worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def sdv_parents(n_children: int, args) -> int:
    return max(MIN_SDV_PARENTS, round(n_children * args.parents / args.children))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.sdv_worker:
        sdv_worker(args.parents, args.children, args.seed)
        return

    rows: list[list[str]] = []
    print(f"gpu_avatar: {args.parents:,} parents, {args.children:,} children ...", flush=True)
    main_run = measure_gpu_avatar(args.parents, args.children, args)
    rows.append(summary_row("gpu_avatar", args.parents, args.children, main_run))
    print(f"  {main_run.details['seconds']:.2f} s, peak {main_run.peak_mb:,.0f} MB", flush=True)

    sdv = sdv_version(args.sdv_python) if args.sdv_children else None
    sdv_note = None
    if args.sdv_children and sdv is None:
        sdv_note = (
            f"SDV is not installed for {args.sdv_python}: install it in a separate virtualenv "
            "(python3 -m venv /tmp/sdv-venv && /tmp/sdv-venv/bin/pip install torch==2.13.0 sdv "
            "&& /tmp/sdv-venv/bin/pip install -e .) and pass --sdv-python "
            "/tmp/sdv-venv/bin/python; gpu_avatar ran alone."
        )
        print(sdv_note, flush=True)
    elif args.sdv_children:
        stopped = None
        for n_children in sorted(args.sdv_children):
            n_parents = sdv_parents(n_children, args)
            if stopped is not None:
                rows.append(summary_row("sdv HMA", n_parents, n_children, f"not tried ({stopped})"))
                continue
            print(f"sdv {sdv}: {n_parents:,} parents, {n_children:,} children ...", flush=True)
            outcome = measure_sdv(n_parents, n_children, args)
            rows.append(summary_row("sdv HMA", n_parents, n_children, outcome))
            if isinstance(outcome, str):
                print(f"  {outcome}", flush=True)
                stopped = f"stopped at {n_children:,} children"
                sdv_note = f"SDV HMASynthesizer stops at {n_children:,} children: {outcome}."
            else:
                print(
                    f"  fit {outcome['fit']:.2f} s + sample {outcome['sample']:.2f} s, "
                    f"peak {outcome['peak_mb']:,.0f} MB",
                    flush=True,
                )
            same = measure_gpu_avatar(n_parents, n_children, args)
            rows.append(summary_row("gpu_avatar", n_parents, n_children, same))
        if stopped is None:
            sdv_note = (
                f"SDV HMASynthesizer ran every size up to {max(args.sdv_children):,} children."
            )

    title = (
        "Multi-table avatarization of a parent/child database (linear_sum_assignment), "
        f"k = {args.k}, ncp = {args.ncp}, seed = {args.seed}, backend "
        f"{main_run.details['backend']}, assignment blocks of <= {main_run.details['block_size']} "
        "rows; SDV: HMASynthesizer fit + sample at scale 1, "
        f"{args.sdv_timeout:g} s limit per run"
    )
    link = main_run.details["link"]
    link_line = (
        f"gpu_avatar link at {args.children:,} children: {link['n_blocks']} assignment "
        f"block(s), total cost {link['total_cost']:,.1f}; cardinality similarity "
        f"{main_run.details['cardinality_similarity']:.3f} (reported "
        f"{link['reported_cardinality_similarity']:.3f}), referential integrity "
        f"{main_run.details['referential_integrity']:.1f} % (reported "
        f"{link['reported_referential_integrity']:.1f} %)"
    )
    seconds, peak = main_run.details["seconds"], main_run.peak_mb
    if args.children > TARGET_CHILDREN:  # issue 6: bounded memory, whatever the time
        target = f"target (bounded memory, < {BOUNDED_TARGET_MB:,} MB): {peak:,.0f} MB -> "
        target += "met" if peak < BOUNDED_TARGET_MB else "NOT met"
    else:
        target = f"target (10^6 children in < {TARGET_SECONDS} s, < {TARGET_MB:,} MB): "
        if args.children == TARGET_CHILDREN:
            met = seconds < TARGET_SECONDS and peak < TARGET_MB
            target += f"{seconds:.1f} s, {peak:,.0f} MB -> {'met' if met else 'NOT met'}"
        else:
            target += f"not evaluated at {args.children:,} children"
    step_headers, steps = step_table(main_run)
    print(f"\n{title}\n")
    print(text_table(SUMMARY_HEADERS, rows))
    print(f"\nPer-table seconds, gpu_avatar at {args.children:,} children\n")
    print(text_table(step_headers, steps))
    print(f"\n{link_line}\n{target}")
    if sdv_note:
        print(sdv_note)
    if args.markdown:
        print(f"\n## bench_multitable\n\n{title}.\n")
        print("\n".join(environment_lines(PACKAGES)))
        print(f"- SDV: {sdv or 'not installed'} ({args.sdv_python})")
        print(f"\n{markdown_table(SUMMARY_HEADERS, rows)}\n")
        print(f"Per-table seconds, gpu_avatar at {args.children:,} children:\n")
        print(f"{markdown_table(step_headers, steps)}\n")
        print(f"{link_line}.\n\n{target}.")
        if sdv_note:
            print(f"\n{sdv_note}")


if __name__ == "__main__":
    main()
