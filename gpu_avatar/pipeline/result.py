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
from ..metrics.catalogue import mean_and_worst
from ..parameters import AvatarParameters, MetricOptions, metric_options
from ..rules import RuleReport, rules_frame


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
    kind was declared (``encoding.identifying``). ``grouped_modalities``: {column: {value:
    its group's label}} for the rare modalities grouped (``encoding/rare.py``); a grouped value
    is never released. ``rules``: how each rule given was held (``rules_table``), empty
    without rules. ``unique_copies_redrawn``: the avatars drawn again because they copied a
    row one original alone holds (``unique_copies="redraw"``; None under "keep"),
    ``unique_copies_stayed``: those still copies after the attempts (``pipeline/copies.py``).
    """

    sensitive_unshuffled_avatars: pd.DataFrame
    release_order: np.ndarray = field(repr=False)  # released row r = unshuffled row order[r]
    original: pd.DataFrame = field(repr=False)
    parameters: AvatarParameters
    projection_kind: str
    timings: dict[str, float] = field(default_factory=dict)
    batches: list[np.ndarray] | None = field(default=None, repr=False)  # row positions, if batched
    knowingly_released: list[IdentifyingColumn] = field(default_factory=list)
    grouped_modalities: dict[Any, dict] = field(default_factory=dict)
    rules: list[RuleReport] = field(default_factory=list)
    unique_copies_redrawn: int | None = None
    unique_copies_stayed: int | None = None

    def unique_copies_text(self) -> str:
        """The avatars redrawn as copies of unique rows, and those still copies, in words
        (empty under ``unique_copies="keep"`` and when none was redrawn)."""
        if not self.unique_copies_redrawn:
            return ""
        return (f"{self.unique_copies_redrawn} copies of a unique row redrawn, "
                f"{self.unique_copies_stayed} left")

    @property
    def seed(self) -> int:
        """The entropy of the run's SeedSequence: pass it back as ``seed=`` to reproduce it."""
        return self.parameters.seed

    @functools.cached_property
    def avatars(self) -> pd.DataFrame:
        return self.sensitive_unshuffled_avatars.iloc[self.release_order].reset_index(drop=True)

    def rules_table(self, language: str = "en") -> pd.DataFrame:
        """Per rule and column it writes: how it was held, the rows repaired, the
        originals' exceptions kept, Hellinger before and after the repairs
        (``gpu_avatar.rules.rules_frame``)."""
        return rules_frame(self.rules, language)

    def metric_options(self, options: Any = None, **settings: Any) -> MetricOptions:
        """``options`` (a ``MetricOptions`` or a mapping of its names) with ``settings``
        applied; what they leave to the run: its ``ncp``, and no row-alignment test, as its
        unshuffled avatars are aligned by construction."""
        return metric_options(options, **settings).with_defaults(
            ncp=self.parameters.ncp, check_alignment=False)

    def _measured_with(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The run's ``types`` and backend, overridden by ``overrides``."""
        run = self.parameters
        return {"types": dict(run.types), "backend": run.backend, **overrides}

    def privacy_metrics(self, options: Any = None, **overrides: Any) -> PrivacyMetrics:
        """``ga.privacy_metrics`` on this run's originals and unshuffled avatars, with
        ``metric_options(options)`` and the run's ``types`` and backend unless overridden
        (metric options may be given as keywords too)."""
        options, overrides = self._split(options, overrides)
        avatars = to_pandas(self.sensitive_unshuffled_avatars)
        return privacy_metrics(self.original, avatars, options, **self._measured_with(overrides))

    def _split(self, options: Any, overrides: dict[str, Any]) -> tuple[MetricOptions, dict]:
        names = MetricOptions.names()
        settings = {key: overrides.pop(key) for key in list(overrides) if key in names}
        return self.metric_options(options, **settings), overrides

    def signal_metrics(self, **overrides: Any) -> SignalMetrics:
        """``ga.signal_metrics`` between this run's originals and released avatars (the
        shares of grouped modalities compared as grouped)."""
        settings = {"groups": self.grouped_modalities, **self._measured_with(overrides)}
        return signal_metrics(self.original, to_pandas(self.avatars), **settings)

    def batch_privacy_metrics(self, options: Any = None, **overrides: Any) -> pd.DataFrame:
        """Privacy metrics of each batch (originals of the batch against their avatars), one
        row per batch, then their ``mean`` and the ``worst`` (each metric in its own
        direction, ``metrics.catalogue``). A run without batches has a single batch."""
        batches = self.batches or [np.arange(len(self.original))]
        options, overrides = self._split(options, overrides)
        settings = self._measured_with(overrides)
        avatars = to_pandas(self.sensitive_unshuffled_avatars)
        rows = {}
        for b, positions in enumerate(batches):
            metrics = privacy_metrics(
                self.original.iloc[positions], avatars.iloc[positions], options, **settings
            )
            rows[f"batch {b}"] = metrics.to_frame()["value"].to_dict()
        rows.update(mean_and_worst(list(rows.values())))
        return pd.DataFrame(rows).T.astype(float)
