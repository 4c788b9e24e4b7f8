"""The plan (``ga.plan``, ``ga.Plan``, ``--plan``, ``gpu-avatar plan``): proposed with its
evidence, reviewed in one file, taken by every entry point; a plan awaiting review refuses
the run, quoting no value of the data."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.cli import main

SECRET = "SECRETCODE"


@pytest.fixture()
def patients() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 120
    return pd.DataFrame({
        "code": [f"{SECRET}{i:04d}" for i in range(n)],  # a person's code: to review
        "age": rng.integers(20, 90, n),
        "ward": rng.choice(["A", "B", "C"], n),
        "hgb": rng.normal(13, 2, n).round(1),
    })


def _confirmed(plan: ga.Plan) -> ga.Plan:
    for table, proposed in plan.tables.items():
        for name, _ in proposed.awaiting():
            plan.confirm(name, table=table)
    return plan


def test_a_plan_proposes_each_column_with_evidence_and_round_trips(patients, tmp_path):
    plan = ga.plan(patients)
    table = plan.table()
    assert list(table.columns) == list(patients.columns)
    assert table.columns["code"].review and table.columns["code"].kind in ("identifier",
                                                                          "dropped")
    assert not any(table.columns[c].review for c in ("age", "ward", "hgb"))
    assert table.columns["age"].kind == "continuous"
    assert table.columns["ward"].kind == "categorical"
    path = tmp_path / "plan.yaml"
    text = plan.to_yaml(path)
    assert SECRET not in text  # the evidence says shapes, never values
    read = ga.Plan.read(path)
    assert read.table().types() == table.types()
    assert [c for c, p in read.table().columns.items() if p.review] == ["code"]


def test_a_plan_awaiting_review_refuses_every_entry_point(patients, tmp_path):
    path = tmp_path / "plan.yaml"
    ga.plan(patients).to_yaml(path)
    for run in (lambda: ga.avatarize(patients, k=5, plan=path),
                lambda: ga.advise(patients, plan=path, candidates=[5]),
                lambda: ga.prepare_release(patients, k=5, plan=path)):
        with pytest.raises(ga.PlanReviewError) as refused:
            run()
        message = str(refused.value)
        assert "code" in message and SECRET not in message
        assert len(message) <= 300 and "\n" not in message
        assert len(refused.value.worded("cli")) <= 300


def test_a_reviewed_plan_decides_the_release(patients, tmp_path):
    plan = _confirmed(ga.plan(patients))
    result = ga.avatarize(patients, k=5, plan=plan, seed=0)
    assert not result.avatars["code"].isin(patients["code"]).any()  # fresh values
    assert result.avatars.shape == patients.shape
    # a declared kind wins over the plan's, and a plan for other columns is refused
    dropped = ga.avatarize(patients, k=5, plan=plan, seed=0, types={"code": "dropped"})
    assert "code" not in dropped.avatars.columns
    with pytest.raises(ga.AvatarError, match="lacks"):
        ga.avatarize(patients.drop(columns="hgb"), k=5, plan=plan)


def test_without_a_plan_the_refusal_points_to_it(patients):
    with pytest.raises(ga.IdentifyingColumnsError) as refused:
        ga.avatarize(patients, k=5)
    assert SECRET not in str(refused.value)
    assert "plan" in refused.value.worded("cli")


def test_the_command_line_writes_a_plan_and_takes_it(patients, tmp_path, capsys):
    source, plan_file, output = (tmp_path / "patients.csv", tmp_path / "plan.yaml",
                                 tmp_path / "avatars.csv")
    patients.to_csv(source, index=False)
    assert main(["plan", str(source), "-o", str(plan_file), "-q"]) == 0
    assert "1 proposal(s) to review" in capsys.readouterr().out
    status = main(["avatarize", str(source), str(output), "--k", "5", "--plan",
                   str(plan_file), "-q"])
    err = capsys.readouterr().err
    assert status == 1 and "await review" in err and SECRET not in err
    assert not output.exists()  # nothing written
    text = plan_file.read_text()
    plan_file.write_text(text[:text.index("\nreview:")])  # the review done: the list removed
    status = main(["avatarize", str(source), str(output), "--k", "5", "--plan",
                   str(plan_file), "--seed", "0", "-q"])
    assert status == 0, capsys.readouterr().err
    released = pd.read_csv(output)
    assert len(released) == len(patients) and not released["code"].isin(patients["code"]).any()


@pytest.fixture()
def hospital() -> ga.Database:
    """Wards (a reference table), patients, their visits, and a lab table that holds the
    patients' codes without a link."""
    rng = np.random.default_rng(1)
    wards = pd.DataFrame({"ward_id": range(1, 6), "ward_name": [
        "Cardiology unit", "Neurology unit", "Oncology unit", "Pediatrics unit", "Surgery unit"]})
    patients = pd.DataFrame({"pid": range(1, 101), "age": rng.integers(20, 90, 100),
                             "sex": rng.choice(["F", "M"], 100)})
    visits = pd.DataFrame({"vid": range(1, 401), "pid": rng.integers(1, 101, 400),
                           "ward_id": rng.integers(1, 6, 400), "los": rng.integers(1, 20, 400)})
    lab = pd.DataFrame({"lab_id": range(1, 101), "patient": rng.permutation(np.arange(1, 101)),
                        "crp": rng.normal(5, 2, 100).round(2)})
    db = ga.Database()
    db.add_table("ward", wards, "ward_id").add_table("patient", patients, "pid")
    db.add_table("visit", visits, "vid").add_table("lab", lab, "lab_id")
    db.add_link("patient", "pid", "visit", "pid").add_link("ward", "ward_id", "visit", "ward_id")
    return db


def test_a_database_plan_proposes_treatments_and_entities(hospital, tmp_path):
    plan = ga.plan(hospital)
    assert plan.tables["ward"].treatment == "copy" and plan.tables["ward"].treatment_review
    assert plan.tables["patient"].treatment == "anonymize"
    assert "pid" not in plan.tables["patient"].columns  # keys are no variables
    assert [e["columns"] for e in plan.entities.values()] == [{"patient": "pid", "lab": "patient"}]
    with pytest.raises(ga.PlanReviewError, match="ward.treatment"):
        ga.avatarize_database(hospital, k=5, plan=plan)
    path = tmp_path / "plan.yaml"
    _confirmed(plan).to_yaml(path)
    result = ga.avatarize_database(hospital, k=5, plan=path, seed=0)
    assert result.treatments == {"ward": "copy"}
    pd.testing.assert_frame_equal(result.treated["ward"], hospital.tables["ward"].data)
    assert set(result.tables["visit"]["ward_id"]) <= set(hospital.tables["ward"].data["ward_id"])
    assert "copied as it is" in result.treatments_line()
    written = result.to_sql(f"sqlite:///{tmp_path / 'release.db'}")
    assert written["ward"] == 5 and written["visit"] == 400
    with sqlite3.connect(tmp_path / "release.db") as connection:
        assert pd.read_sql("select * from ward", connection)["ward_name"].tolist() == \
            hospital.tables["ward"].data["ward_name"].tolist()


@pytest.mark.parametrize("treatment", ["pseudonymize", "purge", "ignore"])
def test_each_treatment_releases_what_it_says(hospital, treatment):
    plan = _confirmed(ga.plan(hospital))
    if treatment == "pseudonymize":
        plan.treat("ward", treatment)
    else:  # purged or left out: nothing may refer to it
        plan.treat("lab", treatment)
    result = ga.avatarize_database(hospital, k=5, plan=plan, seed=0)
    if treatment == "pseudonymize":
        ward = result.treated["ward"]
        original = hospital.tables["ward"].data
        assert not ward["ward_id"].isin(original["ward_id"]).any()
        assert ward["ward_name"].tolist() == original["ward_name"].tolist()  # its labels kept
        assert set(result.tables["visit"]["ward_id"]) <= set(ward["ward_id"])
    elif treatment == "purge":
        assert result.treated["lab"].empty
        assert list(result.treated["lab"].columns) == list(hospital.tables["lab"].data.columns)
    else:
        assert "lab" not in result.treated and "lab" not in result.tables
    assert result.treatments == {"ward": "copy", "lab": treatment} if treatment != \
        "pseudonymize" else {"ward": "pseudonymize"}


def test_a_treatment_the_links_forbid_is_refused_with_the_tables_named(hospital):
    plan = _confirmed(ga.plan(hospital)).treat("patient", "purge")
    with pytest.raises(ga.AvatarError, match="'visit' refers to 'patient'"):
        ga.avatarize_database(hospital, k=5, plan=plan)
    plan = _confirmed(ga.plan(hospital)).treat("visit", "copy")
    with pytest.raises(ga.AvatarError, match="only a table with no parent"):
        ga.avatarize_database(hospital, k=5, plan=plan)


def test_the_database_yaml_holds_the_plan(hospital, tmp_path, capsys):
    for name, table in hospital.tables.items():
        table.data.to_csv(tmp_path / f"{name}.csv", index=False)
    config = tmp_path / "hospital.yaml"
    config.write_text(
        "k: 5\nseed: 0\ntables:\n"
        "  ward: {path: ward.csv, primary_key: ward_id}\n"
        "  patient: {path: patient.csv, primary_key: pid}\n"
        "  visit: {path: visit.csv, primary_key: vid}\n"
        "  lab: {path: lab.csv, primary_key: lab_id}\n"
        "links:\n"
        "  - {parent: patient, child: visit, foreign_key: pid}\n"
        "  - {parent: ward, child: visit, foreign_key: ward_id}\n"
        "plan: plan.yaml\n")
    plan_file = tmp_path / "plan.yaml"
    assert main(["plan", str(config), "-o", str(plan_file), "-q"]) == 0
    capsys.readouterr()
    assert main(["database", str(config), str(tmp_path / "out"), "--no-report", "-q"]) == 1
    assert "await review" in capsys.readouterr().err
    _confirmed(ga.Plan.read(plan_file)).to_yaml(plan_file)
    assert main(["database", str(config), str(tmp_path / "out"), "--no-report", "-q"]) == 0
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "ward copied as it is" in summary
    assert len(pd.read_csv(tmp_path / "out" / "ward.csv")) == 5


def test_a_streamed_run_takes_the_plan(patients, tmp_path):
    pytest.importorskip("pyarrow")
    source = tmp_path / "patients.parquet"
    patients.to_parquet(source)
    plan = ga.plan(patients)
    with pytest.raises(ga.PlanReviewError):
        ga.avatarize_parquet(source, tmp_path / "out", k=5, batch_size=60, plan=plan)
    run = ga.avatarize_parquet(source, tmp_path / "out", k=5, batch_size=60, seed=0,
                               plan=_confirmed(plan), metrics=False)
    released = pd.read_parquet(tmp_path / "out")
    assert len(released) == len(patients) == run.n_rows
    assert not released["code"].isin(patients["code"]).any()


def test_a_plan_is_proposed_for_a_folder_and_a_database_url(hospital, tmp_path):
    folder = tmp_path / "tables"
    folder.mkdir()
    with sqlite3.connect(tmp_path / "hospital.db") as connection:
        for name, table in hospital.tables.items():
            table.data.to_csv(folder / f"{name}.csv", index=False)
            numeric = pd.api.types.is_numeric_dtype
            columns = ", ".join(f"{c} {'REAL' if numeric(table.data[c]) else 'TEXT'}"
                                + (" PRIMARY KEY" if c == table.primary_key else "")
                                for c in table.data.columns)
            connection.execute(f"CREATE TABLE {name} ({columns})")
            table.data.to_sql(name, connection, index=False, if_exists="append")
    from_folder = ga.plan(folder)
    assert sorted(from_folder.tables) == sorted(hospital.tables)
    from_url = ga.plan(f"sqlite:///{tmp_path / 'hospital.db'}")
    assert sorted(from_url.tables) == sorted(hospital.tables)
    from_url.to_yaml(tmp_path / "url.yaml")
    assert ga.Plan.read(tmp_path / "url.yaml").tables["lab"].types() == \
        from_url.tables["lab"].types()


def test_the_database_yaml_may_hold_the_review_itself(hospital, tmp_path, capsys):
    hospital.tables["patient"].data.to_csv(tmp_path / "patient.csv", index=False)
    hospital.tables["visit"].data.drop(columns="ward_id").to_csv(tmp_path / "visit.csv",
                                                                 index=False)
    config = tmp_path / "hospital.yaml"
    body = ("k: 5\nseed: 0\ntables:\n"
            "  patient: {path: patient.csv, primary_key: pid, types: {age: continuous}, "
            "review: [age]}\n"
            "  visit: {path: visit.csv, primary_key: vid}\n"
            "links:\n  - {parent: patient, child: visit, foreign_key: pid}\n")
    config.write_text(body)
    assert main(["database", str(config), str(tmp_path / "out"), "--no-report", "-q"]) == 1
    assert "patient.age" in capsys.readouterr().err
    config.write_text(body.replace(", review: [age]", ""))
    assert main(["database", str(config), str(tmp_path / "out"), "--no-report", "-q"]) == 0


def test_a_plan_file_with_an_unknown_kind_or_key_is_refused_in_one_line(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("types: {age: number}\n")
    with pytest.raises(ga.AvatarError, match="plan.yaml") as refused:
        ga.Plan.read(path)
    assert "\n" not in str(refused.value)
    path.write_text("types: {age: continuous}\nreview: [sex]\n")
    with pytest.raises(ga.AvatarError, match="no kind"):
        ga.Plan.read(path)
    path.write_text("types: {age: continuous}\nreviewed: [age]\n")
    with pytest.raises(ga.AvatarError, match="unknown key"):
        ga.Plan.read(path)


def test_a_table_set_apart_is_checked_as_an_avatarized_one(hospital):
    """A copied table releases its values as they are: its undeclared names are refused, and
    a declared identifier cannot be copied (it would be released as it is)."""
    people = hospital.tables["ward"].data.assign(
        head=[f"{first} {last}" for first, last in zip(
            ["Maëlle", "Jean", "Anna", "Paul", "Lea"], ["DUBOIS", "MARTIN", "PETIT", "ROUX",
                                                        "MOREAU"], strict=True)])
    db = ga.Database().add_table("ward", people, "ward_id", treatment="copy")
    db.add_table("visit", hospital.tables["visit"].data.drop(columns="pid"), "vid")
    db.add_link("ward", "ward_id", "visit", "ward_id")
    with pytest.raises(ga.IdentifyingColumnsError) as refused:
        ga.avatarize_database(db, k=5, seed=0)
    assert "ward.head" in str(refused.value) and "DUBOIS" not in str(refused.value)
    db.tables["ward"].types["head"] = "identifier"
    with pytest.raises(ga.AvatarError, match="to be copied but declares head"):
        ga.avatarize_database(db, k=5, seed=0)


def test_a_plan_for_other_data_is_refused(patients, hospital):
    plan = _confirmed(ga.plan(patients))
    with pytest.raises(ga.AvatarError, match="no kind for column"):
        ga.avatarize(patients.assign(nir="x"), k=5, plan=plan)
    other = ga.Plan({"other": plan.table()})  # a database plan of another database
    with pytest.raises(ga.AvatarError, match="proposed for tables"):
        ga.avatarize_database(hospital, k=5, plan=other)


def test_the_yaml_s_own_review_stays_in_its_proposed_plan_and_one_plan_is_taken(
        hospital, tmp_path, capsys):
    hospital.tables["patient"].data.to_csv(tmp_path / "patient.csv", index=False)
    hospital.tables["visit"].data.drop(columns="ward_id").to_csv(tmp_path / "visit.csv",
                                                                 index=False)
    config = tmp_path / "hospital.yaml"
    config.write_text(
        "k: 5\nseed: 0\ntables:\n"
        "  patient: {path: patient.csv, primary_key: pid, types: {age: continuous}, "
        "review: [age]}\n"
        "  visit: {path: visit.csv, primary_key: vid}\n"
        "links:\n  - {parent: patient, child: visit, foreign_key: pid}\n")
    assert ga.plan(config).tables["patient"].columns["age"].review
    ga.plan(config).to_yaml(tmp_path / "plan.yaml")
    assert main(["database", str(config), str(tmp_path / "out"), "--plan",
                 str(tmp_path / "plan.yaml"), "--no-report", "-q"]) == 2
    assert "keep one of them" in capsys.readouterr().err
