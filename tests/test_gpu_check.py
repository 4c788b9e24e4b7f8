"""``benchmarks/gpu_check.py``, the one command run on a GPU machine, exercised here on the CuPy
stand-in at tiny sizes: the stages run in their order (preflight, warm-up, timings from the
smallest size, parity, GPU tests), the preflight is saved before anything can fail, the JSON
record is rewritten after every measurement, a failing step drops only the steps that need it,
a step predicted past the budget is skipped, the budget's signal stops a running step and skips
what follows, the hard stop ends the process whatever saving does, and an unusable GPU or a
broken install stops the check after the preflight with the reason."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_check  # noqa: E402

from gpu_avatar.backend import choice  # noqa: E402

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

ARGUMENTS = ["--rows", "300", "150", "--parity-rows", "200", "--warmup-rows", "150"]
STEPS = ("kNN", "distance_ranks", "generate table", "avatarize", "privacy_metrics")


@pytest.fixture
def run(standin, tmp_path, monkeypatch):
    monkeypatch.delenv("OUT", raising=False)
    monkeypatch.setenv("CUDA_HOME", "")  # unset afterwards: the check sets it ...
    monkeypatch.delenv("CUDA_HOME")  # ... when it is unset
    results = tmp_path / "results"

    def run(*extra, tests=False):
        flags = [] if tests else ["--skip-tests"]
        status = gpu_check.main([*ARGUMENTS, *flags, "--results", str(results), *extra])
        (path,) = results.glob("gpu_check-*.json")
        return status, json.loads(path.read_text()), path

    return run


def stages(record: dict) -> dict:
    return {stage["name"]: stage for stage in record["stages"]}


def test_the_stages_run_in_order_and_everything_is_recorded(run, monkeypatch, tmp_path):
    commands = []

    def run_tests(command, timeout):
        commands.append((command, timeout))
        return gpu_check.subprocess.CompletedProcess(command, 0, "12 passed in 3.0s\n", "")

    monkeypatch.setattr(gpu_check, "run_tests", run_tests)
    out = tmp_path / "out"
    out.mkdir()
    status, record, path = run("--out", str(out), tests=True)
    assert status == 0
    assert [s["name"] for s in record["stages"]] == [
        "preflight", "warm-up", "timings at 150 rows", "timings at 300 rows", "parity",
        "GPU tests"]  # fmt: skip
    assert {s["status"] for s in record["stages"]} == {"ok"}
    preflight = record["preflight"]
    assert preflight["python"]["version"] and "numpy" in preflight["packages"]
    assert "CUDA_HOME" in preflight["variables"]
    assert preflight["numba_cuda"]["simulator"] is True
    assert preflight["probe"]["usable"] is True and preflight["probe"]["reason"] == ""
    assert preflight["device"]["device"] == "CuPy stand-in (numpy)"
    steps = [(m["rows"], m["step"]) for m in record["measurements"]]
    # every kernel warmed (twice) before the first timing
    first_timing = steps.index((150, "kNN"))
    warmed = {step for _, step in steps[:first_timing]}
    for name in ("kNN", "kNN k=1", "distance_ranks", "avatarize", "privacy_metrics"):
        assert {f"warm-up {name}: first (compiles)", f"warm-up {name}: second (warm)"} <= warmed
    assert not any(step.startswith("warm-up") for _, step in steps[first_timing:])
    # the smallest size first (it predicts the next), each step in order, host and device
    # seconds apart
    for size in (300, 150):
        assert [s for rows, s in steps if rows == size and s in STEPS] == list(STEPS)
    assert steps.index((150, "privacy_metrics")) < steps.index((300, "kNN"))
    timed = [m for m in record["measurements"] if m["step"] in STEPS]
    assert all(m["seconds"] > 0 and m["host_cpu_seconds"] >= 0 for m in timed)
    assert all(m["device_busy_seconds"] is None for m in timed)  # no nvidia-smi here
    assert (300, "avatarize: neighbours") in steps
    assert all(value is True for key, value in record["parity"].items() if "identical" in key)
    assert record["parity"]["rows"] == 200
    # the GPU tests last, with what is left of the budget
    (command, timeout), = commands
    assert "tests/test_gpu.py" in command and 0 < timeout < 480
    assert record["tests"]["summary"] == "12 passed in 3.0s"
    assert steps[-1] == (0, "GPU tests")
    assert "| rows | step |" in path.with_suffix(".md").read_text()
    # the copies for the device tool's $OUT, and the console's log
    assert json.loads((out / "gpu_check.json").read_text()) == record
    assert (out / "gpu_check.md").read_text() == path.with_suffix(".md").read_text()
    assert "=== preflight ===" in (out / "gpu_check.log").read_text()


def test_the_preflight_is_saved_before_anything_can_fail_and_a_failure_drops_nothing(
        run, monkeypatch):  # fmt: skip
    seen = {}
    saved = gpu_check.Record.save
    measurements = []

    def save_and_read(self):
        saved(self)
        measurements.append(len(json.loads(self.paths[0].read_text())["measurements"]))

    def warm_up(check, n_rows):
        seen.update(json.loads(check.record.paths[0].read_text()))
        raise RuntimeError("planted failure")

    monkeypatch.setattr(gpu_check, "warm_up", warm_up)
    monkeypatch.setattr(gpu_check.Record, "save", save_and_read)
    status, record, _ = run()
    assert status == 1  # a failed stage fails the check
    assert seen["preflight"]["probe"]["usable"] is True  # on disk before the next stage
    assert seen["stages"][0]["status"] == "ok"
    by_name = stages(record)
    assert by_name["warm-up"]["status"] == "failed"
    assert "planted failure" in by_name["warm-up"]["error"]
    assert [by_name[name]["status"] for name in ("timings at 150 rows", "timings at 300 rows",
                                                 "parity")] == ["ok"] * 3  # fmt: skip
    # every measurement was on disk as soon as it was made
    assert sorted(set(measurements)) == list(range(len(record["measurements"]) + 1))


def test_steps_predicted_past_the_budget_are_skipped(run, monkeypatch):
    """The second size's steps are predicted from the first's; the first's, with no
    prediction, start whenever a few seconds are left. A skipped kNN skips distance_ranks
    (its avatars); a skipped table skips avatarize and privacy_metrics; each says why. Parity,
    which compiles for 15-30 s, needs a minute left."""
    monkeypatch.setattr(gpu_check, "predicted_seconds", lambda previous, size: 1e9)
    monkeypatch.setattr(gpu_check, "PARITY_MIN_SECONDS", 1e6)
    status, record, _ = run()
    assert status == 0
    measured = {m["step"]: m for m in record["measurements"] if m["rows"] == 150}
    assert all(measured[step]["seconds"] > 0 for step in STEPS)
    skipped = [m for m in record["measurements"]
               if m["rows"] == 300 and not m["step"].startswith("warm-up")]  # fmt: skip
    predicted = "skipped: predicted 1000000000 s, 4"  # ... 479 s left
    assert [(m["step"], m["seconds"], m["note"][:len(predicted)]) for m in skipped] == [
        ("kNN", None, predicted), ("distance_ranks", None, "skipped: needs kNN"),
        ("generate table", None, predicted), ("avatarize", None, "skipped: needs generate table"),
        ("privacy_metrics", None, "skipped: needs generate table")]  # fmt: skip
    assert stages(record)["timings at 300 rows"]["status"] == "ok"
    assert stages(record)["parity"]["status"] == "skipped"
    assert stages(record)["parity"]["note"].startswith("needs 1000000 s")


def test_a_failing_step_drops_only_the_steps_that_need_it(run, monkeypatch):
    """distance_ranks fails at 300 rows: its error is recorded, the table, avatarize and
    privacy_metrics of that size still run, and the stage fails, the check going on."""
    from gpu_avatar.metrics import reductions

    ranks = reductions.distance_ranks

    def failing_ranks(points, *args, **kwargs):
        if len(points) == 300:
            raise MemoryError("planted out of memory")
        return ranks(points, *args, **kwargs)

    monkeypatch.setattr(reductions, "distance_ranks", failing_ranks)
    status, record, _ = run()
    assert status == 1
    at_300 = {m["step"]: m for m in record["measurements"] if m["rows"] == 300}
    assert at_300["distance_ranks"]["seconds"] is None
    assert "planted out of memory" in at_300["distance_ranks"]["error"]
    assert at_300["distance_ranks"]["note"] == "failed: MemoryError: planted out of memory"
    assert all(at_300[step]["seconds"] > 0 for step in STEPS if step != "distance_ranks")
    by_name = stages(record)
    assert by_name["timings at 300 rows"]["status"] == "failed"
    assert by_name["timings at 300 rows"]["error"] == (
        "failed at 300 rows: distance_ranks (errors in the measurements)")
    assert by_name["parity"]["status"] == "ok"


def test_the_budget_stops_a_running_step_and_skips_what_follows(run, monkeypatch):
    """The budget's signal arrives while privacy_metrics runs: the step is stopped, what was
    measured stays, every later stage is skipped, and the signal is disarmed at the end."""
    import gpu_avatar as ga

    metrics = ga.privacy_metrics

    def slow_metrics(original, *args, **kwargs):
        if len(original) != 300:  # the warm-up's
            return metrics(original, *args, **kwargs)
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # the budget runs out now
        time.sleep(30)

    monkeypatch.setattr(ga, "privacy_metrics", slow_metrics)
    started = time.perf_counter()
    status, record, _ = run("--skip-tests")
    assert time.perf_counter() - started < 25  # stopped, not slept through
    assert status == 1
    by_name = stages(record)
    assert by_name["timings at 150 rows"]["status"] == "ok"
    assert by_name["timings at 300 rows"]["status"] == "stopped"
    assert by_name["parity"]["status"] == "skipped"
    assert "budget ran out during timings at 300 rows" in by_name["parity"]["note"]
    assert {(m["rows"], m["step"]) for m in record["measurements"]} >= {
        (300, "kNN"), (300, "distance_ranks"), (300, "avatarize")}
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is not gpu_check.Watchdog._expired


def test_a_step_stuck_past_the_grace_ends_the_process_with_the_record_saved(tmp_path,
                                                                           monkeypatch):
    exits = []
    monkeypatch.setattr(gpu_check.os, "_exit", exits.append)
    record = gpu_check.Record([tmp_path / "record.json"], budget=1.0, started=time.perf_counter())
    watchdog = gpu_check.Watchdog.__new__(gpu_check.Watchdog)
    watchdog.record = record
    watchdog._hard_stop()
    assert exits == [3]
    saved = json.loads((tmp_path / "record.json").read_text())
    assert "the process was ended" in saved["hard_stop"]

    def failing_save():
        raise OSError("disk full")

    monkeypatch.setattr(record, "save", failing_save)
    with pytest.raises(OSError):
        watchdog._hard_stop()
    assert exits == [3, 3]  # ended all the same


def test_the_record_is_copied_under_its_lock_and_again_if_it_changed(tmp_path, monkeypatch):
    """The watchdog's thread saves while the main thread may add to the record: the copy is
    taken under the lock, and taken again when it changed meanwhile."""
    record = gpu_check.Record([tmp_path / "record.json"], budget=1.0, started=time.perf_counter())
    record.data["measurements"].append({"rows": 1})
    dumps, calls = gpu_check.json.dumps, []

    def changing(data, **kwargs):
        calls.append(record.lock.locked())
        if len(calls) == 1:
            raise RuntimeError("dictionary changed size during iteration")
        return dumps(data, **kwargs)

    monkeypatch.setattr(gpu_check.json, "dumps", changing)
    assert record.snapshot()["measurements"] == [{"rows": 1}]
    assert calls == [True, True]


def test_an_unusable_gpu_stops_the_check_after_the_preflight_with_the_reason(run, monkeypatch,
                                                                             tmp_path):
    reason = ("numba-cuda cannot compile the GPU kernels: it found no libNVVM (its compiler) "
              "(...). Fix: export CUDA_HOME=/usr/local/cuda")  # fmt: skip
    monkeypatch.setattr(choice, "_probe_gpu", lambda: (None, reason))
    toolkit, empty = tmp_path / "cuda-13.0", tmp_path / "no-toolkit"
    (toolkit / "nvvm" / "lib64").mkdir(parents=True)
    (toolkit / "nvvm" / "lib64" / "libnvvm.so.4").touch()
    (empty / "nvvm").mkdir(parents=True)  # no libNVVM in it
    monkeypatch.setenv("CUDA_HOME", str(empty))
    monkeypatch.setenv("CUDA_PATH", str(toolkit))
    status, record, _ = run()
    assert status == 1
    assert record["preflight"]["probe"] == {"usable": False, "reason": reason}
    assert record["preflight"]["cuda_home"]["replaced_by"] == str(toolkit)  # CUDA_HOME fixed
    by_name = stages(record)
    assert by_name["preflight"]["status"] == "failed"
    assert by_name["preflight"]["error"] == f"the GPU is not usable: {reason}"  # no traceback
    later = [stage for stage in record["stages"] if stage["name"] != "preflight"]
    assert later and all(s["status"] == "skipped" and "libNVVM" in s["note"] for s in later)
    assert record["measurements"] == []


def test_a_package_that_cannot_import_is_recorded(run, monkeypatch):
    """The record is written before the package is imported: a broken install on the GPU
    machine comes back as a failed preflight with the reason and the facts read without it,
    not as nothing."""
    for name in [m for m in sys.modules if m == "gpu_avatar" or m.startswith("gpu_avatar.")]:
        monkeypatch.setitem(sys.modules, name, None)  # "import gpu_avatar" raises ImportError
    status, record, _ = run()
    assert status == 1
    assert record["arguments"]["parity_rows"] == 200
    assert record["preflight"]["python"]["version"] and record["preflight"]["packages"]
    assert "import of gpu_avatar" in record["preflight"]["probe"]["error"]
    assert stages(record)["preflight"]["status"] == "failed"
    assert {s["status"] for s in record["stages"][1:]} == {"skipped"}


def test_predictions_grow_faster_than_the_rows():
    """n log n: ten times the rows is predicted at more than ten times the seconds."""
    assert 10.0 < gpu_check.predicted_seconds((1_000_000, 1.0), 10_000_000) < 12.0
    assert gpu_check.predicted_seconds((10_000_000, 10.0), 1_000_000) < 1.0


def test_device_utilisation_is_read_from_nvidia_smi_lines():
    assert gpu_check.mean_utilisation("100\n50\n 0\n") == 0.5
    assert gpu_check.mean_utilisation("") is None


def test_an_unset_cuda_home_is_set_to_the_toolkit_that_matches_the_driver(monkeypatch):
    """numba-cuda finds libNVVM through CUDA_HOME or the loader path: an unset CUDA_HOME is set
    to the toolkit found, the one no newer than the driver first."""
    seen = []
    monkeypatch.setattr(gpu_check, "driver_cuda_version", lambda: (13, 0))
    monkeypatch.setattr(choice, "cuda_toolkits_with_nvvm",
                        lambda driver: seen.append(driver) or ["/usr/local/cuda-13.0"])
    monkeypatch.setenv("CUDA_HOME", "")
    monkeypatch.delenv("CUDA_HOME")
    found = gpu_check.cuda_home()
    assert seen == [(13, 0)] and found["set_to"] == "/usr/local/cuda-13.0"
    assert gpu_check.os.environ["CUDA_HOME"] == "/usr/local/cuda-13.0"
