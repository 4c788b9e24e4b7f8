"""What a report shows besides the plots: the scenario columns of a database (from the metric
catalogue, which also holds each metric's meaning) and the metrics of a part (computed when not
given; each carries the seconds it took)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..metrics import PrivacyMetrics, SignalMetrics, privacy_metrics, signal_metrics
from ..metrics.catalogue import PRIVACY, SIGNAL, scenario_metrics
from ..parameters import MetricOptions
from ..progress import Steps

PRIVACY_SCENARIO_COLUMNS = scenario_metrics(PRIVACY)
SIGNAL_SCENARIO_COLUMNS = scenario_metrics(SIGNAL)


def table_metrics(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    avatars: pd.DataFrame,
    steps: Steps,
    *,
    name: str,
    types: Mapping[Any, str],
    backend: Any,
    privacy: PrivacyMetrics | None,
    signal: SignalMetrics | None,
    individual_level: bool,
    options: MetricOptions,
) -> tuple[PrivacyMetrics | None, SignalMetrics]:
    """A table part's privacy (individual-level tables only) and signal metrics, computed when
    not given."""
    if privacy is None and individual_level:
        with steps.step(f"{name}: privacy metrics"):
            privacy = privacy_metrics(original, unshuffled_avatars, options, types=dict(types),
                                      backend=backend)
    if signal is None:
        with steps.step(f"{name}: signal metrics"):
            signal = signal_metrics(original, avatars, types=dict(types))
    return privacy, signal


def database_metrics(result: Any, steps: Steps, name: str, privacy: Any, signal: Any):
    """A database part's privacy and signal scenarios, computed when not given."""
    if privacy is None:
        with steps.step(f"{name}: privacy scenarios"):
            privacy = result.privacy_metrics()
    if signal is None:
        with steps.step(f"{name}: signal scenarios"):
            signal = result.signal_metrics()
    return privacy, signal
