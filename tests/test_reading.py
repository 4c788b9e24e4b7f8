"""Tables read as hospitals export them, and the rule that refuses undeclared identifying
columns: the same outcome from Python, the command line and YAML.

The files are the bundled AIDS table (ACTG 175, see gpu_avatar/data/README.md) written the
ways real exports are: ``;`` with decimal commas in Windows-1252, a BOM, UTF-16 from a
spreadsheet, day-first dates, a unique patient code and an e-mail column.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.cli import main
from gpu_avatar.demo import load_aids


@pytest.fixture(scope="module")
def export() -> pd.DataFrame:
    """300 AIDS patients as a hospital export holds them: a text code, an e-mail address, a
    day-first birth date, a ward in Latin-1 letters, whole numbers with blanks."""
    aids, _ = load_aids()
    df = aids.iloc[:300].reset_index(drop=True)
    rng = np.random.default_rng(0)
    birth = pd.Timestamp("1995-01-01") - pd.to_timedelta(df["age"] * 365.25 + rng.integers(
        0, 365, len(df)), unit="D")
    return pd.DataFrame({
        "patient_code": [f"P{i:04d}" for i in range(len(df))],
        "email": [f"patient{i}@hôpital.fr" for i in range(len(df))],
        "birth": birth.dt.normalize(),
        "service": rng.choice(["Réanimation", "Pédiatrie", "Cardiologie"], len(df)),
        "wtkg": df["wtkg"].round(1),
        "karnof": df["karnof"],
        "cd496": df["cd496"].astype("Int64"),  # whole numbers with blanks
        "gender": df["gender"],
        "cd40": df["cd40"],
        "days": df["days"],
    })


def write_export(df: pd.DataFrame, path, sep=";", decimal=",", encoding="cp1252",
                 date_format="%d/%m/%Y") -> None:
    df.to_csv(path, sep=sep, decimal=decimal, encoding=encoding, index=False,
              date_format=date_format)


IDENTIFIERS = {"patient_code": "identifier", "email": "identifier"}


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------- reader
def test_a_semicolon_windows_1252_export_is_read_as_typed_columns(export, tmp_path):
    path = tmp_path / "export.csv"
    write_export(export, path)
    table = ga.read_table_file(path)
    assert (table.sep, table.decimal, table.encoding) == (";", ",", "cp1252")
    frame = table.frame
    assert frame["wtkg"].dtype == np.float64 and frame["wtkg"].equals(export["wtkg"])
    assert frame["karnof"].dtype == np.int64
    assert frame["cd496"].dtype == "Int64"  # whole numbers with blanks stay integers
    assert frame["cd496"].isna().equals(export["cd496"].isna())
    assert pd.api.types.is_datetime64_dtype(frame["birth"])
    assert (frame["birth"] == export["birth"]).all()  # day first, not month first
    assert frame["service"].tolist() == export["service"].tolist()
    assert "Windows-1252" in table.summary() and "birth (day first)" in table.summary()


@pytest.mark.parametrize("encoding, sep", [("utf-8-sig", ","), ("utf-16", "\t")])
def test_a_bom_or_a_utf16_spreadsheet_export_is_read(export, tmp_path, encoding, sep):
    path = tmp_path / "export.csv"
    write_export(export, path, sep=sep, decimal=".", encoding=encoding,
                 date_format="%Y-%m-%d")
    table = ga.read_table_file(path)
    assert table.frame.columns.tolist() == export.columns.tolist()  # no BOM in a name
    assert (table.sep, table.decimal) == (sep, ".")
    assert pd.api.types.is_datetime64_dtype(table.frame["birth"])
    assert table.frame["service"].tolist() == export["service"].tolist()


def test_a_column_becomes_numbers_or_dates_only_if_every_value_reads(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("code;weight;visit;zip;flag\n"
                    "A1;70,5;2021-03-27 10:00+01:00;01234;true\n"
                    "A2;7O;2021-03-29 10:00+02:00;75012;FALSE\n"
                    "A3;80;;13001;\n", encoding="utf-8")
    table = ga.read_table_file(path)
    frame = table.frame
    assert pd.api.types.is_string_dtype(frame["weight"])  # "7O" is not a number
    assert "'weight' kept as text: a value (a 2-character text shaped 9a)" in table.summary()
    # offsets that change with daylight saving: one instant each
    assert frame["visit"].iloc[:2].tolist() == [pd.Timestamp("2021-03-27 09:00", tz="UTC"),
                                                pd.Timestamp("2021-03-29 08:00", tz="UTC")]
    assert frame["zip"].tolist() == ["01234", "75012", "13001"]  # codes keep their zeros
    assert frame["flag"].tolist()[:2] == [True, False] and pd.isna(frame["flag"].iloc[2])


@pytest.mark.parametrize("text, expected", [
    ("a,b\n1,2,\n3,4,\n", {"a": [1, 3], "b": [2, 4]}),  # a trailing separator
    ("a;b\n1,5;2;\n3;4\n", {"a": [1.5, 3.0], "b": [2, 4]}),
    ("weight\n70,5\n80,25\n", {"weight": [70.5, 80.25]}),  # one column, decimal commas
    ("sep=;\na;b\n1,5;x\n", {"a": [1.5], "b": ["x"]}),  # Excel's separator line
    ("nir;x\n12345678901234567890;1\n", {"nir": ["12345678901234567890"], "x": [1]}),
    ("t,x\n10/14/2021 11:35 PM,1\n10/15/2021 09:05 AM,2\n",  # a US export's AM/PM
     {"t": [pd.Timestamp("2021-10-14 23:35"), pd.Timestamp("2021-10-15 09:05")], "x": [1, 2]}),
])
def test_what_exports_really_hold_is_read_without_losing_a_value(tmp_path, text, expected):
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    assert ga.read_table(path).to_dict("list") == expected


def test_lines_no_separator_splits_alike_are_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4,5,6\n7\n8,9\n", encoding="utf-8")
    with pytest.raises(ga.AvatarError, match="give the separator"):
        ga.read_table(path)


def test_an_ambiguous_date_column_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("d,x\n03/04/2001,1.5\n05/06/2002,2.5\n", encoding="utf-8")
    with pytest.raises(ga.AvatarError, match=r"read both day first and month first.*"
                       r"date_format=\{'d': '%d/%m/%Y'\}"):
        ga.read_table(path)
    for date_format in ({"d": "%d/%m/%Y"}, "%d/%m/%Y"):  # for the column, or for every one
        read = ga.read_table(path, date_format=date_format)
        assert read["d"].tolist() == [pd.Timestamp("2001-04-03"), pd.Timestamp("2002-06-05")]
    assert main(["advise", str(path), "--quiet"]) == 1  # refused from the command line too


def test_the_release_is_written_as_the_input_was(export, tmp_path, capsys):
    source, output = tmp_path / "export.csv", tmp_path / "avatars.csv"
    write_export(export, source)
    before = digest(source)
    assert main(["avatarize", str(source), str(output), "--k", "10", "--seed", "0", "--quiet",
                 "--types", "patient_code=identifier", "email=identifier"]) == 0
    assert digest(source) == before  # the input untouched
    first_line = output.read_bytes().splitlines()[0].decode("cp1252")
    assert first_line.split(";") == export.columns.tolist()
    avatars = ga.read_table_file(output)
    assert (avatars.sep, avatars.decimal, avatars.encoding) == (";", ",", "cp1252")
    released, original = avatars.frame, ga.read_table(source)
    assert released.dtypes.equals(original.dtypes)
    assert not set(released["patient_code"]) & set(original["patient_code"])
    assert not set(released["email"]) & set(original["email"])
    # dates come back as dates (day resolution), not as some original person's text
    assert (released["birth"] == released["birth"].dt.normalize()).all()
    written = pd.read_csv(output, sep=";", encoding="cp1252", dtype=str)["birth"]
    assert written.str.fullmatch(r"\d{2}/\d{2}/\d{4}").all()  # day first, as read
    unique = original["birth"].value_counts().loc[lambda c: c == 1].index
    assert released["birth"].isin(unique).mean() < 0.1  # text categories: every value copied
    assert released["cd496"].isna().any() and released["cd496"].dtype == "Int64"


def test_booleans_come_back_spelt_as_read(tmp_path):
    for true, false in (("true", "false"), ("TRUE", "FALSE"), ("True", "False")):
        source, output = tmp_path / "in.csv", tmp_path / "out.csv"
        source.write_text(f"x;flag\n1;{true}\n2;{false}\n3;\n")
        table = ga.read_table_file(source)
        assert table.frame["flag"].iloc[:2].tolist() == [True, False]
        table.write(table.frame, output)
        assert output.read_text() == source.read_text(), true


def test_crlf_line_endings_come_back(tmp_path):
    source, output = tmp_path / "in.csv", tmp_path / "out.csv"
    source.write_bytes(b"x;y\r\n1,5;a\r\n2,5;b\r\n")
    table = ga.read_table_file(source)
    assert table.line_ending == "\r\n"
    table.write(table.frame, output)
    assert output.read_bytes() == source.read_bytes()


def test_the_output_encoding_is_an_option(export, tmp_path, capsys):
    source = tmp_path / "export.csv"
    write_export(export, source)  # Windows-1252
    training, holdout = tmp_path / "training.csv", tmp_path / "holdout.csv"
    assert main(["split", str(source), str(training), str(holdout), "--seed", "0", "--quiet",
                 "--output-sep", ",", "--output-decimal", ".",
                 "--output-encoding", "utf-8"]) == 0
    written = ga.read_table_file(training)
    assert (written.sep, written.decimal, written.encoding) == (",", ".", "utf-8")
    assert "Réanimation" in training.read_text(encoding="utf-8")
    assert main(["split", str(source), str(training), str(holdout), "--quiet", "--overwrite",
                 "--output-encoding", "klingon"]) == 1
    assert "--output-encoding 'klingon' is not a known text encoding" in capsys.readouterr().err


def test_a_table_is_written_back_as_it_was_read_from_python(tmp_path):
    source, output = tmp_path / "in.csv", tmp_path / "out.csv"
    lines = ["id;poids;naissance;fumeur;ville", "1;72,5;03/02/1961;TRUE;Orléans",
             "2;80,25;17/11/1975;FALSE;Nîmes"]
    source.write_bytes("\r\n".join([*lines, ""]).encode("cp1252"))
    table = ga.read_table_file(source)
    assert (table.sep, table.decimal, table.encoding) == (";", ",", "cp1252")
    assert table.frame["naissance"].dtype.kind == "M"
    assert table.write(table.frame, output) == output
    assert output.read_bytes() == source.read_bytes()
    table.write(table.frame, output, sep=",", decimal=".", encoding="utf-8")
    assert output.read_text(encoding="utf-8").splitlines()[1] == (
        "1,72.5,03/02/1961,TRUE,Orléans")


# ------------------------------------------------------------------- identifying columns
def test_undeclared_identifying_columns_are_refused_before_any_work(export):
    with pytest.raises(ga.IdentifyingColumnsError) as raised:
        ga.avatarize(export, k=10, seed=0)
    message = str(raised.value)
    assert message.startswith("2 column(s) need a decision before release: patient_code "
                              "(distinct on every row), email (e-mail addresses); nothing "
                              "was released; review ga.plan(data)")
    assert "\n" not in message and len(message) <= 300
    assert not any(value in message for value in export["patient_code"].tolist()
                   + export["email"].tolist())
    assert "birth" not in message and "service" not in message
    found = {c.column: c for c in raised.value.columns}  # the evidence, kept whole
    assert set(found) == {"patient_code", "email"}
    assert found["patient_code"].reason == ("300 distinct texts in 300 rows: one per row, as "
                                            "codes or names are (5 characters typically)")


def test_names_repeated_over_a_persons_rows_are_refused():
    """Several rows per person: no value is alone, yet names are as varied as people."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"who": [f"{a} {b}" for a in "ABCDEFGH" for b in "abcde"] * 3,
                       "dose": rng.normal(10, 2, 120)})
    with pytest.raises(ga.IdentifyingColumnsError, match="who [(]varied text[)]") as raised:
        ga.avatarize(df, k=5, seed=0)
    assert raised.value.columns[0].reason.startswith("40 distinct texts in 120 rows")


def test_a_patients_rows_name_him_and_his_comments_are_refused():
    """A dialysis table: 25 patients, 12 sessions each; names, a hospital number repeated on
    every row, free-text comments one patient has (found by a new user from the README)."""
    rng = np.random.default_rng(4)
    names = [f"{a} {b}" for a in ("DUBOIS", "MARTIN", "BERNARD", "PETIT", "DURAND")
             for b in ("Maëlle", "Jean", "Luc", "Anne", "Zoé")]
    comments = ["RAS"] * 285 + ["Appeler sa fille Mme Joly au 06 60 92 31 31"] + [None] * 14
    df = pd.DataFrame({"patient": np.repeat(names, 12),
                       "ipp": np.repeat(800000 + np.arange(25), 12),
                       "comment": comments, "kt_v": rng.normal(1.4, 0.2, 300)})
    found = {c.column: c for c in ga.encoding.identifying.identifying_columns(df)}
    assert found["patient"].label == "people's names"
    assert found["ipp"].label == "name says identifier" and found["ipp"].proposal == "identifier"
    assert found["comment"].label == "free text" and found["comment"].proposal == "dropped"
    assert set(found) == {"patient", "ipp", "comment"}
    assert not any(name in c.reason for c in found.values() for name in names + comments[285:286])


def test_a_whole_number_measurement_distinct_on_every_row_is_no_identifier():
    """A lab count distinct on every row has gaps and skew, not an identifier's shape; a
    patient number declared continuous is released knowingly, as a measurement."""
    aids, _ = load_aids()
    df = aids[["cd420", "wtkg", "gender"]].drop_duplicates("cd420").iloc[:60]  # a lab count
    assert ga.encoding.identifying.identifying_columns(df) == []
    numbered = df.assign(number=np.arange(1, 61))
    with pytest.raises(ga.IdentifyingColumnsError, match="number [(]distinct on every row"):
        ga.avatarize(numbered, k=5, seed=0)
    result = ga.avatarize(numbered, k=5, seed=0, types={"number": "continuous"})
    assert [(c.column, c.numeric) for c in result.knowingly_released] == [("number", True)]


def test_identifying_values_are_recognised_by_their_shape():
    n = 40
    df = pd.DataFrame({
        "phone": [f"+33 6 12 34 {i // 10:02d} {i % 10:02d}" for i in range(n)],
        "nir": [f"1 84 12 75 123 {400 + i % 3:03d} {i % 5:02d}" for i in range(n)],
        "ssn": [f"{100 + i % 4}-45-678{i % 2}" for i in range(n)],
        "iban": [f"FR76 3000 6000 0112 3456 7890 {i % 3}89" for i in range(n)],
        "x": np.linspace(0, 1, n),
    })
    found = {c.column: c.reason for c in ga.encoding.identifying.identifying_columns(df)}
    assert set(found) == {"phone", "nir", "ssn", "iban"}  # repeated values, yet direct ids
    assert "French social-security numbers" in found["nir"]


def test_a_category_most_people_hold_alone_is_refused_and_can_be_released_knowingly():
    rng = np.random.default_rng(1)
    sites = pd.Categorical([f"S{i}" for i in range(30)] + ["S0"] * 10)  # a category dtype
    df = pd.DataFrame({"site": sites, "x": rng.normal(size=40)})
    with pytest.raises(ga.IdentifyingColumnsError, match="site [(]values held by one row"):
        ga.avatarize(df, k=5, seed=0)
    result = ga.avatarize(df, k=5, seed=0, types={"site": "categorical"})
    assert [c.column for c in result.knowingly_released] == ["site"]
    summary = ga.demo.summary("t", result, 1.0, privacy=result.privacy_metrics())
    assert "released as declared, although they could identify a person: 'site'" in summary


def test_the_rule_is_worded_for_the_command_line_and_for_yaml(export, tmp_path, capsys):
    source = tmp_path / "export.csv"
    write_export(export, source)
    output = tmp_path / "avatars.csv"
    assert main(["avatarize", str(source), str(output), "--k", "10", "--quiet"]) == 1
    error = capsys.readouterr().err
    assert "patient_code (distinct on every row), email (e-mail addresses)" in error
    assert "run gpu-avatar plan SOURCE -o plan.yaml, review it, then add --plan plan.yaml" in error
    assert "types={" not in error and not output.exists()

    config = tmp_path / "db.yaml"
    config.write_text("tables:\n  patient:\n    path: export.csv\n    primary_key: id\n",
                      encoding="utf-8")
    export.assign(id=np.arange(len(export))).pipe(write_export, source)
    assert main(["database", str(config), str(tmp_path / "out"), "--k", "10", "--quiet",
                 "--no-report"]) == 1
    error = capsys.readouterr().err
    assert "patient.patient_code (distinct on every row)" in error
    assert "run gpu-avatar plan CONFIG.yaml -o plan.yaml" in error
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------ declared kinds
def test_text_declared_datetime_or_continuous_is_read_and_written_back_as_text():
    rng = np.random.default_rng(2)
    n = 60
    dates = pd.Series(pd.date_range("1950-01-01", periods=n, freq="37D"))
    df = pd.DataFrame({"birth": dates.dt.strftime("%d/%m/%Y"),
                       "w": [f"{v:.1f}".replace(".", ",") for v in rng.normal(70, 9, n)],
                       "g": rng.choice(["a", "b"], n)})
    df.loc[::4, "w"] = None
    before = df.copy()
    result = ga.avatarize(df, k=5, seed=0, types={"birth": "datetime", "w": "continuous"})
    pd.testing.assert_frame_equal(df, before)
    avatars = result.avatars
    assert avatars.dtypes.equals(df.dtypes)
    parsed = pd.to_datetime(avatars["birth"], format="%d/%m/%Y")  # every value reads back
    assert parsed.between(dates.min(), dates.max()).all()
    assert avatars["w"].dropna().str.fullmatch(r"\d+,\d").all()  # one decimal, a comma
    assert avatars["w"].isna().any()
    with pytest.raises(ga.AvatarError, match=r"column 'g' is declared continuous but \d+ cells"):
        ga.avatarize(df, k=5, types={"birth": "datetime", "w": "continuous",
                                     "g": "continuous"})
    with pytest.raises(ga.AvatarError, match=r"not a kind; kinds: continuous.*datetime"):
        ga.avatarize(df, k=5, types={"g": "date"})


def test_streamed_and_sqlite_tables_meet_the_same_rule(export, tmp_path):
    """The rule holds wherever a table comes from: a Parquet file streamed in batches, an
    SQLite database read with its keys."""
    pytest.importorskip("pyarrow")
    frame = export.drop(columns="birth")
    frame.to_parquet(tmp_path / "export.parquet")
    with pytest.raises(ga.IdentifyingColumnsError, match="patient_code .*email"):
        ga.avatarize_parquet(tmp_path / "export.parquet", tmp_path / "out", k=10,
                             batch_size=100, seed=0, metrics=False)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.parquet"))

    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'export.db'}"
    engine = sa.create_engine(url)
    frame.assign(id=np.arange(len(frame))).to_sql("patient", engine, index=False)
    engine.dispose()
    db = ga.Database.from_sql(url, tables=["patient"], primary_keys={"patient": "id"})
    with pytest.raises(ga.IdentifyingColumnsError, match="patient.patient_code"):
        ga.avatarize_database(db, k=10, seed=0)
