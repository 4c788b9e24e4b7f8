"""GPU check: one command for a GPU machine, under 8 minutes on one H200.

    PYTHONPATH=. python benchmarks/gpu_check.py [--sizes 1000000 10000000] [--parity-rows 100000]

Sections, each on its own (a failure is recorded with its traceback and the next section
runs), each measurement written at once to a JSON record (device, versions, sections, seconds)
in ``benchmarks/results/`` and, where ``$OUT`` is set, to ``$OUT/gpu_check.json``, with the
Markdown table for RESULTS.md beside it (``gpu_check.md``):

1. environment: device, driver, CUDA runtime, CuPy, numba, numba-cuda, optional accelerators;
2. kernels: the first call of each CUDA kernel (numba-cuda compiles it then), timed;
3. GPU tests: ``pytest tests/test_gpu.py tests/backend/test_cuda_kernels.py`` on the device,
   with the package's bundled data;
4. parity on ``--parity-rows`` rows of the synthetic mixed table (10 continuous + 10
   categorical columns), same seed on both backends: identical coordinates, neighbours,
   counts, hidden flags (avatars' coordinates: weighted barycentres of their 20 neighbours,
   as the method builds them); avatars categorical identical, continuous within 1e-9
   relative;
5. timings at each size (k = 20, ncp = 5), the issue's targets first: ``avatarize`` end to
   end (with its steps as it reports them), then ``privacy_metrics`` (exact) of its avatars.
   A size or step whose time predicted from the previous size (n log n, generation included)
   would pass ``--budget-seconds`` is skipped and recorded as such.

Targets on one H200 (issue 12): avatarize 10^7 rows end to end under 30 s; exact privacy
metrics on 10^7 rows under 30 s; at 10^6 rows at least 20x this project's 2-core CPU path
(``CPU_AVATARIZE_1M_SECONDS``, from bench_tabular in RESULTS.md).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import make_mixed_table, markdown_table  # noqa: E402

# The package is imported by the sections, after the record's first write: a broken install
# is recorded as a failed section, not lost.

K, NCP = 20, 5
CPU_AVATARIZE_1M_SECONDS = 14.26  # bench_tabular, 2026-11-29, 2-core machine (RESULTS.md)
TARGETS = {  # (rows, step): seconds at most, or a speed-up at least
    (10_000_000, "avatarize"): ("seconds", 30.0),
    (10_000_000, "privacy_metrics"): ("seconds", 30.0),
    (1_000_000, "avatarize"): ("speed-up", 20.0),
}


class Record:
    """The check's JSON record, rewritten after every measurement."""

    def __init__(self, paths: list[Path], budget_seconds: float) -> None:
        self.paths = paths
        self.started = time.perf_counter()
        self.budget = budget_seconds
        self.data: dict = {
            "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "host": platform.node(),
            "environment": {},
            "sections": {},
            "measurements": [],
        }

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def save(self) -> None:
        text = json.dumps(self.data, indent=1, default=str)
        for path in self.paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.with_suffix(".md").write_text(self.markdown() + "\n")

    def measure(self, rows: int, step: str, engine: str, seconds: float | None, **details):
        entry = dict(rows=rows, step=step, engine=engine, seconds=seconds, **details)
        target = TARGETS.get((rows, step))
        if target and seconds:
            kind, bound = target
            value = CPU_AVATARIZE_1M_SECONDS / seconds if kind == "speed-up" else seconds
            entry["target"] = f"{kind} {'>=' if kind == 'speed-up' else '<='} {bound:g}"
            entry["met"] = value >= bound if kind == "speed-up" else value <= bound
        self.data["measurements"].append(entry)
        shown = "skipped" if seconds is None else f"{seconds:8.2f} s"
        note = details.get("note", "")
        print(f"{rows:>12,}  {step:<24} {engine:<8} {shown:>10}  {note}", flush=True)
        self.save()

    def markdown(self) -> str:
        rows = []
        for m in self.data["measurements"]:
            seconds = "-" if m["seconds"] is None else f"{m['seconds']:.2f}"
            met = {True: "met", False: "missed"}.get(m.get("met"), "")
            target = f"{m.get('target', '')} {met}".strip()
            rows.append([f"{m['rows']:,}", m["step"], m["engine"], seconds, target,
                         m.get("note", "")])  # fmt: skip
        return markdown_table(["rows", "step", "engine", "seconds", "target", "note"], rows)


def section(record: Record, name: str, function, *args) -> None:
    """Run one section; a failure is recorded with its traceback and the check goes on."""
    print(f"\n=== {name} ===", flush=True)
    start = time.perf_counter()
    try:
        function(record, *args)
        status = {"status": "ok"}
    except Exception:
        status = {"status": "failed", "error": traceback.format_exc()}
        print(f"FAILED: {name}\n{status['error']}", flush=True)
    status["seconds"] = round(time.perf_counter() - start, 2)
    record.data["sections"][name] = status
    record.save()


def synchronized(backend, function, /, *args, **kwargs):
    """(seconds, result) of a call, the device synchronised before and after."""
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()
    start = time.perf_counter()
    result = function(*args, **kwargs)
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()
    return time.perf_counter() - start, result


# ------------------------------------------------------------------------ sections
def environment(record: Record) -> None:
    from gpu_avatar.backend import resolve_backend

    cupy = resolve_backend("gpu").xp
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    name = properties["name"]
    name = name.decode() if isinstance(name, bytes) else name
    info = {
        "device": name,
        "compute_capability": f"{properties['major']}.{properties['minor']}",
        "memory_gib": round(properties["totalGlobalMem"] / 2**30, 1),
        "multiprocessors": properties["multiProcessorCount"],
        "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    for package in ("cupy", "numba", "numba_cuda", "numpy", "pandas", "scipy", "cudf", "cuml",
                    "faiss", "dask_cuda"):  # fmt: skip
        try:
            info[package] = importlib.import_module(package).__version__
        except Exception as error:
            info[package] = f"not importable ({type(error).__name__})"
    record.data["environment"] = info
    for key, value in info.items():
        print(f"{key}: {value}")


def kernels(record: Record, n_rows: int) -> None:
    """The first call of every kernel on a small input: numba-cuda compiles it there."""
    from gpu_avatar.backend import resolve_backend
    from gpu_avatar.metrics.reductions import distance_ranks
    from gpu_avatar.neighbours.search import nearest_neighbours

    gpu = resolve_backend("gpu")
    points = gpu.asarray(np.random.default_rng(0).normal(size=(n_rows, NCP)))
    seconds, (indices, _) = synchronized(gpu, nearest_neighbours, points, K, gpu, "kdtree")
    record.measure(n_rows, "first kNN (compiles)", "kdtree", seconds)
    avatars = barycentres(gpu, points, indices)
    seconds, _ = synchronized(gpu, distance_ranks, points, avatars, gpu, "kdtree")
    record.measure(n_rows, "first ranks (compiles)", "kdtree", seconds)


def gpu_tests(record: Record, timeout: int) -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "tests/test_gpu.py", "tests/backend/test_cuda_kernels.py"]  # fmt: skip
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, timeout=timeout, capture_output=True, text=True)
    summary = completed.stdout.strip().splitlines()[-1] if completed.stdout.strip() else ""
    print(completed.stdout[-6000:], completed.stderr[-2000:], sep="\n")
    record.measure(0, "GPU tests", "pytest", time.perf_counter() - start, note=summary,
                   returncode=completed.returncode)  # fmt: skip
    if completed.returncode:
        raise RuntimeError(f"GPU tests failed: {summary}")


def barycentres(backend, points, indices, chunk: int = 1 << 20):
    """Avatars' coordinates as the method builds avatars: each row a weighted barycentre of its
    neighbours (weights drawn once, on the host), so own distances are those of real avatars
    (a permutation would put every avatar far away and make every ball huge)."""
    xp = backend.xp
    n, k = indices.shape
    weights = backend.asarray(np.random.default_rng(1).exponential(size=(n, k)))
    weights = weights / weights.sum(axis=1, keepdims=True)
    out = xp.empty_like(points)
    for low in range(0, n, chunk):
        rows = slice(low, min(low + chunk, n))
        out[rows] = (points[indices[rows]] * weights[rows, :, None]).sum(axis=1)
    return out


def parity(record: Record, n_rows: int) -> None:
    import gpu_avatar as ga
    from gpu_avatar.backend import CPU, resolve_backend
    from gpu_avatar.encoding import TableEncoder
    from gpu_avatar.metrics.reductions import distance_ranks
    from gpu_avatar.neighbours.search import nearest_neighbours
    from gpu_avatar.projection.projection import Projection, projection_kind

    gpu = resolve_backend("gpu")
    df = make_mixed_table(n_rows, seed=0)
    encoded = TableEncoder().fit_transform(df)
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    weights = np.ones(encoded.continuous.shape[1] + encoded.categorical.shape[1])
    coordinates = {}
    for backend in (CPU, gpu):
        projection = Projection(kind, weights, backend).fit(encoded)
        coordinates[backend.name] = backend.to_numpy(projection.transform(encoded, NCP))
    checks = {"coordinates identical": np.array_equal(coordinates["cpu"], coordinates["gpu"])}
    points = coordinates["cpu"]
    cpu_indices, _ = nearest_neighbours(points, K, CPU)
    for engine in ("kdtree", "brute"):
        indices, _ = nearest_neighbours(points, K, gpu, engine)
        checks[f"neighbours identical ({engine})"] = np.array_equal(
            gpu.to_numpy(indices), cpu_indices
        )
    avatars = barycentres(CPU, points, cpu_indices)
    cpu_ranks = distance_ranks(points, avatars, CPU)
    ranks = distance_ranks(points, avatars, gpu, "kdtree")
    checks["local cloaking identical"] = np.array_equal(ranks.local_cloaking,
                                                        cpu_ranks.local_cloaking)  # fmt: skip
    checks["hidden flags identical"] = np.array_equal(ranks.hidden, cpu_ranks.hidden)
    checks["DCR identical"] = np.array_equal(ranks.closest, cpu_ranks.closest)
    runs = {name: ga.avatarize(df, k=K, ncp=NCP, seed=0, backend=name).sensitive_unshuffled_avatars
            for name in ("cpu", "gpu")}  # fmt: skip
    numeric = [c for c in df.columns if df[c].dtype.kind == "f"]
    a, b = runs["cpu"][numeric].to_numpy(), runs["gpu"][numeric].to_numpy()
    relative = float(np.nanmax(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)))
    checks["avatars categorical identical"] = all(
        runs["cpu"][c].equals(runs["gpu"][c]) for c in df.columns if c not in numeric
    )
    checks["avatars continuous within 1e-9"] = relative <= 1e-9
    for check, passed in checks.items():
        print(f"{check}: {passed}")
    record.data["parity"] = {"rows": n_rows, "max_relative_gap": relative, **checks}
    record.save()
    if not all(checks.values()):
        raise AssertionError(f"CPU/GPU parity failed: {checks}")


def predicted_seconds(previous: tuple[int, float], size: int) -> float:
    """A step's time at ``size`` rows from its time at fewer: n log n (tree build and
    searches), so that a 10x larger table is predicted at a bit more than 10x."""
    rows, seconds = previous
    return seconds * size / rows * np.log(size) / np.log(max(rows, 2))


def timings(record: Record, size: int, previous: dict) -> None:
    """The issue's targets at ``size`` rows, in order: avatarize, then privacy_metrics of its
    avatars; a step is skipped when its predicted time (``previous``: step -> (rows, seconds)
    at the last size, updated here) would pass the budget."""
    import gpu_avatar as ga
    from gpu_avatar.backend import resolve_backend

    gpu = resolve_backend("gpu")

    def fits(*steps: str) -> bool:
        known = [previous[step] for step in steps if step in previous]
        predicted = sum(predicted_seconds(p, size) for p in known)
        if record.elapsed() + predicted <= record.budget:
            return True
        note = f"skipped: predicted {predicted:.0f} s would pass the {record.budget:.0f} s budget"
        record.measure(size, " + ".join(steps), "gpu", None, note=note)
        return False

    def timed(step: str, engine: str, function, /, *args, **kwargs):
        seconds, result = synchronized(gpu, function, *args, **kwargs)
        previous[step] = (size, seconds)
        record.measure(size, step, engine, seconds)
        return result

    if not fits("generate", "avatarize"):
        return
    df = timed("generate", "host", make_mixed_table, size, seed=0)
    result = timed("avatarize", "gpu", ga.avatarize, df, k=K, ncp=NCP, seed=0, backend="gpu")
    for step, seconds in result.timings.items():
        record.measure(size, f"avatarize: {step}", "gpu", seconds,
                       note="inside avatarize, not synchronised")  # fmt: skip
    if fits("privacy_metrics"):
        timed("privacy_metrics", "gpu", ga.privacy_metrics, df,
              result.sensitive_unshuffled_avatars, ncp=NCP, backend="gpu")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--parity-rows", type=int, default=100_000)
    parser.add_argument("--warmup-rows", type=int, default=5000)
    parser.add_argument("--test-timeout", type=int, default=150)
    parser.add_argument("--skip-tests", action="store_true", help="leave the GPU tests out")
    parser.add_argument("--budget-seconds", type=float, default=400.0)
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    paths = [args.results / f"gpu_check-{stamp}.json"]
    if os.environ.get("OUT"):
        paths.append(Path(os.environ["OUT"]) / "gpu_check.json")
    record = Record(paths, args.budget_seconds)
    record.data["arguments"] = vars(args)
    record.save()  # before any import of the package: a check that cannot start says so
    section(record, "environment", environment)
    section(record, "kernels", kernels, args.warmup_rows)
    if not args.skip_tests:
        section(record, "GPU tests", gpu_tests, args.test_timeout)
    section(record, "parity", parity, args.parity_rows)
    previous: dict = {}
    for size in args.sizes:
        section(record, f"timings at {size:,} rows", timings, size, previous)
    print("\n" + record.markdown())
    print(f"\nrecord: {', '.join(map(str, paths))}")
    return 0 if all(s["status"] == "ok" for s in record.data["sections"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
