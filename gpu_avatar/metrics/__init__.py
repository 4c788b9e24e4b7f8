"""Metrics: privacy (how well the avatars protect the individuals) and signal (how much of the
statistics they keep), with the exact distance-rank reductions the privacy metrics need, and
attack-based risks against a holdout (singling out, linkability, inference)."""

from .attacks import AttackMetrics, AttackResult, attack_metrics
from .holdout import split_holdout
from .privacy import PrivacyMetrics, privacy_metrics
from .signal import SignalMetrics, signal_metrics

__all__ = [
    "AttackMetrics", "AttackResult", "PrivacyMetrics", "SignalMetrics", "attack_metrics",
    "privacy_metrics", "signal_metrics", "split_holdout",
]  # fmt: skip
