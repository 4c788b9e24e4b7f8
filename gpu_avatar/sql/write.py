"""``result.to_sql``: the avatar tables written as a database with the source's constraints.

Tables are created parent before child with the same column types (the reflected types when
source and target are the same kind of database, their generic SQLAlchemy form otherwise; types
chosen from the dtypes for tables that came from no database), the same primary keys, NOT NULL
columns and foreign keys, then filled ``chunk_rows`` rows at a time. Everything happens in one
transaction: a write that fails leaves the target as it was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import AvatarError, AvatarTypeError
from ..parameters import check_choice, check_integer
from ..progress import ProgressLike, Steps
from .columns import family, sql_type_of, to_values
from .connection import create_engine, one_line, shown

logger = logging.getLogger("gpu_avatar")

IF_EXISTS = ("fail", "replace")
DEFAULT_CHUNK_ROWS = 10_000


@dataclass
class _Column:
    name: Any
    sql_type: Any
    family: str
    nullable: bool


def _columns(db, name: str, data: pd.DataFrame, dialect: str) -> list[_Column]:
    """Each avatar column's SQL type (as in the source where there is one) and nullability."""
    import sqlalchemy as sa

    table = db.tables[name]
    source = getattr(table, "sql", None)
    out = []
    for column in data.columns:
        where = f"{name}.{column}"
        reflected = source.c[column] if source is not None and column in source.c else None
        if reflected is None:
            sql_type, nullable = sql_type_of(data[column]), column != table.primary_key
        elif source.info.get("dialect") == dialect:
            sql_type, nullable = reflected.type, reflected.nullable
        else:
            sql_type, nullable = reflected.type.as_generic(), reflected.nullable
            if isinstance(sql_type, sa.Enum):  # PostgreSQL needs the type's name
                sql_type = sa.Enum(*sql_type.enums, name=getattr(reflected.type, "name", None)
                                   or f"{name}_{column}")
        out.append(_Column(column, sql_type, family(sql_type, where), nullable))
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
        length = getattr(column.sql_type, "length", None)
        if column.family == "text" and length:
            longest = int(values.dropna().astype(str).str.len().max() or 0)
            if longest > length:
                raise AvatarError(
                    f"avatar table {name!r}: column {column.name!r} holds values of "
                    f"{longest} characters, more than its SQL type {column.sql_type} allows "
                    "(fresh identifiers are 'avatar_<i>'); widen the column in the source"
                )


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
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: ProgressLike = None,
) -> dict[str, int]:
    """``DatabaseAvatarizationResult.to_sql``'s work (see there); the rows written per table."""
    import sqlalchemy as sa

    from ..relational.linking import DatabaseAvatarizationResult

    if not isinstance(result, DatabaseAvatarizationResult):
        raise AvatarTypeError(
            f"expected a DatabaseAvatarizationResult, got {type(result).__name__}"
        )
    check_choice("if_exists", if_exists, IF_EXISTS)
    check_integer("chunk_rows", chunk_rows, 1)
    db = result.database
    order = db.topological_order()
    engine = create_engine(url, must_exist=False)
    target = shown(url) + (f" (schema {schema!r})" if schema else "")
    metadata = sa.MetaData(schema=schema)
    tables, columns = {}, {}
    for name in order:
        data = result.tables[name]
        columns[name] = _columns(db, name, data, engine.dialect.name)
        _check_fits(name, data, columns[name])
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
    steps = Steps(progress, "to_sql", total=len(order))
    written = {}
    try:
        with engine.begin() as connection:
            existing = _existing(connection, schema, order)
            if existing and if_exists == "fail":
                raise _held(target, existing)
            for name in reversed(existing):  # children first; the tables alone, not their types
                connection.execute(sa.schema.DropTable(tables[name]))
            metadata.create_all(connection)
            for name in order:
                steps.start(f"write {name}")
                data = result.tables[name]
                for start in range(0, len(data), chunk_rows):
                    part = data.iloc[start:start + chunk_rows]
                    values = [to_values(part[c.name], c.family) for c in columns[name]]
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
