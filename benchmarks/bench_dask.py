"""What a row costs in ``gpu_avatar.distributed.avatarize``, measured on 2 workers and projected
to 10^9 rows on 100.

``ga.distributed.avatarize`` runs every task on Dask workers (per-partition scan summaries, the
route that writes each partition's rows into ``<destination>/_spill``, the fit, one task per
batch); the driver only plans and records. Whether that scales out is a question of per-row
costs, which this script measures on a ``distributed.LocalCluster`` of ``--workers``
single-threaded worker processes:

- wall seconds, rows/s and the steps of the manifest's ``timings`` (scan, route, fit, batches);
- worker-seconds: the compute time of every task, from the scheduler's task stream
  (``distributed.get_task_stream``), in total and by task kind;
- the driver's peak RSS over its RSS at the start of the call (psutil, sampled every 0.1 s in a
  thread), per row: what the driver would need for 10^9 rows (the constant part counts as
  per-row, so this is an upper bound);
- the workers' peak RSS: the largest kernel-recorded peak (VmHWM, reset before the call) of a
  worker process, or where /proc has none, the largest of ``client.run`` samples (every 0.5 s);
- the shuffle: the bytes under ``<destination>/_spill`` when the route is done (counted in the
  ``progress`` callback of the step after which it is complete), per row.

The data: N rows of 10 continuous, 5 categorical columns (``_common.make_mixed_table``) and an
integer ``patient_id`` declared ``identifier``, written as Parquet files of ``--file-rows`` rows,
one file generated at a time (file i from seed + i), so 10^7 rows need no more memory than one
file. k = ``--k``, batch size ``--batch-size``, per-batch privacy metrics on (the default).

``--compare-local`` also runs ``ga.avatarize_parquet`` (one process, numba on every core) on the
same source before the cluster starts; its parts must be byte-identical to the cluster's.
``--metrics-rows`` compares ``ga.distributed.privacy_metrics`` with ``ga.privacy_metrics`` on one
in-memory avatarization of that many rows (same values expected; 0: skip). A tiny run through
each engine first (untimed) loads the libraries and numba's kernels in every process.

The projection multiplies the measured per-row costs, assuming linear scaling (same batch size,
so the same per-batch work; a store as fast as the local disk here; no scheduler or network
limit): hours = worker-seconds per row x 10^9 / 100 / 3600, and the bytes per row x 10^9.

Run from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/bench_dask.py --sizes 100000 --batch-size 25000 --compare-local
    .venv/bin/python benchmarks/bench_dask.py --sizes 10000000 --compare-local --markdown
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import distributed
import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from _common import (
    environment_lines,
    make_mixed_table,
    markdown_table,
    peak_rss_bytes,
    reset_peak_rss,
    same_parts,
    text_table,
)
from bench_dask_metrics import HEADERS as METRIC_HEADERS
from bench_dask_metrics import measure as measure_metrics

import gpu_avatar as ga

PACKAGES = ("gpu_avatar", "numpy", "pandas", "pyarrow", "numba", "dask", "distributed")
STEPS = ("scan", "route", "fit", "batches")
TYPES = {"patient_id": "identifier"}
TARGET_ROWS, TARGET_WORKERS = 10**9, 100


# ------------------------------------------------------------------------------ data
def make_rows(n_rows: int, seed: int, first_id: int = 0):
    """10 continuous + 5 categorical columns and a unique integer ``patient_id``."""
    table = make_mixed_table(n_rows, seed=seed, n_continuous=10, n_categorical=5)
    table.insert(0, "patient_id", np.arange(first_id, first_id + n_rows, dtype=np.int64))
    return table


def write_dataset(folder: Path, n_rows: int, file_rows: int, seed: int) -> None:
    """``n_rows`` rows as Parquet files of ``file_rows`` rows, one file in memory at a time."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i, start in enumerate(range(0, n_rows, file_rows)):
        chunk = make_rows(min(file_rows, n_rows - start), seed + i, first_id=start)
        pq.write_table(pa.Table.from_pandas(chunk, preserve_index=False),
                       folder / f"data-{i:05d}.parquet", row_group_size=1 << 17)


def dataset(workdir: Path, n_rows: int, file_rows: int, seed: int) -> Path:
    """The source folder of ``n_rows`` rows (reused if ``workdir`` already holds it)."""
    folder = workdir / f"data-{n_rows}-{file_rows}-{seed}"
    files = sorted(folder.glob("data-*.parquet"))
    if sum(pq.read_metadata(f).num_rows for f in files) != n_rows:
        tick = time.perf_counter()
        write_dataset(folder, n_rows, file_rows, seed)
        print(f"wrote {n_rows:,} rows in {time.perf_counter() - tick:.1f} s", flush=True)
    return folder


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


# ---------------------------------------------------------------------------- memory
def worker_rss() -> int:
    return psutil.Process().memory_info().rss


class Peak(threading.Thread):
    """The largest value of ``sample()`` (a number of bytes), polled every ``interval`` s."""

    def __init__(self, sample, interval: float) -> None:
        super().__init__(daemon=True)
        self.sample, self.interval = sample, interval
        self.start_value = self.peak = sample()
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.interval):
            try:
                self.peak = max(self.peak, self.sample())
            except Exception:  # a worker restarting, the client closing: skip the sample
                pass

    def __enter__(self) -> Peak:
        self.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._done.set()
        self.join()
        self.peak = max(self.peak, self.sample())


# ------------------------------------------------------------------------------ runs
def run_once(engine: str, source: Path, destination: Path, options: dict,
             client: Any = None, verbose: bool = True) -> dict[str, Any]:
    """One avatarization (``engine``: "dask" or "local"), measured as the module says."""
    shutil.rmtree(destination, ignore_errors=True)
    spill = destination / "_spill"
    measured: dict[str, Any] = {"shuffle bytes": 0}
    started = time.perf_counter()  # reset just before the call

    def progress(step: str, done: int, total: int | None) -> None:
        if step == "route" and spill.exists():  # reported once the route is complete
            measured["shuffle bytes"] = folder_bytes(spill)
        if verbose:
            print(f"  {engine}: {step} done ({done}/{total}) at "
                  f"{time.perf_counter() - started:.1f} s", flush=True)

    driver = psutil.Process()
    with Peak(lambda: driver.memory_info().rss, 0.1) as driver_peak:
        if engine == "local":
            started = time.perf_counter()
            result = ga.avatarize_parquet(source, destination, progress=progress, **options)
            seconds = time.perf_counter() - started
        else:
            exact = all(client.run(reset_peak_rss).values())
            with Peak(lambda: max(client.run(worker_rss).values()), 0.5) as sampled, \
                    distributed.get_task_stream(client=client) as stream:
                started = time.perf_counter()
                result = ga.distributed.avatarize(source, destination, client=client,
                                                  progress=progress, **options)
                seconds = time.perf_counter() - started
            peaks = client.run(peak_rss_bytes).values()
            measured["worker peak bytes"] = max(peaks) if exact else sampled.peak
            measured["task seconds"] = task_seconds(stream.data)
    measured.update(
        seconds=seconds,
        steps={s: result.timings.get(s, float("nan")) for s in STEPS},
        batches=result.n_batches,
        driver_bytes=driver_peak.peak - driver_peak.start_value,
        hidden_worst=((result.manifest.get("privacy_metrics") or {}).get("worst") or {})
        .get("hidden_rate"),
    )
    return measured


# the step of a task, from the first word of its key ``gpu-avatar-<function>-...``
TASK_STEPS = {"dtype": "scan", "check": "scan", "summarize": "scan", "route": "route",
              "model": "fit", "batch": "batches"}


def task_seconds(stream: list[dict]) -> dict[str, float]:
    """Compute seconds of the tasks by step, from the scheduler's task stream."""
    steps: dict[str, float] = {}
    for task in stream:
        word = str(task["key"]).removeprefix("gpu-avatar-").split("-")[0]
        step = TASK_STEPS.get(word, word)
        busy = sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
        steps[step] = steps.get(step, 0.0) + busy
    return steps


# ---------------------------------------------------------------------------- tables
def result_rows(n_rows: int, runs: dict[str, dict], workers: int) -> list[list[str]]:
    rows = []
    for engine, m in runs.items():
        label = f"dask ({workers} workers)" if engine == "dask" else "avatarize_parquet"
        busy = sum(m.get("task seconds", {}).values())
        rows.append([
            f"{n_rows:,}", label, m["batches"], f"{m['seconds']:.1f}",
            f"{n_rows / m['seconds']:,.0f}", *(f"{m['steps'][s]:.1f}" for s in STEPS),
            f"{busy * 1e6 / n_rows:.1f}" if busy else "-",
            f"{m['driver_bytes'] / 2**20:,.0f}", f"{m['driver_bytes'] / n_rows:,.1f}",
            f"{m['worker peak bytes'] / 2**20:,.0f}" if "worker peak bytes" in m else "-",
            f"{m['shuffle bytes'] / 2**20:,.0f}", f"{m['shuffle bytes'] / n_rows:,.1f}",
            "-" if m["hidden_worst"] is None else f"{m['hidden_worst']:.1f}",
        ])
    return rows


RESULT_HEADERS = ["rows", "engine", "batches", "seconds", "rows/s", *(f"{s} s" for s in STEPS),
                  "worker-us/row", "driver MB", "driver B/row", "worker peak MB",
                  "shuffle MB", "shuffle B/row", "worst hidden %"]


def projection_rows(n_rows: int, m: dict, workers: int) -> list[list[str]]:
    """Per-row costs of one dask run, times 10^9 rows over 100 workers."""
    scale, per_worker = TARGET_ROWS / n_rows, TARGET_ROWS / TARGET_WORKERS / 3600

    def hours(seconds: float) -> str:
        return f"{seconds / n_rows * per_worker:,.2f} h on {TARGET_WORKERS} workers"

    busy = m["task seconds"]
    total = sum(busy.values())
    rows = [["worker-seconds, all tasks (task stream)", f"{total / n_rows * 1e6:.1f} us",
             hours(total)]]
    rows += [[f"  of which {step} tasks", f"{busy[step] / n_rows * 1e6:.1f} us", hours(busy[step])]
             for step in sorted(busy, key=busy.get, reverse=True)]
    rows += [
        [f"wall x {workers} workers (idle time counted)",
         f"{m['seconds'] * workers / n_rows * 1e6:.1f} us", hours(m["seconds"] * workers)],
        ["driver peak RSS over start (its constant part counted per row)",
         f"{m['driver_bytes'] / n_rows:,.1f} B",
         f"{m['driver_bytes'] * scale / 2**30:,.1f} GiB"],
        ["shuffle through the store (_spill)", f"{m['shuffle bytes'] / n_rows:,.1f} B",
         f"{m['shuffle bytes'] * scale / 2**40:,.2f} TiB"],
        ["worker peak RSS (per worker, follows batch_size)",
         f"{m['worker peak bytes'] / 2**20:,.0f} MiB", "the same (batch size unchanged)"],
    ]
    return rows


PROJECTION_HEADERS = ["cost", "per row (measured)", "x 10^9 rows"]
ASSUMPTIONS = (
    f"Projection to 10^9 rows on {TARGET_WORKERS} workers: linear scaling of the "
    "measured per-row costs (same batch size, so each batch task does the same work; tasks "
    "spread evenly; the scan merge and the plan on the driver grow with the number of "
    "partitions, not of rows), a store as fast as the local disk here, no limit from the "
    "scheduler or the network, one core per worker as here."
)


# ------------------------------------------------------------------------------ main
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000_000],
                        help="numbers of rows (default: 10000000)")
    parser.add_argument("--batch-size", type=int, default=1_000_000,
                        help="rows per batch (default: 1000000)")
    parser.add_argument("--file-rows", type=int, default=500_000,
                        help="rows per Parquet file (default: 500000)")
    parser.add_argument("--k", type=int, default=20, help="neighbours (default: 20)")
    parser.add_argument("--seed", type=int, default=0, help="data and avatar seed (default: 0)")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers (default: 2)")
    parser.add_argument("--compare-local", action="store_true",
                        help="also run ga.avatarize_parquet in one process")
    parser.add_argument("--metrics-rows", type=int, default=20_000,
                        help="rows of the privacy-metrics comparison (default: 20000; 0: skip)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="folder for the data and outputs (default: a temporary folder, "
                        "removed); a dataset already there is reused")
    parser.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_dask_"))
    options = dict(k=args.k, batch_size=args.batch_size, seed=args.seed, types=TYPES,
                   backend="cpu")
    warm_options = {**options, "batch_size": 500}  # a route and two batch tasks
    results, projections, metric_rows = [], [], []
    try:
        warm = dataset(workdir, 1_000, 250, args.seed)
        local_runs: dict[int, dict] = {}
        if args.compare_local:
            run_once("local", warm, workdir / "warm-local", warm_options, verbose=False)
            for n_rows in args.sizes:
                source = dataset(workdir, n_rows, args.file_rows, args.seed)
                local_runs[n_rows] = run_once("local", source, workdir / f"local-{n_rows}",
                                              options)
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, host="127.0.0.1",
                                      dashboard_address=":0") as cluster, \
                distributed.Client(cluster) as client:
            run_once("dask", warm, workdir / "warm-dask", warm_options, client, verbose=False)
            for n_rows in args.sizes:
                source = dataset(workdir, n_rows, args.file_rows, args.seed)
                runs = {"dask": run_once("dask", source, workdir / f"dask-{n_rows}", options,
                                         client)}
                if n_rows in local_runs:
                    runs["local"] = local_runs[n_rows]
                    identical = same_parts(workdir / f"dask-{n_rows}", workdir / f"local-{n_rows}")
                    print(f"identical parts (dask, local) at {n_rows:,} rows: {identical}")
                results += result_rows(n_rows, runs, args.workers)
                projections.append((n_rows, projection_rows(n_rows, runs["dask"], args.workers)))
            if args.metrics_rows:
                metric_rows = measure_metrics(args.metrics_rows, client, repeat=1)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    title = (f"ga.distributed.avatarize on a LocalCluster of {args.workers} single-threaded "
             f"worker processes: 10 continuous + 5 categorical columns + an identifier, "
             f"k = {args.k}, batch size {args.batch_size:,}, per-batch privacy metrics on, CPU")
    tables = [(title, RESULT_HEADERS, results)]
    tables += [(f"Projection from the {n:,}-row run. {ASSUMPTIONS}", PROJECTION_HEADERS, rows)
               for n, rows in projections]
    if metric_rows:
        tables.append(("Exact privacy metrics of one avatarization, in memory and on the "
                       "cluster (bench_dask_metrics.py)", METRIC_HEADERS, metric_rows))
    for caption, headers, rows in tables:
        print(f"\n{caption}\n\n{text_table(headers, rows)}")
    if args.markdown:
        print("\n## bench_dask\n\n" + "\n".join(environment_lines(PACKAGES)))
        for caption, headers, rows in tables:
            print(f"\n{caption}\n\n{markdown_table(headers, rows)}")


if __name__ == "__main__":
    main()
