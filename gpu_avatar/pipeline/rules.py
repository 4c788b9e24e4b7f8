"""The rules a release keeps (``gpu_avatar.rules``) in a run: the originals encoded before the
fit (the encoded columns declared in the column plan), and the unshuffled avatars decoded and
repaired, from the neighbours each was drawn from, before the release shuffle."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.kinds import DROPPED
from ..errors import FixableError
from ..parameters import AvatarParameters, column_kind, is_variable
from ..rules import FixedCombinations, Neighbours, RuleSet, RulesResult
from ..streams import RULES, child


def rules_seed(sequence: np.random.SeedSequence, step: int = 0) -> np.random.SeedSequence:
    """The seed of the repairs of a run (or of a batch) seeded by ``sequence``; ``step``: of
    its later applications (a database's after the relink)."""
    return child(sequence, RULES, step)


def refuse_non_variables(rules: RuleSet, types: Mapping[Any, str],
                         keys: Iterable[Any] = ()) -> None:
    """Refuse a rule naming a column the column plan does not avatarize (an identifier, a
    pseudonym, an excluded or dropped column): the method never draws its values, so no
    repair could hold there. ``keys``: columns a rule across children may name as ``by``."""
    keys = set(keys)
    for rule in rules.rules:
        for column in rule.columns:
            if column not in keys and not is_variable(types.get(column)):
                fix = f"name variables only, or declare {column!r} continuous or categorical"
                raise rule.error(
                    f"column {column!r} is declared {types[column]!r}, not a variable",
                    f"{fix} in types", f"{fix} (types: in a database file, --types on the "
                    "command line)")


def without_dropped(originals: pd.DataFrame, types: Mapping[Any, str]) -> pd.DataFrame:
    """``originals`` less the columns declared dropped, which no avatar holds: what the
    rules check the avatars against."""
    return originals.drop(columns=[c for c in originals.columns
                                   if column_kind(types.get(c)) == DROPPED])


def joined_neighbours(parts: list[Neighbours], batches: list[np.ndarray]) -> Neighbours:
    """The neighbours of batches (positions in their batch) as one table's (row positions of
    the whole table, rows in the input's order)."""
    indices = np.concatenate([rows[part.indices] for part, rows in zip(parts, batches,
                                                                        strict=True)])
    weights = np.concatenate([part.weights for part in parts])
    order = np.argsort(np.concatenate(batches))
    return Neighbours(indices[order], weights[order])


@dataclass
class RulesRun:
    """One table's rules in a run: the originals, the table avatarized instead (``encoded``)
    and the parameters it is avatarized with (its column plan)."""

    rules: RuleSet
    originals: pd.DataFrame  # less the dropped columns, which no avatar holds
    encoded: pd.DataFrame
    parameters: AvatarParameters

    @classmethod
    def start(cls, rules: RuleSet, originals: pd.DataFrame, parameters: AvatarParameters,
              keys: Iterable[Any] = ()) -> RulesRun:
        """Check the rules against the column plan and the originals, and encode these; the
        combination columns are never grouped as rare (their codes must decode)."""
        refuse_non_variables(rules, parameters.types, keys)
        _refuse_grouped_combinations(rules, parameters)
        encoded, types = rules.encode_plan(originals, parameters.types)
        added = [c for c in types if c not in originals.columns]
        thresholds = {**{c: t for c, t in parameters.column_rare_modalities.items()
                         if c in encoded.columns}, **dict.fromkeys(added)}
        return cls(rules, without_dropped(originals, parameters.types), encoded,
                   parameters.replace(types=types, column_rare_modalities=thresholds))

    def apply(self, unshuffled: pd.DataFrame, neighbours: Neighbours | None,
              sequence: np.random.SeedSequence) -> RulesResult:
        """The unshuffled avatars of ``encoded`` decoded, every rule kept."""
        return self.rules.apply(self.originals, unshuffled, encoded=True, neighbours=neighbours,
                                seed=rules_seed(sequence))


def _refuse_grouped_combinations(rules: RuleSet, parameters: AvatarParameters) -> None:
    """A fixed combination releases the originals' combinations as they are: it cannot keep
    a column's rare modalities grouped, so the two are refused together, before any work."""
    for rule in rules.rules:
        if not isinstance(rule, FixedCombinations):
            continue
        grouped = [c for c in rule.columns
                   if parameters.column_rare_modalities.get(c, parameters.rare_modalities)
                   is not None]
        if grouped:
            raise FixableError(
                f"rule {rule.kind} {list(rule.columns)} releases the originals' combinations, "
                f"rare modalities of {grouped} included, which rare_modalities would group",
                {"python": "group those values in the table first, or leave these columns "
                           f"out of the grouping: column_rare_modalities={{{grouped[0]!r}: None}}",
                 "cli": "group those values in the file first, or leave these columns out of "
                        f"the grouping: --column-rare-modalities {grouped[0]}=none",
                 "yaml": "group those values in the file first, or leave these columns out of "
                         f"the grouping: column_rare_modalities: {{{grouped[0]}: null}}"})
