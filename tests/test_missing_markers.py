"""Missing markers (issue #36): ``None`` and ``NA`` are modalities in a text column (MASS's
``survey`` writes ``None`` for "no exercise", French exports ``NA`` for "non applicable") and
come back in the avatars; ``.``, ``-``, ``NA``... are missing in a column of numbers or dates
(a SAS export's lab values); the user forces markers from Python, the command line and YAML.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.cli import main
from gpu_avatar.relational.config import load_database_config


def survey(n: int = 200, marker: str = "None", seed: int = 0) -> pd.DataFrame:
    """MASS's ``survey`` as a CSV holds it: ``exer`` is ``marker`` on 10 % of the rows."""
    rng = np.random.default_rng(seed)
    exer = rng.choice(["Freq", "Some"], n).astype(object)
    exer[rng.permutation(n)[: n // 10]] = marker
    return pd.DataFrame({"exer": exer, "smoke": rng.choice(["Never", "Occas", "Heavy"], n),
                         "pulse": rng.integers(50, 100, n),
                         "height": rng.normal(172, 9, n).round(1)})


@pytest.mark.parametrize("marker", ["None", "NA"])
def test_a_text_columns_marker_is_a_modality_and_comes_back_in_the_avatars(tmp_path, marker):
    source, output = tmp_path / "survey.csv", tmp_path / "avatars.csv"
    df = survey(marker=marker)
    df.to_csv(source, index=False)
    table = ga.read_table_file(source)
    assert table.frame["exer"].tolist() == df["exer"].tolist()  # not one cell lost
    assert table.frame["exer"].notna().all() and "missing" not in table.summary()
    assert main(["avatarize", str(source), str(output), "--k", "10", "--seed", "0",
                 "--quiet"]) == 0
    written = pd.read_csv(output, dtype=str, keep_default_na=False)["exer"]
    assert (written == marker).any() and set(written) <= {"Freq", "Some", marker}
    assert ga.read_table(output)["exer"].notna().all()  # read back as the modality


def test_a_sas_lab_value_with_dot_markers_reads_as_numbers(tmp_path):
    path = tmp_path / "lab.csv"
    hgb = [f"{v:.1f}" for v in np.random.default_rng(1).normal(13, 1.5, 100)]
    for row in range(0, 96, 8):
        hgb[row] = "."
    hgb[5] = " . "  # blanks around a marker
    pd.DataFrame({"hgb": hgb, "crp": ["NA"] * 3 + ["1.5"] * 97}).to_csv(path, sep=";",
                                                                    index=False)
    table = ga.read_table_file(path)
    assert table.frame["hgb"].dtype == np.float64
    assert table.frame["hgb"].isna().sum() == 13
    assert table.frame["crp"].dtype == np.float64 and table.frame["crp"].isna().sum() == 3
    summary = table.summary()
    assert "column 'hgb': 13 cells '.' read as missing" in summary
    assert "column 'crp': 3 cells 'NA' read as missing" in summary
    assert not any(value in summary for value in hgb if value.strip() != ".")  # no value


def test_a_date_column_with_dash_markers_reads_as_dates(tmp_path):
    path = tmp_path / "visits.csv"
    path.write_text("visit;dose\n10/01/2021;-\n-;?\n25/02/2021;?\n13/03/2021;2\n",
                    encoding="utf-8")
    table = ga.read_table_file(path)
    frame = table.frame
    assert frame["visit"].tolist()[::2] == [pd.Timestamp("2021-01-10"),
                                            pd.Timestamp("2021-02-25")]
    assert pd.isna(frame["visit"].iloc[1])
    assert frame["dose"].tolist()[3] == 2 and frame["dose"].isna().sum() == 3
    assert "column 'dose': 2 cells '?', 1 cell '-' read as missing" in table.summary()
    given = ga.read_table(path, date_format={"visit": "%d/%m/%Y"})  # a format given: alike
    assert given["visit"].isna().tolist() == [False, True, False, False]


def test_empty_cells_are_missing_in_every_column_and_other_text_stays(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('code,n,d,flag,note\nA,1,2021-01-01,true,?\n,,,,\nB,"",2021-01-03,false,'
                    '-\nNA,3,2021-01-04,,"."\n', encoding="utf-8")
    frame = ga.read_table(path)
    assert frame.isna().sum().to_dict() == {"code": 1, "n": 2, "d": 1, "flag": 2, "note": 1}
    assert frame["code"].tolist()[::2] == ["A", "B"] and frame["code"].iloc[3] == "NA"
    assert frame["note"].dropna().tolist() == ["?", "-", "."]  # a text column of markers
    assert frame["n"].dtype == "Int64" and pd.api.types.is_datetime64_dtype(frame["d"])


def test_markers_given_are_missing_even_in_a_text_column(tmp_path, capsys):
    source = tmp_path / "survey.csv"
    df = survey()
    df.to_csv(source, index=False)
    nones = int((df["exer"] == "None").sum())
    for na_values in (["None"], "None", {"exer": "None"}, {"exer": ["None", "x"]}):
        table = ga.read_table_file(source, na_values=na_values)
        assert table.frame["exer"].isna().sum() == nones
        assert f"column 'exer': {nones} cells 'None' read as missing" in table.summary()
    sentinel = ga.read_table(source, na_values={"pulse": [df["pulse"].iloc[0]]})
    assert sentinel["pulse"].dtype == "Int64" and sentinel["pulse"].isna().any()

    training, holdout = tmp_path / "training.csv", tmp_path / "holdout.csv"
    assert main(["split", str(source), str(training), str(holdout), "--seed", "0",
                 "--na-values", "exer=None"]) == 0
    assert f"column 'exer': {nones} cells 'None' read as missing" in capsys.readouterr().out
    written = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False)
                         for p in (training, holdout)])
    assert (written["exer"] == "").sum() == nones and "None" not in set(written["exer"])
    assert main(["split", str(source), str(training), str(holdout), "--na-values", "None",
                 "--quiet", "--overwrite"]) == 0
    assert main(["split", str(source), str(training), str(holdout), "--na-values",
                 "wrong=None", "--quiet", "--overwrite"]) == 1
    assert "unknown column(s) ['wrong']" in capsys.readouterr().err

    config = tmp_path / "db.yaml"
    df.assign(id=np.arange(len(df))).to_csv(source, index=False)
    config.write_text("tables:\n  survey:\n    path: survey.csv\n    primary_key: id\n"
                      "    na_values: {exer: [None]}\n", encoding="utf-8")
    read = load_database_config(config).database.tables["survey"].data
    assert read["exer"].isna().sum() == nones
    config.write_text("tables:\n  survey:\n    path: survey.csv\n    primary_key: id\n"
                      "    na_values: [null]\n", encoding="utf-8")
    with pytest.raises(ga.AvatarError, match=r"tables.survey.*missing markers must be text; "
                       r"give na_values: \['NA', '.'\].*quote"):
        load_database_config(config)


def test_a_parquet_file_refuses_markers(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "t.parquet"
    survey(20).to_parquet(path)
    assert ga.read_table(path)["exer"].eq("None").sum() == 2  # as stored
    with pytest.raises(ga.AvatarError, match="stores missing values as missing.*drop na_values"):
        ga.read_table(path, na_values=["None"])
