"""What ``avatarize_database`` returns: the avatar tables, how each table and each link was
rebuilt, and what the metrics, the report and ``to_sql`` need of the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.identifying import IdentifyingColumn
from ..parameters import AvatarParameters
from ..planning.model import TREATED_WORDS
from ..rules import RuleReport
from .schema import Database
from .time_series import SeriesModel


@dataclass
class LinkReport:
    """How one link was rebuilt and how faithful it is."""

    parent: str
    child: str
    foreign_key: str
    method: str
    cardinality_similarity: float  # 1 - KS statistic of children per parent, zeros included
    referential_integrity: float  # % of avatar foreign keys that exist among avatar parents
    total_cost: float | None = None
    n_blocks: int = 1
    cost_ratio_to_exact: float | None = None
    # % of parents with each number of children (rows: 0, 1, ...; columns original, avatars)
    children_per_parent: pd.DataFrame | None = field(default=None, repr=False)

    def children_line(self, shown: int = 8) -> str | None:
        """The distribution of children per parent, original -> avatars, in one line (counts
        from ``shown`` up grouped); None for a time-series link (its curves are rebuilt)."""
        table = self.children_per_parent
        if table is None:
            return None
        head = table.iloc[:shown]
        parts = [f"{count}: {row.original:.1f} -> {row.avatars:.1f}"
                 for count, row in zip(head.index, head.itertuples(), strict=True)]
        if len(table) > shown:
            rest = table.iloc[shown:].sum()
            parts.append(f"{shown}+: {rest.original:.1f} -> {rest.avatars:.1f}")
        return "children per parent, % of parents (original -> avatars): " + ", ".join(parts)


@dataclass
class TableRun:
    """How one table was avatarized: its parameters (seed: the table's entropy), step timings,
    batches and its columns' grouped rare modalities ({column: {value: group}}). Its enriched
    originals and avatars are not kept: they are as long as the table and only the run needs
    them."""

    parameters: AvatarParameters
    projection_kind: str
    timings: dict[str, float] = field(default_factory=dict)
    batches: list[np.ndarray] | None = field(default=None, repr=False)  # row positions
    grouped_modalities: dict[Any, dict] = field(default_factory=dict)
    rules: list[RuleReport] = field(default_factory=list)  # how each of its rules was held


@dataclass
class DatabaseAvatarizationResult:
    """Avatar tables of a database, with what the metrics need.

    ``tables`` is the release (rows shuffled, fresh keys); ``sensitive_unshuffled_tables`` keep
    row i = avatar of original row i, for metrics only.
    """

    tables: dict[str, pd.DataFrame]
    sensitive_unshuffled_tables: dict[str, pd.DataFrame]
    originals: dict[str, pd.DataFrame] = field(repr=False)
    database: Database = field(repr=False)
    links: list[LinkReport]
    table_results: dict[str, TableRun] = field(repr=False)
    original_parent_rows: dict[tuple[str, str], np.ndarray] = field(repr=False)
    avatar_parent_rows: dict[tuple[str, str], np.ndarray] = field(repr=False)
    parameters: AvatarParameters  # the run's, for every table (seed: the run's entropy)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # per table
    series_models: dict[tuple[str, str], SeriesModel] = field(default_factory=dict, repr=False)
    # columns that could identify a person, released because their kind was declared
    knowingly_released: list[IdentifyingColumn] = field(default_factory=list)
    # tables set apart (``relational.treatments``): their treatment, and what is released
    # of those not left out
    treatments: dict[str, str] = field(default_factory=dict)
    treated: dict[str, pd.DataFrame] = field(default_factory=dict)

    def treatments_line(self) -> str | None:
        """The summary's and the report's line for the tables not anonymized."""
        if not self.treatments:
            return None
        return "not anonymized, as the plan says: " + ", ".join(
            f"{name} {TREATED_WORDS[treatment]}" for name, treatment in self.treatments.items())

    def privacy_metrics(self, options: Any = None, **settings: Any):
        """Privacy per (table, scenario, reference table), with metric ``options`` (a
        ``MetricOptions``; its names as keywords too); see ``scenarios``."""
        from .scenarios import database_privacy_metrics

        return database_privacy_metrics(self, options, **settings)

    def signal_metrics(self, **options: Any):
        """Signal per (table, scenario, reference table); see ``scenarios``."""
        from .scenarios import database_signal_metrics

        return database_signal_metrics(self, **options)

    def time_series_metrics(self) -> pd.DataFrame:
        """Signal of every time-series link per measurement variable; see ``scenarios``."""
        from .scenarios import time_series_signal

        return time_series_signal(self)[0]

    def metrics_summary(self, privacy=None) -> pd.DataFrame:
        """Rows: individual-level tables; columns: tables; cells: the worst scenario."""
        from .scenarios import metrics_summary

        return metrics_summary(self, privacy)

    def to_sql(
        self, url: Any, schema: str | None = None, if_exists: str = "fail", **options: Any
    ) -> dict[str, int]:
        """Write the avatar tables (``tables``) to the database at ``url`` (and ``schema``):
        the same column types, primary keys, NOT NULL and foreign key constraints, parents
        first, in one transaction (a failed write leaves nothing). A target that already holds
        one of the tables is refused unless ``if_exists="replace"``. Returns rows per table.

        ``options``: ``chunk_rows`` (rows sent at a time, default ``sql.WRITE_CHUNK_ROWS``) and
        ``progress``, keywords only. See ``gpu_avatar.sql.write``."""
        from ..sql.write import write_database

        return write_database(self, url, schema=schema, if_exists=if_exists, **options)
