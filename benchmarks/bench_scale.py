"""Scale-out: a Parquet dataset avatarized batch by batch, in one process and through Dask.

The data set is ``--rows`` rows x 20 mixed columns (10 continuous, 10 categorical; see
``_common.make_mixed_table``), written as Parquet files of ``--file-rows`` rows each. It is
generated chunk by chunk so the generator stays within memory: file i is
``make_mixed_table(file_rows, seed=seed + i)`` (the same columns and modalities in every file,
each with its own latent structure). It is then avatarized with k = 20, ncp = 5, batch size
``--batch-size`` (``--metrics`` adds the per-batch privacy metrics, which on the CPU cost
several times the avatarization itself), by:

- ``streamed``: ``gpu_avatar.avatarize_parquet`` in one process;
- ``dask``: ``gpu_avatar.distributed.avatarize`` on a ``distributed.LocalCluster`` of
  ``--workers`` single-threaded worker processes (started before the clock, its start-up time
  is shown apart).

Each run happens in a freshly spawned process; the parent polls the resident memory of that
process and of all its descendants (the Dask scheduler and workers) every 0.1 s with psutil, so
"peak MB" is the peak of the sum over the whole process tree (a spike shorter than the poll
interval may be missed; the streamed run's own kernel-recorded peak, VmHWM, is shown beside
it). "seconds" is the wall time of the avatarization call (scan, routing, fit, batches,
writing the parts); "rows/s" is rows / seconds. Both engines produce the same files for the
same seed (the script checks that the parts are identical).

Run from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/bench_scale.py --rows 200000 --batch-size 50000   # ~1 minute
    .venv/bin/python benchmarks/bench_scale.py --markdown                          # 1e7 rows

Issue 6's target on a 2-core machine: 10^7 rows under 15 minutes and under 4 GB peak; the
2-worker LocalCluster within 20 % of the single-process throughput.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from _common import (
    environment_lines,
    make_mixed_table,
    markdown_table,
    peak_rss_mb,
    same_parts,
    text_table,
)

ENGINES = ("streamed", "dask")
PACKAGES = ("gpu_avatar", "numpy", "pandas", "scipy", "pyarrow", "dask", "distributed")
STEPS = ("scan", "route", "fit", "batches")


# ------------------------------------------------------------------------------ data
def write_dataset(folder: Path, n_rows: int, file_rows: int, seed: int) -> None:
    """``n_rows`` rows as Parquet files of ``file_rows`` rows, one generated at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, n_rows, file_rows)):
        chunk = make_mixed_table(min(file_rows, n_rows - start), seed=seed + i)
        table = pa.Table.from_pandas(chunk, preserve_index=False)
        pq.write_table(table, folder / f"data-{i:05d}.parquet", row_group_size=1 << 17)


def dataset_rows(folder: Path) -> int:
    files = sorted(folder.glob("data-*.parquet"))
    return sum(pq.read_metadata(f).num_rows for f in files) if files else 0


# ------------------------------------------------------------------------------ jobs
def _job(engine: str, source: str, destination: str, options: dict, workers: int, queue) -> None:
    """Runs in a spawned child: one avatarization, its timings sent back on ``queue``."""
    import gpu_avatar as ga

    try:
        started = 0.0
        details: dict[str, Any] = {}
        if engine == "streamed":
            started = time.perf_counter()
            result = ga.avatarize_parquet(source, destination, **options)
        else:
            import distributed

            tick = time.perf_counter()
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            )
            client = distributed.Client(cluster)
            details["cluster start s"] = time.perf_counter() - tick
            queue.put(("ready", None))
            started = time.perf_counter()
            result = ga.distributed.avatarize(source, destination, client=client, **options)
        seconds = time.perf_counter() - started
        details.update(
            seconds=seconds,
            steps={s: result.timings.get(s, float("nan")) for s in STEPS},
            batches=result.n_batches,
            hwm_mb=peak_rss_mb(),
            hidden_worst=(result.manifest.get("privacy_metrics") or {})
            .get("worst", {})
            .get("hidden_rate"),
        )
        if engine == "dask":
            client.close()
            cluster.close()
        queue.put(("done", details))
    except BaseException as error:  # report, do not hang the parent
        queue.put(("failed", f"{type(error).__name__}: {error}"))
        raise


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(engine: str, source: Path, destination: Path, options: dict, workers: int) -> dict:
    """Run one job in a spawned process, polling the RSS of its whole process tree."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(
        target=_job, args=(engine, str(source), str(destination), options, workers, queue)
    )
    child.start()
    watched = psutil.Process(child.pid)
    peak, baseline, outcome = 0, None, None
    while outcome is None:
        rss = _tree_rss(watched)
        peak = max(peak, rss)
        try:
            kind, payload = queue.get(timeout=0.1)
        except Exception:  # queue.Empty
            if not child.is_alive():
                raise RuntimeError(f"the {engine} job died (exit code {child.exitcode})") from None
            continue
        if kind == "ready":  # the cluster is up: its memory counts from here on as well
            baseline = rss
        elif kind == "failed":
            child.join()
            raise RuntimeError(f"the {engine} job failed: {payload}")
        else:
            outcome = payload
    child.join()
    outcome["peak_mb"] = peak / 2**20
    outcome["idle_cluster_mb"] = None if baseline is None else baseline / 2**20
    return outcome


# ------------------------------------------------------------------------------ main
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows (default: 1e7)")
    parser.add_argument(
        "--batch-size", type=int, default=1_000_000, help="rows per batch (default: 1e6)"
    )
    parser.add_argument(
        "--file-rows", type=int, default=500_000, help="rows per Parquet file (default: 5e5)"
    )
    parser.add_argument("--k", type=int, default=20, help="neighbours (default: 20)")
    parser.add_argument("--ncp", type=int, default=5, help="projection axes (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="data and avatar seed (default: 0)")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers (default: 2)")
    parser.add_argument(
        "--engines", nargs="+", choices=ENGINES, default=list(ENGINES), help="what to run"
    )
    parser.add_argument(
        "--metrics", action="store_true", help="also compute the per-batch privacy metrics"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="folder for the data and the outputs (default: a temporary folder, removed); "
        "data already there with the same number of rows is reused",
    )
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_scale_"))
    source = workdir / f"data-{args.rows}"
    try:
        if dataset_rows(source) != args.rows:
            shutil.rmtree(source, ignore_errors=True)
            tick = time.perf_counter()
            write_dataset(source, args.rows, args.file_rows, args.seed)
            print(f"wrote {args.rows:,} rows in {time.perf_counter() - tick:.1f} s", flush=True)
        size_mb = sum(f.stat().st_size for f in source.glob("*.parquet")) / 2**20
        options = dict(
            k=args.k,
            ncp=args.ncp,
            batch_size=args.batch_size,
            seed=args.seed,
            backend="cpu",
            metrics=args.metrics,
        )
        results = {}
        for engine in args.engines:
            destination = workdir / f"avatars-{engine}"
            shutil.rmtree(destination, ignore_errors=True)
            results[engine] = measure(engine, source, destination, options, args.workers)
            outcome = results[engine]
            print(
                f"{engine:<9} {outcome['seconds']:8.1f} s  {args.rows / outcome['seconds']:10,.0f}"
                f" rows/s  peak {outcome['peak_mb']:7.0f} MB",
                flush=True,
            )
        identical = None
        if len(results) == 2:
            identical = same_parts(workdir / "avatars-streamed", workdir / "avatars-dask")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    headers = [
        "engine",
        "rows",
        "batch size",
        "batches",
        "seconds",
        "rows/s",
        "peak MB (tree)",
        "own VmHWM MB",
        *(f"{s} s" for s in STEPS),
        "cluster start s",
        "worst hidden rate %",
    ]
    rows = []
    for engine, outcome in results.items():
        rows.append(
            [
                engine if engine == "streamed" else f"dask ({args.workers} workers)",
                f"{args.rows:,}",
                f"{args.batch_size:,}",
                outcome["batches"],
                f"{outcome['seconds']:.1f}",
                f"{args.rows / outcome['seconds']:,.0f}",
                f"{outcome['peak_mb']:,.0f}",
                f"{outcome['hwm_mb']:,.0f}" if engine == "streamed" else "-",
                *(f"{outcome['steps'][s]:.1f}" for s in STEPS),
                f"{outcome['cluster start s']:.1f}" if "cluster start s" in outcome else "-",
                "-" if outcome["hidden_worst"] is None else f"{outcome['hidden_worst']:.1f}",
            ]
        )
    ratio = ""
    if len(results) == 2:
        ratio = (
            f"dask throughput / streamed throughput: "
            f"{results['streamed']['seconds'] / results['dask']['seconds']:.2f}; "
            f"identical parts: {identical}"
        )
    title = (
        f"Parquet -> avatars, {args.rows:,} rows x 20 mixed columns ({size_mb:,.0f} MB of "
        f"Parquet), k = {args.k}, ncp = {args.ncp}, batch size {args.batch_size:,}, "
        f"per-batch metrics {'on' if args.metrics else 'off'}, backend cpu"
    )
    print(f"\n{title}\n")
    print(text_table(headers, rows))
    if ratio:
        print(f"\n{ratio}")
    if args.markdown:
        print(f"\n## bench_scale\n\n{title}.\n")
        print("\n".join(environment_lines(PACKAGES)))
        print(f"\n{markdown_table(headers, rows)}\n")
        if ratio:
            print(f"{ratio}.")


if __name__ == "__main__":
    main()
