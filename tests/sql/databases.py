"""The SQL tests' databases: the bundled hospital tables with their keys declared (SQLite), and
a clinic schema with every column family (PostgreSQL)."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

POSTGRES_ENV_VAR = "GA_TEST_POSTGRES_URL"

# The bundled hospital tables with their keys declared; visit.patient_id nullable.
HOSPITAL_DDL = """
CREATE TABLE patient (p_id INTEGER PRIMARY KEY, gender TEXT NOT NULL, height REAL, age REAL,
                      weight REAL);
CREATE TABLE doctor (d_id INTEGER PRIMARY KEY, job VARCHAR(20) NOT NULL, age REAL);
CREATE TABLE visit (visit_id INTEGER PRIMARY KEY,
                    patient_id INTEGER REFERENCES patient (p_id),
                    doctor_id INTEGER NOT NULL REFERENCES doctor (d_id),
                    day_visit TEXT, exam TEXT);
"""
HOSPITAL_TABLES = ("patient", "doctor", "visit")


def bundled(name: str) -> pd.DataFrame:
    with resources.as_file(resources.files("gpu_avatar") / "data" / f"{name}.csv") as path:
        return pd.read_csv(path)


def write_sqlite(path: Path, ddl: str, tables: dict[str, pd.DataFrame]) -> str:
    """An SQLite file with ``ddl``'s tables holding ``tables``; its URL."""
    with sqlite3.connect(path) as connection:
        connection.executescript(ddl)
        for name, frame in tables.items():
            frame.to_sql(name, connection, if_exists="append", index=False)
    return f"sqlite:///{path}"


# A clinic schema with every column family: an enum, a timestamp with time zone, a boolean, a
# numeric, an interval, a date, a varchar; visits whose patient may be unknown (NULL key).
CLINIC_DDL = """
CREATE TYPE sex AS ENUM ('female', 'male', 'other');
CREATE TABLE patient (
    patient_id SERIAL PRIMARY KEY, sex sex NOT NULL, admitted TIMESTAMP WITH TIME ZONE,
    insured BOOLEAN, income NUMERIC(10, 2), stay INTERVAL, birth DATE NOT NULL,
    ward VARCHAR(12), weight DOUBLE PRECISION, visits_expected SMALLINT
);
CREATE TABLE visit (
    visit_id BIGINT PRIMARY KEY, patient_id INTEGER REFERENCES patient (patient_id),
    at TIMESTAMP NOT NULL, cost NUMERIC(8, 2) NOT NULL, urgent BOOLEAN NOT NULL, reason TEXT
);
"""


def clinic_tables(n_patients: int = 160, n_visits: int = 480, seed: int = 0):
    rng = np.random.default_rng(seed)
    base = pd.Timestamp("2024-01-01", tz="UTC")
    patient = pd.DataFrame({
        "patient_id": np.arange(1, n_patients + 1),
        "sex": rng.choice(["female", "male", "other"], n_patients, p=[0.5, 0.45, 0.05]),
        "admitted": base + pd.to_timedelta(rng.uniform(0, 365 * 24, n_patients), unit="h"),
        "insured": rng.random(n_patients) < 0.7,
        "income": np.round(rng.lognormal(10, 0.5, n_patients), 2),
        "stay": pd.to_timedelta(rng.gamma(2, 36, n_patients).round(), unit="h"),
        "birth": pd.Timestamp("1950-01-01") + pd.to_timedelta(
            rng.integers(0, 60 * 365, n_patients), unit="D"),
        "ward": rng.choice(["cardiology", "oncology", "surgery", "icu"], n_patients),
        "weight": rng.normal(72, 12, n_patients),
        "visits_expected": rng.integers(0, 9, n_patients),
    })
    for column, share in (("admitted", 0.1), ("insured", 0.05), ("ward", 0.1)):
        patient[column] = patient[column].astype(object)
        patient.loc[rng.random(n_patients) < share, column] = None
    patient["birth"] = patient["birth"].dt.date
    known = rng.random(n_visits) > 0.1
    visit = pd.DataFrame({
        "visit_id": np.arange(10_000, 10_000 + n_visits, dtype=np.int64),
        "patient_id": np.where(known, rng.integers(1, n_patients + 1, n_visits), None),
        "at": pd.Timestamp("2024-02-01") + pd.to_timedelta(rng.uniform(0, 300, n_visits),
                                                          unit="D"),
        "cost": np.round(rng.gamma(3, 40, n_visits), 2),
        "urgent": rng.random(n_visits) < 0.2,
        "reason": rng.choice(["pain", "check-up", "follow-up", "test"], n_visits),
    })
    return {"patient": patient, "visit": visit}


