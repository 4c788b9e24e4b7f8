"""Exact privacy metrics on a Dask cluster (``ga.distributed.privacy_metrics``) against the
same call in memory (``ga.privacy_metrics``), issue 28 item 4: the distributed cost must grow
like the in-memory one (before: every original block against every avatar, 263 s against
2.0 s in memory at 5 x 10^4 rows).

Data: the dense mixed table of ``bench_metrics.py`` (``make_mixed_table``, 20 mixed columns,
seed 0) avatarized with k = 20, ncp = 5 (not timed); its metric space holds dense clouds with a
long tail of large local-cloaking counts. The cluster: a ``distributed.LocalCluster`` of
``--workers`` single-threaded worker processes (default: one per core), started once.

Jobs, interleaved ``--repeat`` times (default 3; the machine may be shared), after a warm-up
of both paths on 2,000 rows (kernels loaded in the driver and every worker):

- ``privacy_metrics``: the full public call, in memory and on the cluster (the projection and
  the other metrics run on the driver in both);
- ``reduction``: the distance-rank reduction alone, on the call's own metric coordinates:
  ``reductions.distance_ranks`` against ``ga.distributed.distance_ranks``.

"identical": the cluster's metrics frame and per-individual arrays (and the reduction's five
arrays) equal the in-memory ones bit for bit.

    .venv/bin/python benchmarks/bench_dask_metrics.py --sizes 50000 200000 --markdown
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pandas as pd
from _common import make_mixed_table, print_tables

import gpu_avatar as ga
from gpu_avatar.metrics import reductions

PACKAGES = ("gpu_avatar", "numpy", "numba", "dask", "distributed")
K, NCP = 20, 5
PER_INDIVIDUAL = (
    "local_cloaking_per_individual",
    "hidden_per_individual",
    "distance_to_closest_per_avatar",
    "closest_distances_ratio_per_avatar",
)
RANKS = ("own_distance", "local_cloaking", "hidden", "closest", "second_closest")


def same_metrics(a, b) -> bool:
    try:
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    except AssertionError:
        return False
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in PER_INDIVIDUAL)


def same_ranks(a, b) -> bool:
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in RANKS)


def measure(n_rows: int, client, repeat: int) -> list[list[str]]:
    table = make_mixed_table(n_rows, seed=0)
    avatars = ga.avatarize(table, k=K, ncp=NCP, seed=0).sensitive_unshuffled_avatars
    warm = table.iloc[:2000], avatars.iloc[:2000]
    ga.privacy_metrics(*warm, ncp=NCP)
    ga.distributed.privacy_metrics(*warm, ncp=NCP, client=client)
    coordinates = {}

    def capture(x, y, backend):
        coordinates["x"], coordinates["y"] = backend.to_numpy(x), backend.to_numpy(y)
        return reductions.distance_ranks(x, y, backend)

    ga.privacy_metrics(table, avatars, ncp=NCP, reduction=capture)
    x, y = coordinates["x"], coordinates["y"]
    jobs = {
        ("privacy_metrics", "memory"): lambda: ga.privacy_metrics(table, avatars, ncp=NCP),
        ("privacy_metrics", "dask"): lambda: ga.distributed.privacy_metrics(
            table, avatars, ncp=NCP, client=client
        ),
        ("reduction", "memory"): lambda: reductions.distance_ranks(x, y),
        ("reduction", "dask"): lambda: ga.distributed.distance_ranks(x, y, client=client),
    }
    walls = {job: [] for job in jobs}
    results = {}
    for _ in range(repeat):
        for job, run in jobs.items():
            start = time.perf_counter()
            results[job] = run()
            walls[job].append(time.perf_counter() - start)
    identical = {
        "privacy_metrics": same_metrics(results["privacy_metrics", "dask"],
                                        results["privacy_metrics", "memory"]),
        "reduction": same_ranks(results["reduction", "dask"], results["reduction", "memory"]),
    }  # fmt: skip
    cloaking = results["reduction", "memory"].local_cloaking
    rows = []
    for (what, where), times in walls.items():
        ratio = min(times) / min(walls[what, "memory"])
        rows.append([
            f"{n_rows:,}", what, where, f"{min(times):.2f}", f"{statistics.median(times):.2f}",
            f"{ratio:.2f}x", "-" if where == "memory" else "yes" if identical[what] else "NO",
            f"{np.median(cloaking):.0f} / {cloaking.mean():.0f}",
        ])  # fmt: skip
        print(f"{n_rows:>10,} rows  {what:<16} {where:<7} fastest {min(times):.2f} s", flush=True)
    return rows


HEADERS = ["rows", "job", "where", "fastest s", "median s", "vs memory (fastest)", "identical",
           "local cloaking median / mean"]  # fmt: skip


def main() -> None:
    import distributed

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs per job")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with (
        distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                 dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        rows = [row for n_rows in args.sizes for row in measure(n_rows, client, args.repeat)]
    print_tables(
        f"Exact privacy metrics, in memory and on a LocalCluster of {args.workers} "
        f"single-threaded workers: make_mixed_table avatarized with k = {K}, ncp = {NCP}, "
        f"{args.repeat} interleaved runs",
        HEADERS, rows, args.markdown, PACKAGES,
    )


if __name__ == "__main__":
    main()
