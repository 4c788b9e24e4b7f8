"""The column plan of one table (``types``): pseudonyms, excluded columns reattached, dropped
columns, the same from Python, a streamed run and the command line (issue #26).

The table is the bundled AIDS table (ACTG 175) with a patient code repeated over two rows per
patient, as a visit-level export holds it, and a site code."""

from __future__ import annotations

import hashlib
import hmac
import os

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.cli import main
from gpu_avatar.metrics.signal import categorical_hellinger

KEY = "9f1c0b7e5d3a2c4b6e8f0a1b2c3d4e5f"
OTHER_KEY = "00112233445566778899aabbccddeeff"
KEY_ENV = "GA_TEST_PSEUDONYM_KEY"
HMAC = f"pseudonym:hmac:key_env={KEY_ENV}"


@pytest.fixture(scope="module")
def visits(aids) -> tuple[pd.DataFrame, dict]:
    """600 AIDS rows, two per patient (``code``), and a site per patient."""
    df = aids.df.iloc[:600].reset_index(drop=True).copy()
    rng = np.random.default_rng(0)
    df["code"] = [f"PAT-{i // 2:05d}" for i in range(len(df))]
    df["site"] = np.repeat(rng.choice(["Paris", "Lyon", "Lille", "Nantes"], 300,
                                      p=[0.4, 0.3, 0.2, 0.1]), 2)
    return df, dict(aids.types)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def keyed(value: str, key: str = KEY, length: int = 16) -> str:
    return hmac.new(key.encode(), value.encode(), hashlib.sha256).hexdigest()[:length]


STRATEGIES = ["identifier", "pseudonym:integer", "pseudonym:pattern:P{:05d}", "pseudonym:uuid4",
              "pseudonym:constant:REDACTED", HMAC, "pseudonym:fake:email,locale=fr_FR"]


@pytest.mark.parametrize("declared", STRATEGIES)
def test_every_strategy_releases_no_original_value_and_keeps_one_pseudonym_per_person(
        visits, key, declared):
    df, types = visits
    before = df.copy()
    result = ga.avatarize(df, k=10, seed=0, types={**types, "code": declared})
    pd.testing.assert_frame_equal(df, before)  # the input untouched
    released = result.avatars["code"]
    assert released.notna().all() and not set(released.astype(str)) & set(df["code"])
    unshuffled = result.sensitive_unshuffled_avatars["code"]
    if declared == "identifier":  # fresh values by released position: one per avatar
        assert released.is_unique
        return
    # a pseudonym of the original's value: a patient's two avatars share one
    per_patient = unshuffled.groupby(df["code"].to_numpy()).nunique()
    assert (per_patient == 1).all()
    if declared != "pseudonym:constant:REDACTED":  # one patient, one pseudonym, and back
        assert unshuffled.nunique() == df["code"].nunique() == 300
    if declared == HMAC:
        assert unshuffled.tolist() == [keyed(code) for code in df["code"]]
    if declared.startswith("pseudonym:fake"):
        assert released.str.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+").all()


def test_hmac_is_the_same_in_two_runs_and_a_streamed_run_and_differs_by_key(
        visits, key, tmp_path, monkeypatch):
    df, types = visits
    types = {**types, "code": HMAC}
    first = ga.avatarize(df, k=10, seed=0, types=types).avatars["code"]
    second = ga.avatarize(df, k=10, seed=7, types=types).avatars["code"]
    assert set(first) == set(second) == {keyed(code) for code in df["code"]}
    source = tmp_path / "visits.parquet"
    df.to_parquet(source)
    ga.avatarize_parquet(source, tmp_path / "streamed", k=10, seed=3, batch_size=250,
                         types={**types, "site": "dropped"}, backend="cpu")
    streamed = pd.read_parquet(tmp_path / "streamed")
    assert set(streamed["code"]) == set(first) and "site" not in streamed.columns
    monkeypatch.setenv(KEY_ENV, OTHER_KEY)
    other = ga.avatarize(df, k=10, seed=0, types=types).avatars["code"]
    assert not set(other) & set(first)


def test_a_missing_key_is_said_before_any_work_and_the_key_is_never_shown(visits, monkeypatch):
    df, types = visits
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ga.AvatarError, match=KEY_ENV):
        ga.avatarize(df, k=10, seed=0, types={**types, "code": HMAC})
    with pytest.raises(ga.AvatarError, match="never given as a value"):
        ga.avatarize(df, k=10, types={**types, "code": f"pseudonym:hmac:key={KEY}"})


def test_excluded_by_row_order_is_the_own_value_and_counts_in_the_direct_matches(visits, key):
    df, types = visits
    df = df.assign(badge=[f"B{i:04d}" for i in range(len(df))])  # unique: a direct match
    types = {**types, "code": HMAC, "badge": "excluded:row_order"}
    result = ga.avatarize(df, k=10, seed=0, types=types)
    unshuffled = result.sensitive_unshuffled_avatars
    assert unshuffled["badge"].tolist() == df["badge"].tolist()
    assert {c.column for c in result.knowingly_released} == {"badge", "code"}
    privacy = result.privacy_metrics()
    assert privacy.column_direct_match_protection_per_variable["badge"] == 0.0
    assert privacy.column_direct_match_protection == 0.0  # the verdict sees it
    verdict = ga.release_verdict(privacy)
    assert verdict.answer != ga.metrics.verdict.MEETS
    assert "column_direct_match_protection" in [f.name for f in verdict.reasons]


def test_excluded_by_coordinate_similarity_keeps_the_marginal(visits):
    df, types = visits
    result = ga.avatarize(df, k=10, seed=0, types={**types, "code": "identifier",
                                                      "site": "excluded:coordinate_similarity"})
    released = result.avatars["site"]
    assert set(released) <= set(df["site"]) and released.notna().all()
    assert categorical_hellinger(df["site"], released, ga.resolve_backend("cpu")) < 0.1
    # a real value, of the original nearest to the avatar: not simply the own one
    own = (result.sensitive_unshuffled_avatars["site"] == df["site"]).mean()
    assert own < 0.95
    assert "site" in {c.column for c in result.knowingly_released}  # said, though not flagged


def test_a_dropped_column_is_not_released_and_the_metrics_run_without_it(visits):
    df, types = visits
    result = ga.avatarize(df, k=10, seed=0, types={**types, "code": "dropped",
                                                      "site": "dropped"})
    assert result.avatars.columns.tolist() == [c for c in df.columns
                                               if c not in ("code", "site")]
    assert 0 <= result.privacy_metrics().hidden_rate <= 100
    assert result.signal_metrics().hellinger_mean < 0.2


def test_the_command_line_takes_the_plan_and_refuses_a_key_given_as_a_value(
        visits, key, tmp_path, capsys):
    df, _ = visits
    source = tmp_path / "visits.csv"
    df[["code", "site", "age", "wtkg", "gender", "cd40"]].to_csv(source, index=False)
    output = tmp_path / "avatars.csv"
    refused = main(["avatarize", str(source), str(output), "--k", "10", "--quiet",
                    "--column", f"code=pseudonym:hmac:key={KEY}"])
    assert refused != 0 and not output.exists()
    assert main(["avatarize", str(source), str(output), "--k", "10", "--seed", "0", "--quiet",
                 "--column", f"code={HMAC}", "site=excluded:coordinate_similarity",
                 "--report", str(tmp_path / "report.html")]) == 0
    released = pd.read_csv(output)
    assert set(released["code"]) <= {keyed(code) for code in df["code"]}
    said = capsys.readouterr()
    written = [p.read_bytes() for p in tmp_path.iterdir() if p.is_file()]
    for text in (said.out.encode(), said.err.encode(), *written):
        assert KEY.encode() not in text
    assert os.environ[KEY_ENV] == KEY  # read, not consumed


def test_a_pseudonym_is_kept_exactly_or_refused(visits):
    df, types = visits
    constant = {"strategy": "constant", "value": 0}
    assert ga.avatarize(df.assign(code=np.arange(len(df)) + 1), k=10, seed=0, types={
        **types, "code": constant}).avatars["code"].eq(0).all()  # an integer, not "0"
    with pytest.raises(ga.AvatarError, match="does not read back from its text form"):
        ga.avatarize(df, k=10, types={**types, "code": {"strategy": "constant",
                                                        "value": "x,y=z"}})


def test_a_mistyped_kind_on_the_command_line_repeats_no_option(visits, tmp_path, capsys):
    df, _ = visits
    source = tmp_path / "visits.csv"
    df[["code", "age", "wtkg"]].to_csv(source, index=False)
    for item in (f"code=pseudonim:hmac:key={KEY}", f"code=pseudonym:hmac:length={KEY}"):
        assert main(["avatarize", str(source), str(tmp_path / "a.csv"), "--quiet",
                     "--column", item]) != 0
        said = capsys.readouterr()
        assert KEY not in said.out + said.err and "code" in said.err
