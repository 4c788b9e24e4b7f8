"""Databases in and out: ``Database.from_sql`` (read.py) and ``result.to_sql`` (write.py),
through SQLAlchemy; URLs and engines in connection.py, SQL types <-> pandas in columns.py."""

READ_CHUNK_ROWS = 100_000  # rows fetched at a time from a server-side cursor
WRITE_CHUNK_ROWS = 10_000  # rows converted and sent at a time
