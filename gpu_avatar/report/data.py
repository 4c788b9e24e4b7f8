"""What a report shows besides the plots: each metric's definition in words, the scenario
columns of a database, and the metrics of a part (computed when not given; each carries the
seconds it took)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..metrics import PrivacyMetrics, SignalMetrics, privacy_metrics, signal_metrics
from ..progress import Steps
from ..relational.scenarios import (
    STANDALONE,
    TIME_SERIES_ENRICHED,
    TO_BOTTOM_ID_PROPAGATED,
    TO_BOTTOM_INFORMATION_PROPAGATED,
    TO_TOP_ENRICHED,
)

PRIVACY_DESCRIPTIONS = {
    "hidden_rate": "% of originals whose closest avatar is not their own",
    "local_cloaking": "median number of avatars at least as close to an original as its own",
    "distance_to_closest": "median distance of an avatar to its closest original",
    "closest_distances_ratio": "median ratio closest / second-closest original, per avatar",
    "closer_to_training_rate": "% of avatars closer to an original than to any holdout row "
    "(needs a holdout)",
    "closest_rate": "% of avatars not both very close to one original and far from the rest",
    "row_direct_match_protection": "% of originals with no identical avatar row",
    "exact_copies": "number of avatars identical to an original row",
    "column_direct_match_protection": "worst variable: % of originals whose unique value is "
    "not copied into the avatars",
    "categorical_hidden_rate": "% of originals not singled out on the chosen categorical "
    "variables (needs categorical_hidden_rate_variables)",
    "correlation_protection_rate": "% of originals protected from linkage on the known "
    "variables (needs known_variables)",
    "inference_continuous": "error of guessing the target through the closest avatar on the "
    "known variables / error of a marginal guess (1: the link teaches nothing)",
    "inference_categorical": "accuracy of guessing the target through the closest avatar on "
    "the known variables (needs known_variables and a categorical target)",
}
SIGNAL_DESCRIPTIONS = {
    "hellinger_mean": "mean over variables of the Hellinger distance between original and "
    "avatar distributions (0: identical, 1: disjoint)",
    "hellinger_std": "standard deviation of the per-variable Hellinger distances",
    "correlation_difference_ratio": "mean |Pearson correlation difference| over pairs of "
    "continuous variables, in %",
}
ATTACK_DESCRIPTIONS = {
    "singling_out_univariate": "queries on one column that match exactly one avatar (a value "
    "seen once, a minimum, a maximum); success: the query matches exactly one original",
    "singling_out_multivariate": "queries combining several columns of an avatar; success: "
    "the query matches exactly one original",
    "linkability": "the attacker holds two sets of columns of the same people and links them "
    "through their nearest avatars; success: both halves lead to the same avatar",
    "inference": "the attacker knows every other column and reads the secret off the nearest "
    "avatar; success: the right category, or a number within {tolerance} % of the guess",
}
# each scenario of a database (their names are translated too)
SCENARIO_DESCRIPTIONS = {
    STANDALONE: "The table alone: each original row against its own avatar.",
    TO_TOP_ENRICHED: "Each row with a summary of its children in the reference table (their "
    "count, the mean of each number, the share of each category), against its avatar with "
    "its avatar children.",
    TO_BOTTOM_ID_PROPAGATED: "The rows of a child table with their parent's columns copied "
    "through the foreign key (a person's own rows, or their children's), against the avatar "
    "rows joined through the avatar links.",
    TO_BOTTOM_INFORMATION_PROPAGATED: "Each child row with its parent's columns copied "
    "through the foreign key: whether the avatars keep the correlations across the link.",
    TIME_SERIES_ENRICHED: "Each row with features of its time series in the reference table "
    "(length, start, span, curve shape, missing shares), against its avatar with its avatar "
    "series.",
}
PRIVACY_SCENARIO_COLUMNS = [
    "hidden_rate", "local_cloaking", "distance_to_closest", "closest_distances_ratio",
    "closest_rate", "row_direct_match_protection", "exact_copies",
    "column_direct_match_protection",
]
SIGNAL_SCENARIO_COLUMNS = ["hellinger_mean", "hellinger_std", "correlation_difference_ratio"]


def table_metrics(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    avatars: pd.DataFrame,
    steps: Steps,
    *,
    name: str,
    types: Mapping[Any, str],
    ncp: int,
    backend: Any,
    privacy: PrivacyMetrics | None,
    signal: SignalMetrics | None,
    individual_level: bool,
    privacy_options: Mapping[str, Any] | None,
) -> tuple[PrivacyMetrics | None, SignalMetrics]:
    """A table part's privacy (individual-level tables only) and signal metrics, computed when
    not given."""
    if privacy is None and individual_level:
        with steps.step(f"{name}: privacy metrics"):
            privacy = privacy_metrics(original, unshuffled_avatars, ncp=ncp, types=dict(types),
                                      backend=backend, **dict(privacy_options or {}))  # fmt: skip
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
