"""The rule that keeps undeclared identifying columns out of a release, written once for
every entry point (``avatarize``, ``advise``, ``avatarize_database``, ``Database.from_sql``,
streaming, the command line).

A column is flagged, with its evidence in words that never quote one of its values (its
shape instead: counts of values and rows, words per text), a proposal (``identifier``, or
``dropped`` for free text), a confidence and a short label, when:

- its text values have the shape of direct identifiers (``PATTERNS``: e-mail, phone number,
  French NIR, US SSN, IBAN, UUID) in at least ``PATTERN_SHARE`` of a sample, or of people's
  names (``DUBOIS Maëlle``: at least ``MIN_NAMES`` distinct);
- it holds free text: at least ``FREE_TEXT_VALUES`` texts of ``FREE_TEXT_WORDS`` words or
  more that one row each holds, or one sentence (``SENTENCE_WORDS`` words) alone, words
  being mostly of letters (two dates and a reason are no sentence); one rare long category
  label is not free text;
- its text is distinct on (nearly) every row (``DISTINCT_SHARE`` of ``MIN_ROWS`` or more);
- its whole numbers have an identifier's shape: never repeated and a dense run (a range at
  most ``DENSE_SLACK`` times their count) from 0 or 1 (over ``MIN_ROWS`` rows, or
  ``NUMBERED_ROWS`` in row order) or increasing with row order; a numbering from 0 or 1 that
  restarts by group (``MIN_PERSONS`` values or more); or drawn codes: ``MIN_CODES`` values
  or more of ``CODE_DIGITS`` digits or more, spread evenly over their range (within
  ``EVEN_SPREAD``), repeated or not. Measurements (survival times, incomes, counts,
  populations) have ties, gaps and skew and are not flagged; years, time indices and ranks
  share an identifier's shape, so their name decides (``TIME_WORDS``, ``TIME_STEMS``);
- it is a person key: in a table with several rows per person, whole numbers or text with at
  least ``MIN_PERSONS`` values, ``KEY_SHARED`` of the rows sharing their value with another,
  whose rows of one value differ in an occasion: another column (or several crossed: a
  session and a time of day) with one row per key and occasion, whose values a person's rows
  mostly cover (``OCCASION_COVERAGE``) and that has no more values than the key; or, the
  key's rows contiguous, a time (a datetime, or a column named so) increasing within them,
  with many keys of a few rows each (keys squared at least the rows), or restarting at the
  next key while a trait (a weight, a dose) stays the same over each key's rows; or subject
  numbers 1, 1, 2, 2... in row order. A ward or a drug has many rows at one occasion and no
  trait of a person's (rows sorted by ward and date restart too), a measure sorted within
  groups is no time, and a column named as a time or occasion is no key. It is sought in the
  first ``KEY_ROWS`` rows;
- its text is varied: ``MIN_ROWS`` or more distinct texts, ``TEXT_DISTINCT_SHARE`` of its
  rows, mostly letters, as names have where a person has several rows (medium confidence);
- most rows of a categorical column (over ``SINGLETON_SHARE``) hold a value no other has
  (text: mostly letters);
- its name says it identifies a person (``IDENTIFYING_NAME_WORDS``: id, ipp, email,
  phone...; ``name``/``nom`` alone or beside ``PERSON_WORDS``), where it can hold a person's
  values: ``MIN_NAMED_DISTINCT`` distinct values or a third of its rows, more than two.

Not flagged: booleans, constants and two-valued columns, fractions and dates (no count of
values tells them from measurements; their name still counts), and text that reads as
numbers or dates apart from a missing marker (``MISSING_MARKERS``; ``text_reading`` says
which: ``continuous`` or ``datetime``): read as numbers, its whole numbers meet the rules
above. Measured on 106 public and built tables (``benchmarks/survey_identifiers.py``).

A flagged column is refused unless the user declared its kind: ``identifier`` (fresh values,
the proposal for identifiers and keys), ``dropped`` (the proposal for free text),
``categorical`` or ``continuous`` (released knowingly: the result keeps the list, the summary
and the report say so in one line). SQL columns under a UNIQUE constraint are declared
``identifier`` by ``Database.from_sql``.
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
from ..parsing import (
    MISSING_MARKERS,
    SAMPLE,
    decimal_mark,
    detect_date_reading,
    parse_iso,
    to_numbers,
)
from .kinds import (
    DROPPED,
    EXCLUDED,
    IDENTIFIER,
    is_datetime,
    is_number,
    is_text,
    is_timedelta,
)

DISTINCT_SHARE = 0.95
TEXT_DISTINCT_SHARE = 0.2  # text this varied: names where a person has several rows
MIN_ROWS = 20  # below, distinct numbers say little (ten ages are often all distinct)
SINGLETON_SHARE = 0.5
PATTERN_SHARE = 0.9
_PATTERN_SAMPLE = 1000
_FIRST_VALUES = 20  # a shape most of these do not have is not tried on more
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
_PATTERN_LABELS = {"French social-security numbers (NIR)": "social-security numbers",
                   "US social-security numbers": "social-security numbers",
                   "IBANs": "bank account numbers"}
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
MIN_NAMED_DISTINCT = 10  # a name word counts where a column can hold people's values
# words of a name that say time, an occasion or a rank: such whole numbers are measured, and
# they repeat over a person's rows (a name's word, or the start of one: ``futime``, ``years``)
TIME_WORDS = frozenset({
    "year", "yr", "yrs", "day", "days", "time", "age", "duration", "period", "date", "month",
    "week", "hour", "hours", "minute", "minutes", "second", "seconds", "min", "sec", "dur",
    "visit", "occasion", "wave", "round", "cycle", "session", "phase", "timepoint",
    "rank", "ranking", "step", "annee", "année", "jour", "jours", "mois", "semaine", "heure",
    "an", "ans", "âge", "delai", "délai", "duree", "durée", "follow", "followup", "t",
})
TIME_STEMS = ("time", "year", "date", "month", "week", "hour", "day", "duration", "period")
FREE_TEXT_WORDS = 4  # a value of this many words, held by one row, may be free text...
FREE_TEXT_VALUES = 3  # ...when this many are: one rare long label is a category
SENTENCE_WORDS = 8  # one text this long, held by one row, is a note about a person
_NAME_SHAPE = r"[A-ZÀ-Ý][A-Za-zÀ-ÿ'-]+(?:\s+[A-ZÀ-Ý][A-Za-zÀ-ÿ'-]+)+"  # DUBOIS Maëlle
MIN_NAMES = 10  # distinct values of a person's-name shape
DENSE_SLACK = 1.25  # a dense run: its range at most this times its count of values
CODE_DIGITS = 3  # drawn codes: evenly spread whole numbers of this many digits or more,
CODE_SHARE = 0.1  # as many distinct as this share of rows (a postcode has fewer)
MIN_CODES = 100  # fewer values spread evenly by chance
NUMBERED_ROWS = 8  # numbers from 0 or 1 in row order over this many rows number them
EVEN_SPREAD = 0.1  # the largest gap between their distribution and an even one
MIN_PERSONS = 8  # a person key, or a numbering, has at least this many values...
KEY_SHARED = 0.9  # ...nearly every row sharing its value with another row
OCCASION_COVERAGE = 0.5  # a person's rows cover this share of the occasions at least
KEY_UNIQUE = 0.95  # the rows with one key and one occasion: nearly one
CHANCE_PAIRS = 5  # pairs unrelated columns would share: rows too few for them prove nothing
KEY_CONTIGUOUS = 1.2  # a key's runs of rows at most this times its values
RESTART_SHARE = (0.9, 0.5)  # a time increases within a key's runs, decreases between them
NUMBERED_PERSON_ROWS = 20  # a subject number numbers few rows each (a sorted ward: many)
KEY_ROWS = 200_000  # a person key shows in the first rows: the rest is not read for it
CONFIDENCES = ("high", "medium", "low")
PROPOSALS = (IDENTIFIER, DROPPED)


def _check_proposal(proposal: str, confidence: str) -> None:
    if proposal not in PROPOSALS or confidence not in CONFIDENCES:
        raise ValueError(f"no such proposal or confidence: {proposal!r}, {confidence!r} "
                         f"(proposals: {', '.join(PROPOSALS)}; confidences: "
                         f"{', '.join(CONFIDENCES)})")


@dataclass(frozen=True)
class Finding:
    """Why a column could let a person be found: the evidence in words (no value of it),
    the declaration proposed, how sure the rule is, and a short clause for one-line
    messages."""

    reason: str
    label: str
    proposal: str = IDENTIFIER
    confidence: str = "high"

    def __post_init__(self) -> None:
        _check_proposal(self.proposal, self.confidence)


@dataclass(frozen=True)
class IdentifyingColumn:
    """A column the rule flags, and why (in words a data-protection officer reads, no
    value of it); ``proposal``: the declaration proposed (``identifier`` or ``dropped``);
    ``label``: a short clause for one-line messages."""

    column: Any
    reason: str
    table: str | None = None
    numeric: bool = False  # released knowingly as continuous (a measurement), else categorical
    proposal: str = IDENTIFIER
    confidence: str = "high"
    label: str = ""

    def __post_init__(self) -> None:
        _check_proposal(self.proposal, self.confidence)

    @property
    def name(self) -> str:
        return f"{self.table}.{self.column}" if self.table else repr(self.column)

    @property
    def short_name(self) -> str:
        """The column (table.column in a database), unquoted, for one-line messages."""
        return f"{self.table}.{self.column}" if self.table else str(self.column)


def _looks_like(text: pd.Series) -> str | None:
    """The kind of direct identifier most sampled values look like, if any."""
    sample = text.iloc[:_PATTERN_SAMPLE].astype(str).str.strip()
    first = sample.iloc[:_FIRST_VALUES]
    for label, pattern in PATTERNS.items():
        if first.str.fullmatch(pattern).mean() < PATTERN_SHARE / 2:  # most columns: at once
            continue
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
    return [word for word in re.split(r"[^a-zà-ÿ]+", spaced.lower()) if word]


def _named_identifying(column: Any) -> bool:
    words = set(_name_words(column))
    return bool(words & IDENTIFYING_NAME_WORDS) or bool(
        words & PERSON_NAME_WORDS and (len(words) == 1 or words & PERSON_WORDS))


def _named_time(column: Any) -> bool:
    """Whether a column's name says time, an occasion or a rank (``TIME_WORDS``)."""
    words = _name_words(column)
    return bool(set(words) & TIME_WORDS) or any(
        word.startswith(stem) or word.endswith(stem) for word in words for stem in TIME_STEMS)


def _is_whole(values: pd.Series) -> bool:
    if pd.api.types.is_integer_dtype(values.dtype):
        return True
    numbers = values.to_numpy(dtype=np.float64)
    return bool(np.all(numbers == np.floor(numbers)))


def _words(texts: pd.Series) -> pd.Series:
    """The words of each text, 0 where fewer than half have letters (dates, codes and
    numbers: ``1887.05.12 - 1893.10.30 (Death)`` is no sentence)."""
    tokens = texts.str.count(r"\S+")
    worded = texts.str.count(r"\S*[^\W\d_]\S*")
    return tokens.where(2 * worded >= tokens, 0)


def text_reading(series: pd.Series) -> str | None:
    """``continuous`` or ``datetime`` for a text column whose values all read as numbers or
    as dates once the missing markers (``MISSING_MARKERS``: ``.``, ``-``, ``NA``, ``?``...)
    are left aside; None otherwise (text, codes with a leading zero)."""
    distinct = pd.Series(pd.unique(series.dropna()), dtype=object).astype(str).str.strip()
    return _reading(distinct)[0]


def _reading(distinct: pd.Series) -> tuple[str | None, pd.Series | None]:
    """The reading of distinct texts and, read as numbers, their numbers (missing markers:
    missing)."""
    kept = distinct[~distinct.isin(MISSING_MARKERS) & (distinct != "")]
    if kept.empty:
        return None, None
    sample = kept.iloc[:SAMPLE]
    if not sample.iloc[:_FIRST_VALUES].str.contains(r"\d").all():  # words: no number, date
        return None, None
    decimal = decimal_mark(sample)
    if to_numbers(sample, decimal).notna().all():
        numbers = to_numbers(distinct, decimal)
        if numbers[kept.index].notna().all():
            return "continuous", numbers
        return None, None
    if (_dated(sample) and _dated(kept)) or parse_iso(kept).notna().all():  # 1949-02 too
        return "datetime", None
    return None, None


def _dated(text: pd.Series) -> bool:
    try:
        return detect_date_reading(text, "", "") is not None
    except AvatarError:  # both day/month orders read them: dates all the same
        return True


class _Rows:
    """A table's first ``KEY_ROWS`` rows, each column factorised once (codes, -1 missing)
    when the person-key rule asks for it."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame.iloc[:KEY_ROWS]
        self._codes: dict[int, tuple[np.ndarray, int]] = {}

    def codes(self, position: int) -> tuple[np.ndarray, int]:
        if position not in self._codes:
            codes, uniques = pd.factorize(self.frame.iloc[:, position], use_na_sentinel=True)
            self._codes[position] = (codes.astype(np.int64), len(uniques))
        return self._codes[position]

    def timed(self, position: int) -> bool:
        """Whether a column holds times: datetimes or durations (else its name says)."""
        dtype = self.frame.dtypes.iloc[position]
        return is_datetime(dtype) or is_timedelta(dtype)

    def ordered(self, position: int) -> np.ndarray | None:
        """A column's values as float64 where they are ordered (numbers, datetimes)."""
        series = self.frame.iloc[:, position]
        if pd.api.types.is_bool_dtype(series.dtype):
            return None
        if is_datetime(series.dtype):
            return ((series - series.min()) / pd.Timedelta(1, "s")).to_numpy(np.float64)
        if is_timedelta(series.dtype):
            return (series / pd.Timedelta(1, "s")).to_numpy(np.float64)
        if is_number(series.dtype):
            return series.to_numpy(dtype=np.float64, na_value=np.nan)
        return None


def _person_key(key: pd.Series, rows: _Rows, position: int) -> Finding | None:
    """A value repeated over an entity's rows (see the module docstring), or None."""
    key = rows.frame.iloc[:, position]  # its first rows, as the codes
    codes, values = rows.codes(position)
    present = codes >= 0
    n = int(present.sum())
    if values < MIN_PERSONS or values > n / 2 or _named_time(key.name) or (
            is_number(key.dtype) and not _is_whole(key.dropna())):  # fractions: measured
        return None
    sizes = np.bincount(codes[present], minlength=values)
    if sizes[sizes >= 2].sum() < KEY_SHARED * n:
        return None
    per_value = n / values
    runs = 1 + int(np.count_nonzero(codes[1:] != codes[:-1]))
    contiguous = runs <= KEY_CONTIGUOUS * values
    shape = (f"{values:,} distinct values over {n:,} rows, {per_value:.1f} rows each on "
             "average")
    names = rows.frame.columns
    varying = []  # the columns that differ within a value's rows: occasions, measures
    for other in range(rows.frame.shape[1]):
        occasions, count = rows.codes(other) if other != position else (None, 0)
        if count < 2 or count * OCCASION_COVERAGE > per_value or not (
                count <= values or contiguous and _named_time(names[other])):
            continue
        if _one_row_each(codes, occasions, count, present):
            return Finding(f"a person key: {shape}, one row per value and {names[other]!r} "
                           f"(the occasion, {count:,} values recurring over the keys)",
                           "person key")
        if _varies_within(codes, occasions, values, present):
            varying.append(other)
    if len(varying) > 1:  # occasions crossed: a session and a time of day
        occasions, count = rows.codes(varying[0])
        for other in varying[1:]:  # each pair numbered anew: no overflow
            more, more_count = rows.codes(other)
            occasions, uniques = pd.factorize(occasions * (more_count + 1) + more)
            count = len(uniques)
        if count * OCCASION_COVERAGE <= per_value and _one_row_each(
                codes, occasions.astype(np.int64), count, present):  # a missing one: apart
            together = ", ".join(repr(names[other]) for other in varying)
            return Finding(f"a person key: {shape}, one row per value and occasion "
                           f"({together} together)", "person key")
    if not contiguous:
        return None
    within = (codes[1:] == codes[:-1]) & present[1:]
    between = ~within & present[1:] & present[:-1]
    for other in range(rows.frame.shape[1]):
        times = rows.ordered(other) if other != position else None
        if times is None or rows.codes(other)[1] < 3 or not (
                _named_time(names[other]) or rows.timed(other)):
            continue
        steps = np.diff(times)
        increasing = steps[within] > 0
        restarting = steps[between] < 0
        if not len(increasing) or increasing.mean() < RESTART_SHARE[0]:
            continue
        if values * values >= n:  # many values, each of a few rows
            return Finding(f"a person key: {shape}, each value's rows contiguous, "
                           f"{names[other]!r} increasing within them (a time over a "
                           "person's rows)", "person key")
        if len(restarting) and restarting.mean() >= RESTART_SHARE[1] and (
                attribute := _attribute(codes, values, present, rows, position)) is not None:
            return Finding(f"a person key: {shape}, each value's rows contiguous, "
                           f"{names[other]!r} increasing within them and restarting at the "
                           f"next value, {names[attribute]!r} the same over them (a "
                           "person's time and trait)", "person key")
    numbers = key.to_numpy(dtype=np.float64, na_value=np.nan) if is_number(key.dtype) else None
    if numbers is not None and runs == values and per_value <= NUMBERED_PERSON_ROWS and \
            np.nanmin(numbers) in (0, 1) and np.nanmax(numbers) - np.nanmin(numbers) + 1 == \
            values and np.all(np.diff(numbers[present]) >= 0):
        return Finding(f"a person key: {shape}, numbered from 0 or 1 in row order, each "
                       "value's rows together (the shape of a subject number)", "person key",
                       confidence="medium")
    return None


def _attribute(codes: np.ndarray, values: int, present: np.ndarray, rows: _Rows,
               position: int) -> int | None:
    """A column that differs between keys but not within one (a person's weight, sex or
    dose, not a ward's patients'), if any."""
    for other in range(rows.frame.shape[1]):
        if other == position:
            continue
        traits, count = rows.codes(other)
        both = present & (traits >= 0)
        if count < 2 or both.sum() < KEY_SHARED * present.sum():
            continue
        per_key = pd.Series(traits[both]).groupby(codes[both]).nunique()
        if (per_key == 1).mean() >= KEY_UNIQUE:
            return other
    return None


def _one_row_each(codes: np.ndarray, occasions: np.ndarray, count: int,
                  present: np.ndarray) -> bool:
    """Whether (nearly) one row holds each key and occasion, on nearly every key's row,
    in rows too many for chance: unrelated columns of so many values would share a pair
    ``CHANCE_PAIRS`` times, on average."""
    both = present & (occasions >= 0)
    rows, values = int(both.sum()), int(codes.max()) + 1
    if rows < KEY_SHARED * present.sum() or rows * rows < 2 * CHANCE_PAIRS * values * count:
        return False
    pairs = pd.unique(codes[both] * (count + 1) + occasions[both])
    return len(pairs) >= KEY_UNIQUE * rows


def _varies_within(codes: np.ndarray, occasions: np.ndarray, values: int,
                   present: np.ndarray) -> bool:
    """Whether a column differs within most keys' rows (not a person's constant)."""
    both = present & (occasions >= 0)
    per_key = pd.Series(occasions[both]).groupby(codes[both]).nunique()
    return bool((per_key > 1).mean() >= KEY_SHARED)


def _whole_identifier(numbers: pd.Series, name: Any) -> Finding | None:
    """Whole numbers shaped as a row or person number, a numbering within groups, or drawn
    codes (see the module docstring)."""
    n = len(numbers)
    values = numbers.to_numpy(dtype=np.float64)
    if n < NUMBERED_ROWS or _named_time(name):
        return None
    low, high = values.min(), values.max()
    steps = np.diff(values)
    if numbers.is_unique:
        shape = f"whole numbers never repeated over {n:,} rows"
        increasing = bool(np.all(steps > 0))
        dense = high - low + 1 <= DENSE_SLACK * n
        if dense and (low in (0, 1) and (increasing or n >= MIN_ROWS)
                      or increasing and n >= MIN_ROWS):
            order = ", increasing with row order" if increasing else ""
            return Finding(f"{shape}, a dense run from 0 or 1{order}: the shape of a row or "
                           "person number", "distinct on every row")
        if n >= MIN_ROWS and increasing:
            return Finding(f"{shape}, increasing with row order: the shape of a record "
                           "number", "numbered rows", confidence="medium")
    distinct = int(numbers.nunique())
    restarts = steps[steps != 1]
    if low in (0, 1) and distinct >= MIN_PERSONS and distinct > n / 4 and len(restarts) and \
            len(restarts) <= n / MIN_PERSONS and np.all(values[1:][steps != 1] == low):
        return Finding(f"whole numbers counting rows from 0 or 1 by one, restarting "
                       f"{len(restarts):,} times over {n:,} rows: the shape of a numbering "
                       "within groups", "numbered rows", confidence="medium")
    if low >= 10 ** (CODE_DIGITS - 1) and distinct >= max(MIN_CODES, CODE_SHARE * n):
        spread = np.abs(np.sort(values) - np.linspace(low, high, n)).max() / (high - low)
        if spread <= EVEN_SPREAD:
            return Finding(f"{distinct:,} distinct whole numbers of {CODE_DIGITS} digits or "
                           f"more over {n:,} rows, spread evenly over their range as drawn "
                           "codes are (a measurement has ties, gaps and skew)", "drawn codes",
                           confidence="medium")
    return None


def _text_finding(present: pd.Series, counts: pd.Series, n: int) -> Finding | None:
    """Names, free text and codes distinct on every row, from a text column's values."""
    distinct = pd.Series(counts.index.astype(str), dtype=object).str.strip()
    d = len(counts)
    shape = f"{d:,} distinct texts in {n:,} rows"
    if d >= MIN_NAMES and distinct.str.fullmatch(_NAME_SHAPE).mean() >= PATTERN_SHARE:
        return Finding(f"{shape}, shaped as people's names (capitalised words)",
                       "people's names")
    words = _words(distinct).to_numpy()
    alone = (counts == 1).to_numpy()
    long_alone = int(np.count_nonzero(alone & (words >= FREE_TEXT_WORDS)))
    sentences = int(np.count_nonzero(alone & (words >= SENTENCE_WORDS)))
    if long_alone >= FREE_TEXT_VALUES or sentences:
        return Finding(f"free text: {long_alone:,} texts of {FREE_TEXT_WORDS} words or more "
                       f"(up to {int(words.max())}) each held by one row only; {shape}",
                       "free text", proposal=DROPPED)
    if n >= MIN_ROWS and d >= DISTINCT_SHARE * n:
        typical = int(np.median(distinct.str.len()))
        return Finding(f"{shape}: one per row, as codes or names are ({typical} characters "
                       "typically)", "distinct on every row")
    return None


def column_finding(series: pd.Series, frame: pd.DataFrame | _Rows | None = None
                   ) -> Finding | None:
    """Why ``series`` would let a person be found, or None (see the module docstring);
    ``frame``, the table it is a column of, lets the person-key rule read the other
    columns."""
    present = series.dropna()
    n = len(present)
    if n == 0 or pd.api.types.is_bool_dtype(series.dtype):
        return None
    rows = _Rows(frame) if isinstance(frame, pd.DataFrame) else frame
    position = _position(rows, series)
    category = isinstance(series.dtype, pd.CategoricalDtype)
    text = is_text(series.dtype) and not category
    if text and (kind := _looks_like(present)) is not None:
        counts = present.value_counts(sort=False)
        return Finding(f"its values have the shape of {kind} ({len(counts):,} distinct in "
                       f"{n:,} rows)", _PATTERN_LABELS.get(kind, kind))
    if not (text or category or is_number(series.dtype)):
        return _named(series.name, present)  # dates: no count of values tells
    numbers = present if is_number(series.dtype) and not category else None
    if numbers is not None:
        numbers = numbers[np.isfinite(numbers.to_numpy(np.float64))]  # an infinite bound
        if numbers.empty or not _is_whole(numbers):
            return _named(series.name, present)  # fractions: measured
    if text:
        codes, uniques = pd.factorize(present)
        counts = pd.Series(np.bincount(codes, minlength=len(uniques)), index=uniques)
        reading, read = _reading(pd.Series(uniques, dtype=object).astype(str).str.strip())
        if reading == "datetime":
            return None
        if reading == "continuous":
            numbers = pd.Series(read.to_numpy()[codes], index=present.index).dropna()
        elif (found := _text_finding(present, counts, n)) is not None:
            return found  # one note among blank cells is free text still
    else:
        counts = present.value_counts(sort=False)  # 0.1 s 10^6 distinct whole numbers
    d = len(counts)
    if d <= 2:
        return None  # flags and constants hold no person's value
    if numbers is not None and not numbers.empty:
        if not _is_whole(numbers):
            return _named(series.name, present)
        if (found := _whole_identifier(numbers, series.name)) is not None:
            return found
    if rows is not None and position is not None and (
            found := _person_key(series, rows, position)) is not None:
        return found
    if text and d >= max(MIN_ROWS, TEXT_DISTINCT_SHARE * n) and _mostly_letters(counts):
        return Finding(f"{d:,} distinct texts in {n:,} rows, as names have where a person "
                       "has several rows", "varied text", confidence="medium")
    if text or category:  # over every row: a missing cell is shared
        alone = int((counts == 1).sum())
        if alone > SINGLETON_SHARE * len(series) and (category or _mostly_letters(counts)):
            return Finding(f"{alone:,} of {len(series):,} rows hold a value no other row "
                           "has", "values held by one row")
    return _named(series.name, present)


def _mostly_letters(counts: pd.Series) -> bool:
    """Whether most distinct texts are mostly letters, as names are (not ``<0.006``)."""
    texts = pd.Series(counts.index.astype(str), dtype=object)
    letters = texts.str.count(r"[^\W\d_]") / texts.str.len().clip(lower=1)
    return bool(letters.median() >= 0.5)


def _position(rows: _Rows | None, series: pd.Series) -> int | None:
    if rows is None:
        return None
    matches = np.flatnonzero(rows.frame.columns == series.name)
    return int(matches[0]) if len(matches) == 1 else None


def _named(column: Any, present: pd.Series) -> Finding | None:
    """The name rule, where a column can hold people's values (not a two-valued flag)."""
    if not _named_identifying(column):
        return None
    n, distinct = len(present), int(present.nunique())
    if distinct > 2 and distinct >= min(MIN_NAMED_DISTINCT, n / 3):
        return Finding(f"its name says it identifies a person, and it holds {distinct:,} "
                       f"distinct values in {n:,} rows", "name says identifier",
                       confidence="medium")
    return None


def identifying_columns(df: pd.DataFrame, types: Mapping[Any, str] | None = None,
                        table: str | None = None) -> list[IdentifyingColumn]:
    """Every column of ``df`` the rule flags, declared or not (those whose values are not
    released excepted: identifiers and dropped columns)."""
    types = types or {}
    rows = _Rows(df)
    found = []
    for column in df.columns:
        series = df[column]
        released = column_kind(types.get(column)) not in (IDENTIFIER, DROPPED)
        if released and (finding := column_finding(series, rows)) is not None:
            found.append(IdentifyingColumn(
                column, finding.reason, table, is_number(series.dtype), finding.proposal,
                finding.confidence, finding.label))
    return found


# Why a pseudonymized or excluded column is released knowingly (``pipeline/apart.py``).
PSEUDONYM_LINK = ("pseudonyms of the original values: whoever can recompute them (the hmac "
                  "key's holder; for the drawn ones, the originals and the run's seed) can "
                  "tell which person each avatar comes from")
REATTACHED = {"row_order": "excluded, each avatar given its own original's value",
              "coordinate_similarity": "excluded, each avatar given the value of the original "
                                       "nearest to it"}
MESSAGE_CHARACTERS = 300  # the refusal, its fix included, in one line this long at most
FIXES = {
    "python": "review ga.plan(data).to_yaml('plan.yaml') and pass "
              "plan=ga.Plan.read('plan.yaml'), or declare them in types=",
    "cli": "run gpu-avatar plan SOURCE -o plan.yaml, review it, then add --plan plan.yaml "
           "(or --types COLUMN=KIND)",
    "yaml": "run gpu-avatar plan CONFIG.yaml -o plan.yaml, review it, then add plan: "
            "plan.yaml to the YAML (or declare them under tables.TABLE.types)",
}


class IdentifyingColumnsError(FixableError):
    """Undeclared columns that would let a person be found: one line names them all (as
    many as fit, each with a short clause, no value of the data) with the fix in the words
    of the entry point; ``columns`` keeps every ``IdentifyingColumn`` with its full
    evidence."""

    def __init__(self, problem: str, fixes: Mapping[str, str],
                 columns: list[IdentifyingColumn] | tuple = ()) -> None:
        super().__init__(problem, fixes)
        self.columns = list(columns)

    @classmethod
    def of(cls, found: list[IdentifyingColumn], context: str = "") -> IdentifyingColumnsError:
        """The error for ``found``, after ``context`` (a file, a table): as many columns
        named as the line has room for."""
        room = MESSAGE_CHARACTERS - 2 - max(map(len, FIXES.values())) - len(context)
        return cls(context + _problem(found, room), FIXES, found)

    def within(self, context: str) -> IdentifyingColumnsError:
        if not self.columns:
            return type(self)(f"{context}: {self.problem}", self.fixes)
        before = self.problem[:self.problem.find(f"{len(self.columns)} column(s) need")]
        return type(self).of(self.columns, f"{context}: {before}")

    def __reduce__(self):  # pickled (from a worker process) with its fixes and columns
        return type(self), (self.problem, self.fixes, self.columns)


def _problem(found: list[IdentifyingColumn], characters: int) -> str:
    """``N column(s) need a decision before release: a (free text), ... and 3 more;
    nothing was released``, as many clauses as ``characters`` allow."""
    head = f"{len(found)} column(s) need a decision before release: "
    tail = "; nothing was released"
    clauses = [f"{c.short_name} ({c.label or 'could identify'})" for c in found]
    for shown in range(len(clauses), 0, -1):
        more = f" and {len(clauses) - shown} more" if shown < len(clauses) else ""
        problem = head + ", ".join(clauses[:shown]) + more + tail
        if len(problem) <= characters:
            return problem
    return f"{len(found)} column(s) need a decision before release{tail}"


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

