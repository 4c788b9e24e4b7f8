"""The report as one self-contained HTML file: CSS inline, plots as PNG data URIs, nothing
loaded from anywhere. Parts carry ``data-part``, sections ``data-section`` and plots
``data-plot`` (their kinds, for readers and tests)."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from .document import Block, Cell, Details, Figure, Part, Table, Text
from .language import Translator

STYLE = """
body { margin: 0; background: #f4f6f8; color: #1f2328;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
header { background: #1f3a5f; color: #ffffff; padding: 20px 40px; }
header p { margin: 4px 0 0; color: #c9d6e8; }
main { max-width: 1240px; margin: 0 auto; padding: 8px 40px 64px; }
nav { background: #ffffff; border: 1px solid #d0d7de; border-radius: 8px; padding: 4px 24px;
  margin: 24px 0; font-size: 14px; }
nav a, nav a:visited { color: #1f3a5f; }
section.part { background: #ffffff; border: 1px solid #d0d7de; border-radius: 8px;
  padding: 4px 24px 20px; margin: 24px 0; }
section.part section.part { border-color: #e3e7eb; background: #fbfcfd; }
h2 { border-bottom: 2px solid #1f3a5f; padding-bottom: 4px; }
.wide { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #eef1f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.pass { background: #c6efce; color: #0b4a1c; }
td.fail { background: #ffc7c2; color: #7a0916; }
td.empty { background: #f0f2f4; color: #8c959f; }
td.warn { background: #ffeb9c; color: #7a5200; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
  font-weight: 600; }
.badge.pass { background: #2da44e; color: #ffffff; }
.badge.fail { background: #cf222e; color: #ffffff; }
.badge.none { background: #eaeef2; color: #57606a; }
.lead { font-size: 16px; }
.note { color: #57606a; font-size: 13px; }
figure.plot { margin: 16px 0 24px; }
figure.plot img { max-width: 100%; height: auto; border: 1px solid #e3e7eb; }
figcaption { font-size: 13px; color: #57606a; margin-top: 4px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
"""


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _cell(cell: Cell, numeric: bool) -> str:
    text = _esc(cell.text)
    classes = ["num"] if numeric else []
    if cell.style == "code":
        text = f"<code>{text}</code>"
    elif cell.style == "strong":
        text = f"<strong>{text}</strong>"
    elif cell.style in ("pass", "fail", "none"):
        text = f'<span class="badge {cell.style}">{text}</span>'
    elif cell.style.startswith("cell-"):
        classes.append(cell.style[len("cell-"):])
    attribute = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{attribute}>{text}</td>"


def _table(table: Table) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in table.headers)
    body = ""
    for row in table.rows:
        cells = [
            f"<th>{_esc(cell.text)}</th>" if table.row_headers and i == 0
            else _cell(cell, i in table.numeric)
            for i, cell in enumerate(row)
        ]
        body += "<tr>" + "".join(cells) + "</tr>"
    return (f'<div class="wide"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _block(block: Block) -> str:
    if isinstance(block, Text):
        attribute = f' class="{block.style}"' if block.style else ""
        return f"<p{attribute}>{_esc(block.text)}</p>"
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figure):
        data = base64.b64encode(block.png).decode("ascii")
        return (f'<figure class="plot" data-plot="{block.plot}">'
                f'<img alt="{_esc(block.alt)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{_esc(block.caption)}</figcaption></figure>")
    if isinstance(block, Details):
        inner = "".join(_block(b) for b in block.blocks)
        return f"<details><summary>{_esc(block.summary)}</summary>{inner}</details>"
    if isinstance(block, Part):
        return _part(block)
    raise TypeError(f"not a report block: {type(block).__name__}")


def _part(part: Part) -> str:
    level = part.level
    sections = "".join(
        f'<section id="{s.anchor}" data-section="{s.kind}"><h{level + 1}>{_esc(s.title)}'
        f"</h{level + 1}>{''.join(_block(b) for b in s.blocks)}</section>"
        for s in part.sections
    )
    return (f'<section class="part" id="{part.slug}" data-part="{part.kind}">'
            f"<h{level}>{_esc(part.title)}</h{level}>"
            f'<p class="lead">{_esc(part.lead)}</p>{sections}</section>')


def render_html(title: str, parts: Sequence[Part], tr: Translator, created: str,
                version: str) -> str:
    """The whole document: header, contents, parts."""
    contents = "".join(
        f'<li><a href="#{part.slug}">{_esc(part.title)}</a>: '
        + ", ".join(f'<a href="#{s.anchor}">{_esc(s.title)}</a>' for s in part.sections)
        + "</li>"
        for part in parts
    )
    intro = tr("gpu_avatar {version}, {created}. Avatar method: every original individual gets "
               "one synthetic avatar; the metrics below compare them.", version=version,
               created=created)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{tr.language}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{_esc(title)}</h1><p>{_esc(intro)}</p></header>"
        f"<main><nav><p><strong>{_esc(tr('Contents'))}</strong></p><ul>{contents}</ul></nav>"
        + "".join(_part(part) for part in parts)
        + "</main></body></html>\n"
    )
