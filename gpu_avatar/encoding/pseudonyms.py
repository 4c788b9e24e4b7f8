"""Pseudonyms for identifier columns: one pseudonym per original value, the same wherever the
value appears in a run, none equal to an original value of the column, missing values left
missing.

Strategies (``Pseudonym.strategy``):

- ``fresh`` (the default): the fresh identifiers of ``identifiers.py`` (the smallest
  non-negative integers absent from an integer column, ``avatar_<i>`` for text), dealt to the
  values in an order drawn from the run's seed (a table's ``identifier`` columns get them by
  released position instead: ``pipeline/apart.py``);
- ``integer``: 1, 2, 3..., skipping every integer an original reads as, dealt to the values
  in an order drawn from the run's seed;
- ``pattern``: those numbers written by a format, e.g. ``P{:05d}``, skipping the originals;
- ``uuid4``: random UUIDs drawn from the run's seed (the same for a seed);
- ``constant``: one value for all (the only strategy where values share a pseudonym),
  refused when it is an original value;
- ``hmac``: HMAC-SHA-256 of the value under a secret key read from an environment variable or
  a file, in hex truncated to ``length`` digits: the same in every run, file and table for a
  key, so pseudonymized files still join; a collision among the values raises. A bare SHA-256
  is not offered: anyone can hash a list of likely values (every patient number, every e-mail
  of a domain) and read the originals back; the secret key is what prevents that;
- ``fake``: realistic values of a PII type (``PII``) in a locale, drawn by Faker from the
  run's seed (the same for a seed and a Faker version); a value drawn twice or equal to an
  original is redrawn.

Numbers are dealt to the values in an order drawn from the seed, neither by sorted value nor
by first appearance: either order would carry each original's rank or row into the release.
uuid4 and fake draws go by first appearance; they are random, so the order shows nothing
without the seed. A value is known by its text (12345, 12345.0 and "12345" are one value, as in
a CSV file), and a pseudonym equals an original when their texts are equal or both read as the
same number ("00017" and 17).

Streams: ``Pseudonymizer.add`` reads the column chunk by chunk (``merge`` gathers partitions'
reads, in order), then ``pseudonyms`` maps any chunk, in any order; the pseudonyms are drawn
once, for every value, when first asked, so a streamed column gets those of the whole column
in memory. This holds each distinct value's text. The mapping is what a pseudonymized column
(or a foreign key, through its parent key's ``Pseudonymizer``) needs; an avatar is a new row
with no original value, so an avatarized table's identifiers stay fresh by position
(``IdentifierValues.fresh``).
"""

from __future__ import annotations

import hmac
import itertools
import math
import os
import re
import string
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, AvatarTypeError, error_context, import_extra
from ..parameters import _Settings, check_choice, check_integer, seed_sequence
from .identifiers import IdentifierValues

STRATEGIES = ("fresh", "integer", "pattern", "uuid4", "constant", "hmac", "fake")
OPTIONS = {  # the options of each strategy; the first, where required, may stand alone in text
    "fresh": (), "integer": (), "uuid4": (),
    "pattern": ("pattern",), "constant": ("value",),
    "hmac": ("key_env", "key_file", "length"),
    "fake": ("pii", "locale"),
}  # fmt: skip
PII = {  # fake's PII types -> Faker's provider
    "email": "email", "first_name": "first_name", "last_name": "last_name", "name": "name",
    "phone": "phone_number", "ssn": "ssn", "address": "address", "text": "sentence",
}  # fmt: skip
REQUIRED = {  # an option a strategy cannot do without, and what it is
    "pattern": "a format with one integer field, e.g. pattern='P{:05d}'",
    "value": "the value given to every value, e.g. value='REDACTED'",
    "pii": f"the type of value to fake, one of {tuple(PII)}",
}
HMAC_LENGTH = 16  # hex digits by default: 64 bits, a collision among 10^6 values ~ 3e-8
_UNKEYED = ("hash", "sha256", "sha-256", "sha1", "md5")  # refused with the reason
_LITERAL_KEY = ("key", "secret")  # options that would carry the key itself: refused
_KEY_BYTES = 16  # the shortest hmac key accepted (128 bits)
_MAKE_KEY = "python -c 'import secrets; print(secrets.token_hex(32))'"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOCALE = re.compile(r"[a-z]{2,3}(?:_[A-Z]{2})?")
_INTEGER_FORMAT = re.compile(r"(?:.?[<>=^])?[+\- ]?#?0?\d*[,_]?[bdoxX]?")  # one-to-one on ints
_OPTION = re.compile(r",(?=\s*[A-Za-z_]\w*\s*=)")  # the commas between text options
_FIRST = 1  # integer and pattern count from 1
_DRAWS = 1000  # fake's draws in a row that may fail (taken, or an original) before it stops


def check_pattern(pattern: Any) -> str:
    """A format with exactly one field, an integer written one-to-one (``P{:05d}``, ``{:x}``):
    distinct numbers give distinct pseudonyms."""
    if not isinstance(pattern, str):
        raise AvatarTypeError(f"pattern must be text such as 'P{{:05d}}', got {pattern!r}")
    try:
        fields = [f for f in string.Formatter().parse(pattern) if f[1] is not None]
    except ValueError as error:
        raise AvatarError(f"pattern={pattern!r} is not a format: {error}") from None
    if (len(fields) != 1 or fields[0][1] not in ("", "0") or fields[0][3] is not None
            or not _INTEGER_FORMAT.fullmatch(fields[0][2])):
        raise AvatarError(
            f"pattern={pattern!r} must hold exactly one field {{}} for the number, written as "
            "an integer (a width, zeros, a d, x, o or b type), e.g. 'P{:05d}'"
        )
    return pattern


@dataclass(frozen=True)
class Pseudonym(_Settings):
    """How an identifier column is pseudonymized (module docstring); checked when made,
    immutable after.

    - ``strategy``: one of ``STRATEGIES``;
    - ``pattern``: pattern's format of the number, e.g. ``P{:05d}``;
    - ``value``: constant's value (text or an integer);
    - ``key_env`` or ``key_file``: hmac's secret key, the name of an environment variable
      holding it or a file holding it (its trailing newline dropped). The key itself is never
      an option: it would stay in shell histories, YAML files and logs;
    - ``length``: hmac's hex digits, 8 to 64 (``HMAC_LENGTH``);
    - ``pii``: fake's type of value, one of ``PII``; ``locale``: Faker's (default en_US).

    The text form, for the command line and YAML, is read by ``from_text``.
    """

    _WHAT = "pseudonym option"

    strategy: str = "fresh"
    pattern: str | None = None
    value: str | int | None = None
    key_env: str | None = None
    key_file: str | None = None
    length: int | None = None
    pii: str | None = None
    locale: str | None = None

    def __post_init__(self) -> None:
        strategy = self.strategy
        if isinstance(strategy, str) and strategy.lower() in _UNKEYED:
            raise AvatarError(
                f"strategy={strategy!r} is not offered: an unkeyed hash is reversed by hashing "
                "a list of likely values; use strategy='hmac', keyed by a secret"
            )
        check_choice("strategy", strategy, STRATEGIES)
        options = OPTIONS[strategy]
        stray = [n for n in self.names()[1:] if getattr(self, n) is not None and n not in options]
        if stray:
            raise AvatarError(
                f"{stray} {'does' if len(stray) == 1 else 'do'} not apply to strategy "
                f"{strategy!r}, which takes {list(options) or 'no option'}"
            )
        missing = [n for n in options if n in REQUIRED and getattr(self, n) is None]
        if missing:
            raise AvatarError(
                f"strategy {strategy!r} needs {missing[0]}: {REQUIRED[missing[0]]}")
        checked = {}
        if strategy == "pattern":
            checked["pattern"] = check_pattern(self.pattern)
        elif strategy == "constant":
            checked["value"] = _checked_constant(self.value)
        elif strategy == "hmac":
            checked.update(_checked_key_source(self.key_env, self.key_file))
            checked["length"] = check_integer(
                "length", HMAC_LENGTH if self.length is None else self.length, 8, 64)
        elif strategy == "fake":
            checked["pii"] = check_choice("pii", self.pii, tuple(PII))
            checked["locale"] = "en_US" if self.locale is None else self.locale
            if not isinstance(checked["locale"], str) or not _LOCALE.fullmatch(checked["locale"]):
                raise AvatarError(f"locale={self.locale!r} is not a locale such as en_US or fr_FR")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, given: Any = None, **settings: Any) -> Pseudonym:
        """``given`` (a ``Pseudonym``, its text form, a mapping of its options, or None for
        ``fresh``) with the keyword ``settings`` applied."""
        if isinstance(given, str):
            given = cls.from_text(given)
        _refuse_literal_key([*(given if isinstance(given, Mapping) else ()), *settings])
        return super().of(given, **settings)

    @property
    def text(self) -> str:
        """The text form ``from_text`` reads back: ``pseudonym`` for ``fresh``."""
        options = ",".join(f"{name}={getattr(self, name)}" for name in OPTIONS[self.strategy]
                           if getattr(self, name) is not None)
        if self.strategy == "fresh":
            return "pseudonym"
        return f"pseudonym:{self.strategy}" + (f":{options}" if options else "")

    @classmethod
    def from_text(cls, text: str) -> Pseudonym:
        """Read ``pseudonym[:STRATEGY[:OPTIONS]]``, OPTIONS being ``name=value`` pairs split by
        commas, the first of which may be the strategy's required option alone:
        ``pseudonym:hmac:key_env=GA_KEY,length=16``, ``pseudonym:pattern:P{:05d}``,
        ``pseudonym:fake:email,locale=fr_FR``, ``pseudonym:constant:REDACTED``. A value holding
        ``,name=`` cannot be written so: give a mapping. Errors never repeat a value, which
        could be a key given by mistake."""
        if not isinstance(text, str):
            raise AvatarTypeError(f"a pseudonym's text form must be text, got {type(text)}")
        head, _, rest = text.partition(":")
        if head.strip() != "pseudonym":
            raise AvatarError(
                "a pseudonym is written pseudonym[:STRATEGY[:OPTIONS]], e.g. "
                "pseudonym:hmac:key_env=GA_KEY; the text given does not start with 'pseudonym'"
            )
        strategy, _, options = rest.partition(":")
        settings: dict[str, Any] = {"strategy": strategy.strip() or "fresh"}
        for part in _OPTION.split(options) if options else ():
            name, equals, value = part.partition("=")
            name = name.strip()
            if not (equals and name.isidentifier()):  # the first part: the required option
                required = [n for n in OPTIONS.get(settings["strategy"], ()) if n in REQUIRED]
                if not required:
                    cls(settings["strategy"])  # an unknown strategy, a missing key: said first
                    raise AvatarError(
                        f"pseudonym:{settings['strategy']} takes no option written alone; "
                        "write name=value, e.g. length=16"
                    )
                name, value = required[0], part
            if name in settings:
                raise AvatarError(f"pseudonym:{settings['strategy']}: {name} is given twice")
            settings[name] = value
        if settings["strategy"] == "constant" and re.fullmatch(r"-?\d+", str(
                settings.get("value", ""))):
            settings["value"] = int(settings["value"])  # an integer column's constant
        if settings.get("length") is not None:
            try:
                settings["length"] = int(settings["length"])
            except ValueError:
                raise AvatarTypeError(  # the text is not repeated: it could be a key
                    "length must be an integer number of hex digits, e.g. length=16") from None
        return cls.of(settings)


def _refuse_literal_key(names: Iterable[str]) -> None:
    if any(name in _LITERAL_KEY for name in names):
        raise AvatarError(
            "the hmac key is never given as a value (it would stay in shell histories, YAML "
            "files and logs): give key_env, the name of an environment variable holding it, "
            "or key_file, a file holding it"
        )


def _checked_constant(value: Any) -> str | int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, int, np.integer)):
        raise AvatarTypeError(f"value must be text or an integer, got {type(value).__name__}")
    if value == "":
        raise AvatarError("value must not be empty: an empty text reads back as missing")
    return value if isinstance(value, str) else int(value)


def _checked_key_source(key_env: Any, key_file: Any) -> dict[str, str | None]:
    """Where hmac's key is: one environment variable's name, or one file."""
    if (key_env is None) == (key_file is None):
        raise AvatarError(
            "strategy 'hmac' needs its secret key from exactly one of key_env (the name of an "
            "environment variable holding it, e.g. key_env='GA_KEY') or key_file (a file "
            f"holding it); make a key with {_MAKE_KEY}"
        )
    if key_env is not None and not (isinstance(key_env, str) and _ENV_NAME.fullmatch(key_env)):
        raise AvatarError(  # not repeated: it may be the key itself, given by mistake
            "key_env must be the name of an environment variable (letters, digits and "
            "underscores, e.g. GA_KEY) holding the key, not the key itself; what was given is "
            "not one, and is not repeated here"
        )
    if key_file is not None:
        if not isinstance(key_file, (str, os.PathLike)) or not os.fspath(key_file):
            raise AvatarTypeError(f"key_file must be a file's path, got {type(key_file)}")
        key_file = os.fspath(key_file)
    return {"key_env": key_env, "key_file": key_file}


def _keyed_mac(spec: Pseudonym) -> hmac.HMAC:
    """An HMAC-SHA-256 under ``spec``'s key, read now: the key is kept in no attribute and
    shown in no message."""
    if spec.key_env is not None:
        where = f"the environment variable {spec.key_env}"
        key = os.environ.get(spec.key_env, "").encode()
        if not key:
            raise AvatarError(
                f"hmac's key: {where} is not set or empty; set it to a secret, e.g. export "
                f'{spec.key_env}="$({_MAKE_KEY})"'
            )
    else:
        where = f"the file {spec.key_file}"
        try:
            key = Path(spec.key_file).read_bytes().rstrip(b"\r\n")
        except OSError as error:
            raise AvatarError(f"hmac's key: cannot read {where} ({error.strerror})") from None
    if len(key) < _KEY_BYTES:
        raise AvatarError(
            f"hmac's key in {where} has {len(key)} bytes; it needs at least {_KEY_BYTES}: "
            f"make one with {_MAKE_KEY}"
        )
    return hmac.new(key, digestmod=sha256)


def _faker(spec: Pseudonym):
    """A Faker of ``spec``'s locale (the ``fake`` extra)."""
    faker = import_extra("faker", "fake", "the 'fake' pseudonym strategy")
    if spec.locale not in faker.config.AVAILABLE_LOCALES:
        raise AvatarError(
            f"locale={spec.locale!r} is not one Faker knows (faker.config.AVAILABLE_LOCALES "
            "lists them), e.g. en_US, fr_FR, de_DE"
        )
    return faker.Faker(spec.locale)


def _text(value: Any) -> str:
    """A value as a text file writes it: integers, whole floats too, in decimal; booleans
    as True and False, however they are held."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(int(value)) if isinstance(value, (int, np.integer)) else str(value)


def _number(text: str) -> int | float | None:
    """The number a text reads as (an int when whole), or None."""
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
    return None if math.isnan(number) else int(number) if number.is_integer() else number


class Pseudonymizer:
    """One column's pseudonyms (module docstring): ``add`` every chunk of the column, then ask
    for the ``pseudonyms`` of any chunk. ``seed``: the run's (an integer or a SeedSequence;
    None draws fresh entropy), used by ``uuid4`` and ``fake``; two columns given the same seed
    draw the same sequence, so a caller spawns one per column."""

    def __init__(self, spec: Pseudonym | str | Mapping | None = None, name: Any = None,
                 seed: Any = None) -> None:
        self.spec = Pseudonym.of(spec)
        self.name = name
        self._sequence = seed_sequence(seed)
        self._ranks: dict[str, int] = {}  # each value's text -> its order of first appearance
        fresh = self.spec.strategy == "fresh"
        self._fresh = IdentifierValues(name) if fresh else None  # fresh avoids originals so
        self._numbers: set | None = None if fresh else set()  # others: what originals read as
        self._table: np.ndarray | None = None  # the pseudonyms by rank, then a missing one
        with error_context(f"column {name!r}"):  # a missing key or Faker: now, not after a scan
            if self.spec.strategy == "hmac":
                _keyed_mac(self.spec)
            elif self.spec.strategy == "fake":
                _faker(self.spec)

    def add(self, series: pd.Series) -> Pseudonymizer:
        """Read the values of one chunk."""
        if self._table is not None:
            raise AvatarError(
                f"column {self.name!r}: a chunk is added after pseudonyms were drawn; add every "
                "chunk of the column before asking for pseudonyms"
            )
        if self._fresh is not None:
            self._fresh.add(series)
        for value in series.dropna().unique():
            text = _text(value)
            if text not in self._ranks:
                self._ranks[text] = len(self._ranks)
                if self._numbers is not None and (number := _number(text)) is not None:
                    self._numbers.add(number)
        return self

    def merge(self, other: Pseudonymizer) -> Pseudonymizer:
        """Read the values ``other`` (the same spec and seed) read from the chunks that follow,
        e.g. a later partition's on a worker: the same as adding those chunks here."""
        if self._table is not None or other._table is not None:
            raise AvatarError(
                f"column {self.name!r}: values are merged after pseudonyms were drawn; merge "
                "every partition's values before asking for pseudonyms"
            )
        if other.spec != self.spec:
            raise AvatarError(f"column {self.name!r}: pseudonymizers of two strategies or "
                              "options cannot be merged")
        for text in other._ranks:  # in other's order of first appearance, after self's
            self._ranks.setdefault(text, len(self._ranks))
        if self._fresh is not None:
            self._fresh.merge(other._fresh)
        if self._numbers is not None:
            self._numbers |= other._numbers
        return self

    def draw(self) -> Pseudonymizer:
        """Draw every value's pseudonym now, once every chunk is added: a copy shipped to
        another process (a Dask worker, which may not hold the key) then only maps."""
        with error_context(f"column {self.name!r}"):
            self._drawn()
        return self

    def pseudonyms(self, series: pd.Series) -> pd.Series:
        """The pseudonyms of one chunk's values (added before), in the same dtype for every
        chunk: integers as Int64, text as objects (None where missing)."""
        with error_context(f"column {self.name!r}"):
            table = self._drawn()
        codes, uniques = pd.factorize(series)  # a missing value: code -1
        try:
            ranks = np.fromiter((self._ranks[_text(v)] for v in uniques), np.int64, len(uniques))
        except KeyError:  # the value is not repeated: it is an original identifier
            raise AvatarError(
                f"column {self.name!r}: a value was not added before its pseudonym was asked "
                "for; add every chunk of the column first (Pseudonymizer.add)"
            ) from None
        picked = table[np.append(ranks, -1)[codes]]  # code -1: the table's last, missing entry
        if table.dtype.kind in "iu":
            picked = pd.arrays.IntegerArray(picked.astype(np.int64), codes < 0)
        return pd.Series(picked, index=series.index, name=series.name, dtype=picked.dtype)

    def _drawn(self) -> np.ndarray:
        """Every value's pseudonym, by rank, then one for a missing value (None, or a masked 0),
        drawn on the first call."""
        if self._table is None:
            count, strategy, value = len(self._ranks), self.spec.strategy, self.spec.value
            if strategy == "fresh":  # dealt in an order drawn from the seed, as numbers are
                values = self._fresh.fresh(0, count)
                values = values[np.random.default_rng(self._sequence).permutation(count)]
            elif strategy == "constant":
                if self._is_original(_text(value)):
                    raise AvatarError(
                        "the constant value is one of the column's original values (not "
                        "repeated here); choose a value that is none of them"
                    )
                values = np.full(count, value, dtype=object if isinstance(value, str) else int)
            elif strategy == "hmac":
                values = np.array(self._digests(), dtype=object)
            else:
                values = np.array(self._first_free(self._candidates(), count),
                                  dtype=np.int64 if strategy == "integer" else object)
                if strategy in ("integer", "pattern"):  # dealt in an order drawn from the seed
                    values = values[np.random.default_rng(self._sequence).permutation(count)]
            self._table = np.append(values, 0 if values.dtype.kind in "iu" else None)
            self._fresh = self._numbers = None  # the draw's needs, not the mapping's
        return self._table

    def _is_original(self, text: str) -> bool:
        return text in self._ranks or _number(text) in self._numbers

    def _candidates(self) -> Iterator[Any]:
        """The pseudonyms to try, in order (``_first_free`` skips those taken)."""
        spec = self.spec
        if spec.strategy == "integer":
            return itertools.count(_FIRST)
        if spec.strategy == "pattern":
            return map(spec.pattern.format, itertools.count(_FIRST))
        if spec.strategy == "uuid4":
            rng = np.random.default_rng(self._sequence)
            return (str(uuid.UUID(bytes=block[start:start + 16], version=4))
                    for block in iter(lambda: rng.bytes(16 * 4096), None)  # 4096 at a time
                    for start in range(0, len(block), 16))
        faker = _faker(spec)
        faker.seed_instance(int(self._sequence.generate_state(1, np.uint64)[0]))
        draw = getattr(faker, PII[spec.pii])
        return (draw().replace("\n", ", ") for _ in itertools.count())  # an address: one line

    def _first_free(self, candidates: Iterator[Any], count: int) -> list:
        """The first ``count`` candidates neither taken nor an original. Numbers never repeat
        and skip finitely many originals; fake's draws stop after ``_DRAWS`` fail in a row."""
        chosen, taken, failed = [], set(), 0
        while len(chosen) < count:
            candidate = next(candidates)
            text = _text(candidate)
            if text in taken or self._is_original(text):
                failed += 1
                if failed > _DRAWS and self.spec.strategy == "fake":
                    raise AvatarError(
                        f"fake {self.spec.pii} ({self.spec.locale}) found no new value in "
                        f"{_DRAWS:,} draws after {len(chosen):,} of the {count:,} needed: Faker "
                        "has too few distinct ones besides the column's own; fake a type with "
                        "more (name, email) or use strategy 'pattern' or 'hmac'"
                    )
                continue
            taken.add(text)
            chosen.append(candidate)
            failed = 0
        return chosen

    def _digests(self) -> list[str]:
        """hmac's pseudonyms; a collision, between two values or with an original, raises."""
        mac, length, count = _keyed_mac(self.spec), self.spec.length, len(self._ranks)

        def digest(text: str) -> str:
            keyed = mac.copy()
            keyed.update(text.encode())
            return keyed.hexdigest()[:length]

        digests = [digest(text) for text in self._ranks]
        if len(set(digests)) < count or any(map(self._is_original, digests)):
            safe = math.ceil((2 * math.log2(max(count, 2)) + 30) / 4)  # collisions ~ 1e-9
            raise AvatarError(
                f"at length={length}, two of the column's {count:,} values share an hmac "
                "pseudonym, or one's pseudonym is another original value; give a longer length, "
                f"e.g. length={min(64, max(safe, length + 4))}"
            )
        return digests


def pseudonymize(series: pd.Series, spec: Pseudonym | str | Mapping | None = None,
                 seed: Any = None) -> pd.Series:
    """The pseudonyms of a column in memory: those ``Pseudonymizer`` gives it chunk by chunk."""
    return Pseudonymizer(spec, series.name, seed).add(series).pseudonyms(series)
