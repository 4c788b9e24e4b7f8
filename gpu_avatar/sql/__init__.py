"""Databases in and out: ``Database.from_sql`` (read.py) and ``result.to_sql`` (write.py),
through SQLAlchemy; URLs and engines in connection.py, SQL types <-> pandas in columns.py."""
