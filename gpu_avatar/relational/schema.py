"""Declaring a relational database: tables with primary keys, links parent -> child.

``Database.validate()`` runs every check of docs/spec/multitable.md, section 1, and raises an
``AvatarError`` naming the table and column: unknown tables or columns, empty tables, primary
keys not unique or null, a primary key used as a foreign key, the same parent referenced twice
by one child, cycles, a foreign key whose values are not of its parent key's kind (text
against numbers: no value could match), and orphans (foreign key values absent from the
parent; they are counted and shown, and dropped only when the link says
``drop_orphans=True``). A missing foreign key is not an orphan: the row is a child without a
parent, kept, and its avatar may have none too. Where the fix depends on the entry point
(Python, the command line, a YAML file), the error is a ``FixableError`` worded for each.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.kinds import check_structure
from ..errors import (
    AvatarError,
    AvatarTypeError,
    FixableError,
    among,
    described,
    error_context,
    rows_named,
)
from ..parameters import LINK_METHODS, check_choice, check_flag, check_types, column_kind
from ..planning.model import TREATMENTS
from ..rules import RuleSet, across_children

_EXAMPLES = 5
_KEY_KINDS = {"integer": "numbers", "floating": "numbers", "mixed-integer-float": "numbers",
              "decimal": "numbers", "string": "text", "boolean": "booleans",
              "datetime64": "dates", "datetime": "dates", "date": "dates"}


def key_kind(values: pd.Series) -> str | None:
    """What a key column holds, "numbers", "text", "booleans" or "dates", to compare a
    foreign key with its parent key (None: nothing to compare, or a mix)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Series(values.cat.categories)
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "booleans"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numbers"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "dates"
    return _KEY_KINDS.get(pd.api.types.infer_dtype(values, skipna=True))


@dataclass
class Table:
    """One table: its data, primary key, whether one row is one person, column kinds."""

    name: str
    data: pd.DataFrame = field(repr=False)
    primary_key: str
    individual_level: bool | None = None  # None: True when the table has no parent
    types: dict[Any, str] = field(default_factory=dict)
    sql: Any = field(default=None, repr=False)  # the reflected sqlalchemy.Table (from_sql)
    time: Any = None  # the time column of a time-series table
    rules: RuleSet | None = None  # the rules its released rows keep
    treatment: str = "anonymize"  # planning.model.TREATMENTS: avatars, or set apart


@dataclass
class Link:
    """``child[foreign_key]`` refers to ``parent[parent_key]``, linked back by ``method``."""

    parent: str
    parent_key: str
    child: str
    foreign_key: str
    method: str = "linear_sum_assignment"
    drop_orphans: bool = False
    series_options: tuple = (None, None, "fpca")  # n_points, n_components, projection


@dataclass
class Entity:
    """One person (or thing) identified in several tables that no link joins: ``columns``
    (table -> column) get one pseudonym per original value, the same in every table."""

    name: str
    columns: dict[str, Any]
    pseudonym: str  # its checked text form, ``pseudonym:STRATEGY...``


_PLURALS = {"table": "tables", "link": "links", "entity": "entities"}


class Database:
    """Tables and links to avatarize together (see ``avatarize_database``)."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.links: list[Link] = []
        self.entities: dict[str, Entity] = {}

    def __repr__(self) -> str:
        """The tables (rows x columns, primary key), links and entities: no data value."""
        counts = [(len(self.tables), "table"), (len(self.links), "link"),
                  (len(self.entities), "entity")]
        lines = ["Database: " + (", ".join(f"{n} {word if n == 1 else _PLURALS[word]}"
                                           for n, word in counts if n) or "no table")]
        lines += [f"  table {t.name!r}: {len(t.data):,} rows x {t.data.shape[1]} columns, "
                  f"primary key {t.primary_key!r}" for t in self.tables.values()]
        lines += [f"  link {k.parent}.{k.parent_key} <- {k.child}.{k.foreign_key} ({k.method})"
                  for k in self.links]
        lines += [f"  entity {e.name!r}: " + ", ".join(f"{t}.{c}" for t, c in e.columns.items())
                  for e in self.entities.values()]
        return "\n".join(lines)

    @classmethod
    def from_sql(cls, url: Any, *args: Any, **options: Any) -> Database:
        """Read a whole database from a SQLAlchemy ``url`` (``sqlite:///file.db``;
        ``postgresql://user:password@host/db`` with the ``postgres`` extra): its tables,
        primary keys and foreign keys (each one a link).

        ``from_sql(url, schema=None, tables=None, primary_keys=None, links=None, *,
        link_method="linear_sum_assignment", types=None, chunk_rows=READ_CHUNK_ROWS,
        progress=None)``:
        ``tables`` reads some of them; ``primary_keys`` names the key of a table that declares
        none; ``links`` entries (``{"parent", "child", "foreign_key", "method"}``) set one
        foreign key's method, or add a link the database does not declare (see
        ``suggest_links``); ``types`` overrides column kinds per table. A NULL foreign key is a
        child without a parent. Composite keys, self-references and column types with no kind
        are refused, naming them. See ``gpu_avatar.sql.read``.
        """
        from ..sql.read import read_database

        return read_database(url, *args, **options)

    def suggest_links(self, min_containment: float = 0.95):
        """Links this database does not declare, proposed from key names and values; see
        ``relational.suggest``. Nothing is applied: add the ones you accept with add_link."""
        from .suggest import suggest_links

        return suggest_links(self, min_containment=min_containment)

    def add_table(
        self,
        name: str,
        data: pd.DataFrame,
        primary_key: str,
        individual_level: bool | None = None,
        types: Mapping[Any, str] | None = None,
        time: Any = None,
        rules: Any = None,
        treatment: str = "anonymize",
    ) -> Database:
        """Declare a table; ``types`` as in ``avatarize`` for its variables; ``time`` names
        the time column of a table of time series (then linked with ``method="time_series"``).
        ``treatment``: ``anonymize`` (avatars), or as ``relational.treatments`` sets a table
        apart: ``copy``, ``pseudonymize``, ``purge`` or ``ignore``.
        ``rules`` (``gpu_avatar.rules``, as ``avatarize`` takes them) hold on its released
        rows: those within its rows when it is avatarized, those across a parent's children
        (``by``: a foreign key) once it is relinked; checked on ``data`` here.
        """
        if name in self.tables:
            raise AvatarError(f"table {name!r} is already declared")
        if not isinstance(data, pd.DataFrame):
            raise AvatarTypeError(
                f"table {name!r}: expected a DataFrame, got {type(data).__name__}"
            )
        check_structure(data, f"table {name!r}")
        if individual_level is not None:
            individual_level = check_flag(f"table {name!r}: individual_level", individual_level)
        if not isinstance(primary_key, Hashable):
            raise AvatarTypeError(
                f"table {name!r}: primary_key must be one column name, got {primary_key!r} "
                "(composite keys are not supported)"
            )
        if primary_key not in data.columns:
            raise AvatarError(
                f"table {name!r}: primary key {primary_key!r} is not a column "
                f"(columns: {list(data.columns)})"
            )
        types = check_types(types, f"table {name!r}: types")
        for column in types:
            if column not in data.columns:
                raise AvatarError(f"table {name!r}: types names unknown column {column!r}; "
                                  f"columns: {among(data.columns, [column])}")
        if time is not None and (time not in data.columns or time == primary_key):
            raise AvatarError(
                f"table {name!r}: time={time!r} must name a column other than the primary key "
                f"(columns: {list(data.columns)})"
            )
        rules = _checked_rules(name, data, time, rules)
        treatment = check_choice(f"table {name!r}: treatment", treatment, tuple(TREATMENTS))
        self.tables[name] = Table(name, data, primary_key, individual_level, types, time=time,
                                  rules=rules, treatment=treatment)
        return self

    def add_rules(self, name: str, rules: Any) -> Database:
        """Declare the rules of table ``name`` (added first; as ``add_table`` takes them)."""
        if name not in self.tables:
            raise AvatarError(f"rules of table {name!r}: no such table; add_table first")
        table = self.tables[name]
        table.rules = _checked_rules(name, table.data, table.time, rules)
        return self

    def add_entity(self, name: str, columns: Mapping[str, Any],
                   pseudonym: Any = "pseudonym:integer") -> Database:
        """Declare that ``columns`` (table -> column, tables added first) identify one
        person in several tables without a link between them, e.g. ``add_entity("patient",
        columns={"lab": "patient_id", "pharmacy": "pid"})``: each original value gets one
        pseudonym (``pseudonym``, a ``Pseudonym`` or its text form: a strategy by value, such
        as ``pseudonym:hmac:key_env=GA_KEY``), the same in all of them, so the released
        tables still join. A primary key may be one of them (its children's foreign keys take
        its pseudonyms); a foreign key may not (it takes its parent's key: checked when the
        database is validated)."""
        where = f"entity {name!r}"
        if name in self.entities:
            raise AvatarError(f"{where} is already declared")
        if not isinstance(columns, Mapping) or not columns:
            raise AvatarTypeError(f"{where}: columns must map table names to a column each, "
                                  f"e.g. {{'lab': 'patient_id', 'pharmacy': 'pid'}}; got "
                                  f"{columns!r}")
        declared = check_types({name: pseudonym}, f"{where}: pseudonym")[name]
        if not declared.startswith("pseudonym:") or declared.startswith("pseudonym:constant"):
            raise AvatarError(
                f"{where}: pseudonym={pseudonym!r} gives no pseudonym by value; an entity "
                "needs one per original value, e.g. 'pseudonym:integer' or "
                "'pseudonym:hmac:key_env=GA_KEY'")
        taken = {(t, c): e.name for e in self.entities.values() for t, c in e.columns.items()}
        for table, column in columns.items():
            if table not in self.tables:
                raise AvatarError(f"{where}: unknown table {table!r}; add_table it first "
                                  f"(tables: {list(self.tables)})")
            if column not in self.tables[table].data.columns:
                raise AvatarError(f"{where}: table {table!r} has no column {column!r}")
            if (table, column) in taken:
                raise AvatarError(f"{where}: {table}.{column} is already in entity "
                                  f"{taken[(table, column)]!r}")
            kind = self.tables[table].types.get(column)
            if column_kind(kind) not in (None, "identifier"):
                raise AvatarError(f"{where}: {table}.{column} is declared {kind!r}; an "
                                  "entity's columns are identifiers")
        self.entities[name] = Entity(name, dict(columns), declared)
        for table, column in columns.items():
            self.tables[table].types[column] = declared
        return self

    def pseudonymized(self) -> dict[tuple[str, Any], str]:
        """Every column released as pseudonyms of its values, (table, column) -> the entity
        sharing them, or None for a column of its own."""
        shared = {(t, c): e.name for e in self.entities.values() for t, c in e.columns.items()}
        return {(name, column): shared.get((name, column))
                for name, table in self.tables.items()
                for column, declared in table.types.items()
                if column_kind(declared) == "identifier" and declared != "identifier"}

    def add_link(
        self,
        parent: str,
        parent_key: str,
        child: str,
        foreign_key: str,
        method: str = "linear_sum_assignment",
        drop_orphans: bool = False,
        *,
        n_points: int | None = None,
        n_components: int | None = None,
        projection: str = "fpca",
    ) -> Database:
        """Declare ``child[foreign_key] -> parent[parent_key]`` and how to relink avatars.

        ``method``: "linear_sum_assignment" (default), "minimum_distance",
        "original_order" (keeps each child with its own individual's avatar: sensitive) or
        "time_series" (the child, declared with ``time=``, holds each parent's curves; they
        are avatarized with the parent, see ``relational.time_series``: ``n_points`` (grid
        size, default the median series length), ``n_components`` (FPCA scores per variable,
        default 95 % of the variance, at most 10), ``projection`` "fpca" or "flatten").
        ``drop_orphans=True`` drops child rows whose key has no parent instead of failing.
        """
        for table in (parent, child):
            if table not in self.tables:
                raise FixableError(f"link {parent}->{child}: unknown table {table!r}", {
                    "python": "add it first (add_table)",
                    "yaml": "declare it under tables (or, for a url, in include)",
                })
        with error_context(f"link {parent}->{child}"):
            check_choice("method", method, LINK_METHODS)
        if parent_key != self.tables[parent].primary_key:
            raise AvatarError(
                f"link {parent}->{child}: {parent_key!r} is not the primary key of {parent!r} "
                f"({self.tables[parent].primary_key!r})"
            )
        if foreign_key not in self.tables[child].data.columns:
            raise AvatarError(f"link {parent}->{child}: {child!r} has no column {foreign_key!r}")
        if foreign_key == self.tables[child].primary_key:
            raise AvatarError(
                f"link {parent}->{child}: {foreign_key!r} is the primary key of {child!r}; a "
                "primary key cannot also be a foreign key"
            )
        if any(link.child == child and link.parent == parent for link in self.links):
            raise AvatarError(
                f"table {child!r} already refers to {parent!r}; referencing the same parent "
                "twice from one child is not supported"
            )
        if any(link.child == child and link.foreign_key == foreign_key for link in self.links):
            raise AvatarError(f"{child}.{foreign_key} is already a foreign key of another link")
        if method == "original_order":
            warnings.warn(
                f"link {parent}->{child} uses method='original_order': each avatar child keeps "
                "its original individual's avatar as parent, which preserves exact "
                "cardinalities but is the weakest for privacy",
                UserWarning,
                stacklevel=2,
            )
        drop_orphans = check_flag(f"link {parent}->{child}: drop_orphans", drop_orphans)
        options = (n_points, n_components, projection)
        with error_context(f"link {parent}->{child}"):
            if method == "time_series":
                options = self._check_series_link(parent, child, foreign_key, options)
            elif options != (None, None, "fpca"):
                raise FixableError("n_points, n_components and projection go with time series",
                                   {"python": "method='time_series'",
                                    "yaml": "method: time_series"})
        self.links.append(
            Link(parent, parent_key, child, foreign_key, method, drop_orphans, options)
        )
        return self

    def _check_series_link(self, parent: str, child: str, foreign_key: Any, options: tuple):
        """The checked options of a time-series link; its child holds series only."""
        from .time_series import check_series_options, check_series_table

        options = check_series_options(*options)
        table = self.tables[child]
        check_series_table(
            f"table {child!r}", table.data, table.primary_key, foreign_key, table.time,
            table.types,
        )
        return options

    # ----------------------------------------------------------------- structure
    def parents_of(self, table: str) -> list[Link]:
        return [link for link in self.links if link.child == table]

    def children_of(self, table: str) -> list[Link]:
        return [link for link in self.links if link.parent == table]

    def is_individual_level(self, table: str) -> bool:
        declared = self.tables[table].individual_level
        return not self.parents_of(table) if declared is None else bool(declared)

    def foreign_keys(self, table: str) -> list[str]:
        return [link.foreign_key for link in self.parents_of(table)]

    def variables(self, table: str) -> list[Any]:
        """Columns that are neither the primary key nor a foreign key, nor dropped from the
        release (``types``)."""
        keys = {self.tables[table].primary_key, *self.foreign_keys(table)}
        types = self.tables[table].types
        return [c for c in self.tables[table].data.columns
                if c not in keys and column_kind(types.get(c)) != "dropped"]

    def released_columns(self, table: str) -> list[Any]:
        """The columns of the table's avatars: all but the dropped ones."""
        types = self.tables[table].types
        return [c for c in self.tables[table].data.columns
                if column_kind(types.get(c)) != "dropped"]

    def topological_order(self) -> list[str]:
        """Tables with parents after their parents (declaration order among equals)."""
        remaining = list(self.tables)
        order: list[str] = []
        while remaining:
            ready = [t for t in remaining if all(p.parent in order for p in self.parents_of(t))]
            if not ready:
                raise AvatarError(
                    f"the links form a cycle among tables {remaining}; a database must be a "
                    "directed acyclic graph of parent -> child links"
                )
            order.extend(ready)
            remaining = [t for t in remaining if t not in ready]
        return order

    # ---------------------------------------------------------------- validation
    def validate(self) -> dict[str, pd.DataFrame]:
        """Check everything; return the tables to use (orphans dropped where asked)."""
        if not self.tables:
            raise AvatarError("the database has no table; call add_table first")
        self.topological_order()
        series = {link.child for link in self.links if link.method == "time_series"}
        pseudonymized = self.pseudonymized()  # (table, column) -> entity, once
        for name, table in self.tables.items():
            if table.time is not None and name not in series:
                raise FixableError(
                    f"table {name!r} declares time={table.time!r} but no parent links it as "
                    "time series", {
                        "python": f"add_link(PARENT, KEY, {name!r}, FOREIGN_KEY, "
                                  "method='time_series')",
                        "yaml": f"links: - {{parent: PARENT, child: {name}, foreign_key: "
                                "FOREIGN_KEY, method: time_series}",
                    })
            self._check_rules(name)
            own = [c for (t, c) in pseudonymized if t == name]
            foreign = [c for c in own if c in self.foreign_keys(name)]
            if foreign:
                raise AvatarError(
                    f"table {name!r}: {foreign} are foreign keys, which take their parent's "
                    "key: give the parent's primary key the pseudonyms (or the entity) instead")
            rebuilt = own + [c for c, kind in table.types.items()
                             if column_kind(kind) == "excluded"]
            if name in series and rebuilt:
                raise AvatarError(
                    f"table {name!r} holds time series rebuilt for the avatars: its rows are "
                    f"no original's, so {rebuilt} can carry neither pseudonyms nor values of "
                    "original rows; declare them 'identifier' (fresh values) or 'dropped'")
            if name in series and len(self.parents_of(name)) + len(self.children_of(name)) > 1:
                raise AvatarError(
                    f"a time-series table ({name!r}) has one parent and no child; link the "
                    "others to its parent"
                )
        data = {}
        for name, table in self.tables.items():
            if table.data.empty:
                raise FixableError(f"table {name!r} is empty: no row to avatarize", {
                    "python": "add its rows, or leave it out of the database (no add_table)",
                    "yaml": "give it rows, or leave it out of the file's tables",
                    "cli": "give it rows, or leave it out (--tables: the others)"})
            key = table.data[table.primary_key]
            if key.isna().any():  # a row without a key can be neither linked nor released
                raise FixableError(
                    f"table {name!r}: primary key {table.primary_key!r} is missing in "
                    f"{int(key.isna().sum())} row(s)", {
                        "python": "give those rows a key, or drop them: "
                                  f"data.dropna(subset=[{table.primary_key!r}])",
                        "yaml": "give those rows a key, or delete them from the source",
                        "cli": "give those rows a key, or delete them from the source"})
            repeated = key.duplicated(keep=False).to_numpy()
            if repeated.any():  # the values themselves are a person's: never quoted
                rows = rows_named(np.flatnonzero(repeated)[:_EXAMPLES] + 1, int(repeated.sum()))
                raise AvatarError(
                    f"table {name!r}: primary key {table.primary_key!r} is not unique "
                    f"({key[repeated].nunique()} repeated value(s), in {rows} by position); "
                    "name a unique key, or remove the repeated rows"
                )
            data[name] = table.data
        for name in self.topological_order():
            for link in self.parents_of(name):
                data[name] = self._check_orphans(link, data[name], data[link.parent])
        return data

    def _check_rules(self, name: str) -> None:
        """Refuse a rule of table ``name`` across children whose ``by`` is no foreign key of
        it, and any other column a rule names that is not a variable (a key, a dropped
        column): the method draws no value there."""
        table, keys = self.tables[name], self.foreign_keys(name)
        for rule in table.rules.rules if table.rules is not None else ():
            by = (rule.by,) if across_children(rule) else ()
            if by and rule.by not in keys:
                raise rule.error(
                    f"table {name!r}: by={rule.by!r} is no foreign key of the table (its "
                    f"foreign keys: {keys})",
                    "name as by the foreign key of a link to the table (add_link)",
                    "name as by the foreign_key of one of the links to the table")
            others = [c for c in rule.columns if c not in by and c not in self.variables(name)]
            if others:
                raise rule.error(f"table {name!r}: {others} are keys or dropped columns, "
                                 "which the method does not avatarize",
                                 "name the table's variables only")

    def _check_orphans(self, link: Link, child: pd.DataFrame, parent: pd.DataFrame) -> pd.DataFrame:
        self._check_key_kinds(link, child[link.foreign_key], parent[link.parent_key])
        keys = child[link.foreign_key]
        orphan = ~keys.isin(parent[link.parent_key]).to_numpy() & keys.notna().to_numpy()
        if not orphan.any():
            return child
        rows = rows_named(np.flatnonzero(orphan)[:_EXAMPLES] + 1, int(orphan.sum()))
        message = (
            f"{int(orphan.sum())} row(s) of {link.child!r} have a {link.foreign_key!r} absent "
            f"from {link.parent}.{link.parent_key} ({rows}, by position)"
        )
        if not link.drop_orphans:
            entry = (f"{{parent: {link.parent}, child: {link.child}, foreign_key: "
                     f"{link.foreign_key}, drop_orphans: true}}")
            raise FixableError(message, {
                "python": "fix the data, or pass drop_orphans=True to add_link to drop them",
                "cli": "fix the data, or drop them: declare the link in a YAML file (url: and "
                       f"links: - {entry}, see gpu_avatar.relational.config)",
                "yaml": f"fix the data, or drop them: links: - {entry}",
            })
        warnings.warn(message + "; dropped (drop_orphans)", UserWarning, stacklevel=3)
        return child.loc[~orphan]

    def _check_key_kinds(self, link: Link, keys: pd.Series, parent_keys: pd.Series) -> None:
        """Refuse a foreign key whose values cannot match its parent key's (text against
        numbers, say): a type to cast, not orphans to drop."""
        kind, parent_kind = key_kind(keys.dropna()), key_kind(parent_keys)
        if kind is None or parent_kind is None or kind == parent_kind:
            return
        where = f"{link.child}.{link.foreign_key}"
        parent_key = f"{link.parent}.{link.parent_key}"
        source = self.tables[link.parent].sql
        sql_type = source.c[link.parent_key].type if source is not None else None
        cast = (f"declare and store {where} as {sql_type}, the type of {parent_key}, in the "
                "database" if sql_type is not None
                else f"write {where} as {parent_kind}, like {parent_key}, in its file")
        raise FixableError(
            f"link {link.parent}->{link.child}: {where} holds {kind} (e.g. "
            f"{described(keys.dropna().iloc[0])}) but {parent_key} holds {parent_kind}, so no "
            "value can match (a type mismatch, not orphans)", {
                "python": f"cast the column to the type of {parent_key} "
                          f"({parent_keys.dtype}) first, e.g. with astype or pd.to_numeric",
                "cli": f"cast the column: {cast}",
                "yaml": f"cast the column: {cast}",
            })


def _checked_rules(name: str, data: pd.DataFrame, time: Any, rules: Any) -> RuleSet | None:
    """The rules of table ``name`` (``RuleSet.of``), checked on its ``data``; refused on a
    time-series table."""
    rules = RuleSet.of(rules, f"table {name!r}: rules")
    if rules is not None:
        if time is not None:
            raise AvatarError(f"table {name!r}: its series are rebuilt, not avatarized row by "
                              "row, so rules cannot be held on them; drop the rules")
        with error_context(f"table {name!r}"):
            rules.check(data)
    return rules


NO_PARENT = -1  # the parent position of a child without a parent (a missing foreign key)


def parent_rows(
    child: pd.DataFrame, foreign_key: str, parent: pd.DataFrame, key: str
) -> np.ndarray:
    """For every child row, the position of its parent row, ``NO_PARENT`` where the foreign
    key is missing (keys validated beforehand)."""
    rows = pd.Index(parent[key]).get_indexer(child[foreign_key])
    rows[child[foreign_key].isna().to_numpy()] = NO_PARENT
    return rows


def take_parents(parent: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """The parent row of every child (positions ``rows``), missing values for a child
    without a parent; a fresh index."""
    taken = parent.iloc[np.maximum(rows, 0)].reset_index(drop=True)
    orphaned = rows == NO_PARENT
    return taken.mask(pd.Series(orphaned), axis=0) if orphaned.any() else taken


def children_counts(rows: np.ndarray, n_parents: int) -> np.ndarray:
    """Children of every parent (positions ``rows``; children without a parent left out)."""
    return np.bincount(rows[rows != NO_PARENT], minlength=n_parents)
