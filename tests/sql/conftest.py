"""Real databases for the SQL tests: SQLite files, and a PostgreSQL server.

The server is the one ``.ci/run`` starts (``.ci/postgres``: Debian's postgresql package, on a
local port) and names in ``GA_TEST_POSTGRES_URL``; each test gets a database of its own,
created here and dropped after it. Without the variable the PostgreSQL tests are skipped, except
in CI, where they fail.
"""

from __future__ import annotations

import os
import uuid

import pytest
from databases import (
    CLINIC_DDL,
    HOSPITAL_DDL,
    HOSPITAL_TABLES,
    POSTGRES_ENV_VAR,
    bundled,
    clinic_tables,
    write_sqlite,
)


@pytest.fixture
def hospital_sqlite(tmp_path) -> str:
    return write_sqlite(tmp_path / "hospital.db", HOSPITAL_DDL,
                        {name: bundled(name) for name in HOSPITAL_TABLES})


@pytest.fixture(scope="session")
def postgres_server() -> str:
    url = os.environ.get(POSTGRES_ENV_VAR)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{POSTGRES_ENV_VAR} is not set: .ci/run starts a PostgreSQL server")
        pytest.skip(f"no PostgreSQL server: set {POSTGRES_ENV_VAR} (`.ci/postgres start DIR` "
                    "starts one and prints its URL); CI runs these tests")
    return url


@pytest.fixture
def postgres_database(postgres_server):
    """A factory of fresh, empty databases on the server (their URLs), dropped after the
    test."""
    import sqlalchemy as sa

    from gpu_avatar.sql.connection import parse_url

    server = parse_url(postgres_server)
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    created = []

    def make() -> str:
        name = f"ga_test_{uuid.uuid4().hex[:12]}"
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        created.append(name)
        return server.set(database=name).render_as_string(hide_password=False)

    yield make
    with admin.connect() as connection:
        for name in created:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()


@pytest.fixture
def clinic_postgres(postgres_database) -> str:
    import sqlalchemy as sa

    url = postgres_database()
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as connection:
        connection.exec_driver_sql(CLINIC_DDL)
        metadata = sa.MetaData()
        for name, frame in clinic_tables().items():
            table = sa.Table(name, metadata, autoload_with=connection)
            rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
            connection.execute(table.insert(), rows)
    engine.dispose()
    return url
