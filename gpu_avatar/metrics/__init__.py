"""Metrics: privacy (how well the avatars protect the individuals) and signal (how much of the
statistics they keep), with the exact distance-rank reductions the privacy metrics need."""

from .holdout import split_holdout
from .privacy import PrivacyMetrics, privacy_metrics
from .signal import SignalMetrics, signal_metrics

__all__ = ["PrivacyMetrics", "SignalMetrics", "privacy_metrics", "signal_metrics",
           "split_holdout"]
