"""Avatarizing a relational database, link by link, top-down (multitable.md section 2).

For every table in topological order:

1. enrich it: its variables, plus the variables of each parent broadcast through the foreign
   key (named ``"<parent>.<column>"``), plus, for each child link using
   ``linear_sum_assignment``, the number of children of each row (zeros included);
2. avatarize the enriched table as one table (keys are not variables);
3. for each parent link, give every avatar row an avatar parent: ``minimum_distance`` (nearest
   parent avatar in a FAMD space of the parent's variables, fitted on the avatar parents),
   ``linear_sum_assignment`` (parents repeated by their avatarized, sum-preserving rounded
   children counts, then the minimum-cost assignment in that space; blocked above
   ``assignment_block_size``) or ``original_order`` (the avatar of child i goes to the avatar of
   child i's original parent);
4. drop the enrichment, write fresh primary keys (never an original value) and the chosen
   parent's new key in each foreign key; children of this table link to these new keys.

A ``time_series`` child is not avatarized row by row: its parent is enriched with the features
of its curves (lengths, starts, spans, FPCA scores, missing shares; see ``time_series``), and
after the parent's avatarization each avatar parent's curves are rebuilt from its own features,
with fresh keys (released grouped by series, in the parent's release order, then by time).

A child without a parent (a missing foreign key) is kept: its parent's columns are missing,
and a "has a parent" variable (``presence_name``) is avatarized with the rest, so the avatars
keep the share of children without a parent; those get a missing foreign key and no parent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend, resolve_backend
from ..encoding import CONTINUOUS, fresh_identifiers
from ..encoding.identifying import IdentifyingColumn, refuse_undeclared_tables
from ..errors import AvatarError, AvatarTypeError, FixableError, error_context
from ..metrics.privacy import metric_coordinates
from ..parameters import (
    AvatarParameters,
    avatar_parameters,
    check_integer,
    seed_sequence,
    table_parameters,
)
from ..pipeline import avatarize
from ..progress import ProgressLike, Steps
from ..sql import WRITE_CHUNK_ROWS
from ..synthesis import shuffle_order
from .assignment import (
    assign_linear_sum,
    assign_minimum_distance,
    round_preserving_sum,
)
from .schema import NO_PARENT, Database, Link, children_counts, parent_rows, take_parents
from .time_series import SeriesModel, fit_series

logger = logging.getLogger("gpu_avatar")
COORDINATE_CHUNK_ROWS = 1 << 18  # children encoded and projected at once (shared coordinates)


def broadcast_name(parent: str, column: Any) -> str:
    return f"{parent}.{column}"


def count_name(link: Link) -> str:
    return f"number of {link.child} rows (by {link.foreign_key})"


def presence_name(link: Link) -> str:
    return f"has a {link.parent} (by {link.foreign_key})"


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


@dataclass
class TableRun:
    """How one table was avatarized: its parameters (seed: the table's entropy), step timings
    and batches. Its enriched originals and avatars are not kept: they are as long as the table
    and only the run needs them."""

    parameters: AvatarParameters
    projection_kind: str
    timings: dict[str, float] = field(default_factory=dict)
    batches: list[np.ndarray] | None = field(default=None, repr=False)  # row positions


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
        self, url: Any, schema: str | None = None, if_exists: str = "fail", *,
        chunk_rows: int = WRITE_CHUNK_ROWS, progress: Any = None,
    ) -> dict[str, int]:
        """Write the avatar tables (``tables``) to the database at ``url`` (and ``schema``):
        the same column types, primary keys, NOT NULL and foreign key constraints, parents
        first, in one transaction (a failed write leaves nothing). A target that already holds
        one of the tables is refused unless ``if_exists="replace"``. Returns rows per table."""
        from ..sql.write import write_database

        return write_database(
            self, url, schema=schema, if_exists=if_exists, chunk_rows=chunk_rows,
            progress=progress,
        )



def enriched_table(
    db: Database,
    name: str,
    data: Mapping[str, pd.DataFrame],
    parent_positions: Mapping[tuple[str, str], np.ndarray],
    series_features: Mapping[tuple[str, str], pd.DataFrame],
) -> tuple[pd.DataFrame, dict[Any, str]]:
    """The table to avatarize for ``name`` and its column types (see the module docstring;
    ``series_features``: those of its time-series children)."""
    table = data[name]
    variables = db.variables(name)
    frame = table[variables].reset_index(drop=True)
    types = {c: k for c, k in db.tables[name].types.items() if c in variables}
    parts = [frame]
    for link in db.parents_of(name):
        parent = data[link.parent]
        parent_variables = db.variables(link.parent)
        rows = parent_positions[(link.child, link.foreign_key)]
        broadcast = take_parents(parent[parent_variables], rows)
        broadcast.columns = [broadcast_name(link.parent, c) for c in parent_variables]
        parts.append(broadcast)
        if (rows == NO_PARENT).any():
            parts.append(pd.DataFrame({presence_name(link): rows != NO_PARENT}))
        types.update(
            {
                broadcast_name(link.parent, c): k
                for c, k in db.tables[link.parent].types.items()
                if c in parent_variables
            }
        )
    for link in db.children_of(name):
        if link.method == "linear_sum_assignment":
            rows = parent_positions[(link.child, link.foreign_key)]
            counts = children_counts(rows, len(table)).astype(np.float64)
            parts.append(pd.DataFrame({count_name(link): counts}))
            types[count_name(link)] = CONTINUOUS
        elif link.method == "time_series":
            features = series_features[(link.child, link.foreign_key)]
            clash = [c for c in features.columns if any(c in part for part in parts)]
            if clash:
                raise AvatarError(
                    f"table {name!r}: columns {clash} clash with the features of its time "
                    f"series {link.child!r}; rename them"
                )
            parts.append(features)
            types.update(dict.fromkeys(features.columns, CONTINUOUS))
            variables = variables + list(features.columns)
    if not variables:
        raise AvatarError(
            f"table {name!r} has no variable besides its keys (nor time series); nothing to "
            "avatarize"
        )
    return pd.concat(parts, axis=1), types


def _shared_coordinates(
    db: Database,
    link: Link,
    parent_avatars: pd.DataFrame,
    child_avatars: pd.DataFrame,
    backend: Backend,
) -> tuple[np.ndarray, np.ndarray]:
    """Avatar parents and avatar children in one FAMD space of the parent's variables. The
    children are encoded and projected ``COORDINATE_CHUNK_ROWS`` at a time: only their
    coordinates exist for the whole table."""
    variables = db.variables(link.parent)
    children = child_avatars[[broadcast_name(link.parent, c) for c in variables]]
    children.columns = variables
    chunks = [
        children.iloc[start : start + COORDINATE_CHUNK_ROWS]
        for start in range(0, len(children), COORDINATE_CHUNK_ROWS)
    ]
    types = {c: k for c, k in db.tables[link.parent].types.items() if c in variables}
    parents, kids, _ = metric_coordinates(
        parent_avatars[variables], chunks, 10**9, types, "median", backend
    )
    return backend.to_numpy(parents), np.concatenate([backend.to_numpy(part) for part in kids])


def cardinality_similarity(original_rows, n_original, avatar_rows, n_avatar) -> float:
    """1 - Kolmogorov-Smirnov statistic between children-per-parent distributions."""
    from scipy.stats import ks_2samp

    original = children_counts(original_rows, n_original)
    avatar = children_counts(avatar_rows, n_avatar)
    return float(1.0 - ks_2samp(original, avatar).statistic)


def _relink(
    db: Database,
    link: Link,
    avatars: pd.DataFrame,
    parent_avatars: pd.DataFrame,
    original_rows: np.ndarray,
    backend: Backend,
    block_size: int | None,
) -> tuple[LinkReport, np.ndarray]:
    """The link's report and the avatar parent (position) of every avatar row of the child;
    the shared coordinates live only as long as this call."""
    report = LinkReport(link.parent, link.child, link.foreign_key, link.method, 0.0, 0.0)
    if link.method == "original_order":
        rows = original_rows
    else:
        present = np.ones(len(avatars), dtype=bool)  # the avatar children that have a parent
        if presence_name(link) in avatars:
            present = avatars[presence_name(link)].to_numpy(dtype=bool)
        linked = avatars.iloc[np.flatnonzero(present)]
        parents, children = _shared_coordinates(db, link, parent_avatars, linked, backend)
        if link.method == "minimum_distance":
            assignment = assign_minimum_distance(children, parents, backend)
        else:
            counts = round_preserving_sum(parent_avatars[count_name(link)].to_numpy(), len(linked))
            assignment = assign_linear_sum(children, parents, counts, block_size=block_size)
        rows = np.full(len(avatars), NO_PARENT, dtype=np.int64)
        rows[present] = assignment.parent
        report.total_cost = assignment.total_cost
        report.n_blocks = assignment.n_blocks
        report.cost_ratio_to_exact = assignment.cost_ratio_to_exact
    report.cardinality_similarity = cardinality_similarity(
        original_rows, len(parent_avatars), rows, len(parent_avatars)
    )
    return report, rows


def _unshuffled_table(
    db: Database,
    name: str,
    table: pd.DataFrame,
    avatars: pd.DataFrame,
    fresh: np.ndarray,
    release_order: np.ndarray,
    new_keys: Mapping[str, np.ndarray],
    avatar_positions: Mapping[tuple[str, str], np.ndarray],
) -> tuple[pd.DataFrame, np.ndarray]:
    """Avatar table ``name`` with the original's columns and dtypes, row i = avatar of row i
    (of a time series: its rows as rebuilt): primary keys ``fresh``, numbered in the release
    order, and the parents' new keys; and those primary keys."""
    primary_key = db.tables[name].primary_key
    parent_of_key = {link.foreign_key: link.parent for link in db.parents_of(name)}
    keys = np.empty(len(avatars), dtype=fresh.dtype)  # not object: no boxed integer per row
    keys[release_order] = fresh
    output = {}
    for column in table.columns:
        if column == primary_key:
            values = pd.Series(keys)
        elif column in parent_of_key:
            rows = avatar_positions[(name, column)]
            values = pd.Series(new_keys[parent_of_key[column]][np.maximum(rows, 0)])
            if (rows == NO_PARENT).any():  # children without a parent: a missing key
                values = values.astype(object).mask(pd.Series(rows == NO_PARENT))
        else:
            values = avatars[column].reset_index(drop=True)
        dtype = table[column].dtype
        if isinstance(dtype, pd.CategoricalDtype) and column in parent_of_key:
            # its categories are original keys, none of which survives: use the new ones
            values = values.astype(dtype.categories.dtype).astype(
                pd.CategoricalDtype(ordered=dtype.ordered)
            )
            dtype = values.dtype
        output[column] = values.astype(dtype)
    return pd.DataFrame(output, columns=table.columns), keys


def _series_avatars(
    db: Database, link: Link, model: SeriesModel, parent_avatars: pd.DataFrame,
    parent_release: np.ndarray, sequence: np.random.SeedSequence, backend: Backend,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The rebuilt series of every avatar parent: its time and measurement columns in the
    original dtypes (integers rounded), the avatar parent (position) of every row, and the
    release order (series in the parent's release order, then by time)."""
    table = db.tables[link.child].data
    rows, times, values = model.rebuild(
        parent_avatars[list(model.names())], np.random.default_rng(sequence), backend
    )
    columns = {model.time: model.time_column(times, table[model.time].dtype)}
    for variable, column in values.items():
        integer = pd.api.types.is_integer_dtype(table[variable].dtype)
        columns[variable] = pd.Series(np.round(column) if integer else column)
    return pd.DataFrame(columns), rows, np.argsort(parent_release[rows], kind="stable")


def avatarize_database(
    db: Database,
    *,
    parameters: AvatarParameters | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    assignment_block_size: int | None = None,
    progress: ProgressLike = None,
    **settings: Any,
) -> DatabaseAvatarizationResult:
    """Avatarize every table of ``db`` and relink them.

    The parameters are those of ``avatarize`` (``AvatarParameters``, or keywords of the same
    names) for every table, except the column ``types``, declared with each table
    (``Database.add_table``). ``overrides`` maps a table to the parameters it sets otherwise
    (those named in ``parameters.TABLE_OVERRIDES``), e.g. ``overrides={"doctor": {"k": 5}}``;
    a table larger than its ``batch_size`` is avatarized in batches, as ``avatarize`` does.
    ``assignment_block_size``: children per exact assignment block of the
    ``linear_sum_assignment`` links (default: ``assignment.default_block_size``).
    ``progress``: None (silent), True (a tqdm bar over tables and links) or a callable
    ``(step, done, total)``, see ``gpu_avatar.progress``.
    """
    if not isinstance(db, Database):
        raise AvatarTypeError(f"expected a gpu_avatar.Database, got {type(db).__name__}")
    base = avatar_parameters(parameters, **settings)
    if assignment_block_size is not None:
        check_integer("assignment_block_size", assignment_block_size, 1)
    if base.types:
        raise AvatarError(
            "types are declared per table in a database: db.add_table(name, data, "
            "primary_key, types={...})"
        )
    data = {name: frame.reset_index(drop=True) for name, frame in db.validate().items()}
    order = db.topological_order()
    series_tables = {link.child for link in db.links if link.method == "time_series"}
    knowingly_released = refuse_undeclared_tables({  # every table, before any work
        name: (data[name][db.variables(name)], db.tables[name].types)
        for name in order if name not in series_tables
    })
    for link in db.links:
        if link.method == "time_series" and link.child in (overrides or {}):
            raise FixableError(
                f"parameters are given to the time-series table {link.child!r}, which is not "
                f"avatarized on its own but with its parent {link.parent!r}", {
                    "python": f"give them to overrides[{link.parent!r}] instead of "
                              f"overrides[{link.child!r}]",
                    "yaml": f"set them under tables: {link.parent} instead of {link.child}",
                })
    per_table = table_parameters(base, overrides, order)
    steps = Steps(progress, "avatarize_database", total=len(order) + len(db.links))
    backend = resolve_backend(base.backend)
    sequence = seed_sequence(base.seed)
    positions = {
        (link.child, link.foreign_key): parent_rows(
            data[link.child], link.foreign_key, data[link.parent], link.parent_key
        )
        for link in db.links
    }
    runs: dict[str, TableRun] = {}
    kept: dict[str, pd.DataFrame] = {}  # avatar columns that a parent's links still need
    new_keys: dict[str, np.ndarray] = {}  # a parent's new primary keys, unshuffled
    avatar_positions: dict[tuple[str, str], np.ndarray] = {}
    reports: list[LinkReport] = []
    unshuffled: dict[str, pd.DataFrame] = {}
    released: dict[str, pd.DataFrame] = {}
    models: dict[tuple[str, str], SeriesModel] = {}
    released_at: dict[str, np.ndarray] = {}  # a time-series parent's rows' release positions
    projection_seconds: dict[str, float] = {}  # a time-series table's, until it is rebuilt
    for index, name in enumerate(order):
        table = data[name]
        n = len(table)
        table_sequence = np.random.SeedSequence(sequence.entropy, spawn_key=(index,))
        series_link = next((lk for lk in db.parents_of(name) if lk.method == "time_series"), None)
        if series_link is not None:
            key = (name, series_link.foreign_key)
            steps.start(f"table {name}")
            started = time.perf_counter()
            with error_context(f"table {name!r}"):
                avatars, avatar_positions[key], release_order = _series_avatars(
                    db, series_link, models[key], kept[series_link.parent],
                    released_at[series_link.parent], table_sequence, backend,
                )
            runs[name] = TableRun(per_table[name], series_link.series_options[2], {
                "projection": projection_seconds.pop(name),
                "rebuild": time.perf_counter() - started,
            })
            with error_context(f"table {name!r}"):
                fresh = fresh_identifiers(table[db.tables[name].primary_key], len(avatars))
            steps.advance()
            steps.start(f"link {series_link.parent} -> {name}")
            reports.append(LinkReport(
                series_link.parent, name, series_link.foreign_key, series_link.method,
                cardinality_similarity(positions[key], len(kept[series_link.parent]),
                                       avatar_positions[key], len(kept[series_link.parent])),
                0.0,
            ))
            steps.advance()
        else:
            # first: finding fresh keys takes far more memory than they hold
            with error_context(f"table {name!r}"):
                fresh = fresh_identifiers(table[db.tables[name].primary_key], n)
            series_features = {}
            for link in db.children_of(name):
                if link.method == "time_series":
                    key = (link.child, link.foreign_key)
                    started = time.perf_counter()
                    models[key], series_features[key] = fit_series(
                        link.child, data[link.child][db.variables(link.child)],
                        db.tables[link.child].time, positions[key], n, link.series_options,
                        backend,
                    )
                    projection_seconds[link.child] = time.perf_counter() - started
            enriched, types = enriched_table(db, name, data, positions, series_features)
            del series_features
            table_k = per_table[name].k
            if table_k >= n:
                smaller = max(2, n // 4)
                yaml = f"tables: {{{name}: {{k: {smaller}}}}}"
                raise FixableError(
                    f"table {name!r} has {n} rows: k = {table_k} must satisfy 2 <= k < {n}", {
                        "python": f"give the table its own k, e.g. overrides={{{name!r}: "
                                  f"{{'k': {smaller}}}}}",
                        "cli": "lower --k, or give the table its own k in a YAML file "
                               f"({yaml}, see gpu_avatar.relational.config)",
                        "yaml": f"give the table its own k, e.g. {yaml}",
                    })
            logger.info("avatarizing table %s (%d rows)", name, n)
            steps.start(f"table {name}")
            with error_context(f"table {name!r}"):  # a column's error: of which table?
                result = avatarize(
                    enriched,
                    parameters=per_table[name].replace(
                        seed=table_sequence, backend=backend, types=types
                    ),
                )
            del enriched  # with the result's originals and shuffled avatars: only these kept
            runs[name] = TableRun(
                result.parameters, result.projection_kind, result.timings, result.batches
            )
            avatars = result.sensitive_unshuffled_avatars
            del result
            steps.advance()
            for link in db.parents_of(name):
                steps.start(f"link {link.parent} -> {name}")
                key = (link.child, link.foreign_key)
                with error_context(f"link {link.parent} -> {name}"):
                    report, avatar_positions[key] = _relink(
                        db, link, avatars, kept[link.parent], positions[key], backend,
                        assignment_block_size,
                    )
                reports.append(report)
                steps.advance()
            release_order = shuffle_order(n, table_sequence)
        children = db.children_of(name)
        if children:
            counts = [count_name(lk) for lk in children if lk.method == "linear_sum_assignment"]
            features = [c for lk in children if lk.method == "time_series"
                        for c in models[(lk.child, lk.foreign_key)].names()]
            kept[name] = avatars[db.variables(name) + counts + features]
            if features:
                released_at[name] = np.argsort(release_order)

        unshuffled[name], keys = _unshuffled_table(
            db, name, table, avatars, fresh, release_order, new_keys, avatar_positions
        )
        del avatars, fresh
        released[name] = unshuffled[name].iloc[release_order].reset_index(drop=True)
        if children:
            new_keys[name] = keys
        for parent in {link.parent for link in db.parents_of(name)}:
            if all(order.index(lk.child) <= index for lk in db.children_of(parent)):
                del kept[parent], new_keys[parent]  # its last child is linked
                released_at.pop(parent, None)

    for report in reports:
        link_child = released[report.child][report.foreign_key].dropna()
        parent_keys = released[report.parent][db.tables[report.parent].primary_key]
        report.referential_integrity = (
            100.0 * float(link_child.isin(parent_keys).mean()) if len(link_child) else 100.0
        )
    return DatabaseAvatarizationResult(
        tables=released,
        sensitive_unshuffled_tables=unshuffled,
        originals=data,
        database=db,
        links=reports,
        table_results=runs,
        original_parent_rows=positions,
        avatar_parent_rows=avatar_positions,
        parameters=base.replace(seed=int(sequence.entropy), backend=backend.name),
        overrides={t: dict(overrides[t]) for t in (overrides or {})},
        series_models=models,
        knowingly_released=knowingly_released,
    )
