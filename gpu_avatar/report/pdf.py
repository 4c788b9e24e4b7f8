"""The report as a paginated PDF (ReportLab's platypus): A4 pages numbered in the footer, an
outline (bookmarks) of parts and sections, tables that repeat their header row across pages,
plots scaled to the page with their captions.

Layout: a word is never broken across lines (columns are at least as wide as their longest
word; a table too wide for the page is cut into slices of columns, each repeating the columns
that name a row), nor parted from the mark after it (``95 %``, ``valeur :``); a heading goes to
the next page only when the start of what follows it would not fit under it, and a plot shrinks
to fill the rest of a page rather than leave it blank.

Text is set in DejaVu Sans (the TrueType font matplotlib ships), so that every character of
any language, and of any column name, is drawn."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from matplotlib import font_manager
from reportlab.lib.colors import HexColor
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import cm
from reportlab.lib.utils import ImageReader
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import CondPageBreak, Flowable, PageBreak, Paragraph, SimpleDocTemplate
from reportlab.platypus import Table as PdfTable

from .document import Block, Cell, Details, Figure, Part, Table, Text
from .language import Translator

FONT, BOLD, MONO = "GA-DejaVuSans", "GA-DejaVuSans-Bold", "GA-DejaVuSansMono"
INK, MUTED, RULE, HEAD = "#1f2328", "#57606a", "#d0d7de", "#eef1f4"
PASS_FILL, PASS_INK, FAIL_FILL, FAIL_INK = "#c6efce", "#0b4a1c", "#ffc7c2", "#7a0916"
WARN_FILL = "#ffeb9c"
EMPTY_FILL, BLUE = "#f0f2f4", "#1f3a5f"
TEXT_SIZE, TABLE_SIZE, SMALL_TABLE_SIZE = 9.5, 8, 6.5
WIDE_TABLE_COLUMNS = 7  # more columns than this: the smaller font
CELL_PADDING = 3  # points, each side
MIN_PLOT_SCALE = 0.6  # a plot shrinks down to this to fit the rest of a page
ROOM_UNDER_HEADING = 0.12  # of the page's height, for the start of a table or a text
_BEFORE_MARK = re.compile(r" (?=[%:;!?»])")
_BREAKS = re.compile(r"[ \t\n]+")  # where a line may break (not at a no-break space)


def _unbreakable(text: str) -> str:
    """``text`` with a no-break space before ``%``, ``:``, ``;``, ``!``, ``?`` and ``»``."""
    return _BEFORE_MARK.sub("\u00a0", text)


def _register_fonts() -> None:
    if FONT in pdfmetrics.getRegisteredFontNames():
        return
    for name, family, weight in ((FONT, "DejaVu Sans", "normal"), (BOLD, "DejaVu Sans", "bold"),
                                 (MONO, "DejaVu Sans Mono", "normal")):
        path = font_manager.findfont(font_manager.FontProperties(family=family, weight=weight),
                                     fallback_to_default=True)
        pdfmetrics.registerFont(TTFont(name, path))
    pdfmetrics.registerFontFamily(FONT, normal=FONT, bold=BOLD, italic=FONT, boldItalic=BOLD)


class _Styles:
    def __init__(self) -> None:
        base = ParagraphStyle("ga", fontName=FONT, fontSize=TEXT_SIZE, leading=12.5,
                              textColor=HexColor(INK), spaceAfter=5, splitLongWords=0)
        self.text = base
        self.lead = ParagraphStyle("ga-lead", base, fontSize=11, leading=14.5, spaceAfter=8)
        self.note = ParagraphStyle("ga-note", base, fontSize=8, leading=10.5,
                                   textColor=HexColor(MUTED))
        self.title = ParagraphStyle("ga-title", base, fontName=BOLD, fontSize=20, leading=24,
                                    textColor=HexColor(BLUE), spaceAfter=6)
        self.headings = {
            level: ParagraphStyle(f"ga-h{level}", base, fontName=BOLD, fontSize=size,
                                  leading=size * 1.25, spaceBefore=size * 0.8, spaceAfter=4,
                                  textColor=HexColor(BLUE if level <= 3 else INK))
            for level, size in ((2, 16), (3, 13), (4, 11), (5, 10))
        }
        self.cells = {}  # (size, right-aligned, words split when longer than the column)
        for size in (TABLE_SIZE, SMALL_TABLE_SIZE):
            for right in (False, True):
                for split in (False, True):
                    self.cells[size, right, split] = ParagraphStyle(
                        f"ga-cell{size}{'-right' * right}{'-split' * split}", base,
                        fontSize=size, leading=size * 1.25, spaceAfter=0,
                        alignment=TA_RIGHT if right else base.alignment,
                        splitLongWords=int(split))

    def heading(self, level: int):
        return self.headings[min(level, 5)]


def _font(cell: Cell, header: bool) -> str:
    if header or cell.style in ("strong", "pass", "fail"):
        return BOLD
    return MONO if cell.style == "code" else FONT


def _markup(cell: Cell, header: bool = False) -> str:
    text = escape(_unbreakable(cell.text))
    if header:
        return f'<font name="{BOLD}">{text}</font>'
    if cell.style == "code":
        return f'<font name="{MONO}">{text}</font>'
    if cell.style in ("strong", "pass", "fail"):
        colour = {"pass": PASS_INK, "fail": FAIL_INK}.get(cell.style, INK)
        return f'<font name="{BOLD}" color="{colour}">{text}</font>'
    if cell.style == "none":
        return f'<font color="{MUTED}">{text}</font>'
    return text


def _extent(cell: Cell, header: bool, size: float) -> tuple[float, float]:
    """The width of the cell's longest word and of its whole text, padding included."""
    font = _font(cell, header)
    text = _unbreakable(cell.text).strip()
    words = _BREAKS.split(text)
    return (max(pdfmetrics.stringWidth(w, font, size) for w in words) + 2 * CELL_PADDING + 1,
            pdfmetrics.stringWidth(text, font, size) + 2 * CELL_PADDING + 1)


def _grid(table: Table) -> list[list[tuple[Cell, bool]]]:
    """Every cell of ``table`` with whether it is a header, the header row first."""
    head = [(Cell(h), True) for h in table.headers]
    return [head, *([(cell, table.row_headers and i == 0) for i, cell in enumerate(row)]
                    for row in table.rows)]


def _columns(grid: list[list[tuple[Cell, bool]]], size: float) -> list[tuple[float, float]]:
    """Per column, the width of its longest word and of its longest text (``_extent``)."""
    extents = [[_extent(cell, header, size) for cell, header in row] for row in grid]
    return [(max(row[i][0] for row in extents), max(row[i][1] for row in extents))
            for i in range(len(grid[0]))]


def _slices(table: Table, width: float, size: float) -> list[list[int]]:
    """``table``'s columns in slices whose longest words fit side by side in ``width``,
    each slice starting with the key columns (one slice when all fit)."""
    shortest = [word for word, _ in _columns(_grid(table), size)]
    keys = list(range(min(table.key_columns, len(table.headers))))
    slices, current = [], list(keys)
    for column in range(len(keys), len(table.headers)):
        if len(current) > len(keys) and sum(shortest[c] for c in current) + shortest[column] \
                > width:
            slices.append(current)
            current = list(keys)
        current.append(column)
    return [*slices, current]


def _tables(table: Table, width: float, styles: _Styles) -> list:
    """``table`` as PDF tables: one, or slices of its columns (``_slices``)."""
    size = SMALL_TABLE_SIZE if len(table.headers) > WIDE_TABLE_COLUMNS else TABLE_SIZE
    return [_table(Table([table.headers[c] for c in columns],
                         [[row[c] for c in columns] for row in table.rows],
                         frozenset(i for i, c in enumerate(columns) if c in table.numeric),
                         table.row_headers), width, styles, size)
            for columns in _slices(table, width, size)]


def _table(table: Table, width: float, styles: _Styles, size: float):
    grid = _grid(table)
    widths = _column_widths(grid, width, size)
    rows = [[Paragraph(_markup(cell, header), styles.cells[
                size, i in table.numeric and not header,
                _extent(cell, header, size)[0] > widths[i]])  # a word wider than the page
             for i, (cell, header) in enumerate(row)] for row in grid]
    commands = [
        ("GRID", (0, 0), (-1, -1), 0.4, HexColor(RULE)),
        ("BACKGROUND", (0, 0), (-1, 0), HexColor(HEAD)),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LEFTPADDING", (0, 0), (-1, -1), CELL_PADDING),
        ("RIGHTPADDING", (0, 0), (-1, -1), CELL_PADDING),
        ("TOPPADDING", (0, 0), (-1, -1), 2), ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
    ]
    if table.row_headers:
        commands.append(("BACKGROUND", (0, 1), (0, -1), HexColor(HEAD)))
    fills = {"cell-pass": PASS_FILL, "cell-fail": FAIL_FILL, "cell-empty": EMPTY_FILL,
             "cell-warn": WARN_FILL,
             "pass": PASS_FILL, "fail": FAIL_FILL}
    for r, row in enumerate(table.rows, start=1):
        for c, cell in enumerate(row):
            if cell.style in fills:
                commands.append(("BACKGROUND", (c, r), (c, r), HexColor(fills[cell.style])))
    return PdfTable(rows, colWidths=widths, repeatRows=1, hAlign="LEFT", style=commands,
                    spaceBefore=2, spaceAfter=8)


def _column_widths(grid: list[list[tuple[Cell, bool]]], width: float,
                   size: float) -> list[float]:
    """Each column at least as wide as its longest word (up to ``width``) and at most as its
    longest text (up to 60 % of ``width``); what is left of ``width`` goes to the columns whose
    text wraps, in proportion to their need."""
    columns = _columns(grid, size)
    shortest = [min(word, width) for word, _ in columns]
    longest = [max(min(text, 0.6 * width), s) for (_, text), s in zip(columns, shortest,
                                                                        strict=True)]
    if sum(longest) <= width:
        return longest
    if sum(shortest) >= width:  # the key columns and one more do not fit: as narrow as can be
        return shortest
    spare, need = width - sum(shortest), [n - s for s, n in zip(shortest, longest, strict=True)]
    return [s + spare * d / sum(need) for s, d in zip(shortest, need, strict=True)]


class _Plot(Flowable):
    """A plot and its caption: at most the page's width and 80 % of its height, shrunk down to
    ``MIN_PLOT_SCALE`` of that to fit the rest of a page."""

    def __init__(self, figure: Figure, width: float, height: float, styles: _Styles) -> None:
        super().__init__()
        self.png = figure.png
        pixels_wide, pixels_high = ImageReader(io.BytesIO(figure.png)).getSize()
        scale = min(width / pixels_wide, 0.8 * height / pixels_high)
        self.natural = (pixels_wide * scale, pixels_high * scale)
        self.caption = Paragraph(escape(_unbreakable(figure.caption)), styles.note)

    def smallest(self) -> float:
        """The least height it takes on a page, caption aside."""
        return MIN_PLOT_SCALE * self.natural[1]

    def wrap(self, available_width, available_height):
        self.caption_height = self.caption.wrap(available_width, available_height)[1] + 3
        room = (available_height - self.caption_height) / self.natural[1]
        shrink = min(room, 1.0) if room >= MIN_PLOT_SCALE else 1.0  # else on the next page
        self.size = (self.natural[0] * shrink, self.natural[1] * shrink)
        return available_width, self.size[1] + self.caption_height

    def draw(self):
        self.canv.drawImage(ImageReader(io.BytesIO(self.png)), 0, self.caption_height,
                            *self.size, mask="auto")
        self.caption.drawOn(self.canv, 0, 0)


class _Story:
    """The flowables of the document, with the outline entries their headings open."""

    def __init__(self, width: float, height: float, styles: _Styles) -> None:
        self.width, self.height, self.styles = width, height, styles
        self.flowables: list = []

    def _room(self, blocks: Sequence[Block]) -> float:
        """The height the start of ``blocks`` needs under their heading: a plot at its
        smallest, else ``ROOM_UNDER_HEADING`` of the page."""
        if blocks and isinstance(blocks[0], Figure):
            return _Plot(blocks[0], self.width, self.height, self.styles).smallest() + 30
        return ROOM_UNDER_HEADING * self.height

    def heading(self, text: str, style, key: str | None, level: int, room: float) -> None:
        """A heading, on the next page unless ``room`` is left under it."""
        anchor = f'<a name="{key}"/>' if key else ""
        paragraph = Paragraph(anchor + escape(_unbreakable(text)), style)
        if key:
            paragraph.outline = (text, key, level - 2)
        self.flowables += [CondPageBreak(room + 2 * style.leading), paragraph]

    def block(self, block: Block) -> None:
        if isinstance(block, Text):
            style = {"lead": self.styles.lead, "note": self.styles.note}.get(block.style,
                                                                             self.styles.text)
            self.flowables.append(Paragraph(escape(_unbreakable(block.text)), style))
        elif isinstance(block, Table):
            self.flowables += _tables(block, self.width, self.styles)
        elif isinstance(block, Figure):
            self.flowables.append(_Plot(block, self.width, self.height, self.styles))
        elif isinstance(block, Details):
            self.heading(block.summary, self.styles.heading(5), None, 5,
                         self._room(block.blocks))
            for inner in block.blocks:
                self.block(inner)
        elif isinstance(block, Part):
            self.part(block)
        else:
            raise TypeError(f"not a report block: {type(block).__name__}")

    def part(self, part: Part) -> None:
        first = part.sections[0].blocks if part.sections else []
        self.heading(part.title, self.styles.heading(part.level), part.slug, part.level,
                     2 * self._room(first))
        self.flowables.append(Paragraph(escape(_unbreakable(part.lead)), self.styles.lead))
        for section in part.sections:
            self.heading(section.title, self.styles.heading(part.level + 1), section.anchor,
                         part.level + 1, self._room(section.blocks))
            for block in section.blocks:
                self.block(block)
            if section.kind == "verdict":  # the sign-off page: the rest starts on the next
                self.flowables.append(PageBreak())


def write_pdf(path: Path, title: str, parts: Sequence[Part], tr: Translator, created: str,
              version: str) -> None:
    """Write the document made of ``parts`` to ``path`` as a PDF."""

    _register_fonts()
    styles = _Styles()
    margin = 1.6 * cm

    class Document(SimpleDocTemplate):
        def afterFlowable(self, flowable):  # noqa: N802 - ReportLab's hook
            outline = getattr(flowable, "outline", None)
            if outline is not None:
                text, key, level = outline
                self.canv.bookmarkPage(key)
                self.canv.addOutlineEntry(text, key, level=max(level, 0), closed=level > 0)

    def footer(canvas, document):
        canvas.saveState()
        canvas.setFont(FONT, 7.5)
        canvas.setFillColor(HexColor(MUTED))
        canvas.drawString(margin, 0.9 * cm, f"{title} · gpu_avatar {version}")
        canvas.drawRightString(A4[0] - margin, 0.9 * cm,
                               tr("page {page}", page=document.page))
        canvas.restoreState()

    document = Document(str(path), pagesize=A4, leftMargin=margin, rightMargin=margin,
                        topMargin=margin, bottomMargin=1.8 * cm, title=title,
                        author="gpu_avatar", subject=tr("Avatarization report"),
                        lang=tr.language)
    story = _Story(document.width, document.height, styles)
    story.flowables.append(Paragraph(escape(title), styles.title))
    story.flowables.append(Paragraph(escape(_unbreakable(tr(
        "gpu_avatar {version}, {created}. Avatar method: every original individual gets one "
        "synthetic avatar; the metrics below compare them.", version=version, created=created))),
        styles.note))
    for part in parts:
        story.part(part)
    document.build(story.flowables, onFirstPage=footer, onLaterPages=footer)
