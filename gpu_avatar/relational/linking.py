"""Avatarizing a relational database, link by link, top-down (docs/spec/multitable.md,
section 2).

For every table in topological order:

1. enrich it: its variables, plus the variables of each parent broadcast through the foreign
   key (named ``"<parent>.<column>"``), plus, for each child link using
   ``linear_sum_assignment``, the number of children of each row (zeros included);
2. avatarize the enriched table as one table (keys are not variables);
3. for each parent link, give every avatar row an avatar parent: ``minimum_distance`` (nearest
   parent avatar in a FAMD space of the parent's variables, fitted on the avatar parents),
   ``linear_sum_assignment`` (parents repeated by their avatarized children counts, calibrated
   to the originals' distribution of children per parent, then the minimum-cost assignment
   in that space; blocked above ``assignment_block_size``) or ``original_order`` (the avatar
   of child i goes to the avatar of child i's original parent);
4. drop the enrichment, write fresh primary keys (never an original value) and the chosen
   parent's new key in each foreign key; children of this table link to these new keys.
   Columns declared ``pseudonym:STRATEGY`` (a primary key among them) and an entity's columns
   (``Database.add_entity``) take the pseudonyms of their original values instead, drawn once
   per column or entity over every table, so released tables still join on them.

A ``time_series`` child is not avatarized row by row: its parent is enriched with the features
of its curves (lengths, starts, spans, FPCA scores, missing shares; see ``time_series``), and
after the parent's avatarization each avatar parent's curves are rebuilt from its own features,
with fresh keys (released grouped by series, in the parent's release order, then by time).

A child without a parent (a missing foreign key) is kept: its parent's columns are missing,
and a "has a parent" variable (``presence_name``) is avatarized with the rest, so the avatars
keep the share of children without a parent; those get a missing foreign key and no parent.

``avatarize_database`` checks its arguments, then a ``DatabaseRun`` does the above; what it
returns is in ``results``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend, resolve_backend
from ..encoding import CONTINUOUS, IDENTIFIER, Pseudonymizer, fresh_identifiers
from ..encoding.identifying import IdentifyingColumn, refuse_undeclared_tables
from ..encoding.kinds import same_values_kind
from ..errors import AvatarError, AvatarTypeError, FixableError, error_context
from ..metrics.privacy import metric_coordinates
from ..parameters import (
    AvatarParameters,
    avatar_parameters,
    check_integer,
    column_kind,
    seed_sequence,
    table_parameters,
)
from ..pipeline import avatarize
from ..pipeline.apart import column_seed
from ..pipeline.rules import rules_seed
from ..progress import ProgressLike, Steps
from ..rules import RuleReport, across_children
from ..synthesis import shuffle_order
from .assignment import (
    assign_linear_sum,
    assign_minimum_distance,
    calibrated_counts,
)
from .results import DatabaseAvatarizationResult, LinkReport, TableRun
from .schema import NO_PARENT, Database, Link, children_counts, parent_rows, take_parents
from .time_series import SeriesModel, fit_series
from .treatments import planned_database, released_as_they_are, set_apart

logger = logging.getLogger("gpu_avatar")
COORDINATE_CHUNK_ROWS = 1 << 18  # children encoded and projected at once (shared coordinates)


def broadcast_name(parent: str, column: Any) -> str:
    return f"{parent}.{column}"


def count_name(link: Link) -> str:
    return f"number of {link.child} rows (by {link.foreign_key})"


def presence_name(link: Link) -> str:
    return f"has a {link.parent} (by {link.foreign_key})"


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
    types = {c: _avatarized_kind(k) for c, k in db.tables[name].types.items() if c in variables}
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
                broadcast_name(link.parent, c): _avatarized_kind(k)
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
        fix = "give it a variable (a column declared continuous or categorical), or leave it out"
        raise FixableError(
            f"table {name!r} has no variable besides its keys (nor time series); nothing to "
            "avatarize", {"python": f"{fix} of the database (no add_table)",
                          "yaml": f"{fix} of the file's tables",
                          "cli": f"{fix} (--tables: the others)"})
    return pd.concat(parts, axis=1), types


def _avatarized_kind(declared: str) -> str:
    """A column's kind for its table's avatarization: a pseudonymized one is an identifier
    there (fresh placeholders), its pseudonyms written by ``DatabaseRun.released_columns``."""
    return IDENTIFIER if column_kind(declared) == IDENTIFIER else declared


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
    k: int,
) -> tuple[LinkReport, np.ndarray]:
    """The link's report and the avatar parent (position) of every avatar row of the child
    (``k``: the parent's, which bounds the counts of children handed out); the shared
    coordinates live only as long as this call."""
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
            counts = calibrated_counts(parent_avatars[count_name(link)].to_numpy(),
                                       children_counts(original_rows, len(parent_avatars)),
                                       len(linked), k)
            assignment = assign_linear_sum(children, parents, counts, block_size=block_size)
        rows = np.full(len(avatars), NO_PARENT, dtype=np.int64)
        rows[present] = assignment.parent
        report.total_cost = assignment.total_cost
        report.n_blocks = assignment.n_blocks
        report.cost_ratio_to_exact = assignment.cost_ratio_to_exact
    report.cardinality_similarity = cardinality_similarity(
        original_rows, len(parent_avatars), rows, len(parent_avatars)
    )
    report.children_per_parent = children_shares(original_rows, rows, len(parent_avatars))
    return report, rows


def children_shares(original_rows: np.ndarray, avatar_rows: np.ndarray,
                    n_parents: int) -> pd.DataFrame:
    """% of the parents with each number of children (0, 1, ...), original and avatars."""
    original = np.bincount(children_counts(original_rows, n_parents))
    avatars = np.bincount(children_counts(avatar_rows, n_parents))
    width = max(len(original), len(avatars))
    return pd.DataFrame({"original": np.pad(original, (0, width - len(original))),
                         "avatars": np.pad(avatars, (0, width - len(avatars)))},
                        index=pd.RangeIndex(width, name="children")) * (100.0 / n_parents)


def _series_avatars(
    db: Database, link: Link, model: SeriesModel, parent_avatars: pd.DataFrame,
    parent_release: np.ndarray, sequence: np.random.SeedSequence, backend: Backend,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The rebuilt series of every avatar parent: its time and measurement columns in the
    original dtypes (values at their originals' precision, ``SeriesModel.rebuild``), the avatar
    parent (position) of every row, and the release order (series in the parent's release
    order, then by time)."""
    table = db.tables[link.child].data
    rows, times, values = model.rebuild(
        parent_avatars[list(model.names())], np.random.default_rng(sequence), backend
    )
    columns = {model.time: model.time_column(times, table[model.time].dtype)}
    for variable, column in values.items():
        columns[variable] = pd.Series(column)
    return pd.DataFrame(columns), rows, np.argsort(parent_release[rows], kind="stable")


def _added(first: RuleReport, then: RuleReport) -> RuleReport:
    """The report of a rule applied twice: its rows repaired added up, Hellinger after the
    second."""
    return replace(first, rows_repaired=first.rows_repaired + then.rows_repaired,
                   hellinger_after=then.hellinger_after)


@dataclass
class ParentAvatars:
    """What the children still to come need of an avatarized parent table (unshuffled rows)."""

    columns: pd.DataFrame  # the variables, children counts and series features of its links
    keys: np.ndarray  # its new primary keys
    release_positions: np.ndarray | None  # each row's place in the release (series parents)


class DatabaseRun:
    """One avatarization of a checked database, table by table in topological order: each is
    avatarized (an ordinary table, or a time series rebuilt from its parent's avatars),
    relinked to its avatar parents and released. Between tables it holds only what the
    children still to come need of their parents (``parents``, dropped after a parent's last
    child); the rest is what the result gathers."""

    def __init__(
        self,
        db: Database,
        data: dict[str, pd.DataFrame],
        order: list[str],
        parameters: AvatarParameters,
        per_table: dict[str, AvatarParameters],
        assignment_block_size: int | None,
        progress: ProgressLike,
    ) -> None:
        self.db = db
        self.data = data  # the validated originals
        self.order = order
        self.parameters = parameters
        self.per_table = per_table
        self.assignment_block_size = assignment_block_size
        self.steps = Steps(progress, "avatarize_database", total=len(order) + len(db.links))
        self.backend = resolve_backend(parameters.backend)
        self.sequence = seed_sequence(parameters.seed)
        self.original_parent_rows = {
            (link.child, link.foreign_key): parent_rows(
                data[link.child], link.foreign_key, data[link.parent], link.parent_key
            )
            for link in db.links
        }
        self.avatar_parent_rows: dict[tuple[str, str], np.ndarray] = {}
        self.pseudonymizers = self.shared_pseudonyms()
        self.parents: dict[str, ParentAvatars] = {}
        self.series_models: dict[tuple[str, str], SeriesModel] = {}
        self.projection_seconds: dict[str, float] = {}  # a series table's, until it is rebuilt
        self.table_runs: dict[str, TableRun] = {}
        self.link_reports: list[LinkReport] = []
        self.unshuffled: dict[str, pd.DataFrame] = {}
        self.released: dict[str, pd.DataFrame] = {}

    def shared_pseudonyms(self) -> dict[tuple[str, Any], Pseudonymizer]:
        """A drawn ``Pseudonymizer`` per pseudonymized column, (table, column) -> it; an
        entity's columns share one, which learns every table's values first."""
        out: dict[tuple[str, Any], Pseudonymizer] = {}
        owners: dict[Any, Pseudonymizer] = {}
        for position, ((table, column), entity) in enumerate(self.db.pseudonymized().items()):
            owner = (table, column) if entity is None else entity
            if owner not in owners:
                with error_context(f"table {table!r}" if entity is None else f"entity {entity!r}"):
                    owners[owner] = Pseudonymizer(
                        self.db.tables[table].types[column], entity or column,
                        column_seed(self.sequence, position))
            out[(table, column)] = owners[owner].add(self.data[table][column])
        for pseudonymizer in owners.values():
            pseudonymizer.draw()
        return out

    def avatarize_tables(self) -> None:
        """Every table, parents first."""
        for index, name in enumerate(self.order):
            self.avatarize_table(index, name)

    def avatarize_table(self, index: int, name: str) -> None:
        """Avatarize, relink and release table ``name``, seeded by its place in the order."""
        sequence = np.random.SeedSequence(self.sequence.entropy, spawn_key=(index,))
        series_link = next(
            (link for link in self.db.parents_of(name) if link.method == "time_series"), None
        )
        if series_link is None:
            avatars, fresh, release_order = self.ordinary_table(name, sequence)
        else:
            avatars, fresh, release_order = self.series_table(name, series_link, sequence)
        unshuffled, keys = self.released_columns(name, avatars, fresh, release_order)
        if self.db.children_of(name):
            self.parents[name] = self.parent_avatars(name, avatars, keys, release_order)
        del avatars, fresh  # before the shuffled copy: the released columns hold them now
        self.unshuffled[name] = unshuffled
        self.released[name] = unshuffled.iloc[release_order].reset_index(drop=True)
        for parent in {link.parent for link in self.db.parents_of(name)}:
            children = self.db.children_of(parent)
            if all(self.order.index(link.child) <= index for link in children):
                del self.parents[parent]  # its last child is linked

    def ordinary_table(
        self, name: str, sequence: np.random.SeedSequence
    ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """The unshuffled avatars of table ``name``, linked to their avatar parents; its fresh
        primary keys; its release order."""
        n = len(self.data[name])
        # first: finding fresh keys takes far more memory than they hold
        fresh = None if self.pseudonymized_key(name) else self.fresh_keys(name, n)
        avatars = self.avatarize(name, sequence)
        self.relink(name, avatars)
        return self.kept_across_children(name, avatars, sequence), fresh, shuffle_order(n, sequence)

    def series_table(
        self, name: str, link: Link, sequence: np.random.SeedSequence
    ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """The series of time-series table ``name`` rebuilt for every avatar parent (``link``),
        their fresh primary keys and release order; the link is reported."""
        key = (name, link.foreign_key)
        parent = self.parents[link.parent]
        self.steps.start(f"table {name}")
        started = time.perf_counter()
        with error_context(f"table {name!r}"):
            avatars, self.avatar_parent_rows[key], release_order = _series_avatars(
                self.db, link, self.series_models[key], parent.columns,
                parent.release_positions, sequence, self.backend,
            )
        self.table_runs[name] = TableRun(self.per_table[name], link.series_options[2], {
            "projection": self.projection_seconds.pop(name),
            "rebuild": time.perf_counter() - started,
        })
        fresh = self.fresh_keys(name, len(avatars))
        self.steps.advance()
        self.steps.start(f"link {link.parent} -> {name}")
        n_parents = len(parent.columns)
        self.link_reports.append(LinkReport(
            link.parent, name, link.foreign_key, link.method,
            cardinality_similarity(self.original_parent_rows[key], n_parents,
                                   self.avatar_parent_rows[key], n_parents),
            0.0,
        ))
        self.steps.advance()
        return avatars, fresh, release_order

    def pseudonymized_key(self, name: str) -> Pseudonymizer | None:
        """The ``Pseudonymizer`` of table ``name``'s primary key, if it has one."""
        return self.pseudonymizers.get((name, self.db.tables[name].primary_key))

    def fresh_keys(self, name: str, n: int) -> np.ndarray:
        """``n`` primary keys for table ``name``, none of them an original one."""
        with error_context(f"table {name!r}"):
            return fresh_identifiers(self.data[name][self.db.tables[name].primary_key], n)

    def series_features(self, name: str) -> dict[tuple[str, str], pd.DataFrame]:
        """The features of the curves of each time-series child of ``name``, per link; their
        models are kept to rebuild the curves from the avatars' features."""
        features = {}
        for link in self.db.children_of(name):
            if link.method == "time_series":
                key = (link.child, link.foreign_key)
                started = time.perf_counter()
                self.series_models[key], features[key] = fit_series(
                    link.child, self.data[link.child][self.db.variables(link.child)],
                    self.db.tables[link.child].time, self.original_parent_rows[key],
                    len(self.data[name]), link.series_options, self.backend,
                )
                self.projection_seconds[link.child] = time.perf_counter() - started
        return features

    def avatarize(self, name: str, sequence: np.random.SeedSequence) -> pd.DataFrame:
        """The unshuffled avatars of table ``name`` enriched (see the module docstring)."""
        enriched, types = enriched_table(
            self.db, name, self.data, self.original_parent_rows, self.series_features(name)
        )
        n, table_k = len(self.data[name]), self.per_table[name].k
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
        self.steps.start(f"table {name}")
        rules = self.db.tables[name].rules
        with error_context(f"table {name!r}"):  # a column's error: of which table?
            result = avatarize(
                enriched,
                parameters=self.per_table[name].replace(
                    seed=sequence, backend=self.backend, types=types
                ),
                rules=rules and [r for r in rules.rules if not across_children(r)],
            )
        del enriched  # with the result's originals and shuffled avatars: only these kept
        own = self.data[name].columns
        self.table_runs[name] = TableRun(
            result.parameters, result.projection_kind, result.timings, result.batches,
            {c: g for c, g in result.grouped_modalities.items() if c in own}, result.rules,
        )
        avatars = result.sensitive_unshuffled_avatars
        del result
        self.steps.advance()
        return avatars

    def kept_across_children(self, name: str, avatars: pd.DataFrame,
                             sequence: np.random.SeedSequence) -> pd.DataFrame:
        """The relinked avatars of table ``name`` with its rules across a parent's children
        kept: each such rule's ``by`` read as the avatar parents. Its rules within rows are
        applied again with them, so no repair breaks them (its avatarization held them); no
        neighbours: the repairs fall back to the originals' values."""
        rules = self.db.tables[name].rules
        if rules is None or not any(across_children(r) for r in rules.rules):
            return avatars
        columns = list(dict.fromkeys(c for rule in rules.rules for c in rule.columns))
        parents = {link.foreign_key: self.avatar_parent_rows[(name, link.foreign_key)]
                   for link in self.db.parents_of(name)}
        relinked = pd.DataFrame({
            c: pd.Series(parents[c]).where(parents[c] != NO_PARENT) if c in parents
            else avatars[c].reset_index(drop=True) for c in columns})
        with error_context(f"table {name!r}"):
            kept = rules.apply(self.data[name][columns], relinked,
                               seed=rules_seed(sequence, step=1))
        run = self.table_runs[name]
        within = iter(run.rules)
        run.rules = [report if across_children(report.rule) else _added(next(within), report)
                     for report in kept.reports]
        written = [c for rule in rules.rules for c in rule.written]
        return avatars.assign(**{c: kept.avatars[c].set_axis(avatars.index) for c in written})

    def relink(self, name: str, avatars: pd.DataFrame) -> None:
        """Give every avatar row of table ``name`` an avatar parent, link by link."""
        for link in self.db.parents_of(name):
            self.steps.start(f"link {link.parent} -> {name}")
            key = (link.child, link.foreign_key)
            with error_context(f"link {link.parent} -> {name}"):
                report, self.avatar_parent_rows[key] = _relink(
                    self.db, link, avatars, self.parents[link.parent].columns,
                    self.original_parent_rows[key], self.backend, self.assignment_block_size,
                    self.table_runs[link.parent].parameters.k,
                )
            self.link_reports.append(report)
            self.steps.advance()

    def released_columns(
        self, name: str, avatars: pd.DataFrame, fresh: np.ndarray | None,
        release_order: np.ndarray
    ) -> tuple[pd.DataFrame, np.ndarray]:
        """Avatar table ``name`` with the original's columns and dtypes, row i = avatar of row
        i (of a time series: its rows as rebuilt), and its primary keys. Every column of a
        table is decided here and only here: the primary key takes the ``fresh`` keys, numbered
        in the release order, or its pseudonyms; a foreign key, its avatar parent's new key; a
        pseudonymized column, the pseudonyms of its original values; any other column, its
        avatars' values (pseudonyms and foreign keys keep their dtype where their values fit
        it: text pseudonyms of integers are text)."""
        table = self.data[name]
        primary_key = self.db.tables[name].primary_key
        parent_of_key = {link.foreign_key: link.parent for link in self.db.parents_of(name)}
        if fresh is None:  # a pseudonymized primary key
            keys = np.asarray(self.pseudonymizers[(name, primary_key)].pseudonyms(
                table[primary_key]).array)
        else:
            keys = np.empty(len(avatars), dtype=fresh.dtype)  # not object: no boxed integers
            keys[release_order] = fresh
        output = {}
        columns = self.db.released_columns(name)
        for column in columns:
            if column == primary_key:
                values = pd.Series(keys)
            elif (name, column) in self.pseudonymizers:
                values = self.pseudonymizers[(name, column)].pseudonyms(
                    table[column]).reset_index(drop=True)
            elif column in parent_of_key:
                rows = self.avatar_parent_rows[(name, column)]
                parent_keys = self.parents[parent_of_key[column]].keys
                values = pd.Series(parent_keys[np.maximum(rows, 0)])  # its pseudonyms, if any
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
            key = (parent_of_key[column], self.db.tables[parent_of_key[column]].primary_key) \
                if column in parent_of_key else (name, column)
            fits = key not in self.pseudonymizers or same_values_kind(dtype, values.dtype)
            output[column] = values.astype(dtype) if fits else values
        return pd.DataFrame(output, columns=columns), keys

    def parent_avatars(
        self, name: str, avatars: pd.DataFrame, keys: np.ndarray, release_order: np.ndarray
    ) -> ParentAvatars:
        """What the child tables of ``name`` need of its avatars to be avatarized and linked."""
        children = self.db.children_of(name)
        counts = [count_name(link) for link in children if link.method == "linear_sum_assignment"]
        features = [c for link in children if link.method == "time_series"
                    for c in self.series_models[(link.child, link.foreign_key)].names()]
        return ParentAvatars(
            avatars[self.db.variables(name) + counts + features], keys,
            np.argsort(release_order) if features else None,
        )

    def result(
        self, overrides: Mapping[str, Mapping[str, Any]] | None,
        knowingly_released: list[IdentifyingColumn],
    ) -> DatabaseAvatarizationResult:
        """The result, once every table is released (their referential integrity measured)."""
        for report in self.link_reports:
            link_child = self.released[report.child][report.foreign_key].dropna()
            parent_keys = self.released[report.parent][self.db.tables[report.parent].primary_key]
            report.referential_integrity = (
                100.0 * float(link_child.isin(parent_keys).mean()) if len(link_child) else 100.0
            )
        return DatabaseAvatarizationResult(
            tables=self.released,
            sensitive_unshuffled_tables=self.unshuffled,
            originals=self.data,
            database=self.db,
            links=self.link_reports,
            table_results=self.table_runs,
            original_parent_rows=self.original_parent_rows,
            avatar_parent_rows=self.avatar_parent_rows,
            parameters=self.parameters.replace(
                seed=int(self.sequence.entropy), backend=self.backend.name
            ),
            overrides={t: dict(overrides[t]) for t in (overrides or {})},
            series_models=self.series_models,
            knowingly_released=knowingly_released,
        )


def avatarize_database(
    db: Database,
    *,
    parameters: AvatarParameters | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    assignment_block_size: int | None = None,
    progress: ProgressLike = None,
    plan: Any = None,
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
    ``(step, done, total)``, see ``gpu_avatar.progress``. ``plan`` (a ``ga.Plan`` or its
    file, reviewed; see ``ga.plan``) gives the tables' column kinds (each table's own
    ``types`` over them) and treatments: the tables it copies, pseudonymizes or purges are in
    the result's ``treated``, as ``relational.treatments`` releases them.
    """
    if not isinstance(db, Database):
        raise AvatarTypeError(f"expected a gpu_avatar.Database, got {type(db).__name__}")
    if plan is not None:
        db = planned_database(db, plan)
    whole = db
    db, treatments, treated = set_apart(db)
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
        **{name: (data[name][db.variables(name)], db.tables[name].types)
           for name in order if name not in series_tables},
        **released_as_they_are(whole, treatments, treated),
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
    run = DatabaseRun(db, data, order, base, per_table, assignment_block_size, progress)
    run.avatarize_tables()
    result = run.result(overrides, knowingly_released)
    result.treatments, result.treated = treatments, treated
    return result
