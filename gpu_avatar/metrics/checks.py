"""Pieces shared by the privacy and signal metrics: input checks and the result frame."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.encoder import validate_table
from ..errors import AvatarError


@dataclass(frozen=True)
class Target:
    """A metric's target: ``value > threshold`` (or ``<``); ``None`` threshold: report only."""

    comparison: str | None = None
    threshold: float | None = None

    def text(self) -> str:
        return "report" if self.comparison is None else f"{self.comparison} {self.threshold:g}"

    def passed(self, value: Any) -> bool | None:
        if self.comparison is None or value is None or not np.isfinite(value):
            return None
        return bool(value > self.threshold if self.comparison == ">" else value < self.threshold)


def metrics_frame(values: dict[str, Any], targets: dict[str, Target]) -> pd.DataFrame:
    """One row per metric: value, target, passed (None where the metric has no target)."""
    rows = []
    for name, target in targets.items():
        value = values.get(name)
        rows.append(
            {
                "metric": name,
                "value": np.nan if value is None else float(value),
                "target": target.text(),
                "passed": target.passed(value),
            }
        )
    return pd.DataFrame(rows).set_index("metric")


def check_same_table(
    original: pd.DataFrame, other: pd.DataFrame, other_name: str, same_rows: bool
) -> pd.DataFrame:
    """``other`` with ``original``'s column order, after checking columns, dtypes and rows."""
    validate_table(original)
    if not isinstance(other, pd.DataFrame):
        raise AvatarError(f"{other_name} must be a pandas DataFrame, got {type(other).__name__}")
    missing = [c for c in original.columns if c not in other.columns]
    extra = [c for c in other.columns if c not in original.columns]
    if missing or extra:
        raise AvatarError(
            f"{other_name} must have the original's columns: missing {missing}, extra {extra}"
        )
    other = other[list(original.columns)]
    differing = {
        c: (str(original[c].dtype), str(other[c].dtype))
        for c in original.columns
        if original[c].dtype != other[c].dtype
    }
    if differing:
        raise AvatarError(
            f"{other_name} dtypes differ from the original's (original, {other_name}): "
            f"{differing}; cast them to the original dtypes"
        )
    if same_rows and len(other) != len(original):
        raise AvatarError(
            f"{other_name} has {len(other)} rows but the original has {len(original)}: "
            "privacy metrics need the unshuffled avatars, row i = avatar of original row i"
        )
    return other


def check_variables(original: pd.DataFrame, variables: Any, argument: str) -> list[Any] | None:
    """A list of existing column names (a single name is accepted), or None."""
    if variables is None:
        return None
    names = [variables] if isinstance(variables, (str, int)) else list(variables)
    unknown = [v for v in names if v not in original.columns]
    if unknown:
        raise AvatarError(f"{argument} names unknown column(s) {unknown}")
    if not names:
        raise AvatarError(f"{argument} is empty; give at least one column or None")
    return names
