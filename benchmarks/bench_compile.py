"""First-use compile time of the CPU kernels (numba), in a fresh cache (issue #25, item 5:
under 15 s in total).

One job, run twice in fresh interpreters sharing a new empty ``NUMBA_CACHE_DIR``: the first
compiles every kernel it meets and writes the cache, the second should load them all. Each
runs the README's demo (AIDS table and hospital database, its report included) and then
``avatarize`` and ``privacy_metrics`` on a synthetic mixed table of ``--rows`` rows (default
6,000: above ``RANKS_BRUTE_MAX_ROWS``, so the metrics take the k-d tree walks, and every CPU
kernel a default run meets compiles). Reported per run: the wall seconds; the wall and CPU
seconds numba spent compiling (its ``numba:compile`` events, nested compilations counted once;
the CPU seconds depend less on what else the machine runs); per kernel, the specialisations
compiled (cache misses) and loaded (cache hits).

    .venv/bin/python benchmarks/bench_compile.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = r"""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "benchmarks")
from numba.core import event
from numba.core.registry import CPUDispatcher

class Timer(event.Listener):
    depth, wall, cpu = 0, 0.0, 0.0
    def on_start(self, ev):
        if not self.depth:
            self.started = time.perf_counter(), time.process_time()
        self.depth += 1
    def on_end(self, ev):
        self.depth -= 1
        if not self.depth:
            self.wall += time.perf_counter() - self.started[0]
            self.cpu += time.process_time() - self.started[1]

timer = Timer()
event.register("numba:compile", timer)
start = time.perf_counter()
import gpu_avatar as ga
from gpu_avatar.demo import run_demo
from _common import make_mixed_table
with tempfile.TemporaryDirectory() as output:
    run_demo(Path(output))
df = make_mixed_table(int(sys.argv[1]), seed=0)
types = {c: "categorical" for c in df.columns if c.startswith("cat_")}
result = ga.avatarize(df, k=10, ncp=5, seed=0, types=types)
result.privacy_metrics()
wall = time.perf_counter() - start
kernels = {}
for name, module in list(sys.modules.items()):
    if not name.startswith("gpu_avatar"):
        continue
    for attribute, value in vars(module).items():
        if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name:
            stats = value.stats
            misses, hits = sum(stats.cache_misses.values()), sum(stats.cache_hits.values())
            if misses or hits:
                kernels[f"{name}.{attribute}"] = {"compiled": misses, "loaded": hits}
print(json.dumps({"wall": wall, "compile": timer.wall, "compile_cpu": timer.cpu,
                  "kernels": kernels}))
"""


def run_once(cache: str, rows: int) -> dict:
    """The job in a fresh interpreter on the cache folder ``cache``."""
    root = Path(__file__).resolve().parents[1]
    environment = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(root))
    completed = subprocess.run([sys.executable, "-c", JOB, str(rows)], cwd=root,
                               env=environment, capture_output=True, text=True, check=False)
    if completed.returncode:
        raise SystemExit(completed.stderr[-4000:])
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6000)
    rows = parser.parse_args().rows
    with tempfile.TemporaryDirectory() as cache:
        cold, warm = run_once(cache, rows), run_once(cache, rows)
    print(f"{'kernel':60} {'compiled':>8} {'loaded':>6}")
    for name in sorted(cold["kernels"]):
        compiled = cold["kernels"][name]["compiled"]
        loaded = warm["kernels"].get(name, {}).get("loaded", 0)
        print(f"{name:60} {compiled:8d} {loaded:6d}")
    for label, run in (("cold cache", cold), ("warm cache", warm)):
        counts = run["kernels"].values()
        print(f"{label}: {run['wall']:.1f} s wall, {run['compile']:.1f} s compiling "
              f"({run['compile_cpu']:.1f} s of CPU), "
              f"{sum(c['compiled'] for c in counts)} specialisations compiled, "
              f"{sum(c['loaded'] for c in counts)} loaded")


if __name__ == "__main__":
    main()
