"""Self-contained HTML reports: one file, plots embedded, nothing loaded from anywhere.

    ga.write_report(result, "report.html")   # an AvatarizationResult or a
                                             # DatabaseAvatarizationResult

A report is made of parts, each with sections (``data-section``) and plots (``data-plot``):

- a table part: ``parameters`` (run parameters, column kinds), ``timings``, ``privacy`` (every
  metric with its target and pass/fail), ``signal``, ``plots``: ``projection`` (originals and
  avatars on the first two axes of a FAMD fitted on the originals), ``distributions`` (every
  variable, overlaid), ``correlations`` (original, avatar, difference) and ``local-cloaking``
  (its distribution over the originals; individual-level tables only);
- a database part: ``parameters``, ``timings``, ``summary-matrix`` (green pass, red fail),
  ``links`` (one ``children-per-parent`` histogram per link), ``privacy-scenarios``,
  ``signal-scenarios`` and ``tables`` (one table part per table).

CSS is inline and plots are PNG data URIs drawn by matplotlib's Agg backend
(``pip install 'gpu_avatar[report]'``): no script, font, stylesheet or image from outside.
"""

from __future__ import annotations

import datetime
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..backend import to_pandas
from ..encoding import CATEGORICAL, CONTINUOUS, IDENTIFIER, TableEncoder
from ..metrics import PrivacyMetrics, SignalMetrics
from ..metrics.targets import PRIVACY_TARGETS, SUMMARY_METRICS
from ..progress import ProgressLike, Steps
from .data import (
    PRIVACY_DESCRIPTIONS,
    PRIVACY_SCENARIO_COLUMNS,
    SIGNAL_DESCRIPTIONS,
    SIGNAL_SCENARIO_COLUMNS,
    database_metrics,
    table_metrics,
)
from .plots import (
    _matplotlib,
    children_per_parent_plot,
    correlations_plot,
    distributions_plot,
    local_cloaking_plot,
    projection_plot,
)

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


# --------------------------------------------------------------------------- html helpers
def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "part"


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    return f"{value:.4g}" if np.isfinite(value) else "—"


def _badge(passed: Any, computed: bool = True) -> str:
    if not computed:
        return '<span class="badge none">not computed</span>'
    if passed is True or passed is np.True_:
        return '<span class="badge pass">pass</span>'
    if passed is False or passed is np.False_:
        return '<span class="badge fail">fail</span>'
    return '<span class="badge none">report only</span>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric=()) -> str:
    """An HTML table; cells are HTML already; columns in ``numeric`` are right-aligned."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="wide">{table}</div>'


@dataclass
class Part:
    """One part of a report: its anchor, title, HTML and (anchor, title) of its sections."""

    slug: str
    title: str
    html: str
    sections: list[tuple[str, str]] = field(default_factory=list)


class _Builder:
    """Collects the sections of one part."""

    def __init__(self, slug: str, level: int) -> None:
        self.slug, self.level, self.blocks, self.sections = slug, level, [], []

    def section(self, kind: str, title: str, body: str) -> None:
        anchor = f"{self.slug}-{kind}"
        self.sections.append((anchor, title))
        self.blocks.append(
            f'<section id="{anchor}" data-section="{kind}">'
            f"<h{self.level + 1}>{_esc(title)}</h{self.level + 1}>{body}</section>"
        )

    def part(self, title: str, kind: str, lead: str) -> Part:
        body = (
            f'<section class="part" id="{self.slug}" data-part="{kind}">'
            f"<h{self.level}>{_esc(title)}</h{self.level}>"
            f'<p class="lead">{lead}</p>{"".join(self.blocks)}</section>'
        )
        return Part(self.slug, title, body, self.sections)


# --------------------------------------------------------------------------- table part
def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
    return str(value)


def _metrics_rows(frame: pd.DataFrame, descriptions: Mapping[str, str]) -> list[list[str]]:
    rows = []
    for metric, row in frame.iterrows():
        computed = bool(np.isfinite(row["value"]))
        rows.append([
            f"<code>{_esc(metric)}</code>", _number(row["value"]), _esc(row["target"]),
            _badge(row["passed"], computed), _esc(descriptions.get(metric, "")),
        ])
    return rows


def _targets_met(frame: pd.DataFrame) -> tuple[int, int]:
    judged = frame["passed"].dropna()
    return int(judged.astype(bool).sum()), int(len(judged))


def _table_part(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    steps: Steps,
    *,
    name: str,
    avatars: pd.DataFrame | None = None,
    types: Mapping[Any, str] | None = None,
    ncp: int = 5,
    parameters: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    privacy: PrivacyMetrics | None = None,
    signal: SignalMetrics | None = None,
    individual_level: bool = True,
    privacy_options: Mapping[str, Any] | None = None,
    backend: Any = "auto",
    slug: str | None = None,
    level: int = 2,
) -> Part:
    new_figure = _matplotlib()
    types = dict(types or {})
    avatars = unshuffled_avatars if avatars is None else avatars
    variables = [c for c in original.columns if types.get(c) != IDENTIFIER]
    variable_types = {c: kind for c, kind in types.items() if c in variables}
    privacy, signal, metric_timings = table_metrics(
        original, unshuffled_avatars, avatars, steps, name=name, types=types, ncp=ncp,
        backend=backend, privacy=privacy, signal=signal, individual_level=individual_level,
        privacy_options=privacy_options,
    )  # fmt: skip
    encoder = TableEncoder(variable_types, missing_indicators=False).fit(original[variables])
    builder = _Builder(slug or slugify(name), level)

    kinds = {kind: [c for c in variables if encoder.specs_[c].kind == kind]
             for kind in (CONTINUOUS, CATEGORICAL)}
    kinds[IDENTIFIER] = [c for c in original.columns if c not in variables]
    rows = [["rows x columns", f"{len(original)} x {original.shape[1]} -> {len(avatars)} avatars"]]
    rows += [[_esc(key), _esc(_text(value))] for key, value in (parameters or {}).items()]
    rows += [[f"{kind} columns", _esc(", ".join(map(str, columns)) or "none")]
             for kind, columns in kinds.items()]
    builder.section("parameters", "Run parameters", _table(["parameter", "value"], rows))

    all_timings = {**{f"avatarization: {k}": v for k, v in (timings or {}).items()},
                   **metric_timings}
    rows = [[_esc(step), f"{seconds:.3f}"] for step, seconds in all_timings.items()]
    rows.append(["<strong>total</strong>", f"<strong>{sum(all_timings.values()):.3f}</strong>"])
    note = "" if timings else (
        '<p class="note">No avatarization timings: this report was built from the tables, '
        "not from the run that made them.</p>"
    )
    builder.section("timings", "Timings (seconds)",
                    note + _table(["step", "seconds"], rows, numeric=(1,)))

    lead = f"{len(original)} originals, {len(variables)} variables."
    if privacy is not None:
        frame = privacy.to_frame()
        met, judged = _targets_met(frame)
        lead += (f" Privacy: {met} of {judged} targets met (hidden rate "
                 f"{privacy.hidden_rate:.1f} %, median local cloaking {privacy.local_cloaking:g}).")
        body = (
            f"<p>Originals against their own (unshuffled) avatars, distances on {privacy.ncp} "
            f"axes of a projection fitted on the originals. {met} of {judged} targets met.</p>"
            + _table(["metric", "value", "target", "result", "definition"],
                     _metrics_rows(frame, PRIVACY_DESCRIPTIONS), numeric=(1,))
        )
    else:
        body = (
            '<p class="note">Not an individual-level table: its rows are not people, so its '
            "privacy is measured through the scenarios of the individual-level tables.</p>"
        )
    builder.section("privacy", "Privacy metrics", body)

    frame = signal.to_frame()
    met, judged = _targets_met(frame)
    lead += f" Signal: {met} of {judged} targets met."
    per_variable = _table(
        ["variable", "Hellinger distance"],
        [[_esc(v), _number(h)] for v, h in signal.hellinger_per_variable.items()], numeric=(1,),
    )
    builder.section(
        "signal", "Signal metrics",
        _table(["metric", "value", "target", "result", "definition"],
               _metrics_rows(frame, SIGNAL_DESCRIPTIONS), numeric=(1,))
        + f"<details><summary>Hellinger distance per variable</summary>{per_variable}</details>",
    )

    figures = []
    with steps.step(f"{name}: projection plot"):
        figures.append(projection_plot(original[variables], avatars[variables], variable_types,
                                       new_figure))
    with steps.step(f"{name}: distribution plots"):
        figures.append(distributions_plot(original, avatars, encoder, signal, new_figure))
    with steps.step(f"{name}: correlation plots"):
        figure = correlations_plot(original, avatars, encoder, new_figure)
    figures.append(figure or '<p class="note">Fewer than two continuous variables: no '
                   "correlation matrix.</p>")
    if privacy is not None:
        with steps.step(f"{name}: local cloaking plot"):
            figures.append(local_cloaking_plot(privacy, new_figure))
    builder.section("plots", "Plots", "".join(figures))
    return builder.part(name, "table", _esc(lead))


def table_part(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    name: str = "Table",
    progress: ProgressLike = None,
    **options: Any,
) -> Part:
    """A report part for ``original`` and its ``unshuffled_avatars`` (row i = avatar of row i).

    ``options``: ``avatars`` (the released table, for the signal and plots; default the
    unshuffled ones), ``types``, ``ncp``, ``parameters`` and ``timings`` (shown as given),
    ``privacy`` / ``signal`` (computed when not given), ``individual_level``,
    ``privacy_options`` (e.g. ``known_variables``, ``target``), ``backend``, ``slug``, ``level``.
    """
    return _table_part(original, unshuffled_avatars, Steps(progress, "report"), name=name,
                       **options)


def _result_options(result: Any) -> dict[str, Any]:
    run = result.parameters
    parameters = {key: value for key, value in run.as_dict().items() if key != "types"}
    parameters["seed"] = result.seed
    parameters["projection"] = result.projection_kind.upper()
    return dict(
        avatars=to_pandas(result.avatars), types=dict(run.types), ncp=run.ncp,
        parameters=parameters, timings=result.timings, backend=run.backend,
    )


def result_part(
    result: Any,
    name: str = "Table",
    privacy: PrivacyMetrics | None = None,
    signal: SignalMetrics | None = None,
    progress: ProgressLike = None,
    **privacy_options: Any,
) -> Part:
    """A report part for an ``AvatarizationResult`` (``privacy_options`` as in
    ``privacy_metrics``: ``known_variables``, ``target``, ...)."""
    return _table_part(
        to_pandas(result.original), to_pandas(result.sensitive_unshuffled_avatars),
        Steps(progress, "report"),
        name=name, privacy=privacy, signal=signal, privacy_options=privacy_options,
        **_result_options(result),
    )


# --------------------------------------------------------------------------- database part
def _scenario_rows(frame: pd.DataFrame, columns: list[str]) -> list[list[str]]:
    rows = []
    for _, row in frame.iterrows():
        cells = [_esc(row["table"]), _esc(row["scenario"]), _esc(row["reference"])]
        cells.append(_esc(row["via"]) if isinstance(row.get("via"), str) else "")
        cells += [_number(row.get(c)) for c in columns]
        passed = row["all_passed"]
        cells.append(_badge(None if pd.isna(passed) else bool(passed)))
        rows.append(cells)
    return rows


def _summary_matrix(summary: pd.DataFrame, result: Any) -> str:
    """The summary matrix (``relational.scenarios.metrics_summary``) as an HTML table, each
    cell coloured by its pass flag."""
    from ..relational.scenarios import summary_cell

    db = result.database
    tables = db.topological_order()
    cells = {(row["table"], row["reference"]): row for _, row in summary.iterrows()}
    head = "<th>individual-level table</th>" + "".join(f"<th>{_esc(c)}</th>" for c in tables)
    body = ""
    for table in (t for t in tables if db.is_individual_level(t)):
        row_html = f"<th>{_esc(table)}</th>"
        for reference in tables:
            cell = cells.get((table, reference))
            if cell is None:
                row_html += '<td class="empty">—</td>'
                continue
            kind = "pass" if cell["passed"] else "fail"
            row_html += f'<td class="{kind}">{_esc(summary_cell(cell))}</td>'
        body += f"<tr>{row_html}</tr>"
    rule = " and ".join(
        f"{name.replace('_', ' ')} {PRIVACY_TARGETS[name].text().replace('>', '&gt;')}"
        for name in SUMMARY_METRICS
    )
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        '<p class="note">Rows: the people protected (individual-level tables); columns: the table '
        "they are measured against. Each cell is the worst scenario: hidden rate and median "
        f"local cloaking (LC); pass means {rule}.</p>"
    )


def _database_part(
    result: Any,
    steps: Steps,
    name: str = "Database",
    privacy: Any = None,
    signal: Any = None,
    seconds: float | None = None,
    slug: str | None = None,
    level: int = 2,
) -> Part:
    from ..relational.scenarios import STANDALONE, table_types, table_variables

    new_figure = _matplotlib()
    db = result.database
    order = db.topological_order()
    privacy, signal, metric_timings = database_metrics(result, steps, name, privacy, signal)
    summary = result.metrics_summary(privacy)
    builder = _Builder(slug or slugify(name), level)

    rows = [["seed", _esc(result.parameters.seed)],
            ["backend", _esc(result.parameters.backend)]]
    table_rows = []
    for table in order:
        parents = ", ".join(f"{link.parent} ({link.foreign_key})" for link in db.parents_of(table))
        run = result.table_results[table].parameters
        table_rows.append([
            _esc(table), str(len(result.originals[table])), str(len(result.tables[table])),
            _esc(db.tables[table].primary_key), _number(db.is_individual_level(table)),
            _esc(parents or "none"), str(run.k), str(run.ncp),
        ])
    body = _table(["parameter", "value"], rows) + _table(
        ["table", "rows", "avatars", "primary key", "individual-level", "parents", "k", "ncp"],
        table_rows, numeric=(1, 2, 6, 7),
    )
    builder.section("parameters", "Run parameters", body)

    rows = []
    for table in order:
        timings = result.table_results[table].timings
        detail = ", ".join(f"{k} {v:.2f}" for k, v in timings.items())
        rows.append([f"avatarization: {_esc(table)}", f"{sum(timings.values()):.3f}",
                     _esc(detail)])
    rows += [[f"metrics: {_esc(k)} scenarios", f"{v:.3f}", ""] for k, v in metric_timings.items()]
    if seconds is not None:
        rows.append(["<strong>whole database run</strong>", f"<strong>{seconds:.3f}</strong>",
                     "avatarization and linking"])
    builder.section("timings", "Timings (seconds)",
                    _table(["step", "seconds", "detail"], rows, numeric=(1,)))

    builder.section("summary-matrix", "Privacy summary matrix", _summary_matrix(summary, result))

    link_rows, figures = [], []
    for link in result.links:
        link_rows.append([
            _esc(link.parent), _esc(f"{link.child}.{link.foreign_key}"), _esc(link.method),
            _number(link.cardinality_similarity), _number(link.referential_integrity),
            _number(link.total_cost), _number(link.n_blocks),
        ])
        key = (link.child, link.foreign_key)
        with steps.step(f"{name}: children per parent {link.parent} -> {link.child}"):
            figures.append(children_per_parent_plot(
                f"{link.parent} -> {link.child}.{link.foreign_key} ({link.method})",
                result.original_parent_rows[key], len(result.originals[link.parent]),
                result.avatar_parent_rows[key], len(result.tables[link.parent]), new_figure,
            ))
    body = _table(
        ["parent", "child.foreign key", "method", "cardinality similarity",
         "referential integrity (%)", "assignment cost", "blocks"],
        link_rows, numeric=(3, 4, 5, 6),
    ) + '<p class="note">Cardinality similarity: 1 - Kolmogorov-Smirnov statistic between the ' \
        "children-per-parent distributions (1: identical).</p>" + "".join(figures)
    builder.section("links", "Links", body)

    headers = ["table", "scenario", "reference", "via"]
    builder.section(
        "privacy-scenarios", "Privacy scenarios",
        _table(headers + PRIVACY_SCENARIO_COLUMNS + ["all targets"],
               _scenario_rows(privacy.to_frame(), PRIVACY_SCENARIO_COLUMNS),
               numeric=range(4, 4 + len(PRIVACY_SCENARIO_COLUMNS))),
    )
    builder.section(
        "signal-scenarios", "Signal scenarios",
        _table(headers + SIGNAL_SCENARIO_COLUMNS + ["all targets"],
               _scenario_rows(signal.to_frame(), SIGNAL_SCENARIO_COLUMNS),
               numeric=range(4, 4 + len(SIGNAL_SCENARIO_COLUMNS))),
    )

    def standalone(entries, table):
        return next((e.metrics for e in entries
                     if e.table == table and e.scenario == STANDALONE), None)

    parts = []
    for table in order:
        run = result.table_results[table]
        parameters = {key: run.parameters.as_dict()[key]
                      for key in ("k", "ncp", "categorical", "imputation", "backend")}  # fmt: skip
        parts.append(_table_part(
            table_variables(result, table, False), table_variables(result, table, True), steps,
            name=f"Table {table}", types=table_types(result, table), ncp=run.parameters.ncp,
            parameters=parameters, timings=run.timings,
            privacy=standalone(privacy, table), signal=standalone(signal, table),
            individual_level=db.is_individual_level(table), backend=result.parameters.backend,
            slug=f"{builder.slug}-{slugify(table)}", level=level + 1,
        ).html)
    builder.section("tables", "Tables", "".join(parts))

    lead = (f"{len(order)} tables, {len(result.links)} links; privacy summary: "
            f"{int(summary['passed'].sum())} of {len(summary)} cells pass.")
    return builder.part(name, "database", _esc(lead))


def database_part(
    result: Any, name: str = "Database", progress: ProgressLike = None, **options: Any
) -> Part:
    """A report part for a ``DatabaseAvatarizationResult``; ``options``: ``privacy`` and
    ``signal`` (its scenario metrics, computed when not given), ``seconds`` (run time)."""
    return _database_part(result, Steps(progress, "report"), name=name, **options)


# --------------------------------------------------------------------------- document
def render_html(title: str, parts: Sequence[Part]) -> str:
    """The whole document: header, contents, parts."""
    from .. import __version__
    created = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    contents = "".join(
        f'<li><a href="#{part.slug}">{_esc(part.title)}</a>: '
        + ", ".join(f'<a href="#{anchor}">{_esc(title)}</a>' for anchor, title in part.sections)
        + "</li>"
        for part in parts
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{_esc(title)}</h1><p>gpu_avatar {_esc(__version__)}, {_esc(created)}. "
        "Avatar method: every original individual gets one synthetic avatar; the metrics below "
        "compare them.</p></header>"
        f'<main><nav><p><strong>Contents</strong></p><ul>{contents}</ul></nav>'
        + "".join(part.html for part in parts)
        + "</main></body></html>\n"
    )


def write_html(path: str | Path, title: str, parts: Sequence[Part]) -> Path:
    """Write the document made of ``parts`` to ``path`` (parent folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(title, parts), encoding="utf-8")
    return path


def write_table_report(
    result: Any,
    path: str | Path,
    title: str = "Avatarization report",
    name: str = "Table",
    privacy: PrivacyMetrics | None = None,
    signal: SignalMetrics | None = None,
    progress: ProgressLike = None,
    **privacy_options: Any,
) -> Path:
    """``AvatarizationResult.report``: the table part alone, written to ``path``."""
    part = result_part(result, name, privacy, signal, progress, **privacy_options)
    return write_html(path, title, [part])


def write_database_report(
    result: Any,
    path: str | Path,
    title: str = "Database avatarization report",
    name: str = "Database",
    progress: ProgressLike = None,
    **options: Any,
) -> Path:
    """``DatabaseAvatarizationResult.report``: the database part, written to ``path``."""
    return write_html(path, title, [database_part(result, name, progress, **options)])


def write_report(result: Any, path: str | Path, **options: Any) -> Path:
    """Write a self-contained HTML report of an ``avatarize`` result (options as in
    ``write_table_report``) or of an ``avatarize_database`` result (as in
    ``write_database_report``) to ``path``. Needs matplotlib: ``pip install
    'gpu_avatar[report]'``."""
    from ..relational import DatabaseAvatarizationResult

    if isinstance(result, DatabaseAvatarizationResult):
        return write_database_report(result, path, **options)
    return write_table_report(result, path, **options)
