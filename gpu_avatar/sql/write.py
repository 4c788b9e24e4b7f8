"""``result.to_sql``: the avatar tables written as a database with the source's constraints.

Tables are created parent before child with the same column types (the reflected types when
source and target are the same kind of database, their generic SQLAlchemy form otherwise; types
chosen from the dtypes for tables that came from no database), the same primary keys, NOT NULL
columns and foreign keys, then filled ``chunk_rows`` rows at a time. Everything happens in one
transaction: a write that fails leaves the target as it was.
"""

from __future__ import annotations

import logging
import uuid
import warnings
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from ..encoding import IDENTIFIER
from ..errors import AvatarError, AvatarTypeError
from ..parameters import check_choice, check_integer, column_kind
from ..progress import ProgressLike, Steps
from ..relational.results import DatabaseAvatarizationResult
from . import WRITE_CHUNK_ROWS
from .columns import family, sql_type_of, to_values
from .connection import create_engine, identity, one_line, parse_url, shown

logger = logging.getLogger("gpu_avatar")

IF_EXISTS = ("fail", "replace")


@dataclass
class _Column:
    name: Any
    sql_type: Any
    family: str
    nullable: bool
    uuid_scope: uuid.UUID | None = None  # the namespace of a UUID column's fresh values


def _source_type(reflected, source_dialect: str, dialect: str):
    """A reflected column's type for the target: itself on the same kind of database, its
    generic form elsewhere (SQLite's INTEGER is 64 bits: BIGINT); an enum keeps its name and
    labels and takes the target's schema."""
    import sqlalchemy as sa

    sql_type = reflected.type
    generic = sql_type.as_generic() if source_dialect != dialect else sql_type
    if isinstance(generic, sa.Enum):
        name = getattr(sql_type, "name", None) or f"{reflected.table.name}_{reflected.name}"
        return sa.Enum(*generic.enums, name=name)  # in the schema of its table's metadata
    if source_dialect == "sqlite" and type(generic) is sa.Integer and source_dialect != dialect:
        return sa.BigInteger()
    return generic


def _widened(name: str, column: _Column, values: pd.Series, what: str) -> _Column:
    """A text key or identifier (``what``) too narrow for the fresh identifiers
    ("avatar_<i>"), widened with a warning, rather than a release refused."""
    import sqlalchemy as sa

    length = getattr(column.sql_type, "length", None)
    lengths = values.dropna().astype(str).str.len()
    longest = int(lengths.max()) if len(lengths) else 0
    if column.family != "text" or not length or longest <= length:
        return column
    warnings.warn(
        f"avatar table {name!r}: {what} {column.name!r} ({column.sql_type}) is widened to "
        f"VARCHAR({longest}) in the target for the fresh identifiers ('avatar_<i>')",
        UserWarning, stacklevel=4,
    )
    return replace(column, sql_type=sa.String(longest))


def _columns(result, name: str, dialect: str, keys: dict[str, _Column]) -> list[_Column]:
    """Each avatar column of table ``name``: its SQL type (as in the source where there is
    one; a foreign key's that of the parent key it refers to), nullability and UUID scope.
    ``keys``: the primary key columns of the tables before it."""
    db = result.database
    table = db.tables[name]
    data = result.tables[name]
    source = table.sql
    parents = {link.foreign_key: link.parent for link in db.parents_of(name)}
    release = uuid.uuid5(uuid.NAMESPACE_OID, f"gpu_avatar.release.{result.parameters.seed}")
    out = []
    for column in data.columns:
        reflected = source.c[column] if source is not None and column in source.c else None
        if reflected is not None:
            sql_type = _source_type(reflected, source.info.get("dialect"), dialect)
            nullable = reflected.nullable
        elif column in parents:
            sql_type, nullable = keys[parents[column]].sql_type, True
        else:
            sql_type, nullable = sql_type_of(data[column]), column != table.primary_key
        owner = f"{parents[column]}.{db.tables[parents[column]].primary_key}" \
            if column in parents else f"{name}.{column}"  # a foreign key: its parent's UUIDs
        described = _Column(column, sql_type, family(sql_type, f"{name}.{column}"), nullable,
                            uuid.uuid5(release, owner))
        if column == table.primary_key:
            described = keys[name] = _widened(name, described, data[column], "key")
        elif column_kind(table.types.get(column)) == IDENTIFIER:
            described = _widened(name, described, data[column], "identifier")
        elif column in parents and described.family == keys[parents[column]].family == "text":
            described = replace(described, sql_type=keys[parents[column]].sql_type)
        out.append(described)
    return out


def _check_fits(name: str, data: pd.DataFrame, columns: list[_Column]) -> None:
    """Refuse, before writing anything, values the target's constraints would refuse."""
    for column in columns:
        values = data[column.name]
        if not column.nullable and values.isna().any():
            raise AvatarError(
                f"avatar table {name!r}: column {column.name!r} is NOT NULL in the target but "
                f"has {int(values.isna().sum())} missing value(s)"
            )


def _build(result, dialect: str, schema: str | None):
    """The target's tables (sqlalchemy) and their described columns, parents first."""
    import sqlalchemy as sa

    db = result.database
    metadata = sa.MetaData(schema=schema)
    tables, columns, keys = {}, {}, {}
    for name in db.topological_order():
        columns[name] = _columns(result, name, dialect, keys)
        _check_fits(name, result.tables[name], columns[name])
        parents = {link.foreign_key: link for link in db.parents_of(name)}
        tables[name] = sa.Table(name, metadata, *(
            sa.Column(
                str(c.name), c.sql_type,
                *([sa.ForeignKey(tables[parents[c.name].parent].c[parents[c.name].parent_key])]
                  if c.name in parents else []),
                primary_key=c.name == db.tables[name].primary_key,
                autoincrement=False, nullable=c.nullable,
            )
            for c in columns[name]
        ))
    release = uuid.uuid5(uuid.NAMESPACE_OID, f"gpu_avatar.release.{result.parameters.seed}")
    for name, data in result.treated.items():  # set apart by the plan: no keys to relink
        typed = {c: sql_type_of(data[c]) for c in data.columns}
        columns[name] = [_Column(c, typed[c], family(typed[c], f"{name}.{c}"), True,
                                 uuid.uuid5(release, f"{name}.{c}")) for c in data.columns]
        tables[name] = sa.Table(name, metadata, *(
            sa.Column(str(c.name), c.sql_type, nullable=True) for c in columns[name]))
    return metadata, tables, columns


def _insert(connection, table, rows) -> None:
    """Insert ``rows`` (tuples in the table's column order): PostgreSQL's COPY through
    psycopg (about 5x faster than INSERT batches), INSERT batches elsewhere."""
    keys = list(table.columns.keys())
    if connection.dialect.driver == "psycopg":
        quote = connection.dialect.identifier_preparer
        statement = (f"COPY {quote.format_table(table)} "
                     f"({', '.join(quote.quote(key) for key in keys)}) FROM STDIN")
        with connection.connection.dbapi_connection.cursor() as cursor:
            with cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
    else:
        connection.execute(table.insert(), [dict(zip(keys, row, strict=True)) for row in rows])


def _existing(connection, schema: str | None, names: list[str]) -> list[str]:
    import sqlalchemy as sa

    present = set(sa.inspect(connection).get_table_names(schema=schema))
    return [name for name in names if name in present]


def _held(target: str, existing: list[str]) -> AvatarError:
    return AvatarError(
        f"{target} already holds table(s) {existing}; write elsewhere, or replace them "
        "(if_exists='replace', or --if-exists replace)"
    )


def _refuse_referred(connection, schema: str | None, replaced: list[str], target: str) -> None:
    """Refuse to replace a table that a table of the target left as it is refers to: dropping
    it would break that table's foreign key (refused by most servers with a bare error)."""
    import sqlalchemy as sa

    inspector = sa.inspect(connection)
    for name in inspector.get_table_names(schema=schema) if replaced else ():
        referred = [key["referred_table"] for key in inspector.get_foreign_keys(name, schema)
                    if key["referred_table"] in replaced and name not in replaced]
        if referred:
            raise AvatarError(
                f"{target}: table {name!r} refers to table {referred[0]!r}, which replacing "
                f"would drop; drop {name!r} (or its foreign key) first, or write elsewhere")


def refuse_existing(url: Any, schema: str | None, names: list[str]) -> None:
    """Refuse a target that already holds one of ``names`` (before any work is done)."""
    engine = create_engine(url, must_exist=False)
    try:
        with engine.connect() as connection:
            existing = _existing(connection, schema, names)
    finally:
        engine.dispose()
    if existing:
        raise _held(shown(url) + (f" (schema {schema!r})" if schema else ""), existing)


def write_database(
    result: Any,
    url: Any,
    *,
    schema: str | None = None,
    if_exists: str = "fail",
    chunk_rows: int = WRITE_CHUNK_ROWS,
    progress: ProgressLike = None,
) -> dict[str, int]:
    """``DatabaseAvatarizationResult.to_sql``'s work (see there); the rows written per table."""
    import sqlalchemy as sa

    if not isinstance(result, DatabaseAvatarizationResult):
        raise AvatarTypeError(
            f"expected a DatabaseAvatarizationResult, got {type(result).__name__}"
        )
    check_choice("if_exists", if_exists, IF_EXISTS)
    check_integer("chunk_rows", chunk_rows, 1)
    db = result.database
    order = db.topological_order() + list(result.treated)
    target = shown(url) + (f" (schema {schema!r})" if schema else "")
    sources = {db.tables[name].sql.info.get("source") for name in db.topological_order()
               if db.tables[name].sql is not None}
    if (identity(url), schema) in sources and if_exists == "replace":
        raise AvatarError(
            f"{target} is where the original tables were read from: replacing them would "
            "destroy the originals; write the avatars to another database or schema"
        )
    metadata, tables, columns = _build(result, parse_url(url).get_backend_name(), schema)
    engine = create_engine(url, must_exist=False)
    steps = Steps(progress, "to_sql", total=len(order))
    written = {}
    try:
        with engine.begin() as connection:
            existing = _existing(connection, schema, order)
            if existing and if_exists == "fail":
                raise _held(target, existing)
            _refuse_referred(connection, schema, existing, target)
            for name in reversed(existing):  # children first; the tables alone, not their types
                connection.execute(sa.schema.DropTable(tables[name]))
            metadata.create_all(connection)
            for name in order:
                steps.start(f"write {name}")
                data = result.tables[name] if name in result.tables else result.treated[name]
                for start in range(0, len(data), chunk_rows):
                    part = data.iloc[start:start + chunk_rows]
                    values = [to_values(part[c.name], c.family, c.uuid_scope)
                              for c in columns[name]]
                    _insert(connection, tables[name], zip(*values, strict=True))
                written[name] = len(data)
                logger.info("wrote table %s (%d rows) to %s", name, len(data), target)
                steps.advance()
    except (sa.exc.DBAPIError, engine.dialect.loaded_dbapi.Error) as error:
        raise AvatarError(
            f"writing to {target} failed, nothing was written: {one_line(error, url)}"
        ) from None
    finally:
        steps.close()
        engine.dispose()
    return written
