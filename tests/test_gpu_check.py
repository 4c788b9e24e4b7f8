"""``benchmarks/gpu_check.py``, the one command run on a GPU machine, exercised here on the CuPy
stand-in at tiny sizes: every section runs on its own (a failing one is recorded and the next
runs), the JSON record is written after every measurement, and a step predicted to pass the
time budget is skipped and said so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_check  # noqa: E402

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

ARGUMENTS = ["--sizes", "150", "300", "--parity-rows", "200", "--warmup-rows", "150",
             "--skip-tests"]  # fmt: skip


@pytest.fixture
def run(standin, tmp_path, monkeypatch):
    monkeypatch.delenv("OUT", raising=False)

    def run(*extra):
        status = gpu_check.main([*ARGUMENTS, "--results", str(tmp_path), *extra])
        (path,) = tmp_path.glob("gpu_check-*.json")
        return status, json.loads(path.read_text()), path

    return run


def test_a_failing_section_does_not_drop_the_next_ones(run, monkeypatch):
    saved = []

    def kernels(record, n_rows):
        saved.append(len(record.data["measurements"]))
        raise RuntimeError("planted failure")

    monkeypatch.setattr(gpu_check, "kernels", kernels)
    status, record, path = run()
    assert status == 1  # a failed section fails the check
    sections = record["sections"]
    assert sections["kernels"]["status"] == "failed"
    assert "planted failure" in sections["kernels"]["error"]
    assert [sections[name]["status"] for name in ("environment", "parity")] == ["ok", "ok"]
    assert sections["timings at 300 rows"]["status"] == "ok"
    assert record["environment"]["device"] == "CuPy stand-in (numpy)"
    assert all(value is True for key, value in record["parity"].items() if "identical" in key)
    steps = {(m["rows"], m["step"]) for m in record["measurements"]}
    for step in ("generate", "avatarize", "avatarize: neighbours", "privacy_metrics"):
        assert (300, step) in steps, step
    assert "| rows | step |" in path.with_suffix(".md").read_text()


def test_the_record_is_written_after_every_measurement(run, monkeypatch):
    seen = []
    measure = gpu_check.Record.measure

    def measure_and_read(self, *args, **kwargs):
        measure(self, *args, **kwargs)
        seen.append(len(json.loads(self.paths[0].read_text())["measurements"]))

    monkeypatch.setattr(gpu_check.Record, "measure", measure_and_read)
    run()
    assert seen == list(range(1, len(seen) + 1))


def test_steps_predicted_past_the_budget_are_skipped(run):
    status, record, _ = run("--budget-seconds", "0")
    skipped = [m for m in record["measurements"] if m["rows"] == 300 and m["seconds"] is None]
    assert {m["step"] for m in skipped} == {"generate + avatarize"}  # the size, whole
    assert all("predicted" in m["note"] for m in skipped)
    assert status == 0


def test_a_package_that_cannot_import_is_recorded(run, monkeypatch):
    """The record is written before the package is imported: a broken install on the GPU
    machine comes back as failed sections with the reason, not as nothing."""
    for name in [m for m in sys.modules if m == "gpu_avatar" or m.startswith("gpu_avatar.")]:
        monkeypatch.setitem(sys.modules, name, None)  # "import gpu_avatar" raises ImportError
    status, record, _ = run()
    assert status == 1
    assert record["arguments"]["parity_rows"] == 200
    assert {s["status"] for s in record["sections"].values()} == {"failed"}
    assert "import of gpu_avatar.backend halted" in record["sections"]["environment"]["error"]


def test_predictions_grow_faster_than_the_rows():
    """n log n: ten times the rows is predicted at more than ten times the seconds."""
    assert 10.0 < gpu_check.predicted_seconds((1_000_000, 1.0), 10_000_000) < 12.0
