"""One verdict per release: ``gpu-avatar report --holdout`` judges the attack-based risks
exactly as ``avatarize --holdout`` does (issue #37; ``cli.main`` in this process, on part of
the bundled AIDS table)."""

from __future__ import annotations

from importlib import resources

import pandas as pd
from cli_helpers import run_main

import gpu_avatar as ga

AIDS = resources.files("gpu_avatar.data") / "aids.csv"  # ';'-separated


def _verdict(out: str) -> str:
    return out[out.index("verdict: "):]


def test_report_with_a_holdout_gives_avatarize_s_verdict(tmp_path, capsys):
    training, holdout = ga.split_holdout(pd.read_csv(AIDS, sep=";").head(500), seed=0)
    paths = {name: tmp_path / f"{name}.csv" for name in ("training", "holdout")}
    training.to_csv(paths["training"], index=False)
    holdout.to_csv(paths["holdout"], index=False)
    unshuffled = tmp_path / "unshuffled.csv"
    status, avatarized, err = run_main(
        capsys, "avatarize", paths["training"], tmp_path / "released.csv", "--seed", "3",
        "--holdout", paths["holdout"], "--unshuffled-output", unshuffled,
        "--types", "pidnum=identifier", "--quiet")
    assert status == 0, err
    assert "measurable risk" in _verdict(avatarized)  # the attacks name risks
    status, reported, err = run_main(
        capsys, "report", paths["training"], unshuffled, "--holdout", paths["holdout"],
        "--output", tmp_path / "report.html", "--quiet")
    assert status == 0, err
    assert _verdict(reported) == _verdict(avatarized)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "meets its targets with named exceptions" in html and "Attack-based risks" in html
