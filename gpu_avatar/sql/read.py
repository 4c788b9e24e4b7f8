"""``Database.from_sql``: a whole schema read with its keys, by SQLAlchemy reflection.

Columns that hold an identity without being keys are identifiers (fresh values in the
release: ``avatar_<i>``, new integers or UUIDs, never an original value) unless ``types`` says
otherwise: UUID columns, and columns of numbers or text under a single-column UNIQUE
constraint or unique index (an e-mail, a social security number: as a category, each value
would be released as it is).

Tables, primary keys and foreign keys are reflected; each foreign key becomes a link (method:
``link_method``, or the one a ``links`` entry gives it); every column's SQL type decides its
pandas dtype and so its kind (``columns.py``). Rows are fetched ``chunk_rows`` at a time from a
server-side cursor, so a table never sits in memory as Python rows, only as its columns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..encoding import IDENTIFIER
from ..errors import AvatarError, AvatarTypeError, FixableError, foreign_words
from ..parameters import check_integer
from ..progress import ProgressLike, Steps
from ..relational.schema import Database
from . import READ_CHUNK_ROWS
from .columns import TABLES_FIX, family, to_dates, to_series
from .connection import create_engine, identity, one_line, shown

logger = logging.getLogger("gpu_avatar")

LINK_ENTRY = ("parent", "child", "foreign_key")


def _names(given: Any, argument: str) -> list[str] | None:
    if given is None:
        return None
    if isinstance(given, str) or not isinstance(given, Sequence):
        raise AvatarTypeError(f"{argument} must be a list of table names, got {given!r}")
    return [str(name) for name in given]


def _mapping(given: Any, argument: str) -> dict:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise AvatarTypeError(f"{argument} must map table names to values, got {given!r}")
    return {str(name): value for name, value in given.items()}


def _primary_key(table, chosen: str | None) -> str:
    name = table.name
    if chosen is not None:
        if chosen not in table.columns:
            raise AvatarError(
                f"primary_keys[{name!r}] = {chosen!r} is not a column of {name!r} (columns: "
                f"{list(table.columns.keys())})"
            )
        return chosen
    declared = list(table.primary_key.columns.keys())
    if not declared:
        raise FixableError(f"table {name!r} has no primary key", {
            entry: f"name a column of unique values with {named}, or leave the table out "
                   f"with {TABLES_FIX[entry]}"
            for entry, named in _key_fixes(name).items()
        })
    if len(declared) > 1:
        raise FixableError(
            f"table {name!r} has a composite primary key {declared}, which is not supported", {
                entry: "add a column of unique values (an integer key numbering the rows) and "
                       f"name it with {named}" for entry, named in _key_fixes(name).items()
            })
    return declared[0]


def _key_fixes(table: str) -> dict[str, str]:
    """How each entry point names a table's primary key."""
    return {"python": f"primary_keys={{{table!r}: 'column'}}",
            "cli": f"--primary-key {table}=COLUMN",
            "yaml": f"tables: {{{table}: {{primary_key: COLUMN}}}}"}


def _declared_links(table, keys: dict[str, str]) -> list[tuple[str, str, str]]:
    """(parent, child, foreign key) of each foreign key of ``table``, refused where the
    library cannot relink it."""
    links = []
    for constraint in table.foreign_key_constraints:
        columns = [column.name for column in constraint.columns]
        parent = constraint.referred_table.name
        referred = [element.column.name for element in constraint.elements]
        where = f"foreign key {table.name}({', '.join(columns)}) -> {parent}"
        if len(columns) > 1:
            raise AvatarError(
                f"{where}({', '.join(referred)}) is composite, which is not supported: refer "
                f"to a single-column key of {parent!r} instead"
            )
        if parent == table.name:
            raise AvatarError(
                f"{where}.{referred[0]}: table {parent!r} refers to itself, which is not "
                "supported (a database must be a directed acyclic graph of parent -> child "
                "links); drop the constraint, or read the table through a view without the "
                "column"
            )
        if parent not in keys:
            raise FixableError(f"{where}.{referred[0]}: {parent!r} is not among the tables read",
                               {entry: f"add it to {fix}" for entry, fix in TABLES_FIX.items()})
        if referred[0] != keys[parent]:
            raise AvatarError(
                f"{where}.{referred[0]}: refers to a column that is not the primary key of "
                f"{parent!r} ({keys[parent]!r}); only links to a primary key are supported"
            )
        links.append((parent, table.name, columns[0]))
    return links


def _identifying(inspector, table, families: dict[str, str], keys: set[str]) -> dict[str, str]:
    """The identifier columns of ``table`` (module docstring); ``keys``: its key columns.
    SQLite's UNIQUE columns are found by their automatic indexes: SQLAlchemy does not parse
    every column constraint of its CREATE TABLE (``email VARCHAR(40) UNIQUE``)."""
    where = {"schema": table.schema}
    unique = inspector.get_unique_constraints(table.name, **where) + [
        index for index in inspector.get_indexes(table.name, include_auto_indexes=True, **where)
        if index["unique"]]
    unique = {entry["column_names"][0] for entry in unique if len(entry["column_names"]) == 1}
    return {name: IDENTIFIER for name, kind in families.items() if name not in keys and (
        kind == "uuid" or name in unique and kind in ("integer", "float", "numeric", "text"))}


def _families(table) -> dict[str, str]:
    return {c.name: family(c.type, f"{table.name}.{c.name}") for c in table.columns}


def _read_rows(connection, table, kinds: dict[str, str], primary_key: str, keys: set[str],
               chunk_rows: int):
    """Every row of ``table`` as a DataFrame, ordered by its primary key, ``chunk_rows`` rows
    of Python objects at a time (``kinds``: its columns' families; ``keys``: its key columns,
    integers kept exact)."""
    import sqlalchemy as sa

    names = list(table.columns.keys())
    dated = [name for name in names if kinds[name] in ("date", "datetime")]

    def column(values: list, name: str) -> pd.Series:
        try:
            return to_series(values, kinds[name], name, key=name in keys)
        except (ValueError, TypeError, OverflowError) as error:
            raise AvatarError(
                f"column {table.name}.{name} ({table.c[name].type}) holds a value that is not "
                f"of its type ({foreign_words(error)}); fix or convert it in the database"
            ) from None

    # dates and times as the driver gives them: SQLAlchemy's own SQLite reading refuses
    # 31/12/1980 and drops a UTC offset; they are read once their column is whole
    selected = [sa.type_coerce(c, sa.String).label(c.name) if c.name in dated else c
                for c in table.columns]
    parts: dict[str, list[pd.Series]] = {name: [] for name in names}
    statement = sa.select(*selected).order_by(table.c[primary_key])
    result = connection.execution_options(stream_results=True, max_row_buffer=chunk_rows)
    for rows in result.execute(statement).partitions(chunk_rows):
        for name, values in zip(names, zip(*rows, strict=True), strict=True):
            parts[name].append(column(list(values), name))
    if not parts[names[0]]:
        data = pd.DataFrame({name: column([], name) for name in names})
    else:  # concatenated chunk by chunk: an integer column with NULLs in one chunk ends float
        data = pd.DataFrame({name: pd.concat(parts.pop(name), ignore_index=True)
                             for name in names})
    for name in dated:
        zoned = bool(getattr(table.c[name].type, "timezone", False))
        data[name] = to_dates(data[name], zoned, f"{table.name}.{name}")
    return data


def read_database(
    url: Any,
    schema: str | None = None,
    tables: Sequence[str] | None = None,
    primary_keys: Mapping[str, str] | None = None,
    links: Sequence[Mapping[str, Any]] | None = None,
    *,
    link_method: str = "linear_sum_assignment",
    types: Mapping[str, Mapping[Any, str]] | None = None,
    chunk_rows: int = READ_CHUNK_ROWS,
    progress: ProgressLike = None,
) -> Database:
    """``Database.from_sql``: the database at ``url`` (see there and the module docstring)."""
    import sqlalchemy as sa

    wanted = _names(tables, "tables")
    primary_keys = _mapping(primary_keys, "primary_keys")
    types = _mapping(types, "types")
    check_integer("chunk_rows", chunk_rows, 1)
    extra_links = list(links or [])
    engine = create_engine(url, must_exist=True)
    where = shown(url) + (f" (schema {schema!r})" if schema else "")
    steps = Steps(progress, "Database.from_sql", total=len(wanted) if wanted else None)
    try:
        with engine.connect() as connection:
            if connection.dialect.name == "postgresql":  # one snapshot for every table
                connection = connection.execution_options(isolation_level="REPEATABLE READ")
            inspector = sa.inspect(connection)
            present = inspector.get_table_names(schema=schema)
            views = inspector.get_view_names(schema=schema)
            if wanted is None:
                wanted = present
            unknown = [name for name in wanted if name not in present and name not in views]
            if unknown:
                raise AvatarError(f"{where} has no table {unknown}; its tables: {present}"
                                  + (f", its views: {views}" if views else ""))
            if not wanted:
                raise AvatarError(f"{where} holds no table")
            for argument, names in (("primary_keys", primary_keys), ("types", types)):
                stray = [name for name in names if name not in wanted]
                if stray:
                    raise AvatarError(f"{argument} names table(s) {stray} that are not read")
            metadata = sa.MetaData()
            reflected = {
                name: sa.Table(name, metadata, autoload_with=connection, schema=schema)
                for name in wanted
            }
            keys = {name: _primary_key(t, primary_keys.get(name)) for name, t in reflected.items()}
            declared = [link for t in reflected.values() for link in _declared_links(t, keys)]
            entries = _link_entries(extra_links, declared)
            linked = {(child, key) for _, child, key in declared} | set(entries)
            # every column type checked before any row is read
            families = {name: _families(table) for name, table in reflected.items()}
            db = Database()
            for name, table in reflected.items():
                steps.start(f"read {name}")
                keyed = {keys[name]} | {key for child, key in linked if child == name}
                data = _read_rows(connection, table, families[name], keys[name], keyed,
                                  chunk_rows)
                logger.info("read table %s (%d rows) from %s", name, len(data), where)
                identifiers = _identifying(inspector, table, families[name], keyed)
                db.add_table(name, data, keys[name],
                             types={**identifiers, **types.get(name, {})})
                table.info["dialect"] = connection.dialect.name  # to_sql keeps its types
                table.info["source"] = (identity(url), schema)  # and never writes over it
                db.tables[name].sql = table
                steps.advance()
    except sa.exc.DBAPIError as error:  # a permission, a lost connection...: one line
        raise AvatarError(f"reading {where} failed: {one_line(error, url)}") from None
    finally:
        steps.close()
        engine.dispose()
    for parent, child, foreign_key in declared:
        entry = entries.pop((child, foreign_key), {})
        db.add_link(parent, keys[parent], child, foreign_key,
                    method=entry.get("method", link_method),
                    drop_orphans=entry.get("drop_orphans", False))
    for (child, foreign_key), entry in entries.items():  # links the schema does not declare
        db.add_link(entry["parent"], entry.get("parent_key", keys.get(entry["parent"])), child,
                    foreign_key, method=entry.get("method", link_method),
                    drop_orphans=entry.get("drop_orphans", False))
    return db


def _link_entries(entries: list, declared: list[tuple[str, str, str]]) -> dict:
    """The ``links`` entries by (child, foreign key), checked against the declared links."""
    parents = {(child, key): parent for parent, child, key in declared}
    out = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or any(key not in entry for key in LINK_ENTRY):
            raise AvatarError(
                f"links[{index}] must be a mapping with keys {list(LINK_ENTRY)} (and optionally "
                f"method, parent_key, drop_orphans), got {entry!r}"
            )
        key = (str(entry["child"]), str(entry["foreign_key"]))
        if key in parents and parents[key] != entry["parent"]:
            raise AvatarError(
                f"links[{index}]: {key[0]}.{key[1]} refers to {parents[key]!r} in the database, "
                f"not to {entry['parent']!r}"
            )
        out[key] = dict(entry)
    return out
