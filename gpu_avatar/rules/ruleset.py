"""A table's rules together: checked once against each other, then against the originals,
held by encoding where a rule has a reversible transform, and by repairs otherwise, with
what each repair cost.

    rules = RuleSet([Inequality("accept_dt", "fu_dt", strict=True), Derived("low", "bwt < 2500")])
    encoded = rules.encode(df)                     # the table to avatarize
    result = ga.avatarize(encoded, k=20, seed=0)
    release = rules.apply(df, result.sensitive_unshuffled_avatars, encoded=True, seed=0)
    release.avatars, release.to_frame()            # every rule holds; rows repaired, Hellinger
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from graphlib import CycleError, TopologicalSorter
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import CATEGORICAL, CONTINUOUS
from ..encoding.kinds import is_number
from ..errors import AvatarError, AvatarTypeError, FixableError, error_context, rows_named
from ..metrics.signal import HELLINGER_BINS, categorical_hellinger, continuous_hellinger
from .base import Encodable, Rule
from .children import BoundedSteps, CountPerParent, Increasing
from .table import RULE_CLASSES, Derived, Inequality, Range, comparable
from .values import Neighbours, Quantity, is_quantity, same_values

RULES: Mapping[str, type[Rule]] = {
    **RULE_CLASSES, **{cls.kind: cls for cls in (CountPerParent, Increasing, BoundedSteps)}}
MAX_PASSES = 5  # rounds of repairs (a repair may break another rule) before giving up
ENCODING, REPAIR = "encoding", "repair"


@dataclass(frozen=True)
class RuleReport:
    """How one rule was held: by its ``encoding`` or by ``repair``; the avatar rows a repair
    changed, the originals' exceptions kept, and the Hellinger distance to the originals of
    each column the rule writes, before and after the repairs."""

    rule: Rule
    held_by: str
    rows_repaired: int
    exceptions_kept: int
    hellinger_before: dict[str, float] = field(default_factory=dict)
    hellinger_after: dict[str, float] = field(default_factory=dict)


@dataclass
class RulesResult:
    """The avatars, every rule kept (row i: the avatar of original row i, as given), and a
    report per rule."""

    avatars: pd.DataFrame
    reports: list[RuleReport]

    def to_frame(self, language: str = "en") -> pd.DataFrame:
        """``rules_frame`` of the reports."""
        return rules_frame(self.reports, language)


def rules_frame(reports: Sequence[RuleReport], language: str = "en") -> pd.DataFrame:
    """One row per rule and column it writes: the rule (in ``language``), held by, rows
    repaired, exceptions kept, Hellinger before and after."""
    return pd.DataFrame([
        {"rule": report.rule.describe(language), "held_by": report.held_by,
         "rows_repaired": report.rows_repaired, "exceptions_kept": report.exceptions_kept,
         "column": column, "hellinger_before": before,
         "hellinger_after": report.hellinger_after[column]}
        for report in reports for column, before in report.hellinger_before.items()],
        columns=["rule", "held_by", "rows_repaired", "exceptions_kept", "column",
                 "hellinger_before", "hellinger_after"])


class RuleSet:
    """Rules of one table (``rules``, in order), refused together when they contradict each
    other (see ``_refuse_contradictions``)."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        for rule in self.rules:
            if not isinstance(rule, Rule):
                raise AvatarTypeError(f"rules: {rule!r} is not a rule; kinds: {sorted(RULES)}")
        self._order = _refuse_contradictions(self.rules)

    @classmethod
    def of(cls, rules: Any, where: str = "rules") -> RuleSet | None:
        """The rules an entry point was given: None (none), a ``RuleSet``, a list of rules,
        or a list of YAML mappings (``from_config``); an empty list is none."""
        if rules is None or isinstance(rules, RuleSet):
            return rules or None
        if isinstance(rules, (list, tuple)) and all(isinstance(r, Rule) for r in rules):
            return cls(rules) or None
        return cls.from_config(rules, where) or None

    def __len__(self) -> int:
        return len(self.rules)

    @classmethod
    def from_config(cls, entries: Any, where: str = "rules") -> RuleSet:
        """The rules of a YAML list of mappings, each with ``rule:`` (its kind) and the
        rule's arguments as keys, e.g. ``{rule: inequality, low: accept_dt, high: fu_dt,
        strict: true}``."""
        if not isinstance(entries, (list, tuple)):
            raise AvatarTypeError(f"{where} must be a list of rules, got {entries!r}")
        rules = []
        for i, entry in enumerate(entries):
            here = f"{where}[{i}]"
            if not isinstance(entry, Mapping) or entry.get("rule") not in RULES:
                raise FixableError(f"{here}: {entry!r} names no rule", {
                    "python": f"give each entry a 'rule' key, one of {sorted(RULES)}",
                    "yaml": f"start the entry with rule: one of {sorted(RULES)}"})
            rule_class = RULES[entry["rule"]]
            keys = {f.name: f for f in fields(rule_class) if f.init}
            unknown = sorted(set(entry) - set(keys) - {"rule"})
            missing = [name for name, f in keys.items() if name not in entry
                       and f.default is MISSING and f.default_factory is MISSING]
            if unknown or missing:
                problems = [f"{what} key(s) {names}" for what, names in
                            (("unknown", unknown), ("missing", missing)) if names]
                raise AvatarError(f"{here} ({entry['rule']}): {', '.join(problems)}; its keys: "
                                  f"{list(keys)}")
            with error_context(here):
                rules.append(rule_class(**{k: v for k, v in entry.items() if k != "rule"}))
        return cls(rules)

    def check(self, originals: pd.DataFrame) -> list[np.ndarray]:
        """Refuse rules naming absent columns or columns of the wrong kind, and rules the
        originals break (the rows counted, one shown) unless the rule keeps the originals'
        exceptions. Returns per rule the rows it exempts (its kept exceptions)."""
        if not isinstance(originals, pd.DataFrame):
            raise AvatarTypeError(f"originals must be a DataFrame, got {type(originals)}")
        for rule in self.rules:
            unknown = [c for c in rule.columns if c not in originals.columns]
            if unknown:
                raise rule.error(f"unknown column(s) {unknown}",
                                 f"name columns of the table: {list(originals.columns)}")
            rule.check_columns(originals)
        exempt = []
        none = np.zeros(len(originals), dtype=bool)
        for rule in self.rules:
            broken = rule.broken(originals, originals, none)
            if broken.any() and not rule.keep_exceptions:
                rows = rows_named(np.flatnonzero(broken)[:3] + 1, int(broken.sum()))
                raise rule.error(
                    f"{int(broken.sum())} of the {len(originals)} original rows break it "
                    f"({rows}, by position)",
                    "fix those rows, or keep the originals' exceptions: pass "
                    "keep_exceptions=True to the rule",
                    "fix those rows, or keep the originals' exceptions: add "
                    "keep_exceptions: true to the rule's entry")
            exempt.append(broken)
        return exempt

    def _encoding(self, originals: pd.DataFrame, exempt: list[np.ndarray]) -> list[int]:
        """The rules held by their transform here: reversible, kept by every original row,
        one transform per column, and touching no column a Derived rule drops (Derived
        first). Decoding then always finds a rule whose inputs are decoded: an order among
        encoded columns would be a cycle of inequalities or derived columns, refused."""
        chosen, taken, dropped = [], set(), set()
        for i in sorted(range(len(self.rules)),
                        key=lambda i: not isinstance(self.rules[i], Derived)):
            rule = self.rules[i]
            if (not isinstance(rule, Encodable) or exempt[i].any()
                    or not rule.can_encode(originals) or taken & set(rule.encoded_columns)
                    or (not isinstance(rule, Derived) and dropped & set(rule.columns))):
                continue
            chosen.append(i)
            taken |= set(rule.encoded_columns)
            dropped |= {rule.column} if isinstance(rule, Derived) else set()
        return sorted(chosen)

    def encode(self, originals: pd.DataFrame) -> pd.DataFrame:
        """The table to avatarize instead of ``originals`` (checked first): each rule with
        a transform applied (its columns replaced, merged or dropped)."""
        return self.encode_plan(originals, {})[0]

    def encode_plan(self, originals: pd.DataFrame,
                    types: Mapping[Any, str]) -> tuple[pd.DataFrame, dict[Any, str]]:
        """``encode(originals)`` and the column plan of the encoded table: ``types`` with
        each encoded column declared by what it holds (numbers, as a log gap: continuous;
        else, as a combination: categorical) and the columns dropped left out, so a
        declaration of the originals' column never reads the encoded values."""
        encoded, plan = self._encode(originals, self._encoding(originals, self.check(originals)))
        return encoded, {**{c: kind for c, kind in types.items() if c not in plan},
                         **{c: kind for c, kind in plan.items() if kind is not None}}

    def _encode(self, originals: pd.DataFrame,
                encoding: list[int]) -> tuple[pd.DataFrame, dict[Any, str | None]]:
        """The encoded table and the kind of each column it changed (None: dropped)."""
        encoded, kinds = originals.copy(), {}
        for i in encoding:
            columns = self.rules[i].encode(originals)
            _update(encoded, columns)
            kinds.update({c: None if values is None else CONTINUOUS if is_number(values.dtype)
                          else CATEGORICAL for c, values in columns.items()})
        return encoded, kinds

    def decode(self, avatars: pd.DataFrame, originals: pd.DataFrame) -> pd.DataFrame:
        """The avatars of ``encode(originals)`` with the originals' columns back."""
        return self._decode(avatars, originals,
                            self._encoding(originals, self.check(originals)))

    def _decode(self, avatars: pd.DataFrame, originals: pd.DataFrame,
                encoding: list[int]) -> pd.DataFrame:
        decoded, pending = avatars.copy(), [self.rules[i] for i in encoding]
        while pending:
            undecoded = {c for rule in pending for c in rule.encoded_columns}
            rule = [r for r in pending if not undecoded & set(r.decode_needs)][0]
            _update(decoded, rule.decode(decoded, originals))
            pending.remove(rule)
        return decoded[list(originals.columns)]

    def apply(self, originals: pd.DataFrame, avatars: pd.DataFrame, *, encoded: bool = False,
              neighbours: Neighbours | None = None, seed: Any = None) -> RulesResult:
        """``avatars`` (unshuffled: row i is the avatar of original row i; of
        ``encode(originals)`` when ``encoded``, then decoded first) with every rule kept.

        Rules are repaired in order, Derived ones last, round after round until none is
        broken (a repair may break another rule; AvatarError after ``MAX_PASSES``).
        ``neighbours``: the originals each avatar was drawn from, which repairs take values
        from; ``seed``: the random draws of the repairs (the same for a seed)."""
        exempt = self.check(originals)
        encoding = self._encoding(originals, exempt)
        expected = (self._encode(originals, encoding)[0].columns if encoded
                    else originals.columns)
        _check_avatars(avatars, list(expected), len(originals), encoded)
        if neighbours is not None:
            neighbours.check(len(avatars), len(originals))
        before = self._decode(avatars, originals, encoding) if encoded else avatars
        after, changed = self._repair(before, originals, exempt, neighbours,
                                      np.random.default_rng(seed))
        reports = [
            RuleReport(rule, ENCODING if encoded and i in encoding else REPAIR,
                       int(changed[i].sum()), int(exempt[i].sum()),
                       {c: _hellinger(originals[c], before[c]) for c in rule.written},
                       {c: _hellinger(originals[c], after[c]) for c in rule.written})
            for i, rule in enumerate(self.rules)]
        return RulesResult(after, reports)

    def _repair(self, avatars, originals, exempt, neighbours, rng):
        repaired = avatars.copy()
        changed = [np.zeros(len(avatars), dtype=bool) for _ in self.rules]
        for attempt in range(MAX_PASSES + 1):
            broken = {i: int(self.rules[i].broken(repaired, originals, exempt[i]).sum())
                      for i in self._order}
            broken = {i: count for i, count in broken.items() if count}
            if not broken:
                return repaired, changed
            if attempt == MAX_PASSES:
                break
            repaired_last = list(broken)
            for i in broken:
                rule = self.rules[i]
                for column, values in rule.repair(repaired, originals, exempt[i], neighbours,
                                                  rng).items():
                    changed[i] |= ~same_values(repaired[column], values)
                    repaired[column] = values
        fighting = ", ".join(repr(self.rules[i].describe())
                             for i in sorted(set(broken) | set(repaired_last)))
        still = ", ".join(f"{self.rules[i].describe()!r} ({count} rows)"
                          for i, count in broken.items())
        raise AvatarError(f"rules {fighting} undo each other's repairs: after {MAX_PASSES} "
                          f"rounds, still broken: {still}; loosen or drop one of them")


def _update(table: pd.DataFrame, columns: Mapping[str, pd.Series | None]) -> None:
    """Set ``columns`` of ``table`` in place (None: drop the column)."""
    for column, values in columns.items():
        if values is None:
            del table[column]
        else:
            table[column] = values


def _check_avatars(avatars: Any, expected: list, n_originals: int, encoded: bool) -> None:
    if not isinstance(avatars, pd.DataFrame):
        raise AvatarTypeError(f"avatars must be a DataFrame, got {type(avatars)}")
    missing = [c for c in expected if c not in avatars.columns]
    extra = [c for c in avatars.columns if c not in expected]
    if missing or extra:
        table = "rules.encode(originals)" if encoded else "the originals"
        raise AvatarError(
            f"avatars: not the columns of {table} (missing {missing}, extra {extra}); pass "
            "encoded=True for the avatars of rules.encode(originals), encoded=False for "
            "those of the originals")
    if len(avatars) != n_originals:
        raise AvatarError(f"avatars: {len(avatars)} rows for {n_originals} originals; pass the "
                          "unshuffled avatars (row i: the avatar of original row i)")


def _hellinger(original: pd.Series, avatar: pd.Series) -> float:
    """The Hellinger distance between a column's originals and avatars, as the signal
    metrics measure it (numbers, dates: binned; else: categories)."""
    if is_quantity(original.dtype):
        quantity = Quantity(original)
        values = quantity.numbers(original), quantity.numbers(avatar)
        if np.isfinite(np.concatenate(values)).any():
            return continuous_hellinger(*values, bins=HELLINGER_BINS)
    return categorical_hellinger(original, avatar)


def _refuse_contradictions(rules: Sequence[Rule]) -> list[int]:
    """Refuse rules that cannot hold together, before any work: a column derived twice,
    derived from itself through others, or derived and changed by another rule; inequalities
    in a cycle; bounds of a column (ranges, inequalities with a constant) that leave no
    value. Returns the order of the repairs: the rules in order, Derived last, each after
    those computing its inputs."""
    derived = {i: r for i, r in enumerate(rules) if isinstance(r, Derived)}
    twice = [c for c, n in Counter(r.column for r in derived.values()).items() if n > 1]
    if twice:
        raise AvatarError(f"rules: {twice} derived twice; keep one expression per column")
    by_column = {r.column: i for i, r in derived.items()}
    for i, rule in enumerate(rules):
        own = {rule.column} if i in derived else set()
        for column in sorted(set(rule.written) & set(by_column) - own):
            raise rule.error(f"it changes {column!r}, which rule "
                             f"{rules[by_column[column]].describe()!r} computes",
                             "drop one: a derived column is computed, never repaired")
    below = defaultdict(set)  # column -> the columns an inequality puts below it
    for rule in rules:
        if isinstance(rule, Inequality) and len(rule.columns) == 2:
            below[rule.high].add(rule.low)
    try:
        order = list(TopologicalSorter(
            {r.column: set(r.inputs) & set(by_column) for r in derived.values()}).static_order())
        TopologicalSorter(below).prepare()
    except CycleError as error:
        raise AvatarError(f"rules: {' -> '.join(map(str, error.args[1]))} form a cycle (of "
                          "derived columns or inequalities), which cannot hold; drop one "
                          "rule of it") from None
    _refuse_empty_bounds(rules)
    return [i for i in range(len(rules)) if i not in derived] + [by_column[c] for c in order]


def _refuse_empty_bounds(rules: Sequence[Rule]) -> None:
    """Refuse a column whose declared bounds leave no value (a lower bound above an upper
    one, or equal where one is strict)."""
    lower, upper = {}, {}  # column -> [(bound, strict, rule)]
    for rule in rules:
        if isinstance(rule, Range):
            lower.setdefault(rule.column, []).append((rule.low, False, rule))
            upper.setdefault(rule.column, []).append((rule.high, False, rule))
        elif isinstance(rule, Inequality) and len(rule.columns) == 1:
            bounds = lower if rule.target == rule.high else upper
            bounds.setdefault(rule.target, []).append((rule.anchor, rule.strict, rule))
    for column, lows in lower.items():
        for low, low_strict, low_rule in lows:
            for high, high_strict, high_rule in upper.get(column, []):
                a, b = comparable(low), comparable(high)
                try:
                    empty = a is not None and b is not None and (
                        a > b or (a == b and (low_strict or high_strict)))
                except TypeError:  # a date against a number: check_columns names it
                    continue
                if empty:
                    raise low_rule.error(
                        f"with rule {high_rule.describe()!r}, no value of {column!r} is "
                        "allowed", "drop or loosen one of the two")
