"""What a report is made of, independent of its format: parts, sections and blocks (text,
tables, figures, folded details). ``html.py`` and ``pdf.py`` each render it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Cell styles: "code", "strong"; a verdict badge "pass", "fail", "none"; a coloured matrix
# cell "cell-pass", "cell-fail", "cell-empty".
BADGES = ("pass", "fail", "none")
MATRIX_CELLS = ("cell-pass", "cell-fail", "cell-empty")


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""


@dataclass
class Text:
    """A paragraph; ``style``: "" (plain), "lead" or "note"."""

    text: str
    style: str = ""


@dataclass
class Table:
    """``numeric``: right-aligned column positions; ``row_headers``: the first cell of each
    row is a header (a matrix); ``key_columns``: the leading columns that name a row, repeated
    in each slice of a table too wide for a PDF page."""

    headers: list[str]
    rows: list[list[Cell]]
    numeric: frozenset[int] = frozenset()
    row_headers: bool = False
    key_columns: int = 1


@dataclass
class Figure:
    """A plot: its kind (``data-plot``), the PNG, a caption and the alternative text."""

    plot: str
    png: bytes
    caption: str
    alt: str


@dataclass
class Details:
    """Blocks folded under a summary line (open in a PDF)."""

    summary: str
    blocks: list[Block]


@dataclass
class Section:
    kind: str
    title: str
    anchor: str
    blocks: list[Block]


@dataclass
class Part:
    """One part of a report (a table, a database), written in ``language``; ``level``: its
    heading level (2 at the top, 3 for a table inside a database part)."""

    slug: str
    title: str
    kind: str
    lead: str
    language: str
    level: int = 2
    sections: list[Section] = field(default_factory=list)

    def section(self, kind: str, title: str, *blocks: Block) -> None:
        self.sections.append(Section(kind, title, f"{self.slug}-{kind}", list(blocks)))


Block = Text | Table | Figure | Details | Part


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "part"
