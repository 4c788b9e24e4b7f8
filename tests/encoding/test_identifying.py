"""The identifying rule's shapes, one small synthetic table each: what is flagged (ids,
person keys, names, free text, e-mails), what is not (measurements distinct on every row,
flags named after an identifier, one rare long label, numbers kept as text), and the
refusal's one line."""

import pickle

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.encoding.identifying import (
    IdentifyingColumn,
    column_finding,
    identifying_columns,
    text_reading,
)


def found(df: pd.DataFrame) -> dict:
    return {c.column: c for c in identifying_columns(df)}


def test_a_survival_time_distinct_on_95_percent_of_rows_is_no_identifier():
    rng = np.random.default_rng(0)
    days = np.round(rng.lognormal(6, 1, 200)).astype(int)
    days[:10] = days[10:20]  # a few ties: 95 % distinct
    df = pd.DataFrame({"survival": days, "status": rng.integers(0, 2, 200)})
    assert found(df) == {}
    distinct = np.unique(np.round(rng.lognormal(7, 1, 400)))[:200]  # never repeated: skew
    assert found(df.assign(survival=rng.permutation(distinct).astype(int))) == {}


def test_a_dense_row_order_code_is_an_identifier_but_a_year_is_not():
    df = pd.DataFrame({"code": np.arange(1, 101), "year": np.arange(1901, 2001),
                       "t": np.arange(100), "x": np.linspace(0, 1, 100)})
    flagged = found(df)
    assert set(flagged) == {"code"}
    assert flagged["code"].label == "distinct on every row"
    assert flagged["code"].proposal == "identifier" and flagged["code"].confidence == "high"
    shuffled = df.assign(code=np.random.default_rng(1).permutation(np.arange(100)))
    assert set(found(shuffled)) == {"code"}  # from 0, in any order


def test_a_subject_code_repeated_over_nine_ages_is_a_person_key():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"Subject": np.repeat(np.arange(1, 27), 9),
                       "age": np.tile(np.arange(8, 17), 26),
                       "height": rng.normal(140, 10, 234).round(1)})
    key = found(df)["Subject"]
    assert key.label == "person key" and key.proposal == "identifier"
    assert "'age'" in key.reason
    # the same rows age by age, subjects as drawn texts: still a key
    long = df.sort_values(["age", "Subject"]).assign(
        Subject=lambda d: d["Subject"].map({i: f"S{i * 37 % 101:03d}" for i in range(1, 27)}))
    assert found(long)["Subject"].label == "person key"


def test_a_ward_or_a_drug_with_many_rows_each_is_no_person_key():
    rng = np.random.default_rng(3)
    n = 2000
    df = pd.DataFrame({"ward": rng.choice([f"W{i}" for i in range(30)], n),
                       "drug": rng.integers(1, 13, n), "visit": rng.integers(1, 6, n),
                       "dose": rng.normal(10, 2, n)})
    assert found(df) == {}
    assert found(df.sort_values(["ward", "dose"])) == {}  # contiguous, a measure ordered
    admitted = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), "D")
    by_date = df.assign(admitted=admitted).sort_values(["ward", "admitted"])
    assert found(by_date) == {}  # dates restart at each ward: nothing a person has
    vitals = pd.DataFrame({"stay": np.repeat(np.arange(200), 12),  # times that go on
                           "charttime": pd.date_range("2020-01-01", periods=2400, freq="3h"),
                           "hr": rng.normal(80, 10, 2400).round()})
    assert found(vitals)["stay"].label == "person key"


def test_sampling_times_restarting_over_contiguous_subjects_make_a_key():
    rng = np.random.default_rng(4)
    samples = rng.integers(8, 12, 12)
    df = pd.DataFrame({"subject": np.repeat(np.arange(101, 113), samples),
                       "hours": np.concatenate([np.sort(rng.uniform(0, 24, k)) for k in samples]),
                       "conc": rng.gamma(4, 1.5, samples.sum())})
    assert found(df)["subject"].label == "person key"


def test_a_two_valued_flag_named_after_an_identifier_is_not_flagged():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"sent_email": rng.choice(["yes", "no"], 300),
                       "phone_service": rng.choice(["Yes", "No", None], 300),
                       "email_opt_in": rng.random(300) < 0.5, "x": rng.normal(size=300)})
    assert found(df) == {}
    assert found(pd.DataFrame({"patient_id": rng.integers(1, 60, 300)}))["patient_id"].label \
        == "name says identifier"


def test_one_rare_long_category_label_is_no_free_text():
    rng = np.random.default_rng(6)
    ethnicity = rng.choice(["White", "Black or African American", "Asian"], 500)
    ethnicity[7] = "Native Hawaiian or Other Pacific Islander"
    assert found(pd.DataFrame({"ethnicity": ethnicity})) == {}


def test_notes_held_by_one_row_each_are_free_text_proposed_dropped():
    notes = [f"seen on day {i} with her son, complains of pain" if i % 3 == 0 else None
             for i in range(90)]
    finding = found(pd.DataFrame({"notes": notes, "x": np.arange(90) % 7}))["notes"]
    assert (finding.label, finding.proposal) == ("free text", "dropped")
    assert "complains" not in finding.reason and "30 texts" in finding.reason


def test_e_mails_are_flagged_without_quoting_them():
    emails = [f"person{i}@example.org" for i in range(40)] * 2
    finding = found(pd.DataFrame({"contact": emails}))["contact"]
    assert finding.label == "e-mail addresses"
    assert "@" not in finding.reason and "person" not in finding.reason


def test_numbers_kept_as_text_for_a_missing_marker_are_not_flagged():
    rng = np.random.default_rng(7)
    values = rng.lognormal(3, 1, 200).round(2).astype(str)
    values[::9] = "."
    column = pd.Series(values, name="crp")
    assert column_finding(column) is None and text_reading(column) == "continuous"
    dates = pd.Series(pd.date_range("2001-01-01", periods=200).strftime("%Y-%m-%d"))
    assert column_finding(dates.where(dates.index % 5 > 0, "NA")) is None
    assert text_reading(dates) == "datetime"
    assert text_reading(pd.Series(["007", "012", "."])) is None  # codes with a leading zero
    numbered = pd.Series(np.arange(1, 201).astype(str)).where(lambda s: s != "50", "-")
    assert column_finding(numbered).label == "distinct on every row"  # as numbers, an id


def test_the_refusal_is_one_line_without_values_and_keeps_its_columns():
    rng = np.random.default_rng(8)
    df = pd.DataFrame({f"identifier_column_{i}": np.arange(60) for i in range(12)})
    df["notes"] = [f"note {i} about the patient seen this morning" for i in range(60)]
    df["x"] = rng.normal(size=60)
    with pytest.raises(ga.IdentifyingColumnsError) as raised:
        ga.avatarize(df, k=5, seed=0)
    error = raised.value
    for entry in ("python", "cli", "yaml"):
        line = error.worded(entry)
        assert "\n" not in line and len(line) <= 300
        assert line.startswith("13 column(s) need a decision before release: "
                               "identifier_column_0 (distinct on every row)")
        assert " more; nothing was released; " in line and "note 1" not in line
    assert "--plan plan.yaml" in error.worded("cli")
    assert "plan: plan.yaml" in error.worded("yaml")
    assert "plan=ga.Plan.read('plan.yaml')" in str(error)
    assert len(error.columns) == 13 and error.columns[-1].proposal == "dropped"
    again = pickle.loads(pickle.dumps(error))  # from a worker process
    assert again.columns == error.columns and str(again) == str(error)
    placed = again.within("a_rather_long_folder_name/and_a_file_name_too.csv")
    assert placed.columns == error.columns and placed.problem.startswith("a_rather_long")
    assert all(len(placed.worded(entry)) <= 300 for entry in ("python", "cli", "yaml"))


def test_a_column_finding_is_a_checked_kind():
    with pytest.raises(ValueError, match="no such proposal"):
        IdentifyingColumn("a", "why", proposal="categorical")


def test_a_person_key_is_sought_in_the_first_rows_of_a_long_table(monkeypatch):
    monkeypatch.setattr("gpu_avatar.encoding.identifying.KEY_ROWS", 100)
    rng = np.random.default_rng(9)
    df = pd.DataFrame({"subject": np.repeat(np.arange(1, 41), 6),
                       "conc": rng.gamma(4, 1.5, 240)})  # subject numbers in row order
    assert found(df)["subject"].label == "person key"
