"""advise: the sweep measures what avatarize + the metrics measure, and its advice holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_cli

import gpu_avatar as ga
from gpu_avatar.demo import load_aids


@pytest.fixture(scope="module")
def aids():
    return load_aids()


@pytest.fixture(scope="module")
def advice(aids):
    df, types = aids
    return ga.advise(df, types=types, ncp=5, seed=0, candidates=[5, 20, 50])


def test_each_candidate_holds_what_avatarize_and_the_metrics_give(aids, advice):
    df, types = aids
    for k in (5, 20):
        result = ga.avatarize(df, k=k, ncp=5, seed=0, types=types)
        row = advice.candidates.loc[k]
        privacy = result.privacy_metrics().to_frame()["value"].dropna()
        assert {m: row[m] for m in privacy.index} == privacy.to_dict()  # the same bits
        signal = result.signal_metrics().to_frame()["value"]
        np.testing.assert_allclose(row[signal.index].astype(float), signal, rtol=1e-9)


def test_the_advised_parameters_meet_every_target_with_other_seeds(aids, advice):
    df, types = aids
    assert advice.k in advice.candidates.index and advice.parameters.k == advice.k
    passing = advice.candidates[advice.candidates["passed"]]
    assert advice.candidates.loc[advice.k, "hellinger_mean"] == passing["hellinger_mean"].min()
    for seed in (1, 2, 3):
        result = ga.avatarize(df, parameters=advice.parameters.replace(seed=seed), types=types)
        frame = result.privacy_metrics().to_frame()
        assert frame["passed"].dropna().all(), frame


def test_a_sweep_without_a_passing_candidate_says_what_to_try(aids):
    df, types = aids
    advice = ga.advise(df, types=types, seed=0, candidates=[3, 4], targets={"hidden_rate": 99})
    assert advice.k is None and advice.parameters is None
    assert not advice.candidates["passed"].any()
    assert "no candidate k in [3, 4]" in advice.reason and "k = 4, misses" in advice.reason
    assert "hidden_rate" in advice.reason and "ncp" in advice.reason


def test_targets_and_candidates_are_checked(aids):
    df, types = aids
    with pytest.raises(ga.AvatarError, match=r"^targets names \['hiden_rate'\], not among the "
                       r"privacy metrics the advice judges: hidden_rate, local_cloaking, "):
        ga.advise(df, types=types, targets={"hiden_rate": 90})
    with pytest.raises(ga.AvatarError, match=r"targets\['hidden_rate'\] must be a number"):
        ga.advise(df, types=types, targets={"hidden_rate": "95"})
    with pytest.raises(ga.AvatarError, match="must be below the 2139 rows"):
        ga.advise(df, types=types, candidates=[5, 5000])
    with pytest.raises(ga.AvatarError, match="candidates = 1 is out of range"):
        ga.advise(df, types=types, candidates=[1, 5])
    with pytest.raises(ga.AvatarError, match="margin = 2 is out of range"):
        ga.advise(df, types=types, margin=2)


def test_the_command_line_advises_and_avatarizes_with_the_advice(tmp_path, aids):
    df, _ = aids
    table = tmp_path / "aids.csv"
    df.to_csv(table, index=False)
    process = run_cli("advise", table, "--types", "pidnum=identifier", "--seed", "0",
                      "--candidates", "10", "50", "--output", tmp_path / "advice.csv")
    assert process.returncode == 0, process.stderr
    assert "advice: k = 50 meets every privacy target measured" in process.stdout
    written = pd.read_csv(tmp_path / "advice.csv")
    assert written["k"].tolist() == [10, 50] and "hidden_rate" in written
    process = run_cli("avatarize", table, tmp_path / "avatars.csv", "--k", "auto",
                      "--types", "pidnum=identifier", "--seed", "0")
    assert process.returncode == 0, process.stderr
    assert "advice: k = 50" in process.stdout and "(k 50, ncp 5" in process.stdout
    assert len(pd.read_csv(tmp_path / "avatars.csv")) == len(df)
    process = run_cli("database", "x.yaml", tmp_path / "out", "--k", "auto")
    assert process.returncode == 2 and "--k auto is for avatarize" in process.stderr


def test_database_advice_makes_the_summary_matrix_pass():
    from gpu_avatar.demo import load_hospital_database

    db = load_hospital_database()
    advice = ga.advise_database(db, ncp=5, seed=0, candidates=[5, 20, 50])
    assert advice.k == 20 and advice.overrides == {}
    assert advice.candidates.loc[5, "passed"] == False  # noqa: E712 (a numpy bool)
    result = ga.avatarize_database(db, parameters=advice.parameters, overrides=advice.overrides)
    summary = result.metrics_summary()
    assert summary["passed"].all()
    assert summary["hidden_rate"].min() == advice.candidates.loc[20, "worst hidden_rate"]
    # k = 50 is capped below the 50 doctors; a table that small varies from seed to seed:
    # judged over three draws, its worst hidden rate is below the one seed's
    robust = ga.advise_database(db, ncp=5, seed=0, candidates=[20, 50], repeats=3)
    one_seed = advice.candidates.loc[20, "worst hidden_rate"]
    assert robust.candidates.loc[20, "worst hidden_rate"] < one_seed
    capped = ga.advise_database(db, ncp=5, seed=0, candidates=[50])
    assert capped.k == 50 and capped.overrides == {"doctor": {"k": 49}}


def test_database_advice_takes_targets_and_keeps_a_table_s_own_k():
    from gpu_avatar.demo import load_hospital_database

    db = load_hospital_database()
    with pytest.raises(ga.AvatarError, match=r"targets names \['closest_rate'\], not among the "
                       r"privacy metrics the advice judges: hidden_rate, local_cloaking$"):
        ga.advise_database(db, targets={"closest_rate": 90})  # a summary cell's are judged
    advice = ga.advise_database(db, ncp=5, seed=0, candidates=[50], overrides={"doctor": {"k": 30}},
                                targets={"hidden_rate": 80})
    assert advice.targets["worst hidden_rate"].threshold == pytest.approx(81.6)  # 2 % margin
    assert advice.targets["worst local_cloaking"].threshold == pytest.approx(5.1)  # the default
    assert "worst hidden_rate > 81.6" in advice.reason
    assert advice.overrides == {"doctor": {"k": 30}}  # not capped to 49 as a k of the sweep's


def test_the_gpu_sweep_equals_the_cpu_sweep(gpu, aids):
    df, types = aids
    sample = df.iloc[:400]
    # k = 20 passes at this seed (k = 12 did by 0.45 point of hidden rate, before the shares
    # were calibrated: 40 seeds move it by -0.16 +/- 0.19 point, noise)
    on_cpu = ga.advise(sample, types=types, seed=0, candidates=[5, 20], backend="cpu")
    on_gpu = ga.advise(sample, types=types, seed=0, candidates=[5, 20], backend=gpu)
    assert on_gpu.k == on_cpu.k and on_gpu.parameters.backend == "gpu"
    pd.testing.assert_frame_equal(on_gpu.candidates, on_cpu.candidates, rtol=1e-9)


def test_a_dense_table_gets_a_k_whose_avatars_meet_every_target_with_another_seed():
    # few columns, tightly packed rows: DCR stays below the former absolute 0.2 at every k,
    # which made advise find nothing; measured beside its baseline, it no longer blocks
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(1500, 3)).round(3) + 0.0005, columns=["a", "b", "c"])
    advice = ga.advise(df, seed=5, candidates=[50, 100, 150])
    assert (advice.candidates["distance_to_closest"] < 0.2).all()
    assert advice.k is not None, advice.reason
    frame = ga.avatarize(df, k=advice.k, seed=6).privacy_metrics().to_frame()
    assert frame["passed"].dropna().all(), frame
    assert frame.loc["distance_to_closest", "baseline"] > 0


def test_k_auto_on_the_command_line_takes_candidates_and_names_cli_options(tmp_path, aids):
    df, _ = aids
    table = tmp_path / "aids.csv"
    df.sample(300, random_state=0).to_csv(table, index=False)
    process = run_cli("avatarize", table, tmp_path / "avatars.csv", "--k", "auto",
                      "--candidates", "3", "4", "--types", "pidnum=identifier", "--seed", "0")
    assert process.returncode != 0
    assert "no candidate k in [3, 4]" in process.stderr
    assert "--candidates K ..." in process.stderr and "candidates=[" not in process.stderr
    process = run_cli("avatarize", table, tmp_path / "avatars.csv", "--k", "5",
                      "--candidates", "3", "4")
    assert process.returncode == 2 and "add --k auto" in process.stderr


def test_the_sweep_counts_copies_of_unique_rows_and_prefers_candidates_without():
    """A coarse table: each candidate's copies of unique rows are counted as avatarize's
    release holds them (redrawn too), and a passing candidate without any is preferred."""
    from gpu_avatar.advice import _recommend

    rng = np.random.default_rng(3)
    df = pd.DataFrame({c: rng.choice(list("xyzw")[:m], 300)
                       for c, m in zip("abcdef", (3, 2, 3, 3, 2, 4), strict=True)})
    for mode in ("keep", "redraw"):
        advice = ga.advise(df, seed=0, candidates=[5, 10], backend="cpu", unique_copies=mode)
        result = ga.avatarize(df, k=5, seed=0, backend="cpu", unique_copies=mode)
        shared = result.privacy_metrics().exact_copies_shared
        assert advice.candidates.loc[5, "unique_copies"] == shared.get(1, 0)
    table = pd.DataFrame({"k": [5, 10], "unique_copies": [0, 4], "hellinger_mean": [0.2, 0.1],
                          "correlation_difference_ratio": [1.0, 1.0],
                          "passed": [True, True]}).set_index("k")
    run = ga.AvatarParameters()
    assert _recommend(table, {}, run, 0.02).k == 5  # more signal lost, but no copy
    table["unique_copies"] = [3, 4]
    advice = _recommend(table, {}, run, 0.02)
    assert advice.k == 5 and "unique_copies='redraw'" in advice.reason
