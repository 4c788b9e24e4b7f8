"""One verdict on a release, for the sign-off: every judged privacy target with its margin, the
worst column for direct matches (named), exact row copies and, given a holdout, the attack
risks, read as one of three answers with the findings behind it.

- ``does not meet its targets``: a decisive target is missed. The decisive targets are the
  method's own protection, that no avatar can be traced to its original (hidden rate and local
  cloaking: ``Metric.summary`` in the catalogue); for a database, in any scenario.
- ``meets its targets with named exceptions``: the decisive targets are met, but another
  target is missed, an attack that learns from the release shows a measurable risk, or an
  avatar is an exact copy of an original row; each is named. Copies of rows one original
  alone holds (``unique_copies``) are named in the answer's sentence itself: such an avatar
  is that person's values.
- ``meets every target``: none of the above.

Distances reported beside their baselines (``distance_to_closest``...) have no target and take
no part. The sentences are written by the report (``report/verdict.py``), in its languages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import AvatarError
from .catalogue import CATALOGUE, PRIVACY_TARGETS, Target
from .privacy import PrivacyMetrics

MEETS = "meets every target"
EXCEPTIONS = "meets its targets with named exceptions"
FAILS = "does not meet its targets"
ANSWERS = (MEETS, EXCEPTIONS, FAILS)

TARGET, COPIES, ATTACK = "target", "exact copies", "attack"  # kinds of finding


@dataclass(frozen=True)
class Finding:
    """One piece of evidence: a target (``value`` against ``target``), the exact copies
    (``value`` avatars; ``detail["shared"]``: how many by the originals holding the copied
    row, as ``PrivacyMetrics.exact_copies_shared``) or an
    attack (``value`` its risk; ``detail``: ``low``, ``high``). ``where``: for a database, the
    (table, scenario, reference table) it was measured in."""

    kind: str
    name: str
    passed: bool
    decisive: bool = False
    value: float | None = None
    target: Target | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    where: tuple[str, str, str] | None = None

    @property
    def margin(self) -> float | None:
        """A target's margin: how far on the good side of its threshold (negative: missed)."""
        return None if self.target is None else self.target.margin(self.value)


@dataclass(frozen=True)
class ReleaseVerdict:
    """``answer`` (one of ``ANSWERS``) and every ``finding`` behind it; ``attacks_measured``:
    whether attack risks were measured (they need a holdout; None: a database, which has no
    attacks)."""

    answer: str
    findings: tuple[Finding, ...]
    attacks_measured: bool | None

    @property
    def reasons(self) -> list[Finding]:
        """What decides the answer: the findings that fail, else the decisive ones (with
        their margins)."""
        failed = [f for f in self.findings if not f.passed]
        return failed or [f for f in self.findings if f.decisive]

    @property
    def unique_copies(self) -> int:
        """Avatars identical to an original row that one original alone holds, over every
        finding of exact copies."""
        return sum(f.detail["shared"].get(1, 0) for f in self.findings if f.kind == COPIES)

    def lines(self, language: str = "en") -> list[str]:
        """The verdict in sentences: the answer, then one line per reason."""
        from ..report.language import Translator
        from ..report.verdict import verdict_lines

        return verdict_lines(self, Translator(language))

    def __str__(self) -> str:
        return "\n".join(self.lines())


def release_verdict(privacy: Any, attacks: Any = None) -> ReleaseVerdict:
    """The verdict on a release from its privacy metrics (a ``PrivacyMetrics``, or a
    database's scenario metrics, ``DatabaseAvatarizationResult.privacy_metrics()``) and,
    given a holdout, its ``AttackMetrics``. See the module docstring."""
    if isinstance(privacy, pd.DataFrame):
        raise AvatarError("release_verdict judges a release's PrivacyMetrics, not a table of "
                          "per-batch metrics: pass result.privacy_metrics()")
    entries = [(None, privacy)] if isinstance(privacy, PrivacyMetrics) else [
        ((entry.table, entry.scenario, entry.reference), entry.metrics) for entry in privacy]
    if not entries:
        raise AvatarError("release_verdict needs privacy metrics: these scenarios are empty "
                          "(a database without an individual-level table has none)")
    findings = []
    for where, metrics in entries:
        findings += _target_findings(metrics, where)
        copies = metrics.exact_copies
        if copies is not None:
            findings.append(Finding(COPIES, "exact_copies", copies == 0, value=copies,
                                    detail={"shared": metrics.exact_copies_shared},
                                    where=where))
    if attacks is not None:
        findings += [Finding(ATTACK, result.label, False, value=result.risk,
                             detail={"low": result.risk_low, "high": result.risk_high})
                     for result in attacks.measurable_risks]
    if any(f.decisive and not f.passed for f in findings):
        answer = FAILS
    elif all(f.passed for f in findings):
        answer = MEETS
    else:
        answer = EXCEPTIONS
    measured = None if entries[0][0] is not None else attacks is not None
    return ReleaseVerdict(answer, tuple(findings), measured)


def _target_findings(metrics: Any, where: tuple[str, str, str] | None) -> list[Finding]:
    """A finding per judged target that was measured (a missing or non-finite value was
    not); direct matches name their worst column."""
    findings = []
    for name, target in PRIVACY_TARGETS.items():
        value = getattr(metrics, name)
        if target.passed(value) is None:
            continue
        detail = ({"column": metrics.worst_direct_match_column}
                  if name == "column_direct_match_protection" else {})
        findings.append(Finding(TARGET, name, bool(target.passed(value)),
                                CATALOGUE[name].summary, value, target, detail, where))
    return findings
