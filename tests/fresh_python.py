"""A script run in a fresh interpreter, from the repository root: numba reads its cache folder,
and numba-cuda its simulator switch, when they are imported, so a test of either needs one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(script: str, *arguments: str, cache: Path | None = None, simulator: bool = True,
              timeout: int = 300) -> subprocess.CompletedProcess:  # fmt: skip
    """Run ``script`` with ``arguments`` (``cache``: numba's cache folder; ``simulator=False``:
    numba-cuda compiles for a real device, as without the suite's simulator); assert it
    succeeded, with its stderr as the message."""
    environment = dict(os.environ)
    if not simulator:
        environment.pop("NUMBA_ENABLE_CUDASIM", None)
    if cache is not None:
        environment["NUMBA_CACHE_DIR"] = str(cache)
    completed = subprocess.run([sys.executable, "-c", script, *arguments], cwd=ROOT,
                               env=environment, capture_output=True, text=True,
                               timeout=timeout)  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-4000:]
    return completed


def last_json(completed: subprocess.CompletedProcess):
    """The JSON document on the last line of a run's stdout."""
    return json.loads(completed.stdout.strip().splitlines()[-1])
