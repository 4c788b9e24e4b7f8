"""No data cell in a message (the first rule): each error, warning or summary line that
speaks of a value a table holds words it by its rows and shape. Every path below meets
cells holding a recognisable sentinel, and no message may quote it."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.cli.commands import describe
from gpu_avatar.encoding.encoder import _finite_or_missing
from gpu_avatar.encoding.text_values import TextValues
from gpu_avatar.errors import (
    FixableError,
    GpuAvatarError,
    described,
    failure_text,
    rows_named,
    worded,
)
from gpu_avatar.files import TableFile
from gpu_avatar.parameters import check_types
from gpu_avatar.parsing import detect_date_reading, non_missing_text, type_text_column
from gpu_avatar.relational.time_series import check_series_table
from gpu_avatar.rules import Derived, RuleSet
from gpu_avatar.sql.columns import to_dates
from gpu_avatar.streaming.run import BatchTask, batch_error

TEXT = "SECRETVALUE123"
NUMBER = 987654.321
DATE = "11/12/1987"  # reads day first and month first
SENTINELS = (TEXT, "987654", "9.88e+05", DATE, "1.23e+200")


def _text_column(*cells) -> pd.Series:
    return pd.Series(["1.5", *cells, "2"], name="c", dtype=object)


def _declared_continuous():
    TextValues.declared(_text_column(TEXT), "continuous").add(_text_column(TEXT))


def _declared_datetime():
    TextValues.declared(pd.Series(["2020-01-01", TEXT], name="d"), "datetime")


def _ambiguous_dates():
    detect_date_reading(pd.Series([DATE, "01/02/1988"]), "column 'd'", "date_format=...")


def _date_format():
    values = pd.Series(["31/12/1980", TEXT])
    type_text_column(values, decimal=".", date_format="%d/%m/%Y", where="t.csv", fix="")


def _sql_date_of_a_number():
    to_dates(pd.Series(["1980-12-31", NUMBER], dtype=object), False, "t.born")


def _sql_date_of_a_text():
    to_dates(pd.Series(["1980-12-31", TEXT], dtype=object), False, "t.born")


def _sql_value_not_of_its_type(tmp_path):
    path = tmp_path / "bad.db"
    with sqlite3.connect(path) as connection:
        connection.executescript("CREATE TABLE t (i INTEGER PRIMARY KEY, v REAL);"
                                 f"INSERT INTO t VALUES (1, 2.5), (2, '{TEXT}'), (3, 1.0);")
    ga.Database.from_sql(f"sqlite:///{path}")


def _too_large():
    _finite_or_missing("x", np.array([1.0, 1.23e200]))


def _rule_broken():
    table = pd.DataFrame({"a": [1.0, 2.0, NUMBER], "b": [2.0, 3.0, 1.0]})
    RuleSet([ga.rules.Inequality("a", "b")]).check(table)


def _expression_failing():
    table = pd.DataFrame({"a": ["1", TEXT, "2"], "b": [1.0, 2.0, 3.0]})
    RuleSet([Derived("b", "round(a)")]).check(table)  # pyarrow quotes the text it can't read


def _database(child_keys, parent_keys=(1, 2, 3)) -> ga.Database:
    parent = pd.DataFrame({"pid": list(parent_keys), "x": [1.0, 2.0, 3.0]})
    child = pd.DataFrame({"cid": [10, 11, 12], "pid": list(child_keys), "y": [1.0, 2.0, 3.0]})
    db = ga.Database().add_table("parent", parent, "pid").add_table("child", child, "cid")
    return db.add_link("parent", "pid", "child", "pid")


def _orphans():
    _database([1, 987654, 2]).validate()


def _key_kinds():
    _database(["1", TEXT, "2"]).validate()


def _repeated_primary_key():
    _database([1, 2, 3], parent_keys=(987654, 987654, 3)).validate()


def _repeated_time():
    data = pd.DataFrame({"id": [1, 2, 3], "subject": [7, 7, 8], "t": [NUMBER, NUMBER, 1.0],
                         "v": [1.0, 2.0, 3.0]})
    check_series_table("samples", data, "id", "subject", "t", {})


def _foreign_error():
    raise RuntimeError(f"could not convert string to float: '{TEXT}'")


PATHS = {  # each path, and words of the message it must give (not another error)
    "text declared continuous": (_declared_continuous, "1 cell (row 2: a 14-character text"),
    "text declared datetime": (_declared_datetime, "is not a date in ISO 8601"),
    "ambiguous dates": (_ambiguous_dates, "shaped 99/99/9999) read both day first"),
    "date format": (_date_format, "does not read as a date with format"),
    "SQL date holding a number": (_sql_date_of_a_number, "1 cell (row 2: a number)"),
    "SQL date holding a text": (_sql_date_of_a_text, "does not read as a date like the"),
    "SQL value not of its type": (_sql_value_not_of_its_type, "not of its type (ValueError)"),
    "value too large": (_too_large, "1 value(s) above 1e+150"),
    "rule broken by originals": (_rule_broken, "original rows break it (row 3, by position)"),
    "expression failing": (_expression_failing, "does not compute on the originals (Arrow"),
    "orphans": (_orphans, "absent from parent.pid (row 2, by position)"),
    "key kinds": (_key_kinds, "holds text (e.g. a 1-character text shaped 9)"),
    "repeated primary key": (_repeated_primary_key, "in rows 1, 2 by position"),
    "repeated time": (_repeated_time, "repeat a time within their series (row 2"),
}


def _assert_quotes_no_sentinel(text: str) -> None:
    assert text and not any(sentinel in text for sentinel in SENTINELS), text


@pytest.mark.parametrize(("path", "words"), PATHS.values(), ids=PATHS.keys())
def test_no_error_quotes_a_cell(path, words, tmp_path):
    arguments = (tmp_path,) if path is _sql_value_not_of_its_type else ()
    with warnings.catch_warnings(record=True) as caught, pytest.raises(GpuAvatarError) as error:
        warnings.simplefilter("always")
        path(*arguments)
    assert words in str(error.value)
    _assert_quotes_no_sentinel(str(error.value))
    if isinstance(error.value, FixableError):
        for entry in ("cli", "yaml"):
            _assert_quotes_no_sentinel(worded(error.value, entry))
    for warning in caught:
        _assert_quotes_no_sentinel(str(warning.message))


def test_orphans_dropped_are_warned_without_their_keys():
    db = _database([1, 987654, 2])
    db.links[0].drop_orphans = True
    with pytest.warns(UserWarning) as record:
        db.validate()
    for warning in record:
        _assert_quotes_no_sentinel(str(warning.message))


def test_a_column_kept_as_text_is_summarised_without_its_value(tmp_path):
    values = pd.Series(["1", "2", TEXT], name="c")
    typing = type_text_column(values, decimal=".", date_format=None, where="t.csv", fix="")
    assert typing.stopped == TEXT  # kept to decide, never shown
    table = TableFile(values.to_frame(), tmp_path / "t.csv", "csv", ",", ".", "utf-8",
                      {"c": typing})
    summary = table.summary()
    assert "'c' kept as text: a value (a 14-character text shaped aaaaaaaaaaa999)" in summary
    _assert_quotes_no_sentinel(summary)


def test_another_librarys_error_is_named_by_its_class():
    try:
        _foreign_error()
    except RuntimeError as error:
        _assert_quotes_no_sentinel(describe(error))
        assert failure_text(error) == "RuntimeError"
        task = BatchTask(3, 8, 400, 1200, np.random.SeedSequence(0), True, "run")
        _assert_quotes_no_sentinel(str(batch_error(task, error, "out/")))
    assert failure_text(MemoryError("out of memory")) == "MemoryError: out of memory"


def test_cells_are_described_by_kind_and_shape():
    assert described(TEXT) == "a 14-character text shaped aaaaaaaaaaa999"
    assert described("a long free text about someone in a ward") == (
        "a 40-character text of 9 words")
    assert [described(v) for v in (NUMBER, True, pd.Timestamp(0), None)] == [
        "a number", "a boolean", "a date", "a missing value"]
    assert rows_named([4]) == "row 4" and rows_named([1, 2, 3], 7) == "rows 1, 2, 3 and 4 more"


def test_rows_are_the_files_rows_across_chunks():
    chunk = pd.Series(["1", "2", TEXT], index=pd.RangeIndex(100, 103), name="c")
    with pytest.raises(ga.AvatarError, match=r"1 cell \(row 103: ") as error:
        TextValues.declared(chunk, "continuous").add(chunk)
    _assert_quotes_no_sentinel(str(error.value))
    assert non_missing_text(chunk).index[-1] == 102


def test_an_unknown_kind_is_one_short_line_naming_the_kinds():
    with pytest.raises(ga.AvatarError) as error:
        check_types({"stage": "ordinal"})
    message = str(error.value)
    assert len(message) < 300 and "\n" not in message, message
    for kind in ("continuous", "categorical", "datetime[:FORMAT]", "identifier",
                 "pseudonym:STRATEGY", "excluded:row_order|coordinate_similarity", "dropped",
                 "docs/guide/columns.md"):
        assert kind in message
    # the page it cites exists (the kinds moved there from the README)
    assert (Path(__file__).resolve().parents[1] / "docs" / "guide" / "columns.md").is_file()
