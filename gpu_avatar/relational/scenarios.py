"""Metrics across tables (docs/spec/multitable.md, section 5).

Every scenario builds an ORIGINAL table and its AVATAR counterpart the same way (originals with
the original links, avatars with the avatar links; row i of the original matched with its own
avatar row) and applies the single-table metrics.

Privacy, reported for an individual-level table I against a reference table:
- ``standalone`` (I, I): I against its avatar.
- ``to_top_enriched`` (I, C) for each child table C of I: I plus aggregates of its children
  in C (``C.count``; ``C.mean(x)`` of each continuous column; ``C.share(x=v)`` of each modality
  of each categorical column; zeros for a row without children).
- ``to_bottom_id_propagated``: a table T enriched with the columns of a parent P broadcast
  through the foreign key; reported as (T, P) when T is individual-level, otherwise as (I, T)
  for every individual-level ancestor I of T (the rows are I's children).
- ``time_series_enriched``: for each time-series link P -> C, P plus the features of its
  curves in C (length, start, span, scores on the originals' FPCA, missing shares), the
  avatars' from their released curves projected the same way; reported as (P, C) when P is
  individual-level, otherwise as (I, C) for every individual-level ancestor I of P (P's rows
  are I's children). ``to_bottom_id_propagated`` does not apply to a time-series table: its
  rows are rebuilt, not paired with the originals'.
Signal: ``standalone`` for every table; ``to_top_enriched`` (parent + aggregated children,
Hellinger) and ``to_bottom_information_propagated`` (child + broadcast parent columns,
correlation difference) for every link; per time-series variable, ``time_series_signal``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..backend import resolve_backend
from ..encoding import CATEGORICAL, CONTINUOUS, TableEncoder
from ..metrics.catalogue import (
    PRIVACY_TARGETS,
    STANDALONE,
    SUMMARY_METRICS,
    TIME_SERIES_ENRICHED,
    TO_BOTTOM_ID_PROPAGATED,
    TO_BOTTOM_INFORMATION_PROPAGATED,
    TO_TOP_ENRICHED,
)
from ..metrics.privacy import PrivacyMetrics, privacy_metrics
from ..metrics.signal import HELLINGER_BINS, SignalMetrics, continuous_hellinger, signal_metrics
from ..metrics.timing import timed
from ..parameters import metric_options
from .linking import broadcast_name
from .results import DatabaseAvatarizationResult
from .schema import NO_PARENT, children_counts, take_parents


@dataclass
class ScenarioResult:
    """One scenario's metrics: for ``table`` (individual-level for privacy) against
    ``reference``; ``via`` names the parent whose columns were propagated, if any."""

    table: str
    scenario: str
    reference: str
    metrics: PrivacyMetrics | SignalMetrics
    via: str | None = None


class ScenarioMetrics(list):
    """A list of ``ScenarioResult`` with a tabular view; ``seconds``: to compute them."""

    seconds: float | None = None

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for entry in self:
            frame = entry.metrics.to_frame()
            row = {
                "table": entry.table,
                "scenario": entry.scenario,
                "reference": entry.reference,
                "via": entry.via,
            }
            row.update(frame["value"].to_dict())
            passed = frame["passed"].dropna()
            row["all_passed"] = bool(passed.all()) if len(passed) else None
            rows.append(row)
        return pd.DataFrame(rows)


def table_types(result: DatabaseAvatarizationResult, table: str) -> dict[Any, str]:
    """The declared kinds of the table's variables (its keys left out)."""
    variables = result.database.variables(table)
    return {c: k for c, k in result.database.tables[table].types.items() if c in variables}


def _ncp(result: DatabaseAvatarizationResult, table: str) -> int:
    return result.table_results[table].parameters.ncp


def table_variables(result: DatabaseAvatarizationResult, table: str, avatar: bool) -> pd.DataFrame:
    """The table's variables (its keys left out): originals, or unshuffled avatars."""
    source = result.sensitive_unshuffled_tables if avatar else result.originals
    return source[table][result.database.variables(table)].reset_index(drop=True)


def children_aggregates(
    children: pd.DataFrame,
    parent_rows: np.ndarray,
    n_parents: int,
    encoder: TableEncoder,
    prefix: str,
) -> pd.DataFrame:
    """Per parent: number of children, mean of continuous columns, share of each modality
    (children without a parent left out)."""
    with_parent = parent_rows != NO_PARENT
    children, parent_rows = children[with_parent], parent_rows[with_parent]
    counts = children_counts(parent_rows, n_parents).astype(np.float64)
    safe = np.where(counts > 0, counts, 1.0)
    out = {f"{prefix}.count": counts}
    for column in encoder.columns_:
        spec = encoder.specs_[column]
        if spec.kind == CONTINUOUS:
            values = encoder.continuous_values(spec, children[column])
            present = ~np.isnan(values)
            sums = np.bincount(parent_rows[present], weights=values[present], minlength=n_parents)
            observed = np.bincount(parent_rows[present], minlength=n_parents)
            out[f"{prefix}.mean({column})"] = np.where(
                observed > 0, sums / np.maximum(observed, 1), 0.0
            )
        elif spec.kind == CATEGORICAL:
            codes = encoder.categorical_codes(spec, children[column])
            for code, modality in enumerate(spec.modalities):
                hits = np.bincount(parent_rows[codes == code], minlength=n_parents)
                out[f"{prefix}.share({column}={modality})"] = hits / safe
    return pd.DataFrame(out)


def _top_enriched(result, parent: str, link) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    child = link.child
    child_original = table_variables(result, child, avatar=False)
    encoder = TableEncoder(table_types(result, child), missing_indicators=False).fit(child_original)
    key = (child, link.foreign_key)
    frames = []
    for avatar, rows in (
        (False, result.original_parent_rows[key]),
        (True, result.avatar_parent_rows[key]),
    ):
        own = table_variables(result, parent, avatar)
        aggregates = children_aggregates(
            table_variables(result, child, avatar), rows, len(own), encoder, child
        )
        frames.append(pd.concat([own, aggregates], axis=1))
    return frames[0], frames[1], table_types(result, parent)


def _bottom_propagated(result, link) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    key = (link.child, link.foreign_key)
    frames = []
    for avatar, rows in (
        (False, result.original_parent_rows[key]),
        (True, result.avatar_parent_rows[key]),
    ):
        parent = take_parents(table_variables(result, link.parent, avatar), rows)
        parent.columns = [broadcast_name(link.parent, c) for c in parent.columns]
        frames.append(pd.concat([table_variables(result, link.child, avatar), parent], axis=1))
    types = table_types(result, link.child)
    types.update(
        {broadcast_name(link.parent, c): k for c, k in table_types(result, link.parent).items()}
    )
    return frames[0], frames[1], types


def series_sides(result, link) -> tuple[Any, list[tuple[pd.DataFrame, Any, dict]]]:
    """(model, [(child table, its layout, each variable's curves on the grid)] for the
    originals and for the unshuffled avatars) of a time-series link."""
    key = (link.child, link.foreign_key)
    model = result.series_models[key]
    sides = []
    for avatar, source, rows in (
        (False, result.originals, result.original_parent_rows[key]),
        (True, result.sensitive_unshuffled_tables, result.avatar_parent_rows[key]),
    ):
        child = source[link.child]
        n_parents = len(table_variables(result, link.parent, avatar))
        sides.append((child, *model.curves(child, rows, n_parents)))
    return model, sides


def _series_enriched(result, link) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    model, sides = series_sides(result, link)
    backend = resolve_backend(result.parameters.backend)
    frames = [
        pd.concat([table_variables(result, link.parent, avatar),
                   model._features(child, series, curves, backend)], axis=1)
        for avatar, (child, series, curves) in zip((False, True), sides, strict=True)
    ]
    types = table_types(result, link.parent)
    types.update(dict.fromkeys(model.names(), CONTINUOUS))
    return frames[0], frames[1], types


def lag1_autocorrelation(lengths: np.ndarray, values: np.ndarray) -> float:
    """Pooled lag-1 autocorrelation of series (``values`` sorted by series then time, series
    of ``lengths`` points): sum over the pairs of consecutive points of a series, both
    observed, of the products of their deviations from their series' mean (of its observed
    values), over the sum of the squared deviations of the observed points of the series of
    two points or more."""
    series = np.repeat(np.arange(len(lengths)), lengths)
    observed = ~np.isnan(values)
    counts = np.bincount(series[observed], minlength=len(lengths))
    sums = np.bincount(series[observed], weights=values[observed], minlength=len(lengths))
    deviation = values - (sums / np.maximum(counts, 1))[series]
    same = series[1:] == series[:-1]
    products = (deviation[:-1] * deviation[1:])[same]
    squares = deviation[observed & (counts[series] > 1)] ** 2
    return float(np.nansum(products) / squares.sum()) if squares.sum() > 0 else 0.0


def mean_curve_distance(original: np.ndarray, avatar: np.ndarray) -> float:
    """Mean over the grid points of |avatar mean curve - original mean curve| / the
    originals' point-wise std (1 where it is 0); curves (individuals, grid points), a missing
    curve a row of NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a grid point with no curve
        spread = np.nanstd(original, axis=0)
        gap = np.abs(np.nanmean(avatar, axis=0) - np.nanmean(original, axis=0))
    return float(np.nanmean(gap / np.where(spread > 0, spread, 1.0)))


def time_series_signal(result: DatabaseAvatarizationResult) -> tuple[pd.DataFrame, dict]:
    """Per time-series link and measurement variable: ``hellinger`` (pooled values),
    ``mean_curve_distance`` (mean over the normalised time grid of |avatar mean curve -
    original mean curve| / the originals' point-wise std), ``autocorrelation_difference``
    (|lag-1 autocorrelation of the originals - of the avatars|) and ``length_ks`` (KS
    statistic between the series lengths, zeros included: 1 - the link's
    ``cardinality_similarity``); and, per (table, variable), the mean curves and point-wise
    stds on the grid (``"original mean"``, ``"original std"``, ``"avatar mean"``, ``"avatar
    std"``) and ``"series"``: per side (originals, avatars), its layout and values sorted as
    the layout."""
    reports = {(r.child, r.foreign_key): r for r in result.links}
    rows, curves = [], {}
    for link in result.database.links:
        if link.method != "time_series":
            continue
        model, sides = series_sides(result, link)
        length_ks = 1.0 - reports[(link.child, link.foreign_key)].cardinality_similarity
        for variable in model.variables:
            series = [(layout, child[variable].to_numpy(dtype=np.float64)[layout.order])
                      for child, layout, _ in sides]
            (_, values_o), (_, values_a) = series
            grids = [grid[variable] for _, _, grid in sides]
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a grid point with no curve
                shape = {f"{side} {what}": function(grid, axis=0)
                         for side, grid in zip(("original", "avatar"), grids, strict=True)
                         for what, function in (("mean", np.nanmean), ("std", np.nanstd))}
            curves[(link.child, variable)] = {**shape, "series": series}
            rows.append({
                "table": link.child, "variable": variable,
                "hellinger": continuous_hellinger(values_o, values_a, bins=HELLINGER_BINS),
                "mean_curve_distance": mean_curve_distance(*grids),
                "autocorrelation_difference": abs(
                    lag1_autocorrelation(series[0][0].lengths, values_o)
                    - lag1_autocorrelation(series[1][0].lengths, values_a)),
                "length_ks": length_ks,
            })
    return pd.DataFrame(rows), curves


def individual_ancestors(result: DatabaseAvatarizationResult, table: str) -> list[str]:
    """Individual-level tables above ``table`` (through any chain of parents)."""
    db = result.database
    found, stack = [], [link.parent for link in db.parents_of(table)]
    while stack:
        name = stack.pop(0)
        if name in found:
            continue
        if db.is_individual_level(name):
            found.append(name)
        stack.extend(link.parent for link in db.parents_of(name))
    return found


@timed
def database_privacy_metrics(
    result: DatabaseAvatarizationResult, options: Any = None, **settings: Any
) -> ScenarioMetrics:
    """Every privacy scenario, measured with ``metric_options(options, **settings)`` (e.g.
    ``engine``), each table's ``ncp`` unless given. The scenarios pair each row with its own
    avatar row by construction: no alignment test unless asked for."""
    db = result.database
    out = ScenarioMetrics()
    order = db.topological_order()
    options = metric_options(options, **settings)

    def measure(original, avatar, types, table):
        return privacy_metrics(
            original,
            avatar,
            options.with_defaults(ncp=_ncp(result, table), check_alignment=False),
            types=types,
            backend=result.parameters.backend,
        )

    for name in order:
        if not db.is_individual_level(name):
            continue
        if db.variables(name):  # a table of keys (and time series) alone: nothing standalone
            out.append(
                ScenarioResult(
                    name,
                    STANDALONE,
                    name,
                    measure(
                        table_variables(result, name, False),
                        table_variables(result, name, True),
                        table_types(result, name),
                        name,
                    ),
                )
            )
        for link in db.children_of(name):
            original, avatar, types = _top_enriched(result, name, link)
            out.append(
                ScenarioResult(
                    name, TO_TOP_ENRICHED, link.child, measure(original, avatar, types, name)
                )
            )
    for name in order:
        for link in db.parents_of(name):
            if link.method == "time_series":  # its rows are rebuilt, not paired with originals
                metrics = measure(*_series_enriched(result, link), link.parent)
                individual = db.is_individual_level(link.parent)
                for table in [link.parent] if individual else individual_ancestors(result, name):
                    out.append(ScenarioResult(table, TIME_SERIES_ENRICHED, name, metrics,
                                              via=None if individual else link.parent))
                continue
            original, avatar, types = _bottom_propagated(result, link)
            metrics = measure(original, avatar, types, name)
            if db.is_individual_level(name):
                out.append(
                    ScenarioResult(
                        name, TO_BOTTOM_ID_PROPAGATED, link.parent, metrics, via=link.parent
                    )
                )
            else:
                for ancestor in individual_ancestors(result, name):
                    out.append(
                        ScenarioResult(
                            ancestor, TO_BOTTOM_ID_PROPAGATED, name, metrics, via=link.parent
                        )
                    )
    return out


@timed
def database_signal_metrics(result: DatabaseAvatarizationResult, **options: Any) -> ScenarioMetrics:
    """Signal: standalone per table, enriched per link (``options`` go to ``signal_metrics``)."""
    db = result.database
    out = ScenarioMetrics()
    for name in db.topological_order():
        if not db.variables(name):  # a table of keys (and time series) alone
            continue
        out.append(
            ScenarioResult(
                name,
                STANDALONE,
                name,
                signal_metrics(
                    table_variables(result, name, False),
                    table_variables(result, name, True),
                    types=table_types(result, name),
                    **{"groups": result.table_results[name].grouped_modalities, **options},
                ),
            )
        )
    for link in db.links:
        original, avatar, types = _top_enriched(result, link.parent, link)
        out.append(
            ScenarioResult(
                link.parent,
                TO_TOP_ENRICHED,
                link.child,
                signal_metrics(original, avatar, types=types, **options),
            )
        )
        original, avatar, types = _bottom_propagated(result, link)
        out.append(
            ScenarioResult(
                link.child,
                TO_BOTTOM_INFORMATION_PROPAGATED,
                link.parent,
                signal_metrics(original, avatar, types=types, **options),
            )
        )
    return out


def metrics_summary(
    result: DatabaseAvatarizationResult, privacy: ScenarioMetrics | None = None
) -> pd.DataFrame:
    """The privacy summary matrix as numbers, one row per non-empty cell: an individual-level
    ``table`` against a ``reference`` table ((I, I): standalone), each summary metric's worst
    value over the cell's scenarios (hidden rate, median local cloaking), the ``scenario``
    with the worst hidden rate, and ``passed`` (every scenario of the cell passes: the
    release verdict's decisive targets). ``format_summary`` draws it as a matrix."""
    privacy = privacy if privacy is not None else database_privacy_metrics(result)
    cells: dict[tuple[str, str], list[ScenarioResult]] = {}
    for entry in privacy:
        cells.setdefault((entry.table, entry.reference), []).append(entry)
    deciding = PRIVACY_TARGETS[SUMMARY_METRICS[0]]
    rows = []
    for (table, reference), entries in cells.items():
        worst_entry = entries[0]
        for entry in entries[1:]:
            if deciding.is_worse(getattr(entry.metrics, SUMMARY_METRICS[0]),
                                 getattr(worst_entry.metrics, SUMMARY_METRICS[0])):
                worst_entry = entry
        values = {name: PRIVACY_TARGETS[name].worst(getattr(e.metrics, name) for e in entries)
                  for name in SUMMARY_METRICS}
        passed = all(PRIVACY_TARGETS[name].passed(v) for name, v in values.items())
        rows.append({"table": table, "reference": reference, "scenario": worst_entry.scenario,
                     **values, "passed": passed})  # fmt: skip
    columns = ["table", "reference", "scenario", *SUMMARY_METRICS, "passed"]
    return pd.DataFrame(rows, columns=columns)


def summary_cell(row: Any) -> str:
    """One cell of the summary matrix in words: ``"<scenario>: <hidden rate> % (LC <median
    local cloaking>) pass|FAIL"``."""
    return (
        f"{row['scenario']}: {row['hidden_rate']:.1f} % (LC {row['local_cloaking']:g}) "
        f"{'pass' if row['passed'] else 'FAIL'}"
    )


def format_summary(summary: pd.DataFrame, result: DatabaseAvatarizationResult) -> pd.DataFrame:
    """``metrics_summary`` as the matrix a person reads: rows, the individual-level tables;
    columns, every table; each cell ``summary_cell`` (empty where no scenario applies)."""
    db = result.database
    tables = db.topological_order()
    rows = [t for t in tables if db.is_individual_level(t)]
    matrix = pd.DataFrame("", index=pd.Index(rows, name="table"), columns=tables, dtype=object)
    for _, row in summary.iterrows():
        matrix.loc[row["table"], row["reference"]] = summary_cell(row)
    return matrix
