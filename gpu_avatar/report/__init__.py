"""Self-contained HTML reports of a table or a database: one file, plots embedded, nothing
loaded from anywhere.

    ga.write_report(result, "report.html")   # an avatarize or avatarize_database result

- ``data.py``: each metric's definition, the metrics of a part (computed when not given);
- ``plots.py``: the plots (matplotlib, PNG data URIs);
- ``html.py``: parts, sections and the document.
"""

from .html import (
    database_part,
    result_part,
    table_part,
    write_database_report,
    write_html,
    write_report,
    write_table_report,
)
from .plots import require_matplotlib

__all__ = [
    "database_part", "require_matplotlib", "result_part", "table_part",
    "write_database_report", "write_html", "write_report", "write_table_report",
]  # fmt: skip
