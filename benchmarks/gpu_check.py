"""GPU check: one command on a GPU machine, within a time budget that leaves two minutes of a
10-minute call:

    python3 benchmarks/gpu_check.py --budget 480 --out "$OUT"

(no PYTHONPATH needed: the script puts this checkout first on ``sys.path``; ``--out`` defaults
to ``$OUT`` when set; ``benchmarks/device_run.sh`` runs it with the GPU tests and the
versions). The JSON record is rewritten (atomically) after every measurement and every stage,
in ``benchmarks/results/gpu_check-YYYYMMDD-HHMM.json`` and ``<out>/gpu_check.json``, with the
Markdown table beside each (``.md``) and the console's copy in ``<out>/gpu_check.log``: a run
cut short, by the budget or by a kill, keeps everything it measured.

Stages, in this order (``record["stages"]``):

1. preflight, recorded before anything can fail, each fact saved as it is read: Python, the
   packages' versions (read from their metadata, nothing imported), the CUDA variables and the
   toolkits that hold libNVVM, ``nvidia-smi``; then numba-cuda: where it found libNVVM and
   which version, the probe kernel compiled to PTX for sm_90 (libNVVM alone), and the
   backend's probe (``gpu_status()``: the package's CUDA kernels imported, a one-line kernel
   compiled and run on the device), the device's properties. A ``CUDA_HOME`` unset or without
   libNVVM is set to a toolkit that has one (no newer than the driver first), and said so.
   When the GPU is not usable the check stops there, with the reason.
2. warm-up: every kernel the timings use compiled before any timing (numba-cuda's, CuPy's and
   the host's numba kernels): kNN, ``distance_ranks``, ``avatarize`` and ``privacy_metrics``
   end to end on ``--warmup-rows`` rows (above the 4,096 rows where the device trees take
   over), twice: the first call compiles, the second shows what is left.
3. timings at each of ``--rows`` (the smallest first, 10^6 then 10^7: the first size's
   figures come before the larger size can take the budget, and predict it; k = 20, ncp = 5):
   kNN and ``distance_ranks`` on their own, then the table generated (host), ``avatarize`` and
   ``privacy_metrics`` of its avatars end to end, each step in its own ``try`` (a failure is
   recorded with its error; only the steps that need its result are skipped). Each step:
   ``seconds`` (wall, the device synchronised before and after), ``host_cpu_seconds`` (the
   process's CPU time, every host thread) and ``device_busy_seconds`` (``nvidia-smi``'s
   utilisation sampled every 100 ms times the wall time: seconds during which a kernel ran),
   so host and device seconds are apart; ``avatarize`` also gives its own steps.
4. parity, CPU against GPU on the same seed at ``--parity-rows`` rows (at most 20,000, the
   brute engine's too): coordinates, neighbours (tree and brute), counts, flags, avatars; it
   starts when ``PARITY_MIN_SECONDS`` are left (it compiles for 15-30 s first).
5. the GPU tests (pytest), if at least a minute is left, within what is left.

Budget (``--budget`` seconds from the start): a step predicted (n log n from the same step at
another size) to pass what is left is skipped and recorded as such; a step with no prediction
starts when at least ``MIN_START_SECONDS`` are left. When the budget runs out a signal stops the
running step (recorded as stopped) and every later stage is recorded as skipped; a step stuck
in native code past ``budget + --grace`` seconds ends the process, the record saved first (a
snapshot taken under its lock).

Targets on one H200 (issue 25): ``avatarize`` of 10^7 rows end to end under 20 s; exact
``privacy_metrics`` of 10^7 rows under 20 s; 10^6 rows at least 20x this project's 2-core CPU
path (``CPU_AVATARIZE_1M_SECONDS``, bench_tabular in RESULTS.md).
"""

from __future__ import annotations

import argparse
import datetime
import faulthandler
import json
import os
import platform
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import make_mixed_table, markdown_table  # noqa: E402

# The package is imported inside the stages, after the record's first write: a broken install
# is recorded as a failed preflight, not lost.

K, NCP = 20, 5
BRUTE_MAX_ROWS = 20_000  # parity's brute engine: (n / tile)^2 tiles of merge sorts
MIN_START_SECONDS = 15.0  # a step with no prediction starts when this much is left
TESTS_MIN_SECONDS = 60.0  # the GPU tests start when this much is left
PARITY_MIN_SECONDS = 60.0  # parity compiles the CPU and GPU kernels (15-30 s) before it checks
LAST_STOP_SECONDS = 30.0  # past budget + grace, faulthandler ends a process the timer could not
CPU_AVATARIZE_1M_SECONDS = 14.26  # bench_tabular, 2026-11-29, 2-core machine (RESULTS.md)
TARGETS = {  # (rows, step): seconds at most, or a speed-up at least
    (10_000_000, "avatarize"): ("seconds", 20.0),
    (10_000_000, "privacy_metrics"): ("seconds", 20.0),
    (1_000_000, "avatarize"): ("speed-up", 20.0),
}
PACKAGES = ("numpy", "pandas", "scipy", "scikit-learn", "numba", "llvmlite", "numba-cuda",
            "cuda-bindings", "cuda-core", "cuda-pathfinder", "cuda-python", "cuda-toolkit",
            "cupy", "cupy-cuda12x", "cupy-cuda13x", "nvidia-nvvm", "nvidia-cuda-nvcc-cu12",
            "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12", "nvidia-nvjitlink",
            "nvidia-nvjitlink-cu12", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "torch",
            "cudf", "cuml", "faiss-cpu", "faiss-gpu-cu12", "dask-cuda", "pytest",
            "gpu_avatar")  # fmt: skip
VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
             "NUMBA_ENABLE_CUDASIM", "NUMBA_CUDA_DEFAULT_PTX_CC", "GPU_AVATAR_BACKEND",
             "PYTHONPATH")  # fmt: skip
GPU_TESTS = ("tests/test_gpu.py", "tests/backend/test_cuda_kernels.py", "tests/kernels")


class BudgetExceeded(BaseException):
    """Raised in the main thread when the budget runs out (a BaseException, so that no
    ``except Exception`` in the code under test swallows it)."""


class Skipped(Exception):
    """A step or stage that does not start: the reason is recorded."""


class StepsFailed(Exception):
    """Steps of a stage failed, each recorded with its error: the stage fails, without a
    traceback of its own."""


class Unusable(Exception):
    """The GPU cannot run the package's kernels: the reason is recorded, without a traceback,
    and every later stage is skipped."""


# ------------------------------------------------------------------------------ the record
class Record:
    """The check's JSON record, rewritten atomically after every measurement and stage."""

    def __init__(self, paths: list[Path], budget: float, started: float) -> None:
        self.paths = paths
        self.started = started
        self.budget = budget
        self.lock = threading.Lock()
        self.data: dict = {
            "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "host": platform.node(),
            "budget_seconds": budget,
            "stages": [],
            "preflight": {},
            "measurements": [],
        }

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def remaining(self) -> float:
        return self.budget - self.elapsed()

    def snapshot(self) -> dict:
        """A copy of the record taken under its lock, in one pass of the C encoder (the watchdog's
        thread saves while the main thread may be changing it); tried again if it changed."""
        for attempt in range(3):
            try:
                with self.lock:
                    self.data["elapsed_seconds"] = round(self.elapsed(), 2)
                    return json.loads(json.dumps(self.data, default=str))
            except RuntimeError:  # "dictionary changed size during iteration"
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def save(self) -> None:
        data = self.snapshot()
        text = json.dumps(data, indent=1)
        table = markdown(data["measurements"]) + "\n"
        with self.lock:
            for path in self.paths:
                path.parent.mkdir(parents=True, exist_ok=True)
                _write_atomically(path, text)
                _write_atomically(path.with_suffix(".md"), table)

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
        print(f"{rows:>12,}  {step:<30} {engine:<8} {shown:>10}  {details.get('note', '')}",
              flush=True)  # fmt: skip
        self.save()
        return entry


def markdown(measurements: list[dict]) -> str:
    def number(value):
        return "-" if value is None else f"{value:.2f}"

    rows = []
    for m in measurements:
        met = {True: "met", False: "missed"}.get(m.get("met"), "")
        rows.append([f"{m['rows']:,}", m["step"], m["engine"], number(m["seconds"]),
                     number(m.get("host_cpu_seconds")), number(m.get("device_busy_seconds")),
                     f"{m.get('target', '')} {met}".strip(), m.get("note", "")])  # fmt: skip
    return markdown_table(["rows", "step", "engine", "seconds", "host CPU s", "device busy s",
                           "target", "note"], rows)  # fmt: skip


def _write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a reader (or a kill) sees the old record
    or the new one, never half of one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would outlive the rename
        os.replace(temporary, path)
    except BaseException:  # the budget's signal, say: no half-written file left behind
        Path(temporary).unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------- the check
class Check:
    """Runs the stages in order under the budget and records each."""

    def __init__(self, record: Record) -> None:
        self.record = record
        self.stopped = ""  # why every later stage is skipped
        self.previous: dict[str, tuple[int, float]] = {}  # step -> (rows, seconds) measured

    def stage(self, name: str, function, *args, needs: float = 0.0) -> bool:
        """Run one stage; a failure is recorded with its traceback and the next stage runs,
        unless the budget ran out. Returns whether it completed."""
        print(f"\n=== {name} ===", flush=True)
        entry: dict = {"name": name}
        self.record.data["stages"].append(entry)
        start = time.perf_counter()
        if self.stopped:
            entry.update(status="skipped", note=self.stopped)
        elif self.record.remaining() < needs:
            entry.update(status="skipped", note=f"needs {needs:.0f} s, "
                                                f"{max(self.record.remaining(), 0):.0f} s left")
        else:
            entry["status"] = "running"
            self.record.save()
            try:
                function(self, *args)
                entry["status"] = "ok"
            except BudgetExceeded:
                entry.update(status="stopped", note="the budget ran out during this stage")
                self.stopped = f"the budget ran out during {name}"
            except Skipped as reason:
                entry.update(status="skipped", note=str(reason))
            except (Unusable, StepsFailed) as reason:
                entry.update(status="failed", error=str(reason))
                print(f"FAILED: {name}: {reason}", flush=True)
            except Exception:
                entry.update(status="failed", error=traceback.format_exc())
                print(f"FAILED: {name}\n{entry['error']}", flush=True)
        if entry["status"] == "skipped":
            print(f"skipped: {entry['note']}", flush=True)
        entry["seconds"] = round(time.perf_counter() - start, 2)
        self.record.save()
        return entry["status"] == "ok"

    def fits(self, rows: int, step: str, engine: str = "gpu") -> bool:
        """Whether ``step`` at ``rows`` may start: predicted from the same step at another size
        when measured, else when ``MIN_START_SECONDS`` are left; a step that may not is
        recorded as skipped."""
        remaining = self.record.remaining()
        if step in self.previous:
            predicted = predicted_seconds(self.previous[step], rows)
            if predicted <= remaining:
                return True
            note = f"skipped: predicted {predicted:.0f} s, {max(remaining, 0):.0f} s left"
        elif remaining >= MIN_START_SECONDS:
            return True
        else:
            note = f"skipped: {max(remaining, 0):.0f} s left"
        self.record.measure(rows, step, engine, None, note=note)
        return False

    def timed(self, rows: int, step: str, engine: str, backend, function, /, *args, **kwargs):
        """Run ``function`` as a timed step (``Skipped`` when it may not start): wall, host
        CPU and device-busy seconds recorded; returns its result."""
        if not self.fits(rows, step, engine):
            raise Skipped(f"{step} at {rows:,} rows")
        seconds, host, device, result = measured(backend, function, *args, **kwargs)
        self.previous[step] = (rows, seconds)
        self.record.measure(rows, step, engine, seconds, host_cpu_seconds=host,
                            device_busy_seconds=device)  # fmt: skip
        return result


def predicted_seconds(previous: tuple[int, float], size: int) -> float:
    """A step's time at ``size`` rows from its time at another size: n log n (tree build and
    searches), so that a 10x larger table is predicted at a bit more than 10x."""
    rows, seconds = previous
    return seconds * size / rows * np.log(max(size, 2)) / np.log(max(rows, 2))


def synchronize(backend) -> None:
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()


def measured(backend, function, /, *args, **kwargs):
    """(wall seconds, host CPU seconds, device-busy seconds or None, result) of one call, the
    device synchronised before and after."""
    synchronize(backend)
    sampler = UtilisationSampler() if backend.is_gpu else None
    cpu, start = time.process_time(), time.perf_counter()
    try:
        result = function(*args, **kwargs)
        synchronize(backend)
    finally:
        seconds = time.perf_counter() - start
        host = time.process_time() - cpu
        busy = sampler.stop() if sampler else None
    device = None if busy is None else round(busy * seconds, 3)
    return seconds, round(host, 3), device, result


class UtilisationSampler:
    """``nvidia-smi``'s GPU utilisation (percent of time a kernel ran) sampled every 100 ms
    while a step runs; ``stop()`` returns the mean as a fraction, or None without
    nvidia-smi."""

    def __init__(self, device: int = 0) -> None:
        self.process = None
        command = shutil.which("nvidia-smi")
        if command:
            self.process = subprocess.Popen(
                [command, "-i", str(device), "--query-gpu=utilization.gpu",
                 "--format=csv,noheader,nounits", "-lms", "100"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip

    def stop(self) -> float | None:
        if self.process is None:
            return None
        self.process.terminate()
        try:
            output, _ = self.process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            output, _ = self.process.communicate()
        return mean_utilisation(output)


def mean_utilisation(output: str) -> float | None:
    """The mean of nvidia-smi's utilisation lines ("87", "100", ...) as a fraction."""
    values = [float(line) for line in output.split() if line.strip().replace(".", "").isdigit()]
    return round(sum(values) / len(values) / 100, 3) if values else None


# ------------------------------------------------------------------------------ preflight
def fact(record: Record, key: str, read) -> object:
    """Read one preflight fact and save the record at once; an error is the fact."""
    try:
        value = read()
    except Exception as error:
        value = {"error": f"{type(error).__name__}: {error}".strip()[:2000]}
    record.data["preflight"][key] = value
    record.save()
    return value


def package_versions() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def command_output(*command: str, timeout: float = 20) -> str:
    if not shutil.which(command[0]):
        return f"{command[0]} not found"
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return (completed.stdout or completed.stderr).strip()[-2000:]


def nvcc_version() -> str:
    home = os.environ.get("CUDA_HOME")
    nvcc = os.path.join(home, "bin", "nvcc") if home else "nvcc"
    if not shutil.which(nvcc):
        return "nvcc not found"
    return command_output(nvcc, "--version").splitlines()[-1]


def driver_cuda_version() -> tuple[int, int] | None:
    """The driver's CUDA version from CuPy ((13, 0)), None when CuPy cannot say."""
    try:
        import cupy

        version = int(cupy.cuda.runtime.driverGetVersion())
    except Exception:  # no CuPy, no driver
        return None
    return version // 1000, version % 1000 // 10


def cuda_home() -> dict:
    """The toolkits that hold libNVVM, the one no newer than the driver first (a newer NVVM
    emits PTX the driver rejects); CUDA_HOME, unset or without libNVVM, is set to the first of
    them, before numba-cuda is imported (it reads CUDA_HOME once), else libNVVM is found only
    on the loader path."""
    from gpu_avatar.backend.choice import cuda_toolkits_with_nvvm

    driver = driver_cuda_version()
    toolkits = cuda_toolkits_with_nvvm(driver)
    home = os.environ.get("CUDA_HOME")
    found = {"CUDA_HOME": home, "driver_cuda": driver, "toolkits_with_nvvm": toolkits}
    if home not in toolkits and toolkits:
        os.environ["CUDA_HOME"] = toolkits[0]
        found["set_to" if home is None else "replaced_by"] = toolkits[0]
        print(f"CUDA_HOME={home or '(unset)'} has no libNVVM: using {toolkits[0]}",
              file=sys.stderr, flush=True)  # fmt: skip
    return found


def print_cuda_home() -> None:
    """For ``device_run.sh``, before anything runs: the CUDA_HOME the check uses (``cuda_home``)
    and, for a toolkit (not a pip wheel's folder, which numba-cuda finds by itself), its
    libNVVM's folder for the loader path; empty words when there is none."""
    from gpu_avatar.backend.choice import nvvm_library

    cuda_home()
    home = os.environ.get("CUDA_HOME") or ""
    library = nvvm_library(home) if home else None
    wheel = any(home.startswith(folder) for folder in site.getsitepackages())
    print(home or "-", os.path.dirname(library) if library and not wheel else "-")


def numba_cuda() -> dict:
    start = time.perf_counter()
    from numba import config, cuda

    from gpu_avatar.backend.choice import nvvm_details

    found = {"import_seconds": round(time.perf_counter() - start, 2),
             "simulator": bool(config.ENABLE_CUDASIM), "is_available": cuda.is_available()}
    if not found["simulator"]:
        found.update(nvvm_details())
        try:  # every library numba-cuda locates, and how (one missing raises for all)
            from numba.cuda.cuda_paths import get_cuda_paths

            for name, value in get_cuda_paths().items():
                found[f"path {name}"] = list(value) if isinstance(value, tuple) else str(value)
        except Exception as error:
            found["paths"] = f"{type(error).__name__}: {error}"[:2000]
    return found


def ptx_sm_90() -> dict:
    from numba import config

    if config.ENABLE_CUDASIM:
        return {"skipped": "numba-cuda's simulator compiles no PTX"}
    from gpu_avatar.backend.choice import probe_ptx

    start = time.perf_counter()
    ptx = probe_ptx((9, 0))
    return {"seconds": round(time.perf_counter() - start, 2), "sm_90": ".target sm_90" in ptx}


def device_properties() -> dict:
    from gpu_avatar.backend import resolve_backend

    cupy = resolve_backend("gpu").xp
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    name = properties["name"]
    return {
        "device": name.decode() if isinstance(name, bytes) else name,
        "compute_capability": f"{properties['major']}.{properties['minor']}",
        "memory_gib": round(properties["totalGlobalMem"] / 2**30, 1),
        "multiprocessors": properties["multiProcessorCount"],
        "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
    }


def preflight(check: Check) -> None:
    record = check.record
    fact(record, "python", lambda: {"version": platform.python_version(),
                                    "executable": sys.executable, "platform": platform.platform(),
                                    "cpus": os.cpu_count()})  # fmt: skip
    fact(record, "variables", lambda: {name: os.environ.get(name) for name in VARIABLES})
    fact(record, "packages", package_versions)
    fact(record, "nvidia-smi", lambda: command_output(
        "nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
        "--format=csv,noheader"))  # fmt: skip
    fact(record, "nvcc", nvcc_version)
    fact(record, "cuda_home", cuda_home)
    fact(record, "numba_cuda", numba_cuda)
    fact(record, "ptx_sm_90", ptx_sm_90)

    def probe() -> dict:
        from gpu_avatar.backend import gpu_status

        status = gpu_status()
        return {"usable": status.usable, "reason": status.reason, **status.details}

    found = fact(record, "probe", probe)
    for key, value in found.items():
        print(f"probe {key}: {value}", flush=True)
    if not found.get("usable"):
        check.stopped = f"the GPU is not usable: {found.get('reason') or found.get('error')}"
        raise Unusable(check.stopped)
    fact(record, "device", device_properties)


# ------------------------------------------------------------------------------- warm-up
def warm_up(check: Check, n_rows: int) -> None:
    """Every kernel the timings use, compiled on ``n_rows`` rows: the first pass compiles,
    the second runs warm (both recorded)."""
    import gpu_avatar as ga
    from gpu_avatar.backend import resolve_backend
    from gpu_avatar.metrics.reductions import distance_ranks
    from gpu_avatar.neighbours.search import nearest_neighbours

    gpu = resolve_backend("gpu")
    points = gpu.asarray(np.random.default_rng(0).normal(size=(n_rows, NCP)))
    df = make_mixed_table(n_rows, seed=0)
    def step(label, name, function, *args, **kwargs):
        seconds, host, device, result = measured(gpu, function, *args, **kwargs)
        check.record.measure(n_rows, f"warm-up {name}: {label}", "gpu", seconds,
                             host_cpu_seconds=host, device_busy_seconds=device)  # fmt: skip
        return result

    for label in ("first (compiles)", "second (warm)"):
        indices, _ = step(label, "kNN", nearest_neighbours, points, K, gpu)
        step(label, "kNN k=1", nearest_neighbours, points, 1, gpu)
        step(label, "distance_ranks", distance_ranks, points, barycentres(gpu, points, indices),
             gpu)  # fmt: skip
        result = step(label, "avatarize", ga.avatarize, df, k=K, ncp=NCP, seed=0, backend="gpu")
        step(label, "privacy_metrics", ga.privacy_metrics, df, result.sensitive_unshuffled_avatars,
             ncp=NCP, backend="gpu")  # fmt: skip


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


# ------------------------------------------------------------------------------- timings
def timings(check: Check, size: int) -> None:
    """At ``size`` rows: kNN and distance_ranks on their own, then the table, avatarize and
    privacy_metrics end to end. Each step in its own ``try``: one that fails is recorded with
    its error and the others run; one that fails or may not start skips the steps that need its
    result. Raises ``StepsFailed`` at the end when a step failed."""
    import gpu_avatar as ga
    from gpu_avatar.backend import resolve_backend
    from gpu_avatar.metrics.reductions import distance_ranks
    from gpu_avatar.neighbours.search import nearest_neighbours

    gpu = resolve_backend("gpu")
    results: dict[str, object] = {}
    failed: list[str] = []

    def step(name: str, engine: str, function, after: tuple[str, ...] = (), timed=True):
        missing = [earlier for earlier in after if earlier not in results]
        if missing:
            if timed:  # a step of the table's; an untimed one is this function's own
                check.record.measure(size, name, engine, None, note=f"skipped: needs {missing[0]}")
            return
        try:
            results[name] = (check.timed(size, name, engine, gpu, function) if timed
                             else function())  # fmt: skip
        except Skipped:
            pass
        except Exception:
            failed.append(name)
            error = traceback.format_exc()
            print(f"FAILED: {name} at {size:,} rows\n{error}", flush=True)
            check.record.measure(size, name, engine, None, error=error[-4000:],
                                 note=f"failed: {error.strip().splitlines()[-1][:200]}")

    step("points", "gpu", lambda: gpu.asarray(np.random.default_rng(0).normal(size=(size, NCP))),
         timed=False)  # fmt: skip
    step("kNN", "auto", lambda: nearest_neighbours(results["points"], K, gpu), after=("points",))
    step("avatars", "gpu", lambda: barycentres(gpu, results["points"], results["kNN"][0]),
         after=("kNN",), timed=False)  # fmt: skip
    if "kNN" in results:
        results["kNN"] = None  # done: its device arrays freed before distance_ranks
    step("distance_ranks", "auto", lambda: distance_ranks(results["points"], results["avatars"],
                                                          gpu), after=("kNN", "avatars"))
    results.clear()
    free_device_memory(gpu)
    step("generate table", "host", lambda: make_mixed_table(size, seed=0))
    step("avatarize", "gpu", lambda: ga.avatarize(results["generate table"], k=K, ncp=NCP, seed=0,
                                                  backend="gpu"), after=("generate table",))
    if "avatarize" in results:
        result = results.pop("avatarize")
        for name, seconds in result.timings.items():
            check.record.measure(size, f"avatarize: {name}", "gpu", seconds,
                                 note="inside avatarize, not synchronised")  # fmt: skip
        results["avatarize"] = result.sensitive_unshuffled_avatars
        result = None
    free_device_memory(gpu)
    step("privacy_metrics", "gpu", lambda: ga.privacy_metrics(
        results["generate table"], results["avatarize"], ncp=NCP, backend="gpu"),
        after=("generate table", "avatarize"))  # fmt: skip
    results.clear()
    free_device_memory(gpu)
    if failed:
        raise StepsFailed(f"failed at {size:,} rows: {', '.join(failed)} (errors in the "
                          "measurements)")  # fmt: skip


def free_device_memory(backend) -> None:
    if backend.is_gpu:
        backend.xp.get_default_memory_pool().free_all_blocks()


# -------------------------------------------------------------------------------- parity
def parity(check: Check, n_rows: int) -> None:
    import gpu_avatar as ga
    from gpu_avatar.backend import CPU, resolve_backend
    from gpu_avatar.encoding import TableEncoder
    from gpu_avatar.metrics.reductions import distance_ranks
    from gpu_avatar.neighbours.search import nearest_neighbours
    from gpu_avatar.projection.projection import Projection, projection_kind

    n_rows = min(n_rows, BRUTE_MAX_ROWS)
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
    for name, passed in checks.items():
        print(f"{name}: {passed}")
    check.record.data["parity"] = {"rows": n_rows, "max_relative_gap": relative, **checks}
    check.record.save()
    if not all(checks.values()):
        raise AssertionError(f"CPU/GPU parity failed: {checks}")


# ----------------------------------------------------------------------------- GPU tests
def gpu_tests(check: Check) -> None:
    """The GPU tests that exist in this checkout, within what is left of the budget."""
    import importlib.util

    if importlib.util.find_spec("pytest") is None:
        raise Skipped("pytest is not installed")
    from gpu_avatar.backend import resolve_backend

    free_device_memory(resolve_backend("gpu"))  # the tests' process needs the device's memory
    paths = [path for path in GPU_TESTS if (ROOT / path).exists()]
    timeout = max(check.record.remaining() - 10, 1)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths]
    start = time.perf_counter()
    try:
        completed = run_tests(command, timeout)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or b""
        output = output.decode() if isinstance(output, bytes) else output
        print(output[-6000:], flush=True)
        check.record.data["tests"] = {"paths": paths, "timed_out_after": round(timeout)}
        check.record.measure(0, "GPU tests", "pytest", None,
                             note=f"stopped at the budget ({timeout:.0f} s)")  # fmt: skip
        return
    summary = completed.stdout.strip().splitlines()[-1] if completed.stdout.strip() else ""
    print(completed.stdout[-6000:], completed.stderr[-2000:], sep="\n", flush=True)
    check.record.data["tests"] = {"paths": paths, "returncode": completed.returncode,
                                  "summary": summary}  # fmt: skip
    check.record.measure(0, "GPU tests", "pytest", time.perf_counter() - start, note=summary)
    if completed.returncode:
        raise RuntimeError(f"GPU tests failed: {summary}")


def run_tests(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, timeout=timeout, capture_output=True, text=True)


# ------------------------------------------------------------------- budget and the output
class Watchdog:
    """The budget's stops: SIGALRM raises ``BudgetExceeded`` in the main thread when the budget
    runs out (Python code stops there); a timer thread ends the process ``grace`` seconds
    later, the record saved, if a step is stuck in native code; and faulthandler's own thread,
    which needs no GIL, ends it ``LAST_STOP_SECONDS`` after that (native code that holds the
    GIL stops the timer thread too)."""

    def __init__(self, record: Record, grace: float) -> None:
        self.record = record
        self.alarm = hasattr(signal, "setitimer") and threading.current_thread() is (
            threading.main_thread())
        remaining = max(record.remaining(), 0.001)
        if self.alarm:
            self.previous = signal.signal(signal.SIGALRM, self._expired)
            signal.setitimer(signal.ITIMER_REAL, remaining)
        self.timer = threading.Timer(remaining + grace, self._hard_stop)
        self.timer.daemon = True
        self.timer.start()
        faulthandler.dump_traceback_later(remaining + grace + LAST_STOP_SECONDS, exit=True)

    def _expired(self, signum, frame):
        raise BudgetExceeded()

    def _hard_stop(self) -> None:
        """Save the record and end the process, whatever saving raises."""
        try:
            note = (f"a step was still running {self.record.elapsed():.0f} s after the start "
                    f"(budget {self.record.budget:.0f} s): the process was ended")  # fmt: skip
            with self.record.lock:
                self.record.data["hard_stop"] = note
            print(note, flush=True)
            faulthandler.dump_traceback(all_threads=True)
            self.record.save()
        finally:
            os._exit(3)

    def cancel(self) -> None:
        self.timer.cancel()
        faulthandler.cancel_dump_traceback_later()
        if self.alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


class Tee:
    """The console's output copied to a log file beside the record."""

    def __init__(self, stream, file) -> None:
        self.stream, self.file = stream, file

    def write(self, text: str) -> int:
        self.file.write(text)
        self.file.flush()
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()
        self.file.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    if not faulthandler.is_enabled():
        faulthandler.enable()  # a crash in native code prints where it happened
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=480.0,
                        help="seconds from the start (480: two minutes of a 10-minute call)")
    parser.add_argument("--grace", type=float, default=60.0,
                        help="seconds past the budget before a stuck step ends the process")
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000],
                        help="sizes timed, the smallest first: each predicts the next")
    parser.add_argument("--warmup-rows", type=int, default=20_000)
    parser.add_argument("--parity-rows", type=int, default=BRUTE_MAX_ROWS)
    parser.add_argument("--skip-tests", action="store_true", help="leave the GPU tests out")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--out", type=Path, default=os.environ.get("OUT") or None,
                        help="also write gpu_check.json, .md and .log there (default: $OUT)")
    parser.add_argument("--cuda-home", action="store_true",
                        help="print the CUDA_HOME to use and its libNVVM's folder ('-': none)")
    args = parser.parse_args(argv)  # fmt: skip
    if args.cuda_home:
        print_cuda_home()
        return 0
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    paths = [args.results / f"gpu_check-{stamp}.json"]
    if args.out:
        paths.append(Path(args.out) / "gpu_check.json")
    record = Record(paths, args.budget, started)
    record.data["arguments"] = vars(args)
    record.save()  # before any import of the package: a check that cannot start says so
    log = None
    streams = sys.stdout, sys.stderr
    if args.out:
        log = open(Path(args.out) / "gpu_check.log", "a")  # noqa: SIM115 - closed below
        sys.stdout, sys.stderr = Tee(sys.stdout, log), Tee(sys.stderr, log)
    watchdog = Watchdog(record, args.grace)
    check = Check(record)
    try:
        check.stage("preflight", preflight)
        check.stage("warm-up", warm_up, args.warmup_rows, needs=MIN_START_SECONDS)
        for size in sorted(args.rows):
            check.stage(f"timings at {size:,} rows", timings, size)
        check.stage("parity", parity, args.parity_rows, needs=PARITY_MIN_SECONDS)
        if not args.skip_tests:
            check.stage("GPU tests", gpu_tests, needs=TESTS_MIN_SECONDS)
    finally:
        watchdog.cancel()
        record.save()
        sys.stdout, sys.stderr = streams
        if log:
            log.close()
    print("\n" + markdown(record.snapshot()["measurements"]))
    print(f"\nrecord: {', '.join(map(str, paths))}")
    return 0 if all(s["status"] in ("ok", "skipped") for s in record.data["stages"]) and (
        record.data["stages"][0]["status"] == "ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
