"""Pseudonyms across the tables of a database (issue #26): an entity (one patient identified in
tables no link joins) gets one pseudonym per original value in every table, a pseudonymized
primary key passes its pseudonyms to its children's foreign keys, from Python and from YAML.

The tutorial database (``patient``, ``doctor``, ``visit`` in ``tests/data``) with a ``lab``
table holding each patient's code, as a lab export does, linked to nothing."""

from __future__ import annotations

import hashlib
import hmac

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset

import gpu_avatar as ga
from gpu_avatar.cli import main

KEY_ENV = "GA_TEST_ENTITY_KEY"
KEY = "5e1d9a7c3b2f4e6d8c0b1a2f3e4d5c6b"
STRATEGIES = ["pseudonym:integer", "pseudonym:pattern:P{:05d}", "pseudonym:uuid4",
              f"pseudonym:hmac:key_env={KEY_ENV}", "pseudonym:fake:name"]


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    tables = {name: read_dataset(f"{name}.csv") for name in ("patient", "doctor", "visit")}
    patient = tables["patient"].assign(code=lambda t: [f"PAT{p:04d}" for p in t["p_id"]])
    rng = np.random.default_rng(0)
    codes = rng.choice(patient["code"], 300)
    tables["patient"] = patient
    tables["lab"] = pd.DataFrame({"lab_id": np.arange(300), "patient_code": codes,
                                  "hba1c": rng.normal(6, 1, 300).round(1)})
    return tables


def database(tables: dict[str, pd.DataFrame], pseudonym: str) -> ga.Database:
    db = ga.Database()
    db.add_table("patient", tables["patient"], primary_key="p_id")
    db.add_table("doctor", tables["doctor"], primary_key="d_id")
    db.add_table("visit", tables["visit"], primary_key="visit_id")
    db.add_table("lab", tables["lab"], primary_key="lab_id")
    db.add_link("patient", "p_id", "visit", "patient_id")
    db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
    return db.add_entity("patient", columns={"patient": "code", "lab": "patient_code"},
                         pseudonym=pseudonym)


@pytest.mark.parametrize("pseudonym", STRATEGIES)
def test_an_entity_gets_one_pseudonym_per_person_in_every_table(tables, pseudonym, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    result = ga.avatarize_database(database(tables, pseudonym), k=5, seed=0)
    unshuffled = result.sensitive_unshuffled_tables
    mapping = dict(zip(tables["patient"]["code"], unshuffled["patient"]["code"], strict=True))
    assert len(set(mapping.values())) == len(mapping)  # one pseudonym per patient
    # the lab rows of a patient carry that patient's pseudonym: the tables still join
    assert unshuffled["lab"]["patient_code"].tolist() == [
        mapping[code] for code in tables["lab"]["patient_code"]]
    originals = set(tables["patient"]["code"])
    for name, column in (("patient", "code"), ("lab", "patient_code")):
        assert not set(result.tables[name][column].astype(str)) & originals
    if pseudonym.startswith("pseudonym:hmac"):
        assert mapping["PAT0000"] == hmac.new(KEY.encode(), b"PAT0000",
                                              hashlib.sha256).hexdigest()[:16]
    released = {c.column for c in result.knowingly_released}
    assert {"code", "patient_code"} <= released


def test_a_pseudonymized_primary_key_passes_its_pseudonyms_to_the_foreign_keys(tables):
    db = database(tables, "pseudonym:integer")
    db.tables["doctor"].types["d_id"] = "pseudonym:pattern:pattern=DR{:03d}"
    result = ga.avatarize_database(db, k=5, seed=0)
    doctors, visits = result.tables["doctor"], result.tables["visit"]
    assert doctors["d_id"].str.fullmatch(r"DR\d{3}").all() and doctors["d_id"].is_unique
    assert visits["doctor_id"].isin(doctors["d_id"]).all()  # referential integrity
    unshuffled = result.sensitive_unshuffled_tables["doctor"]["d_id"]
    assert len(unshuffled) == len(tables["doctor"])


def test_a_foreign_key_or_a_constant_cannot_carry_an_entity(tables):
    db = database(tables, "pseudonym:integer")
    db.add_entity("visitor", columns={"visit": "patient_id"})
    with pytest.raises(ga.AvatarError, match="foreign keys, which take their parent's key"):
        ga.avatarize_database(db, k=5, seed=0)
    with pytest.raises(ga.AvatarError, match="no pseudonym by value"):
        database(tables, "pseudonym:constant:X")
    with pytest.raises(ga.AvatarError, match="already in entity 'patient'"):
        database(tables, "pseudonym:integer").add_entity("again", columns={"lab":
                                                                             "patient_code"})


def test_yaml_entities(tables, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    for name, table in tables.items():
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    config = tmp_path / "db.yaml"
    config.write_text(f"""
k: 5
seed: 0
tables:
  patient: {{path: patient.csv, primary_key: p_id}}
  doctor: {{path: doctor.csv, primary_key: d_id}}
  visit: {{path: visit.csv, primary_key: visit_id}}
  lab: {{path: lab.csv, primary_key: lab_id}}
links:
  - {{parent: patient, child: visit, foreign_key: patient_id}}
  - {{parent: doctor, child: visit, foreign_key: doctor_id, method: minimum_distance}}
entities:
  patient: {{columns: {{patient: code, lab: patient_code}},
            pseudonym: "pseudonym:hmac:key_env={KEY_ENV}"}}
""")
    assert main(["database", str(config), str(tmp_path / "out"), "--quiet"]) == 0
    patients = pd.read_csv(tmp_path / "out" / "patient.csv")
    labs = pd.read_csv(tmp_path / "out" / "lab.csv")
    assert labs["patient_code"].isin(patients["code"]).all()  # they still join
    for path in (tmp_path / "out").iterdir():
        assert KEY.encode() not in path.read_bytes()


def test_a_database_table_drops_and_reattaches_its_columns(tables, tmp_path):
    patient = tables["patient"].assign(
        note=[f"note {i}" for i in range(len(tables["patient"]))],
        site=np.random.default_rng(1).choice(["A", "B", "C"], len(tables["patient"])))
    db = ga.Database()
    db.add_table("patient", patient, primary_key="p_id",
                 types={"code": "identifier", "note": "dropped",
                        "site": "excluded:coordinate_similarity"})
    db.add_table("visit", tables["visit"].drop(columns="doctor_id"), primary_key="visit_id")
    db.add_link("patient", "p_id", "visit", "patient_id")
    result = ga.avatarize_database(db, k=5, seed=0)
    released = result.tables["patient"]
    assert "note" not in released.columns and set(released["site"]) <= {"A", "B", "C"}
    assert result.tables["visit"]["patient_id"].isin(released["p_id"]).all()
    scenarios = result.privacy_metrics()  # the metrics run without the dropped column
    assert scenarios is not None
    ga.write_report(result, tmp_path / "report.html")
    assert (tmp_path / "report.html").stat().st_size > 0
