"""The result of avatarizing one table, with its metrics."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import to_pandas
from ..encoding.identifying import IdentifyingColumn
from ..metrics import PrivacyMetrics, SignalMetrics, privacy_metrics, signal_metrics
from ..metrics.targets import mean_and_worst
from ..parameters import AvatarParameters


@dataclass
class AvatarizationResult:
    """Avatars of one table, with what is needed to evaluate them.

    ``avatars`` is the release: shuffled, fresh identifiers, same columns and dtypes as the
    input (built on first access from the unshuffled avatars and ``release_order``, so a
    caller that only needs the unshuffled ones, as the multi-table pipeline, never holds both).
    ``sensitive_unshuffled_avatars`` keeps row i = avatar of input row i (same index as the
    input) for the privacy metrics only: releasing it would link avatars to people.
    ``parameters``: the run's, ``ncp`` as used (at most the projection's axes), ``seed`` the
    entropy that reproduces the run (also ``seed``), ``backend`` the one that ran.
    ``knowingly_released``: columns that could identify a person, released because their
    kind was declared (``encoding.identifying``).
    """

    sensitive_unshuffled_avatars: pd.DataFrame
    release_order: np.ndarray = field(repr=False)  # released row r = unshuffled row order[r]
    original: pd.DataFrame = field(repr=False)
    parameters: AvatarParameters
    projection_kind: str
    timings: dict[str, float] = field(default_factory=dict)
    batches: list[np.ndarray] | None = field(default=None, repr=False)  # row positions, if batched
    knowingly_released: list[IdentifyingColumn] = field(default_factory=list)

    @property
    def seed(self) -> int:
        """The entropy of the run's SeedSequence: pass it back as ``seed=`` to reproduce it."""
        return self.parameters.seed

    @functools.cached_property
    def avatars(self) -> pd.DataFrame:
        return self.sensitive_unshuffled_avatars.iloc[self.release_order].reset_index(drop=True)

    def _metric_settings(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The run's ``ncp``, ``types`` and backend, overridden by ``overrides``."""
        run = self.parameters
        return {"ncp": run.ncp, "types": dict(run.types), "backend": run.backend, **overrides}

    def _privacy_settings(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """``_metric_settings`` without the row-alignment test: this run's unshuffled avatars
        are aligned by construction."""
        return {"check_alignment": False, **self._metric_settings(overrides)}

    def privacy_metrics(self, **overrides: Any) -> PrivacyMetrics:
        """``ga.privacy_metrics`` on this run's originals and unshuffled avatars, with the
        run's ``ncp``, ``types`` and backend unless overridden."""
        avatars = to_pandas(self.sensitive_unshuffled_avatars)
        return privacy_metrics(self.original, avatars, **self._privacy_settings(overrides))

    def signal_metrics(self, **overrides: Any) -> SignalMetrics:
        """``ga.signal_metrics`` between this run's originals and released avatars."""
        settings = self._metric_settings(overrides)
        settings.pop("ncp")
        return signal_metrics(self.original, to_pandas(self.avatars), **settings)

    def batch_privacy_metrics(self, **overrides: Any) -> pd.DataFrame:
        """Privacy metrics of each batch (originals of the batch against their avatars), one
        row per batch, then their ``mean`` and the ``worst`` (each metric in its own
        direction, ``metrics.targets``). A run without batches has a single batch."""
        batches = self.batches or [np.arange(len(self.original))]
        settings = self._privacy_settings(overrides)
        avatars = to_pandas(self.sensitive_unshuffled_avatars)
        rows = {}
        for b, positions in enumerate(batches):
            metrics = privacy_metrics(
                self.original.iloc[positions], avatars.iloc[positions], **settings
            )
            rows[f"batch {b}"] = metrics.to_frame()["value"].to_dict()
        rows.update(mean_and_worst(list(rows.values())))
        return pd.DataFrame(rows).T.astype(float)
