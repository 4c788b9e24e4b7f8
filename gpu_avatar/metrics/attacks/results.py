"""What the attacks return: one ``AttackResult`` per attack (counts, success rates, the risk
with its interval, whether it learns from the release) and ``AttackMetrics``, the release's
results with its headline."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from ...errors import AvatarError
from .risk import bounded, residual_risk, success_rate


@dataclass(frozen=True)
class AttackResult:
    """One attack: its counts, success rates and the risk with its confidence interval."""

    attack: str
    secret: Any
    n_attacks: int
    n_success: float
    n_control_attacks: int
    n_control_success: float
    n_baseline_success: float
    attack_rate: float
    control_rate: float
    baseline_rate: float
    risk: float
    risk_low: float
    risk_high: float
    confidence_level: float

    @property
    def measurable(self) -> bool:
        """Whether the risk's confidence interval starts above 0."""
        return self.risk_low > 0.0

    @property
    def better_than_baseline(self) -> bool:
        """Whether the attack beats a random guess (anonymeter: otherwise not to be trusted)."""
        return self.attack_rate > self.baseline_rate

    @property
    def learns_from_release(self) -> bool:
        """Whether the attack learns from the release: it beats a random guess, and succeeds
        on the originals more often than on the holdout beyond chance (one-sided Fisher exact
        test at 1 - ``confidence_level``). The risk's formula cannot tell this near a success
        rate of 1, where it magnifies chance differences into a "measurable" risk."""
        from scipy.stats import fisher_exact

        if not self.better_than_baseline:
            return False
        success, control = round(self.n_success), round(self.n_control_success)
        table = [[success, self.n_attacks - success],
                 [control, self.n_control_attacks - control]]
        return bool(fisher_exact(table, alternative="greater").pvalue
                    < 1.0 - self.confidence_level)

    @property
    def label(self) -> str:
        """The attack, with its secret for an inference: ``inference (age)``."""
        return self.attack if self.secret is None else f"{self.attack} ({self.secret})"


@dataclass
class AttackMetrics:
    """The attack-based risks of a release (see ``gpu_avatar.metrics.attacks``)."""

    results: list[AttackResult]
    seconds: float | None = field(default=None, compare=False)  # to run the attacks

    @property
    def measurable_risks(self) -> list[AttackResult]:
        """The measurable risks of the attacks that learn from the release."""
        return [r for r in self.results if r.measurable and r.learns_from_release]

    @property
    def learning_nothing(self) -> list[AttackResult]:
        """The attacks that do no better than a random guess, or than on the holdout: they
        learn nothing from the release, whatever their risk."""
        return [r for r in self.results if not r.learns_from_release]

    def highest(self) -> AttackResult | None:
        """The headline: the highest risk of an attack that learns from the release (None
        when none does)."""
        return max((r for r in self.results if r.learns_from_release), key=lambda r: r.risk,
                   default=None)

    def to_frame(self) -> pd.DataFrame:
        """One row per attack: counts, rates, risk and interval, baseline risk, flags."""
        rows = []
        for result in self.results:
            row = asdict(result)
            row["measurable_risk"] = result.measurable
            row["better_than_baseline"] = result.better_than_baseline
            rows.append(row)
        return pd.DataFrame(rows)

    def risk(self, attack: str, secret: Any = None) -> AttackResult:
        """The result of ``attack`` (and ``secret`` for an inference)."""
        for result in self.results:
            if result.attack == attack and (secret is None or result.secret == secret):
                return result
        raise AvatarError(f"no {attack!r} attack{'' if secret is None else f' on {secret!r}'}")


def attack_result(attack: str, secret: Any, n: int, success: float, n_control: int,
                  control: float, baseline: float, confidence: float) -> AttackResult:
    """The result of ``success`` of ``n`` attacks on the originals, ``control`` of
    ``n_control`` on the holdout and ``baseline`` of ``n`` random guesses."""
    attack_rate = success_rate(n, success, confidence)
    control_rate = success_rate(n_control, control, confidence)
    baseline_rate = success_rate(n, baseline, confidence)
    risk, low, high = bounded(*residual_risk(attack_rate, control_rate))
    return AttackResult(
        attack=attack, secret=secret, n_attacks=n, n_success=success,
        n_control_attacks=n_control, n_control_success=control, n_baseline_success=baseline,
        attack_rate=attack_rate[0], control_rate=control_rate[0],
        baseline_rate=baseline_rate[0], risk=risk, risk_low=low, risk_high=high,
        confidence_level=confidence,
    )  # fmt: skip
