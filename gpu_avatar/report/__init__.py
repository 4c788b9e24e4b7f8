"""Self-contained reports of a table or a database, as HTML (one file, plots embedded, nothing
loaded from anywhere) or PDF (paginated), in English or French.

    ga.write_report(result, "report.html")                  # avatarize / avatarize_database
    ga.write_report(result, "rapport.pdf", language="fr", advice=advice, attacks=risks)

- ``data.py``: each metric's and attack's definition, the metrics of a part (computed when
  not given);
- ``language.py``: the words, in English and French;
- ``plots.py``: the plots (matplotlib PNGs);
- ``document.py``: parts, sections and blocks, whatever the format;
- ``parts.py``: the parts of a table, a database, advice and attacks;
- ``html.py`` and ``pdf.py``: the two formats.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import AvatarError
from ..outputs import atomic_path, check_output
from .document import Part
from .language import LANGUAGES, Translator
from .parts import database_part, result_part, table_part

FORMATS = ("html", "pdf")


def report_format(path: str | Path, format: str | None = None) -> str:
    """``format`` if given, else the one ``path``'s suffix names (.html, .htm, .pdf)."""
    if format is None:
        suffix = Path(path).suffix.lower()
        format = {".html": "html", ".htm": "html", ".pdf": "pdf"}.get(suffix)
        if format is None:
            raise AvatarError(f"{path}: a report is .html or .pdf (or give format='html'|'pdf')")
    if format not in FORMATS:
        raise AvatarError(f"format={format!r} is not one of {FORMATS}")
    return format


def write_document(path: str | Path, title: str, parts: Sequence[Part],
                   format: str | None = None) -> Path:
    """Write the document made of ``parts`` (all in one language) to ``path`` as HTML or PDF
    (``format``, else from the suffix), whole or not at all (``outputs.atomic_path``); parent
    folders are created."""
    from .. import __version__
    from .html import render_html
    from .pdf import write_pdf

    format = report_format(path, format)
    languages = {part.language for part in parts}
    if len(languages) > 1:
        raise AvatarError(f"the parts of one report are in one language, got {sorted(languages)}")
    tr = Translator(languages.pop() if languages else "en")
    created = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    with atomic_path(path) as temporary:
        if format == "pdf":
            write_pdf(temporary, title, parts, tr, created, __version__)
        else:
            temporary.write_text(render_html(title, parts, tr, created, __version__),
                                 encoding="utf-8")
    return Path(path)


def write_report(
    result: Any,
    path: str | Path,
    *,
    title: str | None = None,
    name: str | None = None,
    language: str = "en",
    format: str | None = None,
    progress: Any = None,
    **options: Any,
) -> Path:
    """Write the report of an ``avatarize`` or ``avatarize_database`` result to ``path``:
    HTML or PDF (``format``, else from the suffix), in ``language`` ("en" or "fr").

    ``options`` for a table: ``privacy``, ``signal`` (computed when not given), ``advice``
    (an ``Advice``), ``attacks`` (``AttackMetrics``) and the privacy metrics' ``options`` (a
    ``MetricOptions``) or its names (``known_variables``, ``target``, ...); the first page is
    the release verdict of these; for a database: ``privacy``, ``signal``,
    ``seconds`` (run time), ``advice`` (an ``advise_database`` Advice).
    """
    from ..relational import DatabaseAvatarizationResult

    report_format(path, format)
    check_output("path", path)  # before the metrics and plots
    tr = Translator(language)
    if isinstance(result, DatabaseAvatarizationResult):
        part = database_part(result, name or tr("Database"), progress, language, **options)
        default_title = tr("Database avatarization report")
    else:
        part = result_part(result, name or tr("Table"), progress=progress, language=language,
                           **options)
        default_title = tr("Avatarization report")
    return write_document(path, title or default_title, [part], format)


__all__ = [
    "FORMATS", "LANGUAGES", "Part", "database_part", "report_format", "result_part",
    "table_part", "write_document", "write_report",
]  # fmt: skip
