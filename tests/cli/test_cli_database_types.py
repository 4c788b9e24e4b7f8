"""``--types TABLE.COLUMN=KIND`` on database commands: a column declared in one table, over
what the YAML file or the URL declared, and a table or column the database lacks refused
in one line naming those it has."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from gpu_avatar.cli import main as cli_main

WORDS = ("blue", "green", "red", "quiet", "loud", "slow", "fast", "tall")


def _database(path) -> str:
    """A tiny SQLite database: 24 patients (a unique code), 48 visits (a free-text comment
    and a column whose name holds a dot)."""
    rng = np.random.default_rng(0)
    patient = pd.DataFrame({"p_id": range(24), "age": rng.normal(50, 10, 24).round(1),
                            "code": [f"PX{i:04d}" for i in range(24)]})
    visit = pd.DataFrame({
        "v_id": range(48), "patient_id": rng.integers(0, 24, 48),
        "weight": rng.normal(70, 5, 48).round(1), "lab.value": rng.normal(1, 0.1, 48),
        "comment": [f"{WORDS[i % 8]} {WORDS[i // 8 % 8]} visit number {i}" for i in range(48)],
    })
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE patient (p_id INTEGER PRIMARY KEY, age REAL, code TEXT);"
            'CREATE TABLE visit (v_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES '
            'patient (p_id), weight REAL, "lab.value" REAL, comment TEXT);')
        patient.to_sql("patient", connection, if_exists="append", index=False)
        visit.to_sql("visit", connection, if_exists="append", index=False)
    return f"sqlite:///{path}"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    return _database(tmp_path_factory.mktemp("db") / "hospital.db")


def _run(capsys, *arguments) -> tuple[int, str]:
    status = cli_main([*map(str, arguments), "--quiet"])
    return status, capsys.readouterr().err


def test_types_declare_columns_per_table_over_the_yaml(url, tmp_path, capsys):
    config = tmp_path / "db.yaml"  # the YAML releases comment knowingly; the command drops it
    config.write_text(f"url: {url}\nk: 3\ntables:\n  visit: {{types: {{comment: categorical, "
                      "weight: continuous}}\n")
    output = tmp_path / "out"
    status, error = _run(capsys, "database", config, output, "--no-report", "--types",
                         "visit.comment=dropped", "patient.code=identifier",
                         "visit.lab.value=dropped")
    assert status == 0, error
    visit, patient = (pd.read_csv(output / f"{name}.csv") for name in ("visit", "patient"))
    assert "comment" not in visit.columns and "lab.value" not in visit.columns
    assert "weight" in visit.columns  # the YAML's other declaration kept
    assert not set(patient["code"]) & {f"PX{i:04d}" for i in range(24)}  # fresh values


def test_without_types_the_undeclared_columns_are_refused(url, tmp_path, capsys):
    status, error = _run(capsys, "database", url, tmp_path / "out", "--k", "3")
    assert status == 1 and "comment" in error and "code" in error


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ("nosuch.comment=dropped", "--types nosuch.comment: name a table of the database, "
                                   "TABLE.COLUMN=KIND; tables: patient, visit"),
        ("comment=dropped", "--types comment: name a table of the database"),
        ("visit.coment=dropped", "--types visit.coment: table visit has no column 'coment'; "
                                 "columns: comment, v_id"),
        ("visit.comment=ordinal", "--types visit.comment='ordinal' is not a kind; kinds: "),
    ],
)
def test_an_unknown_table_column_or_kind_is_one_usage_line(url, tmp_path, capsys, item, words):
    status, error = _run(capsys, "database", url, tmp_path / "out", "--k", "3", "--types", item)
    line = error.strip()
    assert status == 2 and "\n" not in line and len(line) <= 300, line
    assert words in line, line
    assert not (tmp_path / "out").exists()


def test_advise_on_a_yaml_database_takes_them_too(url, tmp_path, capsys):
    config = tmp_path / "db.yaml"
    config.write_text(f"url: {url}\n")
    status, error = _run(capsys, "advise", config, "--types", "visit.nope=dropped")
    assert status == 2 and "table visit has no column 'nope'" in error
