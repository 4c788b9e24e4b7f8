"""Self-contained HTML reports of a table or a database."""

from .html import write_database_report, write_table_report

__all__ = ["write_database_report", "write_table_report"]
