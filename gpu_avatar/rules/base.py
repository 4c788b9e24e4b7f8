"""What every rule is: the columns it reads and writes, the rows of a table that break it,
and how a release is repaired to keep it; some rules also have a reversible transform
(``Encodable``), applied to the originals before the projection and undone on the avatars.

A rule is a frozen dataclass: its fields are its Python arguments and its YAML keys
(``RuleSet.from_config``). Rows where a rule's values are missing are not constrained by it
(but for FixedCombinations, where missing is one more value).
``exempt`` rows (the rows whose original breaks the rule, kept by ``keep_exceptions``) are
neither counted as broken nor repaired; for a rule across a parent's children they are left
out of the parent's sequence, as missing values are.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..encoding.kinds import is_number
from ..errors import AvatarTypeError, FixableError
from ..metrics.catalogue import words
from ..report.language import Translator
from .values import Neighbours, is_quantity


@dataclass(frozen=True)
class Rule(ABC):
    """A rule every released row keeps. Subclasses give ``columns`` (every column read or
    written), ``kind`` (its YAML name) and the methods below."""

    kind: ClassVar[str]
    numbers_only: ClassVar[bool] = False  # its quantities are numbers (no dates, durations)
    keep_exceptions: bool = field(default=False, kw_only=True)

    @property
    def written(self) -> tuple[str, ...]:
        """The columns a repair may change."""
        return self.columns

    @property
    def quantities(self) -> tuple[str, ...]:
        """The columns that must hold numbers (or dates and durations)."""
        return ()

    def check_columns(self, originals: pd.DataFrame) -> None:
        """Refuse columns of the wrong kind (present columns: ``RuleSet.check``)."""
        for column in self.quantities:
            dtype = originals[column].dtype
            if not is_quantity(dtype) or (self.numbers_only and not is_number(dtype)):
                needed = "numbers" if self.numbers_only else "numbers, dates or durations"
                raise self.error(f"column {column!r} holds {dtype}, not {needed}",
                                 f"convert {column!r} (pd.to_numeric, pd.to_datetime) or name "
                                 "another column")

    @abstractmethod
    def broken(self, table: pd.DataFrame, originals: pd.DataFrame,
               exempt: np.ndarray) -> np.ndarray:
        """Per row of ``table``, whether it breaks the rule (``originals``: what the rule
        learns from, such as bounds or seen combinations)."""

    @abstractmethod
    def repair(self, avatars: pd.DataFrame, originals: pd.DataFrame, exempt: np.ndarray,
               neighbours: Neighbours | None, rng: np.random.Generator) -> dict[str, pd.Series]:
        """The ``written`` columns of ``avatars`` with every broken row repaired by the
        smallest change (from the avatar's ``neighbours`` where given)."""

    @abstractmethod
    def _words(self) -> tuple[str, str]:
        """The rule in English and in French."""

    @staticmethod
    def _french(value: Any) -> str:
        """A rule's number as French writes it: with a decimal comma (#37: "arrondi à 0.1")."""
        return str(value).replace(".", ",") if isinstance(value, (float, np.floating)) else (
            str(value))

    def describe(self, language: str = "en") -> str:
        """The rule in words, for errors and the report ("en" or "fr")."""
        return Translator(language).words(words(*self._words()))

    def error(self, problem: str, python: str, yaml: str | None = None) -> FixableError:
        """An error about this rule: the rule, the problem and its fix (``yaml``: in a YAML
        file's words, if they differ, which the command line's rules file uses too)."""
        return FixableError(f"rule {self.describe()!r} ({self.kind}): {problem}",
                            {"python": python, "yaml": yaml or python, "cli": yaml or python})


class Encodable(Rule):
    """A rule with a reversible transform: ``encode`` the originals before the projection,
    ``decode`` their avatars after, and the avatars keep the rule by construction."""

    @property
    @abstractmethod
    def encoded_columns(self) -> tuple[str, ...]:
        """The columns ``encode`` replaces or drops."""

    @property
    def decode_needs(self) -> tuple[str, ...]:
        """The columns ``decode`` reads, which must be decoded first."""
        return ()

    def can_encode(self, originals: pd.DataFrame) -> bool:
        """Whether the transform applies to these originals (which keep the rule)."""
        return True

    @abstractmethod
    def encode(self, originals: pd.DataFrame) -> Mapping[str, pd.Series | None]:
        """The new values of columns (None: the column is dropped)."""

    @abstractmethod
    def decode(self, avatars: pd.DataFrame,
               originals: pd.DataFrame) -> Mapping[str, pd.Series | None]:
        """The columns back, from ``avatars`` of the encoded table (None: dropped)."""


def column_names(value: Any, name: str, rule: str) -> tuple[str, ...]:
    """A column name or a list of them as a tuple; AvatarTypeError otherwise."""
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names or not all(
            isinstance(n, str) for n in names):
        raise AvatarTypeError(f"{rule}: {name} must be a column name or a list of them, "
                              f"got {value!r}")
    return tuple(names)


def replaced(column: pd.Series, rows: np.ndarray, values: pd.Series) -> pd.Series:
    """A copy of ``column`` (as the dtype of ``values``) with positions ``rows`` set to
    ``values``."""
    out = column.astype(values.dtype)  # a new Series (copied when set below)
    out.iloc[rows] = values.array
    return out
