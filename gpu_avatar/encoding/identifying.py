"""The rule that keeps undeclared identifying columns out of a release, written once for
every entry point (``avatarize``, ``advise``, ``avatarize_database``, ``Database.from_sql``,
streaming, the command line).

A column lets a person be found when it is:

- a text or whole-number column with a distinct value for (nearly) every row (at least
  ``DISTINCT_SHARE`` of ``MIN_ROWS`` or more non-missing values);
- a text column with at least ``MIN_ROWS`` distinct values, a ``TEXT_DISTINCT_SHARE`` of its
  rows: names, addresses and free text where a person has several rows (visits, stays);
- a column whose name says it identifies a person (``IDENTIFYING_NAME_WORDS``: id, ipp, mrn,
  email, phone, address, prenom...; ``name``/``nom`` alone or beside ``PERSON_WORDS``);
- a text column whose values look like direct identifiers (``PATTERNS``: e-mail, phone
  number, French NIR, US SSN, IBAN, UUID) in at least ``PATTERN_SHARE`` of a sample, or like
  people's names (``DUBOIS Maëlle``: at least ``MIN_NAMES`` distinct);
- free text: a text column with a value of ``FREE_TEXT_WORDS`` words or more held by one row;
- a categorical column where most rows (over ``SINGLETON_SHARE`` of all rows, missing
  cells counting as one shared value) hold a value no other row has.

Such a column is refused unless the user declared its kind: ``identifier`` (fresh values),
``categorical`` or ``continuous`` (released knowingly: the result keeps the list, the summary
and the report say so in one line), or dropped it. SQL columns under a UNIQUE constraint are
declared ``identifier`` by ``Database.from_sql``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, FixableError
from ..parameters import column_kind, reattach_method
from ..parsing import SAMPLE, decimal_mark, type_text_column
from .kinds import (
    CATEGORICAL,
    CONTINUOUS,
    DROPPED,
    EXCLUDED,
    IDENTIFIER,
    detect_kind,
    is_number,
    is_text,
)

DISTINCT_SHARE = 0.95
TEXT_DISTINCT_SHARE = 0.2  # text this varied: names, addresses, free text (rows per person)
MIN_ROWS = 20  # below, distinct numbers say little (ten ages are often all distinct)
SINGLETON_SHARE = 0.5
PATTERN_SHARE = 0.9
_PATTERN_SAMPLE = 1000
PATTERNS = {
    "e-mail addresses": r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}",
    "phone numbers": r"(?:\+|00)\d[\d\s.()-]{6,}\d|0\d(?:[\s.-]?\d{2}){4}"
                     r"|\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}",
    "French social-security numbers (NIR)": r"[12]\s?\d{2}\s?(?:0[1-9]|1[0-2]|[2-9]\d)\s?"
                                            r"(?:\d{2}|2[AB])\s?\d{3}\s?\d{3}(?:\s?\d{2})?",
    "US social-security numbers": r"\d{3}-\d{2}-\d{4}",
    "IBANs": r"[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,4})?",
    "UUIDs": r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
             r"[0-9a-fA-F]{12}",
}
_PHONE_DIGITS = (8, 15)  # a phone number has 8 to 15 digits (E.164)
# words of a column's name that say it identifies a person (English and French)
IDENTIFYING_NAME_WORDS = frozenset({
    "id", "ids", "ipp", "nip", "mrn", "nir", "ssn", "nss", "insee", "email", "mail", "courriel",
    "phone", "telephone", "tel", "mobile", "portable", "iban", "uuid", "passport",
    "passeport", "address", "adresse", "surname", "firstname", "lastname", "fullname",
    "prenom", "prénom",
})
PERSON_NAME_WORDS = frozenset({"name", "nom"})  # a person's only with these words beside them
PERSON_WORDS = frozenset({"patient", "first", "last", "full", "family", "given", "maiden",
                          "birth", "naissance", "jeune", "fille", "usage", "person", "personne"})
FREE_TEXT_WORDS = 4  # a value of this many words, held by one row, is free text about a person
_NAME_SHAPE = r"[A-ZÀ-Ý][A-Za-zÀ-ÿ'-]+(?:\s+[A-ZÀ-Ý][A-Za-zÀ-ÿ'-]+)+"  # DUBOIS Maëlle
MIN_NAMES = 10  # distinct values of a person's-name shape


@dataclass(frozen=True)
class IdentifyingColumn:
    """A column the rule flags, and why (in words a data-protection officer reads)."""

    column: Any
    reason: str
    table: str | None = None
    numeric: bool = False  # released knowingly as continuous (a measurement), else categorical
    proposal: str = "identifier"  # the declaration proposed: "identifier" or "dropped"
    confidence: str = "high"  # "high", "medium" or "low"
    label: str = ""  # a short clause for one-line messages ("free text", "person key")

    @property
    def name(self) -> str:
        return f"{self.table}.{self.column}" if self.table else repr(self.column)


def _looks_like(text: pd.Series) -> str | None:
    """The kind of direct identifier most sampled values look like, if any."""
    sample = text.iloc[:_PATTERN_SAMPLE].astype(str).str.strip()
    for label, pattern in PATTERNS.items():
        matched = sample.str.fullmatch(pattern)
        if label == "phone numbers":
            digits = sample.str.count(r"\d")
            matched &= digits.between(*_PHONE_DIGITS)
        if matched.mean() >= PATTERN_SHARE:
            return label
    return None


def _name_words(column: Any) -> list[str]:
    """The words of a column's name (``patientId``, ``nom_patient`` -> patient, id / nom)."""
    spaced = re.sub(r"([a-zà-ÿ])([A-Z])", r"\1 \2", str(column))
    return [word for word in re.split(r"[^0-9a-zà-ÿ]+", spaced.lower()) if word]


def _named_identifying(column: Any) -> bool:
    words = set(_name_words(column))
    return bool(words & IDENTIFYING_NAME_WORDS) or bool(
        words & PERSON_NAME_WORDS and (len(words) == 1 or words & PERSON_WORDS))


def _is_whole(values: pd.Series) -> bool:
    if pd.api.types.is_integer_dtype(values.dtype):
        return True
    numbers = values.to_numpy(dtype=np.float64)
    return bool(np.all(numbers == np.floor(numbers)))


def column_reason(series: pd.Series) -> str | None:
    """Why ``series`` would let a person be found, or None (see the module docstring)."""
    present = series.dropna()
    n = len(present)
    if n == 0 or pd.api.types.is_bool_dtype(series.dtype):
        return None
    text = is_text(series.dtype) and not isinstance(series.dtype, pd.CategoricalDtype)
    if text:
        label = _looks_like(present)
        if label is not None:
            return f"its values look like {label}"
    whole = is_number(series.dtype) and _is_whole(present)
    if not (text or whole or detect_kind(series) == CATEGORICAL):
        return _name_reason(series.name)  # fractions, dates: no count of values can tell
    counts = present.value_counts(sort=False)  # 0.2 s a column of 10^6 distinct numbers
    if text:
        distinct = pd.Series(counts.index.astype(str), dtype=object)
        if len(counts) >= MIN_NAMES and distinct.str.fullmatch(_NAME_SHAPE).mean() >= PATTERN_SHARE:
            return "its values look like people's names"
        alone = distinct[(counts == 1).to_numpy()]
        if (alone.str.split().str.len() >= FREE_TEXT_WORDS).any():
            example = alone[alone.str.split().str.len() >= FREE_TEXT_WORDS].iloc[0]
            return f"free text, some held by one row only (such as {example[:40]!r})"
    if text or whole:
        if n >= MIN_ROWS and len(counts) >= DISTINCT_SHARE * n:
            return f"a distinct value in {len(counts):,} of {n:,} rows"
    if text and len(counts) >= max(MIN_ROWS, TEXT_DISTINCT_SHARE * n):
        return (f"{len(counts):,} distinct texts in {n:,} rows, as names, addresses or free "
                "text have when a person has several rows")
    if detect_kind(series) == CATEGORICAL:  # over every row: a missing cell is shared
        alone = int((counts == 1).sum())
        if alone > SINGLETON_SHARE * len(series):
            return f"{alone:,} of {len(series):,} rows hold a value no other row has"
    return _name_reason(series.name)


def _name_reason(column: Any) -> str | None:
    return "its name says it identifies a person" if _named_identifying(column) else None


def _typing_hint(series: pd.Series) -> str:
    """For a text column that reads as numbers or dates, the kind to declare instead."""
    try:
        typing = type_text_column(series, decimal=decimal_mark(series.dropna().iloc[:SAMPLE]),
                                  date_format=None, where="", fix="")
    except AvatarError:  # dates in both day/month orders: dates all the same
        return "; its values read as dates: declare it 'datetime:FORMAT'"
    hint = {"date": "datetime", "number": "continuous", "integer": "continuous"}.get(typing.kind)
    return f"; its values read as {typing.kind}s: declare it {hint!r}" if hint else ""


def identifying_columns(df: pd.DataFrame, types: Mapping[Any, str] | None = None,
                        table: str | None = None) -> list[IdentifyingColumn]:
    """Every column of ``df`` the rule flags, declared or not (those whose values are not
    released excepted: identifiers and dropped columns)."""
    types = types or {}
    found = []
    for column in df.columns:
        series = df[column]
        released = column_kind(types.get(column)) not in (IDENTIFIER, DROPPED)
        if released and (reason := column_reason(series)) is not None:
            if column not in types and is_text(series.dtype):
                reason += _typing_hint(series)
            found.append(IdentifyingColumn(column, reason, table, is_number(series.dtype)))
    return found


# Why a pseudonymized or excluded column is released knowingly (``pipeline/apart.py``).
PSEUDONYM_LINK = ("pseudonyms of the original values: whoever can recompute them (the hmac "
                  "key's holder; for the drawn ones, the originals and the run's seed) can "
                  "tell which person each avatar comes from")
REATTACHED = {"row_order": "excluded, each avatar given its own original's value",
              "coordinate_similarity": "excluded, each avatar given the value of the original "
                                       "nearest to it"}


class IdentifyingColumnsError(FixableError):
    """Undeclared columns that would let a person be found: one error lists them all, with
    the fix for each in the words of the entry point (``of``)."""

    @classmethod
    def of(cls, found: list[IdentifyingColumn]) -> IdentifyingColumnsError:
        lines = "; ".join(f"{c.name}: {c.reason}" for c in found)
        problem = (f"{len(found)} column(s) could identify a person and are not declared "
                   f"({lines}). Nothing was released")
        return cls(problem, {
            entry: "for each, declare it " + _fixes(found, entry) for entry in _ENTRIES
        })


_ENTRIES = ("python", "cli", "yaml")


def _declaration(entry: str, columns: list[Any], kind: str) -> str:
    """``columns`` declared ``kind``, as the entry point writes it."""
    if entry == "cli":
        return "--types " + " ".join(f"{c}={kind}" for c in columns)
    if entry == "yaml":
        return "types: {" + ", ".join(f"{c}: {kind}" for c in columns) + "}"
    return "types={" + ", ".join(f"{c!r}: '{kind}'" for c in columns) + "}"


def _table_declaration(entry: str, table: str | None, names: list[Any], kind: str) -> str:
    """``names`` declared ``kind``; a database's table: where its types are declared (the
    command line has no option for them: a YAML file, with ``url:`` for a database)."""
    if table is None:
        return _declaration(entry, names, kind)
    if entry == "python":
        types = _declaration(entry, names, kind).removeprefix("types=")
        return (f"db.add_table({table!r}, ..., types={types}) (Database.from_sql: "
                f"types={{{table!r}: {types}}})")
    return f"tables: {{{table}: {{{_declaration('yaml', names, kind)}}}}} in a YAML file" + (
        " (url: names the database)" if entry == "cli" else "")


def _fixes(found: list[IdentifyingColumn], entry: str) -> str:
    """``identifier`` (fresh values), dropped, or released knowingly: ``continuous`` for a
    number (a measurement: avatars get barycentres), ``categorical`` for text."""

    def declared(columns: list[IdentifyingColumn], kind: str) -> str:
        per_table: dict[str | None, list[Any]] = {}
        for column in columns:
            per_table.setdefault(column.table, []).append(column.column)
        return "; ".join(_table_declaration(entry, table, names, kind)
                         for table, names in per_table.items())

    numbers = [c for c in found if c.numeric]
    texts = [c for c in found if not c.numeric]
    knowingly = [f"a measurement, {declared(numbers, CONTINUOUS)}"] if numbers else []
    knowingly += [f"text, {declared(texts, CATEGORICAL)}"] if texts else []
    return (f"an identifier to give it fresh values, {declared(found, IDENTIFIER)} (or "
            f"pseudonyms that keep joins: pseudonym:hmac:key_env=VARIABLE); or drop it, "
            f"{declared(found, DROPPED)}; or release its values knowingly, as "
            + " and as ".join(knowingly))


def refuse_undeclared(df: pd.DataFrame, types: Mapping[Any, str] | None,
                      table: str | None = None) -> list[IdentifyingColumn]:
    """Raise ``IdentifyingColumnsError`` for the flagged columns ``types`` does not declare;
    returns the flagged columns it does declare (released knowingly)."""
    return refuse_undeclared_tables({table: (df, types)})


def refuse_undeclared_tables(
    tables: Mapping[str | None, tuple[pd.DataFrame, Mapping[Any, str] | None]],
) -> list[IdentifyingColumn]:
    """``refuse_undeclared`` over the tables of a database: one error lists every table's
    undeclared columns."""
    found = [column for table, (df, types) in tables.items()
             for column in identifying_columns(df, types, table)]
    declared = {table: types or {} for table, (_, types) in tables.items()}
    undeclared = [c for c in found if c.column not in declared[c.table]]
    if undeclared:
        raise IdentifyingColumnsError.of(undeclared)
    flagged = {(c.table, c.column) for c in found}
    return found + [IdentifyingColumn(column, PSEUDONYM_LINK, table, False)
                    for table, types in declared.items() for column, kind in types.items()
                    if _links_avatars(kind)] + [
        IdentifyingColumn(column, REATTACHED[reattach_method(kind)], table, False)
        for table, types in declared.items() for column, kind in types.items()
        if column_kind(kind) == EXCLUDED and (table, column) not in flagged]


def _links_avatars(declared: str) -> bool:
    """Whether a column so declared carries its original's pseudonym: any strategy but
    fresh values and a constant, which link no avatar to anyone."""
    return column_kind(declared) == IDENTIFIER and declared != IDENTIFIER and not (
        declared.startswith("pseudonym:constant"))


def knowingly_released_line(found: list[IdentifyingColumn]) -> str | None:
    """The summary's and the report's one line for the flagged columns declared anyway."""
    if not found:
        return None
    names = ", ".join(f"{c.name} ({c.reason})" for c in found)
    return f"released as declared, although they could identify a person: {names}"

