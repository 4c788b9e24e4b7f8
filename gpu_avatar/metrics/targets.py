"""Every metric's target and the direction in which it gets worse, written once.

``Target(better="higher", threshold=90)`` reads "the metric must exceed 90"; a target without a
threshold is reported only, its direction still deciding which of several values is the worst
(over batches, over database scenarios). A frame of metrics (``metrics_frame``) has one row per
metric: value, target, passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Target:
    """A metric's target: ``better`` ("higher" or "lower") and a ``threshold`` it must pass
    (None: reported without a target)."""

    better: str
    threshold: float | None = None

    def text(self, number=lambda value: f"{value:g}", report: str = "report") -> str:
        """``"> 90"``, ``"< 0.1"`` or ``report``; ``number`` writes the threshold."""
        if self.threshold is None:
            return report
        return f"{'>' if self.better == HIGHER else '<'} {number(self.threshold)}"

    def passed(self, value: Any) -> bool | None:
        """Whether ``value`` passes the target; None without a target or a value."""
        if self.threshold is None or not _is_number(value):
            return None
        return bool(value > self.threshold if self.better == HIGHER else value < self.threshold)

    def worst(self, values: Iterable[Any]) -> float | None:
        """The worst of ``values`` (missing ones left out; None when none remains)."""
        numbers = [float(v) for v in values if _is_number(v)]
        if not numbers:
            return None
        return min(numbers) if self.better == HIGHER else max(numbers)

    def is_worse(self, value: Any, than: Any) -> bool:
        """Whether ``value`` is worse than ``than`` (a missing value is never worse)."""
        if not _is_number(value):
            return False
        if not _is_number(than):
            return True
        return value < than if self.better == HIGHER else value > than


def _is_number(value: Any) -> bool:
    return value is not None and bool(np.isfinite(value))


PRIVACY_TARGETS = {
    "hidden_rate": Target(HIGHER, 90),
    "local_cloaking": Target(HIGHER, 5),
    # in the table's own scale: reported beside its baselines (privacy.py), not judged
    "distance_to_closest": Target(HIGHER),
    "closest_distances_ratio": Target(HIGHER, 0.3),
    "closest_rate": Target(HIGHER, 90),
    "row_direct_match_protection": Target(HIGHER, 90),
    # avatars identical to an original row (privacy.py: by how many originals share it)
    "exact_copies": Target(LOWER),
    "column_direct_match_protection": Target(HIGHER, 50),
    "categorical_hidden_rate": Target(HIGHER, 90),
    "correlation_protection_rate": Target(HIGHER, 90),
    # given a holdout: % of avatars closer to an original than to any holdout row
    "closer_to_training_rate": Target(LOWER),
    # the attack's error relative to a marginal guess: the lower, the more the link teaches
    "inference_continuous": Target(HIGHER),
    # the attack's accuracy: the higher, the more the link teaches
    "inference_categorical": Target(LOWER),
}
SIGNAL_TARGETS = {
    "hellinger_mean": Target(LOWER, 0.1),
    "hellinger_std": Target(LOWER),
    "correlation_difference_ratio": Target(LOWER, 10),
}
TARGETS = {**PRIVACY_TARGETS, **SIGNAL_TARGETS}
# A cell of the database summary matrix passes when both of these pass.
SUMMARY_METRICS = ("hidden_rate", "local_cloaking")


def metrics_frame(values: Mapping[str, Any], targets: Mapping[str, Target]) -> pd.DataFrame:
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


def mean_and_worst(per_part: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """For metrics measured on several parts (batches): each metric's mean and worst."""
    names = list(per_part[0]) if per_part else []
    mean, worst = {}, {}
    for name in names:
        values = [part.get(name) for part in per_part if _is_number(part.get(name))]
        mean[name] = float(np.mean(values)) if values else None
        worst[name] = TARGETS[name].worst(values)
    return {"mean": mean, "worst": worst}
