"""The rules where users reach them: ``avatarize(df, rules=...)``, a database table's rules
(within rows, and across a parent's children once relinked), a streamed run, the YAML files
and the CLI; each rule holds on every released row, at little cost to the signal."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.errors import AvatarError

R = ga.rules


@pytest.fixture(scope="module")
def ruled(aids) -> tuple[pd.DataFrame, dict]:
    """AIDS plus an ``end`` date after ``entry``, a ``low_cd4`` flag of cd40 and ``cdsum`` =
    cd40 + cd80; the paper's kinds."""
    df = aids.df.copy()
    df["entry"] = pd.Timestamp("1990-01-01") + pd.to_timedelta(df["age"] * 7, unit="D")
    df["end"] = df["entry"] + pd.to_timedelta(df["days"] + 1, unit="D")
    df["low_cd4"] = df["cd40"] < 200
    df["cdsum"] = df["cd40"] + df["cd80"]
    return df, dict(aids.types)


RULES = [R.Inequality("entry", "end", strict=True), R.Derived("low_cd4", "cd40 < 200"),
         R.SumTo(["cd40", "cd80"], "cdsum")]


def holds(avatars: pd.DataFrame) -> None:
    assert (avatars["end"] > avatars["entry"]).all()
    assert (avatars["low_cd4"] == (avatars["cd40"] < 200)).all()
    assert (avatars["cd40"] + avatars["cd80"] == avatars["cdsum"]).all()


@pytest.mark.parametrize("batch_size", [None, 900])
def test_avatarize_keeps_the_rules_at_little_signal_cost(ruled, batch_size):
    df, types = ruled
    before = df.copy()
    plain = ga.avatarize(df, k=20, ncp=5, seed=0, types=types, batch_size=batch_size)
    result = ga.avatarize(df, k=20, ncp=5, seed=0, types=types, batch_size=batch_size,
                          rules=RULES)
    holds(result.avatars)
    holds(result.sensitive_unshuffled_avatars)
    pd.testing.assert_frame_equal(df, before)  # the input is not changed
    assert list(result.avatars.columns) == list(df.columns)
    assert (result.avatars.dtypes == df.dtypes).all()
    assert dict(result.parameters.types) == types  # the originals' plan, not the encoded one
    gap = (result.signal_metrics().hellinger_mean - plain.signal_metrics().hellinger_mean)
    assert abs(gap) <= 0.02
    table = result.rules_table()
    assert set(table["rule"]) == {r.describe() for r in RULES}
    held = dict(zip(table["rule"], table["held_by"], strict=False))
    assert held["entry < end"] == "encoding" and held["cd40 + cd80 = cdsum"] == "repair"
    assert "rules" in result.timings


def test_the_rules_are_reproducible_and_the_plain_run_unchanged(ruled):
    df, types = ruled
    runs = [ga.avatarize(df, k=20, ncp=5, seed=3, types=types, rules=RULES) for _ in range(2)]
    pd.testing.assert_frame_equal(runs[0].avatars, runs[1].avatars)
    assert ga.avatarize(df, k=20, ncp=5, seed=3, types=types).rules == []


def test_a_rule_the_originals_break_is_refused_in_python_words(ruled):
    df, types = ruled
    with pytest.raises(AvatarError, match=r"rule .end <= entry. \(inequality\): 2139 of the "
                                          r"2139 original rows break it.*keep_exceptions=True"):
        ga.avatarize(df, k=20, seed=0, types=types, rules=[R.Inequality("end", "entry")])


def test_rules_may_name_variables_only(ruled):
    df, types = ruled
    with pytest.raises(AvatarError, match=r"'pidnum' is declared 'identifier', not a variable"):
        ga.avatarize(df, k=20, seed=0, types={**types, "pidnum": "identifier"},
                     rules=[R.Range("pidnum", 0, 10**7)])


def test_a_dropped_column_stays_out_of_a_release_with_rules(tmp_path):
    """The avatars of a dropped column's table have no such column to decode (#37), in
    memory or streamed."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    df = pd.DataFrame({"a": a, "b": a + np.abs(rng.normal(size=200)),
                       "c": rng.choice(list("xyz"), 200), "note": [f"n{i}" for i in range(200)]})
    settings = dict(k=10, seed=0, types={"note": "dropped"}, rules=[R.Inequality("a", "b")])
    result = ga.avatarize(df, **settings)
    (tmp_path / "source").mkdir()
    df.to_parquet(tmp_path / "source" / "part.parquet")
    ga.avatarize_parquet(tmp_path / "source", tmp_path / "out", batch_size=100, **settings)
    for avatars in (result.avatars, pd.read_parquet(tmp_path / "out")):
        assert list(avatars.columns) == ["a", "b", "c"]
        assert (avatars["a"] <= avatars["b"]).all()


def test_a_derived_flag_beside_missing_values_keeps_its_dtype():
    """Where the expression is missing (hgb missing) the repair has nothing to write; the
    rows it writes come at the column's dtype, so the metrics take the release (#37)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"hgb": rng.normal(13, 2, 300), "creat": rng.normal(1, 0.3, 300)})
    df.loc[rng.choice(300, 5, replace=False), "hgb"] = np.nan
    df.loc[rng.choice(300, 8, replace=False), "creat"] = np.nan
    df["anemia"] = df["hgb"] < 12
    result = ga.avatarize(df, k=10, seed=0, rules=[R.Derived("anemia", "hgb < 12")])
    assert (result.avatars.dtypes == df.dtypes).all()
    computed = result.avatars["hgb"] < 12
    assert (result.avatars["anemia"] == computed)[result.avatars["hgb"].notna()].all()
    assert result.privacy_metrics().hidden_rate is not None


def test_fixed_combinations_refuse_to_release_modalities_grouped_as_rare(ruled):
    """The combinations are the originals': they would bring the grouped values back."""
    df, types = ruled
    rule = R.FixedCombinations(("hemo", "homo"))
    with pytest.raises(AvatarError, match=r"rare modalities of \['hemo', 'homo'\] included"):
        ga.avatarize(df, k=20, seed=0, types=types, rare_modalities=5, rules=[rule])
    ga.avatarize(df, k=20, seed=0, types=types, rare_modalities=5, rules=[rule],
                 column_rare_modalities={"hemo": None, "homo": None})  # left out: taken


def test_yaml_mappings_are_rules_too(ruled):
    df, types = ruled
    result = ga.avatarize(df, k=20, ncp=5, seed=0, types=types, rules=[
        {"rule": "inequality", "low": "entry", "high": "end", "strict": True}])
    assert (result.avatars["end"] > result.avatars["entry"]).all()
    with pytest.raises(AvatarError, match=r"rules\[0\]: .* names no rule"):
        ga.avatarize(df, k=20, seed=0, types=types, rules=[{"low": "entry"}])


# -------------------------------------------------------------------------------- database
@pytest.fixture(scope="module")
def hospital() -> dict[str, pd.DataFrame]:
    """Patients, and their visits: increasing dates per patient, the last one of a dead
    patient an outcome 'death' (one per patient), the others 'visit'."""
    rng = np.random.default_rng(0)
    n = 300
    patients = pd.DataFrame({"pid": np.arange(n), "age": rng.integers(20, 90, n),
                             "sex": rng.choice(["F", "M"], n)})
    counts = rng.integers(1, 6, n)
    owner = np.repeat(patients["pid"].to_numpy(), counts)
    rank = np.concatenate([np.arange(c) for c in counts])
    dead = rng.random(n) < 0.3
    visits = pd.DataFrame({
        "vid": np.arange(len(owner)), "pid": owner,
        "date": pd.Timestamp("2020-01-01") + pd.to_timedelta(
            rank * 30 + rng.integers(0, 20, len(owner)), unit="D"),
        "dose": rng.normal(10, 3, len(owner)).round(1),
        "outcome": np.where(dead[owner] & (rank == counts[owner] - 1), "death", "visit"),
    })
    return {"patients": patients, "visits": visits}


VISIT_RULES = [R.CountPerParent("outcome", "death", by="pid"),
               R.Increasing("date", by="pid", strict=True), R.Range("dose", 0, 25)]


def child_rules_hold(visits: pd.DataFrame) -> None:
    deaths = visits[visits["outcome"] == "death"].groupby("pid").size()
    assert (deaths <= 1).all()
    assert visits["dose"].between(0, 25).all()


def test_a_database_keeps_its_tables_rules(hospital):
    db = ga.Database()
    db.add_table("patients", hospital["patients"], "pid")
    db.add_table("visits", hospital["visits"], "vid", rules=VISIT_RULES)
    db.add_link("patients", "pid", "visits", "pid")
    result = ga.avatarize_database(db, k=5, seed=0)
    visits = result.tables["visits"]
    child_rules_hold(visits)
    assert visits.groupby("pid")["date"].apply(lambda d: d.is_unique).all()  # no tie
    unshuffled = result.sensitive_unshuffled_tables["visits"]  # the rows' order: the rule's
    assert unshuffled.groupby("pid")["date"].apply(lambda d: d.is_monotonic_increasing).all()
    reports = result.table_results["visits"].rules
    assert [r.rule for r in reports] == VISIT_RULES


def test_a_database_refuses_a_child_rule_by_no_foreign_key(hospital):
    db = ga.Database()
    db.add_table("patients", hospital["patients"], "pid")
    db.add_table("visits", hospital["visits"], "vid",
                 rules=[R.CountPerParent("outcome", "death", by="dose", at_most=100)])
    db.add_link("patients", "pid", "visits", "pid")
    with pytest.raises(AvatarError, match=r"by='dose' is no foreign key.*\['pid'\]"):
        ga.avatarize_database(db, k=5, seed=0)


def test_add_table_refuses_a_rule_its_data_break(hospital):
    with pytest.raises(AvatarError, match=r"table 'visits'.*dose.*original rows break it"):
        ga.Database().add_table("visits", hospital["visits"], "vid",
                                rules=[R.Range("dose", 0, 5)])


# ---------------------------------------------------------------------------- YAML and CLI
def database_file(tmp_path, hospital, rules: str) -> str:
    for name, frame in hospital.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    path = tmp_path / "db.yaml"
    path.write_text(
        "k: 5\nseed: 0\ntables:\n"
        "  patients: {path: patients.csv, primary_key: pid}\n"
        "  visits:\n    path: visits.csv\n    primary_key: vid\n"
        "    types: {date: 'datetime:%Y-%m-%d'}\n"
        f"    rules:\n{rules}"
        "links:\n  - {parent: patients, child: visits, foreign_key: pid}\n")
    return str(path)


def test_a_database_file_declares_a_tables_rules(tmp_path, hospital):
    from gpu_avatar.relational.config import load_database_config

    path = database_file(tmp_path, hospital, (
        "      - {rule: count_per_parent, column: outcome, value: death, by: pid}\n"
        "      - {rule: range, column: dose, low: 0, high: 25}\n"))
    config = load_database_config(path)
    assert [r.kind for r in config.database.tables["visits"].rules.rules] == [
        "count_per_parent", "range"]
    result = ga.avatarize_database(config.database, parameters=config.parameters)
    child_rules_hold(result.tables["visits"])


@pytest.mark.parametrize(("rules", "message"), [
    ("      - {rule: range, column: dose, low: 0, high: 5}\n",
     r"db.yaml: table 'visits': rule .* of the 907 original rows break it.*add "
     r"keep_exceptions: true to the rule's entry$"),
    ("      - {rule: ranges, column: dose}\n",
     r"db.yaml: tables.visits.rules\[0\]: .* names no rule; start the entry with rule: one of"),
])
def test_a_database_files_rule_errors_are_in_yaml_words(tmp_path, hospital, rules, message):
    from gpu_avatar.relational.config import load_database_config

    with pytest.raises(AvatarError, match=message):
        load_database_config(database_file(tmp_path, hospital, rules))


def test_the_command_line_takes_a_rules_file(tmp_path, ruled, capsys):
    from cli_helpers import run_main

    df, types = ruled
    df[["age", "wtkg", "cd40", "cd80", "entry", "end"]].to_csv(tmp_path / "in.csv",
                                                               index=False)
    rules = tmp_path / "rules.yaml"
    rules.write_text("- {rule: inequality, low: entry, high: end, strict: true}\n"
                     "- {rule: range, column: wtkg, low: 30, high: 160}\n")
    status, _, err = run_main(capsys, "avatarize", tmp_path / "in.csv", tmp_path / "out.csv",
                              "--k", 10, "--seed", 0, "--rules", rules)
    assert status == 0, err
    out = pd.read_csv(tmp_path / "out.csv", parse_dates=["entry", "end"])
    assert (out["end"] > out["entry"]).all() and out["wtkg"].between(30, 160).all()
    rules.write_text("- {rule: inequality, low: end, high: entry}\n")
    status, _, err = run_main(capsys, "avatarize", tmp_path / "in.csv", tmp_path / "out.csv",
                              "--k", 10, "--seed", 0, "--rules", rules, "--overwrite")
    assert status != 0
    assert "rule 'end <= entry' (inequality): 2139 of the 2139" in err
    assert "add keep_exceptions: true to the rule's entry" in err
    rules.write_text("- {rule: inequality, low: entry}\n")
    status, _, err = run_main(capsys, "avatarize", tmp_path / "in.csv", tmp_path / "out.csv",
                              "--rules", rules, "--overwrite")
    assert status != 0 and f"{rules}: rules[0] (inequality): missing key(s) ['high']" in err


# ------------------------------------------------------------------------------- streaming
def test_a_streamed_run_keeps_its_row_rules_in_every_batch(tmp_path, ruled):
    pytest.importorskip("pyarrow")
    df, types = ruled
    columns = ["age", "wtkg", "cd40", "cd80", "cdsum", "low_cd4", "entry", "end"]
    df[columns].to_parquet(tmp_path / "in.parquet", index=False)
    ga.avatarize_parquet(tmp_path / "in.parquet", tmp_path / "out", k=10, seed=0,
                         batch_size=700, metrics=False, rules=RULES)
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == len(df)
    holds(out)
    batches = json.loads((tmp_path / "out" / "_manifest.json").read_text())["batches"]
    assert len(batches) == 4
    assert all(set(b["rules_rows_repaired"]) == {r.describe() for r in RULES}
               for b in batches.values())
    with pytest.raises(AvatarError, match=r"hold across a parent's children"):
        ga.avatarize_parquet(tmp_path / "in.parquet", tmp_path / "out2", k=10, batch_size=700,
                             rules=[R.Increasing("age", by="cd40")])


# ---------------------------------------------------------------------------------- report
@pytest.mark.parametrize(("language", "title", "held"), [("en", "Rules kept", "encoding"),
                                                         ("fr", "Règles respectées", "encodage")])
def test_the_report_has_a_rules_section(ruled, language, title, held):
    from gpu_avatar.report import result_part

    df, types = ruled
    result = ga.avatarize(df, k=20, ncp=5, seed=0, types=types, rules=RULES)
    part = result_part(result, language=language)
    section = next(s for s in part.sections if s.kind == "rules")
    assert section.title == title
    table = section.blocks[1]
    assert [row[0].text for row in table.rows] == list(result.rules_table(language)["rule"])
    assert table.rows[0][1].text == held
    plain = result_part(ga.avatarize(df, k=20, ncp=5, seed=0, types=types), language=language)
    assert "rules" not in [s.kind for s in plain.sections]
