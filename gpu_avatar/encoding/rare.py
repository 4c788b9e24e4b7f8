"""Rare modalities grouped before the projection (``AvatarParameters.rare_modalities``).

A modality of a categorical column is rare when fewer rows than the column's threshold hold it
(a count), or a smaller share of the rows than it (a share; missing cells count as rows).

- Text modalities go into one new modality, ``rare_modality_name`` (an existing modality of
  that name joins the group); a group still under the threshold takes in the next rarest
  modality.
- Ordered modalities (an ordered category; numbers, dates and booleans, whose dtype orders
  them and cannot hold a new name) are merged with a neighbour instead: the rarest group joins
  its less common neighbour until none is rare, and a group is released under the label of its
  most common member.

Grouping never leaves a column a single modality: it stops first, and what is left stays
rare. The avatars of a grouped column hold the groups' labels, never a grouped value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..parameters import RARE_MODALITY_NAME, AvatarParameters
from .kinds import is_text


@dataclass(frozen=True)
class RareModalities:
    """What the encoder groups: ``threshold`` for every categorical column, ``per_column``
    in its place for the columns it names (None: never grouped), into ``name``; or, given
    ``learnt`` (column -> {value: label}, learnt on the whole table, as a batched run's first
    batch needs), exactly those groups."""

    threshold: int | float | None = None
    per_column: Mapping[Any, int | float | None] = field(default_factory=dict)
    name: str = RARE_MODALITY_NAME
    learnt: Mapping[Any, Mapping[Any, Any]] | None = None

    @classmethod
    def of(cls, parameters: AvatarParameters,
           learnt: Mapping[Any, Mapping[Any, Any]] | None = None) -> RareModalities | None:
        """The grouping ``parameters`` ask for (None: none), or the ``learnt`` groups."""
        if learnt is not None:
            return cls(name=parameters.rare_modality_name, learnt=learnt)
        if parameters.rare_modalities is None and not parameters.column_rare_modalities:
            return None
        return cls(parameters.rare_modalities, parameters.column_rare_modalities,
                   parameters.rare_modality_name)

    def learnt_values(self, column: Any) -> list[Any]:
        """The grouped values of ``column`` among the ``learnt`` groups (a batch may lack
        some; the encoder still knows them)."""
        return list((self.learnt or {}).get(column, {}))

    def groups(self, column: Any, dtype: Any, counts: Mapping[Any, int],
               rows: int) -> dict[Any, Any]:
        """{value: label} for the grouped values of ``column`` (labels that differ from the
        value only), from the modalities' ``counts`` (in the column's order) among ``rows``."""
        if self.learnt is not None:
            return dict(self.learnt.get(column, {}))
        threshold = self.per_column.get(column, self.threshold)
        if threshold is None or len(counts) < 2:
            return {}
        limit = threshold if isinstance(threshold, int) else threshold * rows
        if ordered(dtype):
            return _merge_neighbours(list(counts), list(counts.values()), limit)
        return _group_into(counts, limit, self.name)


def ordered(dtype: Any) -> bool:
    """Whether a categorical column's modalities merge with their neighbours (an ordered
    category, numbers, dates, booleans) rather than into a named group (text)."""
    if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
        return True
    return not is_text(dtype)


def _group_into(counts: Mapping[Any, int], limit: float, name: str) -> dict[Any, Any]:
    group = [value for value, count in counts.items() if count < limit]
    if not group:
        return {}
    if name in counts and name not in group:
        group.append(name)
    rest = sorted((v for v in counts if v not in group), key=counts.__getitem__)  # stable
    if not rest:  # all rare: the most common stays out, so that two modalities remain
        group.remove(max(group, key=counts.__getitem__))
    while sum(counts[v] for v in group) < limit and len(rest) > 1:
        group.append(rest.pop(0))
    return {value: name for value in group if value != name}


def _merge_neighbours(values: Sequence[Any], counts: Sequence[int],
                      limit: float) -> dict[Any, Any]:
    groups = [[i] for i in range(len(values))]
    totals = list(counts)
    while len(groups) > 2:
        rarest = min(range(len(groups)), key=totals.__getitem__)  # the first of equals
        if totals[rarest] >= limit:
            break
        sides = [j for j in (rarest - 1, rarest + 1) if 0 <= j < len(groups)]
        other = min(sides, key=totals.__getitem__)  # the less common; equal: the lower one
        low, high = sorted((rarest, other))
        groups[low:high + 1] = [groups[low] + groups[high]]
        totals[low:high + 1] = [totals[low] + totals[high]]
    labels = {}
    for members in groups:
        label = values[max(members, key=lambda i: counts[i])]  # the most common, first of equals
        labels.update({values[i]: label for i in members if values[i] != label})
    return labels


def protection_if_grouped(per_variable: Mapping[str, float], categorical: Iterable[Any]) -> float:
    """``column_direct_match_protection`` once the ``categorical`` columns release none of
    their unique values, as grouping rare modalities makes them: the worst of the other
    columns' (``per_variable``, by the columns' ``str``), 100 with none."""
    grouped = {str(c) for c in categorical}
    return min((value for column, value in per_variable.items() if column not in grouped),
               default=100.0)
