"""Databases in and out: reflection, round trips with the target's constraint check, bad input.

SQLite files and a real PostgreSQL server (conftest.py); the bundled hospital tables and a
clinic schema with every column family.
"""

from __future__ import annotations

import sqlite3
import uuid

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from cli_helpers import run_cli
from databases import HOSPITAL_DDL, HOSPITAL_TABLES, bundled, clinic_tables, write_sqlite

import gpu_avatar as ga
from gpu_avatar.cli import main as cli_main
from gpu_avatar.encoding import detect_kind
from gpu_avatar.relational.config import load_database_config
from gpu_avatar.sql.connection import parse_url

PASSWORD = "ga-test-password"  # .ci/postgres's


def _engine(url: str):
    return sa.create_engine(parse_url(url))


def _structure(url: str) -> dict:
    """Per table: column types and nullability, primary key, foreign keys."""
    engine = _engine(url)
    inspector = sa.inspect(engine)
    out = {}
    for name in inspector.get_table_names():
        out[name] = {
            "columns": {c["name"]: (str(c["type"]), c["nullable"])
                        for c in inspector.get_columns(name)},
            "primary_key": inspector.get_pk_constraint(name)["constrained_columns"],
            "foreign_keys": sorted(
                (tuple(fk["constrained_columns"]), fk["referred_table"],
                 tuple(fk["referred_columns"]))
                for fk in inspector.get_foreign_keys(name)
            ),
        }
    engine.dispose()
    return out


def _read(url: str, table: str, key: str) -> pd.DataFrame:
    engine = _engine(url)
    with engine.connect() as connection:
        frame = pd.read_sql(sa.text(f"SELECT * FROM {table} ORDER BY {key}"), connection)
    engine.dispose()
    return frame


def _orphans(url: str, child: str, foreign_key: str, parent: str, key: str) -> int:
    engine = _engine(url)
    query = (f"SELECT count(*) FROM {child} c LEFT JOIN {parent} p ON c.{foreign_key} = p.{key} "
             f"WHERE c.{foreign_key} IS NOT NULL AND p.{key} IS NULL")
    with engine.connect() as connection:
        count = connection.exec_driver_sql(query).scalar()
    engine.dispose()
    return count


def _avatarize(db: ga.Database, k: int = 5) -> ga.DatabaseAvatarizationResult:
    return ga.avatarize_database(db, k=k, seed=0)


# --------------------------------------------------------------------------------- SQLite
def test_the_bundled_hospital_database_is_reflected_with_its_keys(hospital_sqlite):
    db = ga.Database.from_sql(hospital_sqlite)
    assert set(db.tables) == set(HOSPITAL_TABLES)
    assert {n: t.primary_key for n, t in db.tables.items()} == {
        "patient": "p_id", "doctor": "d_id", "visit": "visit_id"}
    assert sorted((lk.parent, lk.child, lk.foreign_key, lk.method) for lk in db.links) == [
        ("doctor", "visit", "doctor_id", "linear_sum_assignment"),
        ("patient", "visit", "patient_id", "linear_sum_assignment"),
    ]
    for name in HOSPITAL_TABLES:  # the same values and dtypes as the bundled CSV files
        pd.testing.assert_frame_equal(db.tables[name].data, bundled(name))


def test_rows_are_read_in_chunks_with_the_same_result(tmp_path):
    patient = bundled("patient")
    patient["age"] = patient["age"].round()
    patient.loc[120:, "age"] = np.nan  # NULLs in the last chunks only: the column ends float
    url = write_sqlite(tmp_path / "p.db", "CREATE TABLE patient (p_id INTEGER PRIMARY KEY, "
                       "gender TEXT, height INTEGER, age INTEGER, weight REAL);",
                       {"patient": patient})
    whole = ga.Database.from_sql(url).tables["patient"].data
    chunked = ga.Database.from_sql(url, chunk_rows=7).tables["patient"].data
    pd.testing.assert_frame_equal(chunked, whole)
    assert chunked["age"].dtype == np.float64 and chunked["age"].isna().sum() == 10
    np.testing.assert_array_equal(chunked["age"], patient["age"])
    # SQLite keeps the reals given to an INTEGER column: read as they are, not truncated
    np.testing.assert_array_equal(chunked["height"], patient["height"])


def test_sqlite_round_trip_keeps_types_keys_and_constraints(hospital_sqlite, tmp_path):
    db = ga.Database.from_sql(hospital_sqlite)
    result = _avatarize(db)
    released = {name: frame.copy() for name, frame in result.tables.items()}
    target = f"sqlite:///{tmp_path / 'avatars.db'}"
    assert result.to_sql(target) == {name: len(db.tables[name].data) for name in db.tables}
    for name, frame in released.items():  # the release is not modified by the write
        pd.testing.assert_frame_equal(result.tables[name], frame)
    assert _structure(target) == _structure(hospital_sqlite)
    with sqlite3.connect(tmp_path / "avatars.db") as connection:
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    for name, table in db.tables.items():
        written = _read(target, name, table.primary_key)
        expected = result.tables[name].sort_values(table.primary_key, ignore_index=True)
        pd.testing.assert_frame_equal(written, expected, check_dtype=False)


def test_a_failed_write_leaves_nothing(hospital_sqlite, tmp_path):
    result = _avatarize(ga.Database.from_sql(hospital_sqlite))
    result.tables["visit"].loc[5, "doctor_id"] = 10**6  # no such doctor: the FK check refuses
    target = tmp_path / "avatars.db"
    with pytest.raises(ga.AvatarError, match="nothing was written.*FOREIGN KEY"):
        result.to_sql(f"sqlite:///{target}")
    with sqlite3.connect(target) as connection:
        assert connection.execute("SELECT name FROM sqlite_master").fetchall() == []


def test_an_existing_target_is_refused_unless_replaced(hospital_sqlite, tmp_path):
    result = _avatarize(ga.Database.from_sql(hospital_sqlite))
    target = f"sqlite:///{tmp_path / 'avatars.db'}"
    result.to_sql(target)
    with pytest.raises(ga.AvatarError, match=r"already holds table\(s\).*if_exists='replace'"):
        result.to_sql(target)
    assert result.to_sql(target, if_exists="replace")["visit"] == 300
    assert len(_read(target, "visit", "visit_id")) == 300
    with pytest.raises(ga.AvatarError, match="if_exists"):
        result.to_sql(target, if_exists="append")


def test_replacing_a_table_another_refers_to_is_refused_naming_it(hospital_sqlite, tmp_path):
    """#37: the drop broke ``billing``'s foreign key (a bare server error, or nothing)."""
    result = _avatarize(ga.Database.from_sql(hospital_sqlite))
    target = f"sqlite:///{tmp_path / 'avatars.db'}"
    result.to_sql(target)
    _sqlite(tmp_path / "avatars.db", "CREATE TABLE billing (b INTEGER PRIMARY KEY, "
            "visit_id INTEGER REFERENCES visit(visit_id));")
    with pytest.raises(ga.AvatarError, match=r"table 'billing' refers to table 'visit', which "
                       r"replacing would drop; drop 'billing' \(or its foreign key\) first"):
        result.to_sql(target, if_exists="replace")


def test_an_empty_table_or_a_missing_key_is_refused_with_the_fix(tmp_path):
    url = _sqlite(tmp_path / "t.db", """
        CREATE TABLE t (code INTEGER, v REAL);
        CREATE TABLE e (i INTEGER PRIMARY KEY, v REAL);
        INSERT INTO t VALUES (1, 0.5), (NULL, 1.5), (3, 2.5), (4, 3.5), (5, 4.5);""")
    for tables, message in ((["e"], "table 'e' is empty: no row to avatarize; add its rows"),
                            (["t"], r"'code' is missing in 1 row\(s\); give those rows a key, "
                                    r"or drop them: data.dropna\(subset=\['code'\]\)")):
        db = ga.Database.from_sql(url, tables=tables,
                                  primary_keys={"t": "code"} if tables == ["t"] else None)
        with pytest.raises(ga.AvatarError, match=message):
            ga.avatarize_database(db, k=2, seed=0)


def test_tables_from_files_are_written_with_types_from_their_dtypes(tmp_path):
    from gpu_avatar.demo import load_hospital_database

    result = _avatarize(load_hospital_database())
    target = f"sqlite:///{tmp_path / 'avatars.db'}"
    result.to_sql(target)
    structure = _structure(target)
    assert structure["visit"]["foreign_keys"] == [
        (("doctor_id",), "doctor", ("d_id",)), (("patient_id",), "patient", ("p_id",))]
    assert structure["patient"]["columns"]["p_id"] == ("BIGINT", False)
    assert structure["patient"]["columns"]["gender"] == ("TEXT", True)
    assert structure["patient"]["columns"]["age"][0] == "DOUBLE"
    back = ga.Database.from_sql(target)
    assert {name: len(t.data) for name, t in back.tables.items()} == {
        name: len(frame) for name, frame in result.tables.items()}


def test_links_are_suggested_from_names_and_values_never_applied(tmp_path):
    url = write_sqlite(  # an export: keys without their constraints
        tmp_path / "export.db",
        "CREATE TABLE patient (p_id INTEGER PRIMARY KEY, gender TEXT, height REAL, age REAL, "
        "weight REAL); CREATE TABLE doctor (d_id INTEGER PRIMARY KEY, job TEXT, age REAL); "
        "CREATE TABLE visit (visit_id INTEGER PRIMARY KEY, patient_id INTEGER, doctor_id "
        "INTEGER, day_visit TEXT, exam TEXT);",
        {name: bundled(name) for name in HOSPITAL_TABLES},
    )
    db = ga.Database.from_sql(url)
    assert db.links == []
    suggestions = db.suggest_links()
    assert db.links == []
    found = {(r.parent, r.parent_key, r.child, r.foreign_key): r for r in suggestions.itertuples()}
    assert set(found) == {("patient", "p_id", "visit", "patient_id"),
                          ("doctor", "d_id", "visit", "doctor_id")}
    for row in found.values():
        assert row.containment == 1.0 and row.values == 300
        assert row.parent in row.name_evidence
    for row in suggestions.itertuples():  # the user's word
        db.add_link(row.parent, row.parent_key, row.child, row.foreign_key)
    assert ga.avatarize_database(db, k=5, seed=0).links[0].referential_integrity == 100.0
    db = ga.Database.from_sql(url)
    db.tables["visit"].data.loc[:60, "doctor_id"] = 999  # 20 % of the values in no doctor
    assert set(db.suggest_links()["child"] + "." + db.suggest_links()["foreign_key"]) == {
        "visit.patient_id"}
    assert len(db.suggest_links(min_containment=0.75)) == 2


@pytest.mark.parametrize(
    ("ddl", "options", "message"),
    [
        ("CREATE TABLE t (a INTEGER, b REAL);", {},
         r"table 't' has no primary key; name a column of unique values with primary_keys="),
        ("CREATE TABLE t (a INTEGER, b INTEGER, c REAL, PRIMARY KEY (a, b));", {},
         r"table 't' has a composite primary key \['a', 'b'\].*primary_keys="),
        ("CREATE TABLE t (a INTEGER PRIMARY KEY, up INTEGER REFERENCES t (a), c REAL);", {},
         r"foreign key t\(up\) -> t.a: table 't' refers to itself"),
        ("CREATE TABLE t (a INTEGER PRIMARY KEY, c BLOB);", {},
         r"column t.c has SQL type BLOB, which cannot be avatarized"),
        ("CREATE TABLE p (a INTEGER, b INTEGER, PRIMARY KEY (a, b)); CREATE TABLE t (i INTEGER "
         "PRIMARY KEY, a INTEGER, b INTEGER, FOREIGN KEY (a, b) REFERENCES p (a, b));",
         {"primary_keys": {"p": "a"}}, r"foreign key t\(a, b\) -> p\(a, b\) is composite"),
        ("CREATE TABLE p (a INTEGER PRIMARY KEY); CREATE TABLE t (i INTEGER PRIMARY KEY, "
         "a INTEGER REFERENCES p (a));", {"tables": ["t"]},
         r"'p' is not among the tables read; add it to tables"),
        ("CREATE TABLE t (a INTEGER PRIMARY KEY, c REAL);", {"tables": ["nosuch"]},
         r"has no table \['nosuch'\]; its tables: \['t'\]"),
        ("CREATE TABLE t (a INTEGER PRIMARY KEY, c REAL);", {"primary_keys": {"t": "zz"}},
         r"primary_keys\['t'\] = 'zz' is not a column of 't'"),
    ],
)
def test_schemas_that_cannot_be_avatarized_are_refused_naming_the_culprit(
    tmp_path, ddl, options, message
):
    url = write_sqlite(tmp_path / "bad.db", ddl, {})
    with pytest.raises(ga.AvatarError, match=message):
        ga.Database.from_sql(url, **options)


def test_a_named_primary_key_makes_a_keyless_table_readable(tmp_path):
    url = write_sqlite(tmp_path / "t.db", "CREATE TABLE t (code TEXT, v REAL);",
                       {"t": pd.DataFrame({"code": list("abcdef"), "v": np.arange(6.0)})})
    db = ga.Database.from_sql(url, primary_keys={"t": "code"})
    assert db.tables["t"].primary_key == "code"
    assert db.tables["t"].data["v"].tolist() == list(np.arange(6.0))


def test_urls_that_lead_nowhere_are_refused(tmp_path):
    with pytest.raises(ga.AvatarError, match="no SQLite database file at"):
        ga.Database.from_sql(f"sqlite:///{tmp_path / 'missing.db'}")
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(ga.AvatarError, match="is not a database URL"):
        ga.Database.from_sql("hospital.db")
    with pytest.raises(ga.AvatarError, match="holds no table"):
        ga.Database.from_sql(write_sqlite(tmp_path / "empty.db", "", {}))


def test_the_command_line_reads_and_writes_urls(hospital_sqlite, tmp_path):
    target = f"sqlite:///{tmp_path / 'avatars.db'}"
    process = run_cli("database", hospital_sqlite, target, "--k", "5", "--seed", "0")
    assert process.returncode == 0, process.stderr
    assert f"wrote 3 avatar tables to {target}" in process.stdout
    assert _structure(target) == _structure(hospital_sqlite)
    again = run_cli("database", hospital_sqlite, target, "--k", "5")
    assert again.returncode == 1 and "already holds table(s)" in again.stderr
    assert run_cli("database", hospital_sqlite, target, "--k", "5", "--if-exists",
                   "replace").returncode == 0
    config = tmp_path / "db.yaml"
    config.write_text("url: sqlite:///hospital.db\nk: 5\nseed: 0\ntables:\n  doctor: {k: 4}\n"
                      "links:\n  - {parent: doctor, child: visit, foreign_key: doctor_id, "
                      "method: minimum_distance}\n")
    out = tmp_path / "out"
    process = run_cli("database", config, out, "--no-report")
    assert process.returncode == 0, process.stderr
    assert "doctor -> visit.doctor_id (minimum_distance)" in process.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "doctor.csv", "patient.csv", "summary.txt", "visit.csv"]


# ------------------------------------------------------------------------------ PostgreSQL
def test_postgres_schema_is_reflected_with_every_column_family(clinic_postgres):
    db = ga.Database.from_sql(clinic_postgres)
    patient, visit = db.tables["patient"].data, db.tables["visit"].data
    original = clinic_tables()
    assert len(patient) == 160 and len(visit) == 480
    assert [(lk.parent, lk.child, lk.foreign_key) for lk in db.links] == [
        ("patient", "visit", "patient_id")]
    assert str(patient["admitted"].dtype).startswith("datetime64") and \
        str(patient["admitted"].dt.tz) == "UTC"
    assert pd.api.types.is_datetime64_dtype(visit["at"]) and visit["at"].dt.tz is None
    assert pd.api.types.is_timedelta64_dtype(patient["stay"])
    assert pd.api.types.is_datetime64_dtype(patient["birth"])
    assert patient["income"].dtype == np.float64 and visit["cost"].dtype == np.float64
    assert visit["urgent"].dtype == bool and patient["insured"].dtype == object
    assert patient["visits_expected"].dtype == np.int64
    kinds = {c: detect_kind(patient[c]) for c in patient.columns}
    assert kinds == {"patient_id": "continuous", "sex": "categorical", "admitted": "continuous",
                     "insured": "categorical", "income": "continuous", "stay": "continuous",
                     "birth": "continuous", "ward": "categorical", "weight": "continuous",
                     "visits_expected": "continuous"}
    # values as inserted; the NULL foreign keys are children without a parent
    assert patient["admitted"].isna().sum() == original["patient"]["admitted"].isna().sum()
    assert visit["patient_id"].isna().sum() == original["visit"]["patient_id"].isna().sum() > 0
    np.testing.assert_allclose(patient["income"], original["patient"]["income"])
    assert (patient["stay"] == original["patient"]["stay"]).all()


def test_postgres_round_trip_passes_the_servers_constraint_check(
    clinic_postgres, postgres_database
):
    db = ga.Database.from_sql(clinic_postgres)
    result = _avatarize(db, k=10)
    target = postgres_database()
    assert result.to_sql(target) == {"patient": 160, "visit": 480}
    assert _structure(target) == _structure(clinic_postgres)  # types, NOT NULL, keys
    assert _orphans(target, "visit", "patient_id", "patient", "patient_id") == 0
    back = ga.Database.from_sql(target)  # the server accepted every row under its constraints
    patient, visit = back.tables["patient"].data, back.tables["visit"].data
    original = db.tables["patient"].data
    assert set(patient["sex"]) <= {"female", "male", "other"}
    assert patient["admitted"].dt.tz is not None and patient["stay"].dtype.kind == "m"
    assert original["income"].min() <= patient["income"].min()
    assert patient["income"].max() <= original["income"].max()
    assert (patient["income"] * 100).round(6).mod(1).eq(0).all()  # NUMERIC(10, 2)
    assert pd.api.types.is_integer_dtype(patient["visits_expected"])
    assert visit["at"].notna().all() and visit["cost"].notna().all()
    assert set(patient["patient_id"]).isdisjoint(original["patient_id"])  # fresh keys
    assert len(patient) == 160 and len(visit) == 480


def test_a_failed_postgres_write_rolls_everything_back(clinic_postgres, postgres_database):
    result = _avatarize(ga.Database.from_sql(clinic_postgres), k=10)
    result.tables["visit"].loc[3, "patient_id"] = -5  # violates the foreign key
    target = postgres_database()
    with pytest.raises(ga.AvatarError, match="nothing was written.*foreign key") as error:
        result.to_sql(target)
    assert PASSWORD not in str(error.value)
    assert _structure(target) == {}
    engine = _engine(target)
    with engine.connect() as connection:  # nor the enum type created on the way
        assert connection.exec_driver_sql("SELECT count(*) FROM pg_type WHERE typname = 'sex'"
                                          ).scalar() == 0
    engine.dispose()


def test_postgres_schemas_and_replacement(clinic_postgres):
    result = _avatarize(ga.Database.from_sql(clinic_postgres), k=10)
    engine = _engine(clinic_postgres)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE SCHEMA release")
    engine.dispose()
    result.to_sql(clinic_postgres, schema="release")  # beside the originals, same database
    with pytest.raises(ga.AvatarError, match=r"\(schema 'release'\) already holds"):
        result.to_sql(clinic_postgres, schema="release")
    result.to_sql(clinic_postgres, schema="release", if_exists="replace")
    back = ga.Database.from_sql(clinic_postgres, schema="release")
    assert {n: len(t.data) for n, t in back.tables.items()} == {"patient": 160, "visit": 480}
    assert len(ga.Database.from_sql(clinic_postgres).tables["patient"].data) == 160


def test_connection_errors_are_one_line_without_the_password(postgres_server):
    url = parse_url(postgres_server)
    wrong = url.set(password="not-the-password").render_as_string(hide_password=False)
    with pytest.raises(ga.AvatarError, match="password authentication failed") as error:
        ga.Database.from_sql(wrong)
    assert "not-the-password" not in str(error.value) and "\n" not in str(error.value)
    closed = url.set(port=1).render_as_string(hide_password=False)
    with pytest.raises(ga.AvatarError, match="cannot connect to .*:1/") as error:
        ga.Database.from_sql(closed)
    assert PASSWORD not in str(error.value)
    process = run_cli("database", wrong, "out")
    assert process.returncode == 1 and "not-the-password" not in process.stderr
    assert process.stderr.startswith("gpu-avatar: error: cannot connect to")


def test_unsupported_postgres_types_are_refused(postgres_database):
    url = postgres_database()
    engine = _engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, doc JSONB)")
    engine.dispose()
    with pytest.raises(ga.AvatarError, match=r"column t.doc has SQL type JSONB"):
        ga.Database.from_sql(url)


def test_the_command_line_between_postgres_servers(clinic_postgres, postgres_database):
    target = postgres_database()
    process = run_cli("database", clinic_postgres, target, "--k", "10", "--seed", "0")
    assert process.returncode == 0, process.stderr
    assert PASSWORD not in process.stdout + process.stderr
    assert "postgres:***@" in process.stdout
    assert _orphans(target, "visit", "patient_id", "patient", "patient_id") == 0


def test_uuid_keys_get_fresh_uuids_linked_in_parent_and_child(postgres_database):
    url, target = postgres_database(), postgres_database()
    rng = np.random.default_rng(1)
    engine = _engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE person (id UUID PRIMARY KEY, token UUID NOT NULL, age REAL NOT NULL);"
            "CREATE TABLE stay (id INTEGER PRIMARY KEY, person_id UUID NOT NULL REFERENCES "
            "person (id), days REAL NOT NULL)")
        people = [str(uuid.UUID(bytes=rng.bytes(16))) for _ in range(60)]
        for person in people:
            connection.exec_driver_sql(
                "INSERT INTO person VALUES (%(id)s, %(token)s, %(age)s)",
                {"id": person, "token": str(uuid.UUID(bytes=rng.bytes(16))),
                 "age": float(rng.uniform(20, 90))})
        for index in range(150):
            connection.exec_driver_sql(
                "INSERT INTO stay VALUES (%(i)s, %(p)s, %(d)s)",
                {"i": index, "p": people[int(rng.integers(60))], "d": float(rng.gamma(2, 3))})
    engine.dispose()
    db = ga.Database.from_sql(url)
    assert db.tables["person"].types == {"token": "identifier"}  # a UUID variable: not a kind
    _avatarize(db).to_sql(target)
    assert _orphans(target, "stay", "person_id", "person", "id") == 0
    back = ga.Database.from_sql(target)
    keys = back.tables["person"].data["id"]
    assert keys.map(lambda value: str(uuid.UUID(value)) == value).all() and keys.is_unique
    assert set(keys).isdisjoint(people)
    assert set(back.tables["stay"].data["person_id"]) <= set(keys)
    tokens = back.tables["person"].data["token"]
    assert set(tokens).isdisjoint(db.tables["person"].data["token"])
    assert set(tokens).isdisjoint(keys)  # fresh values of two columns: two namespaces


def test_postgres_to_sqlite_with_generic_types(clinic_postgres, tmp_path):
    result = _avatarize(ga.Database.from_sql(clinic_postgres), k=10)
    target = f"sqlite:///{tmp_path / 'clinic.db'}"
    result.to_sql(target)
    columns = _structure(target)["patient"]["columns"]
    assert columns["sex"][0].startswith("VARCHAR") and columns["sex"][1] is False
    assert columns["admitted"][0] == "DATETIME" and columns["stay"][0] == "DATETIME"
    with sqlite3.connect(tmp_path / "clinic.db") as connection:
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    back = ga.Database.from_sql(target)
    assert len(back.tables["visit"].data) == 480
    # SQLite has no interval type: SQLAlchemy stores an interval as the time after the epoch
    written = back.tables["patient"].data.set_index("patient_id")["stay"]
    released = result.tables["patient"].set_index("patient_id")["stay"].dt.floor("us")
    pd.testing.assert_series_equal(written - pd.Timestamp(0), released.loc[written.index],
                                   check_dtype=False, check_index_type=False)


def test_the_command_line_names_keys_and_tables_of_a_url(tmp_path):
    url = write_sqlite(tmp_path / "t.db", "CREATE TABLE t (code TEXT, v REAL); CREATE TABLE "
                       "u (i INTEGER PRIMARY KEY, w REAL);",
                       {"t": pd.DataFrame({"code": [f"c{i}" for i in range(30)],
                                           "v": np.arange(30.0) + 0.5})})
    out = tmp_path / "out"
    process = run_cli("database", url, out, "--k", "3", "--tables", "t", "--primary-key",
                      "t=code", "--no-report")
    assert process.returncode == 0, process.stderr
    assert sorted(p.name for p in out.iterdir()) == ["summary.txt", "t.csv"]
    process = run_cli("database", url, out, "--tables", "t", "--overwrite")
    assert process.returncode == 1 and "table 't' has no primary key" in process.stderr
    config = tmp_path / "c.yaml"
    config.write_text("tables:\n  t: {path: t.csv, primary_key: code}\n")
    process = run_cli("database", config, out, "--schema", "public", "--overwrite")
    assert process.returncode == 2 and "--schema go with a database URL source" in process.stderr


def test_wide_integer_keys_with_nulls_stay_exact(tmp_path):
    parents = pd.DataFrame({"id": 2**60 + np.arange(50), "age": np.linspace(20, 80, 50)})
    rng = np.random.default_rng(2)
    children = pd.DataFrame({"cid": np.arange(150), "v": rng.normal(size=150),
                             "pid": pd.array(2**60 + rng.integers(0, 50, 150), dtype="Int64")})
    children.loc[::10, "pid"] = pd.NA
    url = write_sqlite(tmp_path / "w.db", "CREATE TABLE p (id INTEGER PRIMARY KEY, age REAL); "
                       "CREATE TABLE c (cid INTEGER PRIMARY KEY, v REAL, pid INTEGER "
                       "REFERENCES p (id));", {"p": parents, "c": children})
    db = ga.Database.from_sql(url, chunk_rows=40)
    read = db.tables["c"].data["pid"]
    assert read.dtype == "Int64" and read.isna().sum() == 15
    assert read.dropna().astype("int64").tolist() == children["pid"].dropna().tolist()
    result = _avatarize(db)
    assert result.links[0].referential_integrity == 100.0
    target = f"sqlite:///{tmp_path / 'out.db'}"
    result.to_sql(target)
    assert _orphans(target, "c", "pid", "p", "id") == 0


def test_a_refused_write_creates_nothing(hospital_sqlite, tmp_path):
    result = _avatarize(ga.Database.from_sql(hospital_sqlite))
    result.tables["patient"].loc[0, "gender"] = None  # NOT NULL in the source schema
    with pytest.raises(ga.AvatarError, match="'gender' is NOT NULL in the target but has 1"):
        result.to_sql(f"sqlite:///{tmp_path / 'avatars.db'}")
    assert not (tmp_path / "avatars.db").exists()


def test_the_source_is_never_replaced(hospital_sqlite):
    result = _avatarize(ga.Database.from_sql(hospital_sqlite))
    with pytest.raises(ga.AvatarError, match="where the original tables were read from"):
        result.to_sql(hospital_sqlite, if_exists="replace")
    process = run_cli("database", hospital_sqlite, hospital_sqlite, "--if-exists", "replace")
    assert process.returncode == 2 and "the output is the source database" in process.stderr
    assert len(ga.Database.from_sql(hospital_sqlite).tables["visit"].data) == 300


def test_narrow_text_keys_are_widened_with_a_warning(tmp_path):
    keys = [f"k{i}" for i in range(40)]
    url = write_sqlite(tmp_path / "n.db", "CREATE TABLE p (code VARCHAR(4) PRIMARY KEY, "
                       "x REAL); CREATE TABLE c (i INTEGER PRIMARY KEY, code VARCHAR(4) "
                       "REFERENCES p (code), y REAL);",
                       {"p": pd.DataFrame({"code": keys, "x": np.arange(40.0) + 0.5}),
                        "c": pd.DataFrame({"i": range(80), "code": keys * 2,
                                           "y": np.arange(80.0) + 0.5})})
    result = _avatarize(ga.Database.from_sql(url))
    target = f"sqlite:///{tmp_path / 'out.db'}"
    with pytest.warns(UserWarning, match=r"key 'code' \(VARCHAR\(4\)\) is widened to "
                      r"VARCHAR\(9\)"):
        result.to_sql(target)
    structure = _structure(target)
    assert structure["p"]["columns"]["code"][0] == "VARCHAR(9)"
    assert structure["c"]["columns"]["code"][0] == "VARCHAR(9)"
    assert _orphans(target, "c", "code", "p", "code") == 0


def test_values_not_of_their_column_type_are_named(tmp_path):
    path = tmp_path / "bad.db"
    with sqlite3.connect(path) as connection:  # a CSV import leaves '' in a REAL column
        connection.executescript("CREATE TABLE t (i INTEGER PRIMARY KEY, v REAL);"
                                 "INSERT INTO t VALUES (1, 2.5), (2, ''), (3, 1.0);")
    with pytest.raises(ga.AvatarError, match=r"column t.v \(REAL\) holds a value that is not"):
        ga.Database.from_sql(f"sqlite:///{path}")


def test_text_columns_keep_their_dtype_whatever_the_chunks(tmp_path):
    frame = pd.DataFrame({"i": range(30), "label": [None] * 10 + ["a", "b"] * 10})
    url = write_sqlite(tmp_path / "t.db", "CREATE TABLE t (i INTEGER PRIMARY KEY, label TEXT);",
                       {"t": frame})
    whole = ga.Database.from_sql(url).tables["t"].data
    pd.testing.assert_frame_equal(ga.Database.from_sql(url, chunk_rows=10).tables["t"].data,
                                  whole)
    assert whole["label"].dtype == pd.Series(["text"]).dtype


def test_malformed_urls_are_refused_without_their_password():
    for url in ("my-db://user:s3cret@host/db", "postgresql://user:s3cret@host:54x/db"):
        with pytest.raises(ga.AvatarError, match="is not a database URL") as error:
            ga.Database.from_sql(url)
        assert "s3cret" not in str(error.value) and "user:***@" in str(error.value)


def test_tables_from_files_with_missing_foreign_keys_go_to_postgres(postgres_database):
    from gpu_avatar.demo import load_hospital_database

    db = load_hospital_database()
    visit = db.tables["visit"].data
    visit["patient_id"] = visit["patient_id"].astype(float)
    visit.loc[::7, "patient_id"] = np.nan  # children without a parent: a float column
    result = _avatarize(db)
    target = postgres_database()
    result.to_sql(target)
    columns = _structure(target)["visit"]["columns"]
    assert columns["patient_id"] == ("BIGINT", True)  # the parent key's type
    assert _orphans(target, "visit", "patient_id", "patient", "p_id") == 0


def test_enums_of_another_schema_go_to_another_database(postgres_database):
    url, target = postgres_database(), postgres_database()
    engine = _engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE SCHEMA src; CREATE TYPE src.level AS ENUM ('low', 'high');"
            "CREATE TABLE src.t (i INTEGER PRIMARY KEY, level src.level NOT NULL, x REAL);"
            "INSERT INTO src.t SELECT g, (ARRAY['low', 'high'])[1 + mod(g, 2)]::src.level, g * 0.5 "
            "FROM generate_series(1, 40) g")
    engine.dispose()
    result = _avatarize(ga.Database.from_sql(url, schema="src"))
    result.to_sql(target)
    engine = _engine(target)
    with engine.connect() as connection:  # the same enum type, in the target's schema
        assert connection.exec_driver_sql(
            "SELECT data_type, udt_schema, udt_name, is_nullable FROM information_schema.columns "
            "WHERE table_name = 't' AND column_name = 'level'").one() == (
                "USER-DEFINED", "public", "level", "NO")
    engine.dispose()
    assert set(ga.Database.from_sql(target).tables["t"].data["level"]) <= {"low", "high"}


def test_sqlite_integers_are_64_bits_in_postgres(tmp_path, postgres_database):
    stamps = 1_700_000_000_000 + np.arange(30) * 997
    url = write_sqlite(tmp_path / "ms.db", "CREATE TABLE t (i INTEGER PRIMARY KEY, ms INTEGER);",
                       {"t": pd.DataFrame({"i": range(30), "ms": stamps})})
    target = postgres_database()
    measured = {"t": {"ms": "continuous"}}  # distinct on every row: declared a measurement
    _avatarize(ga.Database.from_sql(url, types=measured)).to_sql(target)
    assert _structure(target)["t"]["columns"]["ms"][0] == "BIGINT"
    written = ga.Database.from_sql(target).tables["t"].data["ms"]
    assert stamps.min() <= written.min() and written.max() <= stamps.max()


def test_the_bundled_hospital_database_is_reflected_from_postgres(postgres_database):
    url = postgres_database()
    engine = _engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(HOSPITAL_DDL.replace("REAL", "DOUBLE PRECISION"))
        for name in HOSPITAL_TABLES:
            bundled(name).to_sql(name, connection, if_exists="append", index=False)
    engine.dispose()
    db = ga.Database.from_sql(url)
    assert {n: t.primary_key for n, t in db.tables.items()} == {
        "patient": "p_id", "doctor": "d_id", "visit": "visit_id"}
    assert sorted((lk.parent, lk.child, lk.foreign_key) for lk in db.links) == [
        ("doctor", "visit", "doctor_id"), ("patient", "visit", "patient_id")]
    for name in HOSPITAL_TABLES:
        pd.testing.assert_frame_equal(db.tables[name].data, bundled(name))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("url: sqlite:///hospital.db\ntables:\n  visit: {path: visit.csv}\n",
         r"tables.visit: unknown key\(s\) \['path'\]"),
        ("schema: public\ntables:\n  t: {path: t.csv, primary_key: i}\n",
         r"'schema' goes with 'url'"),
        ("url: sqlite:///hospital.db\ninclude: [patient]\ntables:\n  visit: {k: 3}\n",
         r"tables \['visit'\] have settings but are not in 'include'"),
        ("url: sqlite:///hospital.db\ntables:\n  nosuch: {k: 3}\n",
         r"tables.nosuch: the database has no table 'nosuch'"),
        ("url: sqlite:///missing.db\n", r"no SQLite database file at .*missing.db"),
    ],
)
def test_yaml_configurations_naming_a_url_are_checked(hospital_sqlite, tmp_path, text, message):
    from gpu_avatar.relational.config import load_database_config

    path = tmp_path / "db.yaml"
    path.write_text(text)
    with pytest.raises(ga.AvatarError, match=message) as error:
        load_database_config(path)
    assert str(path) in str(error.value)


def test_a_yaml_url_reads_the_database_with_its_settings(hospital_sqlite, tmp_path):
    from gpu_avatar.relational.config import load_database_config

    path = tmp_path / "db.yaml"
    path.write_text("url: sqlite:///hospital.db\nk: 5\ninclude: [patient, doctor, visit]\n"
                    "tables:\n  doctor: {k: 4, types: {job: categorical}}\n"
                    "links:\n  - {parent: doctor, child: visit, foreign_key: doctor_id, "
                    "method: minimum_distance}\n")
    config = load_database_config(path)
    assert config.parameters.k == 5 and config.overrides == {"doctor": {"k": 4}}
    assert config.database.tables["doctor"].types == {"job": "categorical"}
    methods = {(lk.child, lk.foreign_key): lk.method for lk in config.database.links}
    assert methods == {("visit", "doctor_id"): "minimum_distance",
                       ("visit", "patient_id"): "linear_sum_assignment"}


# ------------------------------------------------------------- text, identities, links, URLs
def _sqlite(path, script: str) -> str:
    with sqlite3.connect(path) as connection:
        connection.executescript(script)
    return f"sqlite:///{path}"


def test_dates_stored_as_text_are_read_by_the_shared_rules(tmp_path):
    # the first chunk alone (01/02, 03/04) reads either way: the column as a whole decides
    url = _sqlite(tmp_path / "d.db", """
        CREATE TABLE t (i INTEGER PRIMARY KEY, born DATE, seen DATE, at TIMESTAMP, x REAL);
        INSERT INTO t VALUES
          (1, '01/02/1980', '1980-01-01 13:45', '2024-03-30T10:00:00+01:00', 1.5),
          (2, '03/04/1981', '1980-01-02', '2024-03-31T10:00:00+02:00', 2.5),
          (3, '31/12/1980', NULL, '2024-10-27T01:30:00+02:00', 3.5),
          (4, NULL, '1980-01-03 08:00', '2024-10-27T02:30:00+01:00', 4.5),
          (5, '15/06/1979', '1980-01-04', NULL, 5.5);""")
    data = ga.Database.from_sql(url).tables["t"].data
    pd.testing.assert_frame_equal(ga.Database.from_sql(url, chunk_rows=2).tables["t"].data, data)
    assert data["born"].tolist()[:3] == [pd.Timestamp("1980-02-01"), pd.Timestamp("1981-04-03"),
                                         pd.Timestamp("1980-12-31")]
    assert data["seen"][0] == pd.Timestamp("1980-01-01 13:45") and data["seen"].isna().sum() == 1
    # offsets that change with daylight saving: one instant each, in UTC
    assert str(data["at"].dt.tz) == "UTC"
    assert data["at"][:4].tolist() == [pd.Timestamp(t, tz="UTC") for t in (
        "2024-03-30 09:00", "2024-03-31 08:00", "2024-10-26 23:30", "2024-10-27 01:30")]
    result = _avatarize(ga.Database.from_sql(url), k=2)
    assert pd.api.types.is_datetime64_any_dtype(result.tables["t"]["born"])
    target = f"sqlite:///{tmp_path / 'out.db'}"
    result.to_sql(target)
    born = ga.Database.from_sql(target).tables["t"].data["born"].dropna()  # written as dates
    assert born.between(data["born"].min(), data["born"].max()).all() and len(born)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("'31/12/1980', 'unknown'", r"column t.born holds 1 cell \(row 2: a 7-character text "
                                    r"shaped aaaaaaa\) that does not read as a date"),
        ("'1980-12-31', 19800101", r"column t.born holds 1 cell \(row 2: a number\) that is not "
                                   "a date"),
        ("'01/02/1980', '03/04/1980'", r"column t.born: its dates \(the first a 10-character "
                                       r"text shaped 99/99/9999\) read both day first and "
                                       "month first"),
    ],
)
def test_dates_no_reading_reads_are_refused_naming_the_column(tmp_path, capsys, values,
                                                                message):
    url = _sqlite(tmp_path / "d.db", "CREATE TABLE t (i INTEGER PRIMARY KEY, born DATE); "
                  f"INSERT INTO t (born) VALUES ({values.replace(', ', '), (')});")
    with pytest.raises(ga.AvatarError, match=message):
        ga.Database.from_sql(url)
    assert cli_main(["database", url, str(tmp_path / "out")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("gpu-avatar: error: column t.born") and "unexpected" not in error


def test_postgres_zoned_timestamps_across_daylight_saving_are_utc_instants(postgres_database):
    url = postgres_database()
    engine = _engine(url)
    with engine.begin() as connection:  # the server gives +01 in winter, +02 in summer
        connection.exec_driver_sql(
            f"ALTER DATABASE \"{parse_url(url).database}\" SET timezone TO 'Europe/Paris'")
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE t (i INTEGER PRIMARY KEY, at TIMESTAMP WITH TIME ZONE, born DATE);"
            "INSERT INTO t VALUES (1, '2024-03-30 09:00Z', '1980-12-31'),"
            "(2, '2024-03-31 08:00Z', NULL), (3, '2024-10-27 01:30Z', '1981-01-01'),"
            "(4, NULL, '1979-06-15')")
    engine.dispose()
    data = ga.Database.from_sql(url, chunk_rows=2).tables["t"].data
    assert str(data["at"].dt.tz) == "UTC"
    assert data["at"][:3].tolist() == [pd.Timestamp(t, tz="UTC") for t in (
        "2024-03-30 09:00", "2024-03-31 08:00", "2024-10-27 01:30")]
    assert data["born"].dt.tz is None and data["born"][0] == pd.Timestamp("1980-12-31")


PEOPLE_DDL = """
CREATE TABLE person (id INTEGER PRIMARY KEY, email VARCHAR(40) UNIQUE, phone TEXT,
                     age REAL NOT NULL, city TEXT NOT NULL, UNIQUE (city, age));
CREATE UNIQUE INDEX person_phone ON person (phone);
CREATE TABLE card (id INTEGER PRIMARY KEY, person_id INTEGER UNIQUE REFERENCES person (id),
                   level TEXT);
"""


def _people(n: int = 40) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(3)
    person = pd.DataFrame({"id": range(n), "email": [f"person{i}@mail.fr" for i in range(n)],
                           "phone": [f"06{i:06d}" for i in range(n)],
                           "age": rng.uniform(20, 80, n).round(1),
                           "city": rng.choice(["Lyon", "Paris", "Nantes"], n)})
    card = pd.DataFrame({"id": range(n), "person_id": range(n),
                         "level": rng.choice(["gold", "silver"], n)})
    return {"person": person, "card": card}


def test_unique_columns_are_identifiers_with_fresh_values(tmp_path):
    url = write_sqlite(tmp_path / "p.db", PEOPLE_DDL, _people())
    db = ga.Database.from_sql(url)
    # not the composite UNIQUE (city, age), nor the one-to-one foreign key
    assert db.tables["person"].types == {"email": "identifier", "phone": "identifier"}
    assert db.tables["card"].types == {}
    released = _avatarize(db).tables["person"]
    original = db.tables["person"].data
    assert not released["email"].isin(original["email"]).any() and released["email"].is_unique
    assert not released["phone"].isin(original["phone"]).any()
    target = f"sqlite:///{tmp_path / 'out.db'}"
    _avatarize(db).to_sql(target)
    assert not ga.Database.from_sql(target).tables["person"].data["email"].isin(
        original["email"]).any()
    kept = ga.Database.from_sql(url, types={"person": {"email": "categorical"}})
    assert kept.tables["person"].types == {"email": "categorical", "phone": "identifier"}


def test_narrow_unique_columns_are_widened_in_postgres(postgres_database):
    url, target = postgres_database(), postgres_database()
    engine = _engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(PEOPLE_DDL.replace("phone TEXT", "phone VARCHAR(8)"))
        for name, frame in _people().items():
            frame.to_sql(name, connection, if_exists="append", index=False)
    engine.dispose()
    db = ga.Database.from_sql(url)
    assert db.tables["person"].types == {"email": "identifier", "phone": "identifier"}
    with pytest.warns(UserWarning, match=r"identifier 'phone' \(VARCHAR\(8\)\) is widened"):
        _avatarize(db).to_sql(target)
    back = ga.Database.from_sql(target).tables["person"].data
    assert not back["phone"].isin(db.tables["person"].data["phone"]).any()
    assert not back["email"].isin(db.tables["person"].data["email"]).any()


EXPORT_DDL = HOSPITAL_DDL.replace(" REFERENCES patient (p_id)", "").replace(
    " REFERENCES doctor (d_id)", "")


def test_a_database_without_foreign_keys_is_not_released_unlinked_unawares(tmp_path, capsys):
    url = write_sqlite(tmp_path / "export.db", EXPORT_DDL,
                       {name: bundled(name) for name in HOSPITAL_TABLES})
    out = tmp_path / "out"
    assert cli_main(["database", url, str(out), "--k", "5", "--no-report"]) == 1
    error = capsys.readouterr().err
    assert not out.exists()
    assert error.splitlines()[-1] == (
        f"gpu-avatar: error: {url} has 3 tables and no link between them; declare its links "
        "in a YAML file (suggested above), or pass --no-links to release the tables unlinked")
    suggested = [line for line in error.splitlines() if line.startswith(("url:", "links:",
                                                                         "  - "))]
    assert suggested[:2] == [f"url: sqlite:///{tmp_path / 'export.db'}", "links:"]
    assert "  - {parent: patient, child: visit, foreign_key: patient_id}  # 100% of 300" in error
    assert "  - {parent: doctor, child: visit, foreign_key: doctor_id}  # 100% of 300" in error
    config = tmp_path / "db.yaml"  # the lines as printed: a YAML file that links them
    config.write_text("\n".join(suggested) + "\nk: 5\nseed: 0\n")
    assert cli_main(["database", str(config), str(out), "--no-report"]) == 0
    assert "patient -> visit.patient_id" in capsys.readouterr().out
    visit, patient = pd.read_csv(out / "visit.csv"), pd.read_csv(out / "patient.csv")
    assert visit["patient_id"].dropna().isin(patient["p_id"]).all()

    # unlinked, the keys of the other tables are plain columns that name people: refused
    assert cli_main(["database", url, str(tmp_path / "unlinked"), "--k", "5", "--no-report",
                     "--no-links"]) == 1
    assert "visit.patient_id (name says identifier)" in error_line(capsys)
    config.write_text(f"url: {url}\nk: 5\n")
    assert cli_main(["database", str(config), str(tmp_path / "o2"), "--no-report"]) == 1
    assert error_line(capsys).endswith(f"add its links to {config} (suggested above), or "
                                       "no_links: true to release the tables unlinked")
    config.write_text(f"url: {url}\nk: 5\nno_links: true\ntables:\n  visit:\n    types: "
                      "{patient_id: identifier, doctor_id: identifier}\n")
    assert cli_main(["database", str(config), str(tmp_path / "o2"), "--no-report"]) == 0
    assert sorted(p.name for p in (tmp_path / "o2").iterdir()) == [
        "doctor.csv", "patient.csv", "summary.txt", "visit.csv"]
    config.write_text(f"url: {url}\nno_links: true\nlinks:\n  - {{parent: patient, child: "
                      "visit, foreign_key: patient_id}\n")
    with pytest.raises(ga.AvatarError, match="no_links: true, yet 'links' are declared"):
        load_database_config(config)


def error_line(capsys) -> str:
    return capsys.readouterr().err.splitlines()[-1]


SECRET = ("Qx", "Zy9")  # a password's two halves, around the character that splits it


@pytest.mark.parametrize("mark", ["/", "@", ":", "%2F", "%40", "#", "?"])
@pytest.mark.parametrize("url", [
    "postgresql://user:{password}@127.0.0.1:1/db",  # parses (except a raw @): cannot connect
    "postgresql://user:{password}@host:54x/db",  # a port that is not a number
    "my-db://user:{password}@host/db",  # a scheme SQLAlchemy does not parse
    "postgresql:/user:{password}@host/db",  # not even a URL: taken for a YAML file name
])
def test_passwords_are_masked_however_they_are_spelled(tmp_path, capsys, url, mark):
    url = url.format(password=mark.join(SECRET))
    if url.startswith("postgresql://") and ":1/" in url and "@" not in mark:
        with pytest.raises(ga.AvatarError, match=r"cannot connect to .*user:\*\*\*@127") as error:
            ga.Database.from_sql(url)
    elif url.startswith("postgresql:/u"):
        error = None
    else:
        with pytest.raises(ga.AvatarError, match=r"user:\*\*\*@") as error:
            parse_url(url)
    if error is not None:
        assert not any(half in str(error.value) for half in SECRET), error.value
    assert cli_main(["database", url, str(tmp_path / "out")]) == 1
    printed = capsys.readouterr()
    assert not any(half in printed.out + printed.err for half in SECRET), printed.err
    assert "user:***@" in printed.err
