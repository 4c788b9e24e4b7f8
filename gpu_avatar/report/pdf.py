"""The report as a paginated PDF (ReportLab's platypus, ``pip install 'gpu_avatar[report]'``):
A4 pages numbered in the footer, an outline (bookmarks) of parts and sections, tables that
repeat their header row across pages, plots scaled to the page with their captions.

Text is set in DejaVu Sans (the TrueType font matplotlib ships), so that every character of
any language, and of any column name, is drawn."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from .document import Block, Cell, Details, Figure, Part, Table, Text
from .language import Translator

FONT, BOLD, MONO = "GA-DejaVuSans", "GA-DejaVuSans-Bold", "GA-DejaVuSansMono"
INK, MUTED, RULE, HEAD = "#1f2328", "#57606a", "#d0d7de", "#eef1f4"
PASS_FILL, PASS_INK, FAIL_FILL, FAIL_INK = "#c6efce", "#0b4a1c", "#ffc7c2", "#7a0916"
EMPTY_FILL, BLUE = "#f0f2f4", "#1f3a5f"
TEXT_SIZE, TABLE_SIZE, SMALL_TABLE_SIZE = 9.5, 8, 6.5
WIDE_TABLE_COLUMNS = 7  # more columns than this: the smaller font


def _register_fonts() -> None:
    from matplotlib import font_manager
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

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
        from reportlab.lib.colors import HexColor
        from reportlab.lib.enums import TA_RIGHT
        from reportlab.lib.styles import ParagraphStyle

        base = ParagraphStyle("ga", fontName=FONT, fontSize=TEXT_SIZE, leading=12.5,
                              textColor=HexColor(INK), spaceAfter=5)
        self.text = base
        self.lead = ParagraphStyle("ga-lead", base, fontSize=11, leading=14.5, spaceAfter=8)
        self.note = ParagraphStyle("ga-note", base, fontSize=8, leading=10.5,
                                   textColor=HexColor(MUTED))
        self.title = ParagraphStyle("ga-title", base, fontName=BOLD, fontSize=20, leading=24,
                                    textColor=HexColor(BLUE), spaceAfter=6)
        self.headings = {
            level: ParagraphStyle(f"ga-h{level}", base, fontName=BOLD, fontSize=size,
                                  leading=size * 1.25, spaceBefore=size * 0.8, spaceAfter=4,
                                  keepWithNext=True,
                                  textColor=HexColor(BLUE if level <= 3 else INK))
            for level, size in ((2, 16), (3, 13), (4, 11), (5, 10))
        }
        self.cells = {
            size: ParagraphStyle(f"ga-cell{size}", base, fontSize=size, leading=size * 1.25,
                                 spaceAfter=0)
            for size in (TABLE_SIZE, SMALL_TABLE_SIZE)
        }
        self.right_cells = {size: ParagraphStyle(f"ga-right{size}", style, alignment=TA_RIGHT)
                            for size, style in self.cells.items()}

    def heading(self, level: int):
        return self.headings[min(level, 5)]


def _markup(cell: Cell) -> str:
    text = escape(cell.text)
    if cell.style == "code":
        return f'<font name="{MONO}">{text}</font>'
    if cell.style in ("strong", "pass", "fail"):
        colour = {"pass": PASS_INK, "fail": FAIL_INK}.get(cell.style, INK)
        return f'<font name="{BOLD}" color="{colour}">{text}</font>'
    if cell.style == "none":
        return f'<font color="{MUTED}">{text}</font>'
    return text


def _table(table: Table, width: float, styles: _Styles):
    from reportlab.lib.colors import HexColor
    from reportlab.platypus import Paragraph
    from reportlab.platypus import Table as PdfTable

    size = SMALL_TABLE_SIZE if len(table.headers) > WIDE_TABLE_COLUMNS else TABLE_SIZE
    style = styles.cells[size]
    right = styles.right_cells[size]
    head = [Paragraph(f'<font name="{BOLD}">{escape(h)}</font>', style) for h in table.headers]
    body = [[Paragraph(f'<font name="{BOLD}">{escape(cell.text)}</font>', style)
             if table.row_headers and i == 0
             else Paragraph(_markup(cell), right if i in table.numeric else style)
             for i, cell in enumerate(row)] for row in table.rows]
    widths = _column_widths(table, width, size)
    commands = [
        ("GRID", (0, 0), (-1, -1), 0.4, HexColor(RULE)),
        ("BACKGROUND", (0, 0), (-1, 0), HexColor(HEAD)),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LEFTPADDING", (0, 0), (-1, -1), 3), ("RIGHTPADDING", (0, 0), (-1, -1), 3),
        ("TOPPADDING", (0, 0), (-1, -1), 2), ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
    ]
    if table.row_headers:
        commands.append(("BACKGROUND", (0, 1), (0, -1), HexColor(HEAD)))
    fills = {"cell-pass": PASS_FILL, "cell-fail": FAIL_FILL, "cell-empty": EMPTY_FILL,
             "pass": PASS_FILL, "fail": FAIL_FILL}
    for r, row in enumerate(table.rows, start=1):
        for c, cell in enumerate(row):
            if cell.style in fills:
                commands.append(("BACKGROUND", (c, r), (c, r), HexColor(fills[cell.style])))
    return PdfTable([head, *body], colWidths=widths, repeatRows=1, hAlign="LEFT",
                    style=commands, spaceBefore=2, spaceAfter=8)


def _column_widths(table: Table, width: float, size: float) -> list[float]:
    """Each column at least as wide as its longest word and at most its longest text; what
    is left of ``width`` goes to the columns whose text wraps, in proportion to their need."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    padding = 7.0

    def measure(text: str, font: str) -> tuple[float, float]:
        words = text.split() or [""]
        return (max(stringWidth(w, font, size) for w in words) + padding,
                stringWidth(text, font, size) + padding)

    shortest, longest = [], []
    for i, header in enumerate(table.headers):
        sizes = [measure(header, BOLD)] + [
            measure(row[i].text, MONO if row[i].style == "code" else
                    BOLD if row[i].style in ("strong", "pass", "fail") else FONT)
            for row in table.rows if i < len(row)
        ]
        shortest.append(min(max(s for s, _ in sizes), 0.4 * width))
        longest.append(min(max(n for _, n in sizes), 0.6 * width))
    if sum(longest) <= width:
        return longest
    if sum(shortest) >= width:
        return [width * s / sum(shortest) for s in shortest]
    spare, need = width - sum(shortest), [n - s for s, n in zip(shortest, longest, strict=True)]
    return [s + spare * d / sum(need) for s, d in zip(shortest, need, strict=True)]


def _figure(figure: Figure, width: float, height: float, styles: _Styles):
    from reportlab.lib.utils import ImageReader
    from reportlab.platypus import Image, KeepTogether, Paragraph

    pixels_wide, pixels_high = ImageReader(io.BytesIO(figure.png)).getSize()
    scale = min(width / pixels_wide, 0.8 * height / pixels_high)
    image = Image(io.BytesIO(figure.png), width=pixels_wide * scale, height=pixels_high * scale,
                  hAlign="LEFT")
    return KeepTogether([image, Paragraph(escape(figure.caption), styles.note)])


class _Story:
    """The flowables of the document, with the outline entries their headings open."""

    def __init__(self, width: float, height: float, styles: _Styles) -> None:
        self.width, self.height, self.styles = width, height, styles
        self.flowables: list = []

    def heading(self, text: str, level: int, key: str) -> None:
        from reportlab.platypus import Paragraph

        paragraph = Paragraph(f'<a name="{key}"/>{escape(text)}', self.styles.heading(level))
        paragraph.outline = (text, key, level - 2)
        self.flowables.append(paragraph)

    def block(self, block: Block) -> None:
        from reportlab.platypus import Paragraph

        if isinstance(block, Text):
            style = {"lead": self.styles.lead, "note": self.styles.note}.get(block.style,
                                                                             self.styles.text)
            self.flowables.append(Paragraph(escape(block.text), style))
        elif isinstance(block, Table):
            self.flowables.append(_table(block, self.width, self.styles))
        elif isinstance(block, Figure):
            self.flowables.append(_figure(block, self.width, self.height, self.styles))
        elif isinstance(block, Details):
            self.flowables.append(Paragraph(f'<font name="{BOLD}">{escape(block.summary)}</font>',
                                            self.styles.text))
            for inner in block.blocks:
                self.block(inner)
        elif isinstance(block, Part):
            self.part(block)
        else:
            raise TypeError(f"not a report block: {type(block).__name__}")

    def part(self, part: Part) -> None:
        from reportlab.platypus import Paragraph

        self.heading(part.title, part.level, part.slug)
        self.flowables.append(Paragraph(escape(part.lead), self.styles.lead))
        for section in part.sections:
            self.heading(section.title, part.level + 1, section.anchor)
            for block in section.blocks:
                self.block(block)


def write_pdf(path: Path, title: str, parts: Sequence[Part], tr: Translator, created: str,
              version: str) -> None:
    """Write the document made of ``parts`` to ``path`` as a PDF (ReportLab checked by
    ``report_format``)."""
    from reportlab.lib.colors import HexColor
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import cm
    from reportlab.platypus import Paragraph, SimpleDocTemplate

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
    story.flowables.append(Paragraph(escape(tr(
        "gpu_avatar {version}, {created}. Avatar method: every original individual gets one "
        "synthetic avatar; the metrics below compare them.", version=version, created=created)),
        styles.note))
    for part in parts:
        story.part(part)
    document.build(story.flowables, onFirstPage=footer, onLaterPages=footer)
