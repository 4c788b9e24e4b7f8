"""The whole release of a streamed run: its exact privacy metrics and its verdict.

A table resampled with duplicates (the AIDS table's rows drawn 3,000 times) is the issue's
case: each batch sees few of an original's duplicates, so the batches' figures differ from the
release's, which must be those of ``ga.privacy_metrics`` on the same originals and unshuffled
avatars (the in-memory run of the same batches), bit for bit.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_main
from test_streaming import aids  # noqa: F401

import gpu_avatar as ga
from gpu_avatar import AvatarError
from gpu_avatar.metrics.verdict import FAILS
from gpu_avatar.streaming.release import VERDICT, record
from gpu_avatar.streaming.run import MANIFEST, SUCCESS

pytest.importorskip("pyarrow")

SETTINGS = dict(k=10, batch_size=1000, seed=3, backend="cpu")
VECTORS = ("local_cloaking_per_individual", "hidden_per_individual",
           "distance_to_closest_per_avatar", "closest_distances_ratio_per_avatar")


def resampled(df: pd.DataFrame, rows: int = 3000) -> pd.DataFrame:
    """``rows`` rows drawn with replacement from ``df``, each with its own identifier."""
    drawn = df.iloc[np.random.default_rng(0).integers(0, len(df), rows)]
    return drawn.assign(pidnum=np.arange(rows)).reset_index(drop=True)


def assert_same_release(ours, theirs) -> None:
    """The same figures and per-row vectors, exactly."""
    assert record(ours) == record(theirs)
    for name in VECTORS:
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))


@pytest.fixture(scope="module")
def source(aids, tmp_path_factory) -> tuple[pd.DataFrame, dict, Path]:  # noqa: F811
    df, types = aids
    folder = tmp_path_factory.mktemp("resampled") / "source"
    folder.mkdir()
    big = resampled(df)
    big.iloc[:1700].to_parquet(folder / "a.parquet", index=False)
    big.iloc[1700:].to_parquet(folder / "b.parquet", index=False)
    return pd.read_parquet(folder), types, folder


@pytest.fixture(scope="module")
def run(source, tmp_path_factory):
    """The streamed run (3 batches) and the warnings it gave."""
    _, types, folder = source
    destination = tmp_path_factory.mktemp("release") / "avatars"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ga.avatarize_parquet(folder, destination, types=types, **SETTINGS)
    return result, destination, caught


def test_whole_release_metrics_are_the_in_memory_ones(source, run):
    df, types, _ = source
    result, _, _ = run
    memory = ga.avatarize(df, types=types, **SETTINGS)
    expected = ga.privacy_metrics(df, memory.sensitive_unshuffled_avatars,
                                  ncp=memory.parameters.ncp, check_alignment=False, types=types,
                                  backend="cpu")
    release = result.privacy_metrics()
    assert_same_release(release, expected)
    assert len(release.hidden_per_individual) == len(df) == 3000 and result.n_batches == 3
    # the batches alone do not tell the release's figures
    worst = result.batch_privacy_metrics().loc["worst"]
    assert worst["hidden_rate"] < release.hidden_rate
    assert worst["local_cloaking"] < release.local_cloaking


def test_one_batch_release_metrics_are_the_unbatched_ones(source, tmp_path):
    df, types, folder = source
    settings = {**SETTINGS, "batch_size": 5000}
    with pytest.warns(UserWarning, match="does not meet its targets"):
        result = ga.avatarize_parquet(folder, tmp_path / "out", types=types, **settings)
    memory = ga.avatarize(df, types=types, **{**settings, "batch_size": None})
    assert result.n_batches == 1
    assert_same_release(result.privacy_metrics(), memory.privacy_metrics())


def test_the_verdict_is_judged_warned_and_written(run):
    result, destination, caught = run
    verdict = ga.release_verdict(result.privacy_metrics())
    assert verdict.answer == FAILS == result.verdict().answer  # hidden rate about 81 %
    assert [str(w.message) for w in caught if "does not meet its targets" in str(w.message)]
    manifest = json.loads((destination / MANIFEST).read_text())
    assert manifest["release"]["verdict"] == {"answer": FAILS, "failed": True,
                                              "lines": verdict.lines()}
    assert manifest["release"]["privacy_metrics"] == record(result.privacy_metrics())
    assert (destination / VERDICT).read_text() == str(verdict) + "\n"
    assert (destination / SUCCESS).is_file()
    with pytest.raises(AvatarError, match=r"not a table of per-batch metrics: pass "
                       r"result\.privacy_metrics\(\)$"):
        ga.release_verdict(result.batch_privacy_metrics())


def test_a_finished_run_read_back_keeps_its_figures(source, run):
    _, types, folder = source
    result, destination, _ = run
    again = ga.avatarize_parquet(folder, destination, types=types, resume=True, **SETTINGS)
    assert record(again.privacy_metrics()) == record(result.privacy_metrics())
    assert again.verdict().lines() == result.verdict().lines()
    assert again.privacy_metrics().hidden_per_individual.size == 0  # not in the manifest


def test_no_metrics_no_verdict(source, tmp_path):
    _, types, folder = source
    result = ga.avatarize_parquet(folder, tmp_path / "out", types=types, metrics=False,
                                  **{**SETTINGS, "batch_size": 1500})
    assert result.privacy_metrics() is None and result.verdict() is None
    assert not (tmp_path / "out" / VERDICT).exists() and (tmp_path / "out" / SUCCESS).is_file()


def test_the_command_line_streams_into_a_folder(source, run, tmp_path, capsys):
    _, _, folder = source
    result, destination, _ = run
    output = tmp_path / "out"
    status, out, err = run_main(capsys, "avatarize", folder, output, "--batch-size", 1000,
                                "--k", 10, "--seed", 3, "--backend", "cpu", "--types",
                                "pidnum=identifier", *(f"{c}=categorical" for c in
                                                       categorical_columns(result)))
    assert status == 0, err
    for part in result.parts:
        assert (output / part).read_bytes() == (destination / part).read_bytes()
    assert (output / VERDICT).read_text() == (destination / VERDICT).read_text()
    assert "does not meet its targets" in err  # the warning
    lines = out.splitlines()
    assert lines[0].startswith(f"wrote 3000 avatars of {folder} to {output} in 3 parts")
    assert "whole release privacy: hidden rate" in out
    assert lines[-len(result.verdict().lines()):] == result.verdict().lines()


def categorical_columns(result) -> list[str]:
    types = result.manifest["parameters"]["types"]
    return [c for c, kind in types.items() if kind == "categorical"]


@pytest.mark.parametrize("arguments, message", [
    (["--report", "r.html"], "--report not with a streamed run"),
    (["--k", "auto"], "--k auto not with a streamed run"),
])
def test_the_command_line_refuses_what_a_stream_cannot_do(source, tmp_path, capsys, arguments,
                                                         message):
    _, _, folder = source
    status, _, err = run_main(capsys, "avatarize", folder, tmp_path / "out", "--batch-size",
                              1000, *arguments)
    assert status != 0 and message in err and not (tmp_path / "out").exists()


def test_a_folder_output_needs_a_parquet_input(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    status, _, err = run_main(capsys, "avatarize", table, tmp_path / "out", "--batch-size", 100)
    assert status != 0 and "reads a Parquet INPUT" in err
