"""Database URLs and engines: parsed once, shown without their password, errors in one line.

A password is masked however it is spelled: holding ``/``, ``:`` or ``@``, percent-encoded
(``%2F``), or in a URL that does not parse (everything between the user's ``:`` and the last
``@`` is hidden). A raw ``@`` in a password is refused (where does the host start?), with the
fix: percent-encode it as ``%40``.

``sqlite:///path.db`` works from a plain install; ``postgresql://user:password@host/db`` needs
the ``postgres`` extra (psycopg 3, which a bare ``postgresql://`` URL uses). SQLite engines
enforce foreign keys and run DDL inside the write's transaction, as PostgreSQL does, so a
failed write leaves nothing behind on either.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import AvatarError, AvatarTypeError, import_extra

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_USER = r"([A-Za-z][A-Za-z0-9+.-]*:/+[^/:\s]*:)"  # scheme://user: (a slash may be missing)
_PASSWORD = re.compile(_USER + r"\S*@")  # up to the last @ of a URL in a message
_WHOLE_PASSWORD = re.compile(_USER + r".*@", re.DOTALL)  # of a string that is one URL
_DRIVERS = {"postgresql": "postgresql+psycopg"}  # psycopg 3, not SQLAlchemy's psycopg2 default
_NEEDS = {"postgresql": ("psycopg", "postgres")}  # backend name -> (module, extra)


def looks_like_url(text: Any) -> bool:
    """Whether a command-line argument is a database URL rather than a file path."""
    return isinstance(text, str) and _URL.match(text) is not None


def masked(text: str) -> str:
    """``text`` (a message) with the password of every URL in it as ***."""
    return _PASSWORD.sub(r"\1***@", text)


def parse_url(url: Any):
    """The SQLAlchemy URL of ``url`` (a string or ``sqlalchemy.URL``), its driver chosen."""
    import sqlalchemy as sa

    if isinstance(url, sa.URL):
        parsed = url
    elif isinstance(url, str):
        hidden = _WHOLE_PASSWORD.sub(r"\1***@", url)
        try:
            parsed = sa.make_url(url)
            parsed.port  # noqa: B018 (a port that is not a number fails here)
        except (sa.exc.ArgumentError, ValueError):
            raise AvatarError(
                f"{hidden!r} is not a database URL; expected e.g. "
                "sqlite:///hospital.db or postgresql://user:password@host:5432/database"
            ) from None
        if "@" in (parsed.host or ""):
            raise AvatarError(
                f"{hidden!r}: the password holds '@', which ends it in a URL; percent-encode "
                "it as %40"
            )
    else:
        raise AvatarTypeError(
            f"url must be a database URL string or sqlalchemy.URL, got {type(url).__name__}"
        )
    driver = _DRIVERS.get(parsed.drivername)
    return parsed.set(drivername=driver) if driver else parsed


def identity(url: Any) -> str:
    """What tells two URLs of one database apart from two databases: the URL without its
    password, an SQLite file by its absolute path."""
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        parsed = parsed.set(database=str(Path(parsed.database).resolve()))
    return parsed.render_as_string(hide_password=True)


def shown(url: Any) -> str:
    """The URL as logs and messages show it: its password as ***."""
    return parse_url(url).render_as_string(hide_password=True)


def one_line(error: BaseException, url: Any) -> str:
    """A driver's error as one line, without the URL's password (as given or encoded)."""
    cause = getattr(error, "orig", None) or error
    text = " ".join(str(cause).split()) or type(cause).__name__
    password = parse_url(url).password
    if password:
        for spelling in (password, quote(password, safe="")):
            text = text.replace(spelling, "***")
    return masked(text)


def _sqlite_transactional_ddl(engine) -> None:
    """pysqlite commits before DDL and leaves foreign keys unchecked; SQLAlchemy's recipe:
    begin explicitly, so CREATE TABLE is part of the transaction, and turn the checks on."""
    import sqlalchemy as sa

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA foreign_keys = ON")

    @sa.event.listens_for(engine, "begin")
    def _begin(connection):
        connection.exec_driver_sql("BEGIN")


def create_engine(url: Any, *, must_exist: bool):
    """An engine for ``url`` whose server answers; ``must_exist``: a source, so an SQLite
    file that is not there is an error rather than a new empty database."""
    import sqlalchemy as sa

    parsed = parse_url(url)
    backend = parsed.get_backend_name()
    if backend in _NEEDS:
        module, extra = _NEEDS[backend]
        import_extra(module, extra, f"reading and writing {backend} databases")
    if backend == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database)
        if must_exist and not path.is_file():
            raise AvatarError(f"{shown(parsed)}: no SQLite database file at {path}")
        if not must_exist and not path.parent.is_dir():
            raise AvatarError(f"{shown(parsed)}: the folder {path.parent} does not exist")
    try:
        engine = sa.create_engine(parsed)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as error:
        raise AvatarError(f"{shown(parsed)}: {one_line(error, parsed)}") from None
    if backend == "sqlite":
        _sqlite_transactional_ddl(engine)
    try:
        with engine.connect():
            pass
    except sa.exc.DBAPIError as error:
        engine.dispose()
        raise AvatarError(
            f"cannot connect to {shown(parsed)}: {one_line(error, parsed)}"
        ) from None
    return engine
