"""Metrics across tables (multitable.md section 5).

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
Signal: ``standalone`` for every table; ``to_top_enriched`` (parent + aggregated children,
Hellinger) and ``to_bottom_information_propagated`` (child + broadcast parent columns,
correlation difference) for every link.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.encoder import CATEGORICAL, CONTINUOUS, TableEncoder
from ..metrics.privacy import PrivacyMetrics, privacy_metrics
from ..metrics.signal import SignalMetrics, signal_metrics
from .linking import DatabaseAvatarizationResult, broadcast_name

STANDALONE = "standalone"
TO_TOP_ENRICHED = "to_top_enriched"
TO_BOTTOM_ID_PROPAGATED = "to_bottom_id_propagated"
TO_BOTTOM_INFORMATION_PROPAGATED = "to_bottom_information_propagated"


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
    """A list of ``ScenarioResult`` with a tabular view."""

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


def _types(result: DatabaseAvatarizationResult, table: str) -> dict[Any, str]:
    variables = result.database.variables(table)
    return {c: k for c, k in result.database.tables[table].types.items() if c in variables}


def _ncp(result: DatabaseAvatarizationResult, table: str) -> int:
    return result.table_results[table].parameters["ncp"]


def _variables(result: DatabaseAvatarizationResult, table: str, avatar: bool) -> pd.DataFrame:
    source = result.sensitive_unshuffled_tables if avatar else result.originals
    return source[table][result.database.variables(table)].reset_index(drop=True)


def children_aggregates(
    children: pd.DataFrame,
    parent_rows: np.ndarray,
    n_parents: int,
    encoder: TableEncoder,
    prefix: str,
) -> pd.DataFrame:
    """Per parent: number of children, mean of continuous columns, share of each modality."""
    counts = np.bincount(parent_rows, minlength=n_parents).astype(np.float64)
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
    child_original = _variables(result, child, avatar=False)
    encoder = TableEncoder(_types(result, child), missing_indicators=False).fit(child_original)
    key = (child, link.foreign_key)
    frames = []
    for avatar, rows in (
        (False, result.original_parent_rows[key]),
        (True, result.avatar_parent_rows[key]),
    ):
        own = _variables(result, parent, avatar)
        aggregates = children_aggregates(
            _variables(result, child, avatar), rows, len(own), encoder, child
        )
        frames.append(pd.concat([own, aggregates], axis=1))
    return frames[0], frames[1], _types(result, parent)


def _bottom_propagated(result, link) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    key = (link.child, link.foreign_key)
    frames = []
    for avatar, rows in (
        (False, result.original_parent_rows[key]),
        (True, result.avatar_parent_rows[key]),
    ):
        parent = _variables(result, link.parent, avatar).iloc[rows].reset_index(drop=True)
        parent.columns = [broadcast_name(link.parent, c) for c in parent.columns]
        frames.append(pd.concat([_variables(result, link.child, avatar), parent], axis=1))
    types = _types(result, link.child)
    types.update(
        {broadcast_name(link.parent, c): k for c, k in _types(result, link.parent).items()}
    )
    return frames[0], frames[1], types


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


def database_privacy_metrics(
    result: DatabaseAvatarizationResult, **options: Any
) -> ScenarioMetrics:
    """Every privacy scenario; ``options`` go to ``privacy_metrics`` (e.g. ``engine``)."""
    db = result.database
    out = ScenarioMetrics()
    order = db.topological_order()

    def measure(original, avatar, types, table):
        return privacy_metrics(
            original,
            avatar,
            ncp=_ncp(result, table),
            types=types,
            backend=result.parameters["backend"],
            **options,
        )

    for name in order:
        if not db.is_individual_level(name):
            continue
        out.append(
            ScenarioResult(
                name,
                STANDALONE,
                name,
                measure(
                    _variables(result, name, False),
                    _variables(result, name, True),
                    _types(result, name),
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


def database_signal_metrics(result: DatabaseAvatarizationResult, **options: Any) -> ScenarioMetrics:
    """Signal: standalone per table, enriched per link (``options`` go to ``signal_metrics``)."""
    db = result.database
    out = ScenarioMetrics()
    for name in db.topological_order():
        out.append(
            ScenarioResult(
                name,
                STANDALONE,
                name,
                signal_metrics(
                    _variables(result, name, False),
                    _variables(result, name, True),
                    types=_types(result, name),
                    **options,
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
    """Rows: individual-level tables; columns: every table. Cell (I, I): standalone; (I, T):
    the scenario with the lowest hidden rate for I against T; empty where none applies. A cell
    reads ``"<scenario>: <hidden rate> % (LC <median local cloaking>) pass|FAIL"``."""
    privacy = privacy if privacy is not None else database_privacy_metrics(result)
    db = result.database
    tables = db.topological_order()
    rows = [t for t in tables if db.is_individual_level(t)]
    summary = pd.DataFrame("", index=pd.Index(rows, name="table"), columns=tables, dtype=object)
    worst: dict[tuple[str, str], ScenarioResult] = {}
    for entry in privacy:
        cell = (entry.table, entry.reference)
        if cell not in worst or entry.metrics.hidden_rate < worst[cell].metrics.hidden_rate:
            worst[cell] = entry
    for (table, reference), entry in worst.items():
        metrics = entry.metrics
        passed = metrics.hidden_rate > 90 and metrics.local_cloaking > 5
        summary.loc[table, reference] = (
            f"{entry.scenario}: {metrics.hidden_rate:.1f} % (LC {metrics.local_cloaking:g}) "
            f"{'pass' if passed else 'FAIL'}"
        )
    return summary
