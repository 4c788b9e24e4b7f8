"""GPU check: versions, GPU tests, CPU/GPU parity, and timings at 10^6 and 10^7 rows.

One command for a GPU machine (budget: under 8 minutes on one H200):

    PYTHONPATH=. python benchmarks/gpu_check.py [--sizes 1000000 10000000] [--parity-rows 100000]

1. prints the device, CUDA driver/runtime, CuPy and optional accelerator versions;
2. runs the GPU tests (``pytest -m gpu tests/test_gpu.py``);
3. parity on ``--parity-rows`` rows of the synthetic mixed table (10 continuous + 10
   categorical columns), same seed on both backends: identical neighbour indices, identical
   local-cloaking counts and hidden flags, avatars equal to 1e-6;
4. times FAMD (fit + transform), kNN (each GPU engine), synthesis, the privacy reductions and
   the whole ``avatarize`` at each size (k = 20, ncp = 5), printing a table; every section is
   guarded so that one failure is reported and the rest still runs, and the O(n^2) engines are
   skipped at a size where the previous size's time predicts they would not fit.

Targets on one H200 (issue 5): avatarize 10^7 rows under 20 s; exact local cloaking + hidden
rate on 10^7 rows under 120 s; at least 30 times the CPU throughput at 10^6 rows (the CPU figure
comes from ``bench_tabular.py`` in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import make_mixed_table  # noqa: E402

import gpu_avatar as ga  # noqa: E402
from gpu_avatar.backend import CPU, resolve_backend  # noqa: E402
from gpu_avatar.encoding import TableEncoder  # noqa: E402
from gpu_avatar.neighbours import nearest_neighbours  # noqa: E402
from gpu_avatar.projection import Projection, projection_kind  # noqa: E402
from gpu_avatar.reductions import distance_ranks  # noqa: E402
from gpu_avatar.synthesis import synthesize  # noqa: E402

K, NCP = 20, 5
ROWS: list[dict] = []


def section(title: str) -> None:
    print(f"\n=== {title} ===", flush=True)


def guarded(title: str):
    """Run a step, print its traceback on failure instead of stopping the check."""

    def wrap(function):
        def run(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except Exception:  # report and go on: the check must cover everything it can
                print(f"FAILED: {title}\n{traceback.format_exc()}", flush=True)
                return None

        return run

    return wrap


def synchronized(backend, function, *args, **kwargs):
    """(seconds, result) of a call, with the device synchronised before and after."""
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()
    start = time.perf_counter()
    result = function(*args, **kwargs)
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()
    return time.perf_counter() - start, result


def versions() -> None:
    section("environment")
    print(f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"python {platform.python_version()}, numpy {np.__version__}, host {platform.node()}")
    cupy = importlib.import_module("cupy")
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    name = (
        properties["name"].decode() if isinstance(properties["name"], bytes) else properties["name"]
    )
    print(
        f"device: {name}, compute capability {properties['major']}.{properties['minor']}, "
        f"{properties['totalGlobalMem'] / 2**30:.0f} GiB, {properties['multiProcessorCount']} SMs"
    )
    print(
        f"CUDA driver {cupy.cuda.runtime.driverGetVersion()}, "
        f"runtime {cupy.cuda.runtime.runtimeGetVersion()}, CuPy {cupy.__version__}"
    )
    for optional in ("cudf", "cuml", "faiss", "torch", "dask", "distributed", "dask_cuda"):
        try:
            module = importlib.import_module(optional)
            extra = ""
            if optional == "faiss":
                extra = f", GPUs visible to faiss: {getattr(module, 'get_num_gpus', lambda: 0)()}"
            print(f"  {optional}: {getattr(module, '__version__', '?')}{extra}")
        except Exception as exc:
            print(f"  {optional}: not importable ({type(exc).__name__})")


@guarded("GPU tests")
def gpu_tests(timeout: int) -> None:
    section("GPU tests (pytest -m gpu)")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "gpu",
        "tests/test_gpu.py",
        "-p",
        "no:cacheprovider",
    ]
    completed = subprocess.run(
        command,
        cwd=Path(__file__).resolve().parents[1],
        timeout=timeout,
        capture_output=True,
        text=True,
    )
    print(completed.stdout[-6000:], completed.stderr[-2000:], sep="\n")


def encoded_table(n_rows: int):
    df = make_mixed_table(n_rows, seed=0)
    encoder = TableEncoder().fit(df)
    return df, encoder.transform(df)


@guarded("parity")
def parity(n_rows: int) -> None:
    section(f"CPU/GPU parity on {n_rows:,} rows (seed 0)")
    gpu = resolve_backend("gpu")
    df, encoded = encoded_table(n_rows)
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    weights = np.ones(encoded.continuous.shape[1] + encoded.categorical.shape[1])
    coordinates = {}
    for backend in (CPU, gpu):
        projection = Projection(kind, weights, backend).fit(encoded)
        coordinates[backend.name] = backend.to_numpy(projection.transform(encoded, NCP))
    gap = np.abs(coordinates["cpu"] - coordinates["gpu"]).max()
    print(f"coordinates: max |cpu - gpu| = {gap:.2e}")
    points = coordinates["cpu"]  # same input on both sides for the exact comparisons
    cpu_indices, _ = nearest_neighbours(points, K, CPU)
    for engine in ("brute", "kdtree"):
        indices, _ = nearest_neighbours(points, K, gpu, engine)
        same = np.array_equal(gpu.to_numpy(indices), cpu_indices)
        print(f"neighbours ({engine}): identical indices: {same}")
    rng = np.random.default_rng(1)
    avatars = points[rng.permutation(n_rows)] * 0.5 + points * 0.5
    cpu_ranks = distance_ranks(points, avatars, CPU)
    for engine in ("brute", "kdtree"):
        ranks = distance_ranks(points, avatars, gpu, engine)
        print(
            f"local cloaking ({engine}): identical counts: "
            f"{np.array_equal(ranks.local_cloaking, cpu_ranks.local_cloaking)}, identical hidden "
            f"flags: {np.array_equal(ranks.hidden, cpu_ranks.hidden)}, max DCR gap "
            f"{np.abs(ranks.closest - cpu_ranks.closest).max():.1e}"
        )
    runs = {name: ga.avatarize(df, k=K, ncp=NCP, seed=0, backend=name) for name in ("cpu", "gpu")}
    a, b = (runs[name].sensitive_unshuffled_avatars for name in ("cpu", "gpu"))
    numeric = [c for c in df.columns if df[c].dtype.kind == "f"]
    gap = np.nanmax(np.abs(a[numeric].to_numpy() - b[numeric].to_numpy()))
    categorical_equal = all((a[c] == b[c]).all() for c in df.columns if c not in numeric)
    print(
        f"avatars: max |cpu - gpu| continuous = {gap:.2e} (target 1e-6), categorical "
        f"identical: {categorical_equal}"
    )


def record(size: int, step: str, engine: str, seconds: float | None, note: str = "") -> None:
    ROWS.append(dict(rows=size, step=step, engine=engine, seconds=seconds, note=note))
    shown = "-" if seconds is None else f"{seconds:.2f}"
    print(f"{size:>12,}  {step:<26} {engine:<10} {shown:>9} s  {note}", flush=True)


@guarded("timings")
def timings(size: int, budget: dict) -> None:
    section(f"timings at {size:,} rows")
    gpu = resolve_backend("gpu")
    started = time.perf_counter()
    df, encoded = encoded_table(size)
    record(size, "generate + encode (host)", "cpu", time.perf_counter() - started)
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    weights = np.ones(encoded.continuous.shape[1] + encoded.categorical.shape[1])
    seconds, projection = synchronized(gpu, lambda: Projection(kind, weights, gpu).fit(encoded))
    more, coordinates = synchronized(gpu, projection.transform, encoded, NCP)
    record(size, "FAMD fit + transform", "gpu", seconds + more)
    indices = distances = None
    for engine in ("kdtree", "brute"):
        predicted = budget.get(("knn", engine), 0) * (size / budget.get("size", size)) ** 2
        if engine == "brute" and predicted > 200:
            record(size, "kNN (k=20)", engine, None, f"skipped: predicted {predicted:.0f} s")
            continue
        seconds, (indices, distances) = synchronized(
            gpu, nearest_neighbours, coordinates, K, gpu, engine
        )
        record(size, "kNN (k=20)", engine, seconds)
        budget[("knn", engine)] = seconds
    seconds, _ = synchronized(
        gpu,
        synthesize,
        encoded.continuous,
        encoded.categorical,
        encoded.n_modalities,
        indices,
        distances,
        np.random.SeedSequence(0),
        gpu,
    )
    record(size, "synthesis", "gpu", seconds)
    avatars = coordinates[gpu.xp.asarray(np.random.default_rng(0).permutation(size))]
    for engine in ("kdtree", "brute"):
        predicted = budget.get(("ranks", engine), 0) * (size / budget.get("size", size)) ** 2
        if engine == "brute" and predicted > 200:
            record(
                size, "privacy reductions", engine, None, f"skipped: predicted {predicted:.0f} s"
            )
            continue
        seconds, _ = synchronized(gpu, distance_ranks, coordinates, avatars, gpu, engine)
        record(size, "privacy reductions", engine, seconds, "LC + hidden + DCR + NNDR")
        budget[("ranks", engine)] = seconds
    del coordinates, avatars, indices, distances
    seconds, result = synchronized(gpu, ga.avatarize, df, k=K, ncp=NCP, seed=0, backend="gpu")
    steps = ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items())
    record(size, "avatarize (end to end)", "gpu", seconds, f"{size / seconds:,.0f} rows/s; {steps}")
    budget["size"] = size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--parity-rows", type=int, default=100_000)
    parser.add_argument("--test-timeout", type=int, default=180)
    args = parser.parse_args()
    versions()
    gpu_tests(args.test_timeout)
    parity(args.parity_rows)
    budget: dict = {}
    for size in args.sizes:
        timings(size, budget)
    section("summary")
    print(f"{'rows':>12}  {'step':<26} {'engine':<10} {'seconds':>9}    note")
    for row in ROWS:
        shown = "-" if row["seconds"] is None else f"{row['seconds']:.2f}"
        print(
            f"{row['rows']:>12,}  {row['step']:<26} {row['engine']:<10} {shown:>9} s  {row['note']}"
        )
    if os.environ.get("OUT"):
        import json

        Path(os.environ["OUT"], "gpu_check.json").write_text(json.dumps(ROWS, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
