"""Self-contained HTML reports: one file, plots embedded, nothing loaded from anywhere.

    result.report("report.html")            # one table (an AvatarizationResult)
    database_result.report("report.html")   # a database (a DatabaseAvatarizationResult)

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

import base64
import datetime
import html
import io
import re
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..backend.choice import to_pandas
from ..encoding.encoder import CATEGORICAL, CONTINUOUS, IDENTIFIER, TableEncoder
from ..errors import import_extra
from ..metrics.privacy import PRIVACY_TARGETS, PrivacyMetrics, privacy_metrics
from ..metrics.signal import SignalMetrics, signal_metrics
from ..progress import ProgressLike, Steps

ORIGINAL_COLOUR, AVATAR_COLOUR = "#3b6fb6", "#e07b39"
DPI = 90
MAX_PLOTTED_VARIABLES = 48  # distributions; the report says how many were left out
MAX_CORRELATION_VARIABLES = 40
MAX_SCATTER_POINTS = 5000  # per side, a fixed random sample above that
MAX_MODALITIES = 15  # per categorical variable, the most frequent in the originals
LOCAL_CLOAKING_TARGET = PRIVACY_TARGETS["local_cloaking"].threshold

PRIVACY_DESCRIPTIONS = {
    "hidden_rate": "% of originals whose closest avatar is not their own",
    "local_cloaking": "median number of avatars at least as close to an original as its own",
    "distance_to_closest": "median distance of an avatar to its closest original",
    "closest_distances_ratio": "median ratio closest / second-closest original, per avatar",
    "closest_rate": "% of avatars not both very close to one original and far from the rest",
    "row_direct_match_protection": "% of originals with no identical avatar row",
    "column_direct_match_protection": "worst variable: % of originals whose unique value is "
    "not copied into the avatars",
    "categorical_hidden_rate": "% of originals not singled out on the chosen categorical "
    "variables (needs categorical_hidden_rate_variables)",
    "correlation_protection_rate": "% of originals protected from linkage on the known "
    "variables (needs known_variables)",
    "inference_continuous": "error of guessing the target through the closest avatar on the "
    "known variables / error of a marginal guess (1: the link teaches nothing)",
    "inference_categorical": "accuracy of guessing the target through the closest avatar on "
    "the known variables (needs known_variables and a categorical target)",
}
SIGNAL_DESCRIPTIONS = {
    "hellinger_mean": "mean over variables of the Hellinger distance between original and "
    "avatar distributions (0: identical, 1: disjoint)",
    "hellinger_std": "standard deviation of the per-variable Hellinger distances",
    "correlation_difference_ratio": "mean |Pearson correlation difference| over pairs of "
    "continuous variables, in %",
}
PRIVACY_SCENARIO_COLUMNS = [
    "hidden_rate", "local_cloaking", "distance_to_closest", "closest_distances_ratio",
    "closest_rate", "row_direct_match_protection", "column_direct_match_protection",
]
SIGNAL_SCENARIO_COLUMNS = ["hellinger_mean", "hellinger_std", "correlation_difference_ratio"]

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


@contextmanager
def _clock(timings: dict[str, float], name: str):
    start = time.perf_counter()
    yield
    timings[name] = time.perf_counter() - start


# --------------------------------------------------------------------------- plots
def require_matplotlib() -> None:
    """Raise ``MissingExtraError`` (naming the ``report`` extra) when matplotlib is missing."""
    import_extra("matplotlib", "report", "the HTML report")


def _matplotlib():
    """A figure factory on the Agg canvas (no pyplot, no global backend change)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
        figure = Figure(figsize=(width, height), layout=layout)
        FigureCanvasAgg(figure)
        return figure

    return new_figure


def _figure_html(figure: Any, plot: str, caption: str, alt: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<figure class="plot" data-plot="{plot}">'
        f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{caption}</figcaption></figure>"
    )


def _sample(points: np.ndarray, seed: int = 0) -> np.ndarray:
    if len(points) <= MAX_SCATTER_POINTS:
        return points
    rows = np.random.default_rng(seed).choice(len(points), MAX_SCATTER_POINTS, replace=False)
    return points[np.sort(rows)]


def projection_plot(
    original: pd.DataFrame, avatars: pd.DataFrame, types: Mapping[Any, str], new_figure
) -> str:
    """Originals and avatars on the first two axes of a FAMD fitted on the originals."""
    from ..projection.projection import FAMD

    model = FAMD(n_components=2, types=types).fit(original)
    points = [model.transform(frame).to_numpy() for frame in (original, avatars)]
    if points[0].shape[1] == 1:
        points = [np.column_stack([p, np.zeros(len(p))]) for p in points]
    inertia = list(np.asarray(model.explained_variance_ratio_, dtype=float)[:2] * 100) + [0, 0]
    figure = new_figure(7.5, 5.6)
    axes = figure.add_subplot()
    for coordinates, colour, label, count in (
        (points[0], ORIGINAL_COLOUR, "originals", len(original)),
        (points[1], AVATAR_COLOUR, "avatars", len(avatars)),
    ):
        shown = _sample(coordinates)
        axes.scatter(shown[:, 0], shown[:, 1], s=9, alpha=0.45, color=colour, linewidths=0,
                     label=f"{label} ({count})")
    axes.set_xlabel(f"Dim. 1 ({inertia[0]:.1f} % of inertia)")
    axes.set_ylabel(f"Dim. 2 ({inertia[1]:.1f} % of inertia)")
    axes.legend(loc="best", markerscale=2)
    axes.grid(alpha=0.3)
    caption = (
        f"Originals and avatars on the first two axes of a {model.kind_.upper()} fitted on the "
        "originals (avatars projected with the same model). Avatars should cover the same "
        "cloud without sitting on the originals."
    )
    return _figure_html(figure, "projection", caption, "projection of originals and avatars")


def _frequencies(series: pd.Series) -> pd.Series:
    counts = series.astype(object).where(series.notna(), "(missing)").value_counts(normalize=True)
    counts.index = [str(v) for v in counts.index]
    return counts.groupby(level=0).sum()


def distributions_plot(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    encoder: TableEncoder,
    signal: SignalMetrics | None,
    new_figure,
) -> str:
    """One small plot per variable: histograms (continuous) or frequencies, overlaid."""
    columns = list(encoder.columns_)
    shown = columns[:MAX_PLOTTED_VARIABLES]
    ncols = min(4, len(shown))
    nrows = -(-len(shown) // ncols)
    height = 2.4 * nrows + 0.6
    figure = new_figure(3.1 * ncols, height, layout=None)  # constrained layout: seconds here
    figure.subplots_adjust(left=0.04, right=0.99, bottom=0.9 / height, top=1 - 0.6 / height,
                           wspace=0.25, hspace=0.75)
    hellinger = signal.hellinger_per_variable if signal is not None else {}
    for index, column in enumerate(shown):
        axes = figure.add_subplot(nrows, ncols, index + 1)
        spec = encoder.specs_[column]
        if spec.kind == CONTINUOUS:
            values = [encoder.continuous_values(spec, frame[column])
                      for frame in (original, avatars)]
            values = [v[~np.isnan(v)] for v in values]
            pooled = np.concatenate(values)
            edges = np.histogram_bin_edges(pooled, bins=20) if pooled.size else 10
            for data, colour, label in zip(values, (ORIGINAL_COLOUR, AVATAR_COLOUR),
                                           ("originals", "avatars"), strict=True):
                axes.hist(data, bins=edges, density=True, alpha=0.5, color=colour, label=label,
                          histtype="stepfilled")
            axes.set_yticks([])
        else:
            frequencies = pd.concat(
                {"originals": _frequencies(original[column]),
                 "avatars": _frequencies(avatars[column])}, axis=1,
            ).fillna(0.0)
            frequencies = frequencies.sort_values("originals", ascending=False)
            frequencies = frequencies.iloc[:MAX_MODALITIES]
            positions = np.arange(len(frequencies))
            for offset, colour, label in (
                (-0.2, ORIGINAL_COLOUR, "originals"), (0.2, AVATAR_COLOUR, "avatars")
            ):
                axes.bar(positions + offset, frequencies[label], width=0.4, color=colour,
                         alpha=0.85, label=label)
            axes.set_xticks(positions, [str(v)[:10] for v in frequencies.index], rotation=45,
                            ha="right", fontsize=7)
        title = str(column)
        if str(column) in hellinger:
            title += f"  (H = {hellinger[str(column)]:.2f})"
        axes.set_title(title, fontsize=9)
        axes.tick_params(labelsize=7)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncols=2)
    left_out = len(columns) - len(shown)
    caption = (
        "Distribution of every variable, originals and avatars overlaid (continuous: density "
        "histograms on shared bins; categorical: relative frequencies, the "
        f"{MAX_MODALITIES} most frequent modalities). H: Hellinger distance."
        + (f" The last {left_out} variables are not drawn." if left_out else "")
    )
    return _figure_html(figure, "distributions", caption, "per-variable distributions")


def correlations_plot(
    original: pd.DataFrame, avatars: pd.DataFrame, encoder: TableEncoder, new_figure
) -> str | None:
    """Pearson correlations of the continuous variables: original, avatar, difference."""
    columns = list(encoder.continuous_columns_)[:MAX_CORRELATION_VARIABLES]
    if len(columns) < 2:
        return None
    matrices = [
        pd.DataFrame(
            {str(c): encoder.continuous_values(encoder.specs_[c], frame[c]) for c in columns}
        ).corr()
        for frame in (original, avatars)
    ]
    difference = matrices[1] - matrices[0]
    scale = max(0.1, float(np.nanmax(np.abs(difference.to_numpy()))))
    figure = new_figure(16, 5.6)
    labels = [str(c)[:14] for c in columns]
    for index, (matrix, title, limit, cmap) in enumerate(
        [
            (matrices[0], "originals", 1.0, "RdBu_r"),
            (matrices[1], "avatars", 1.0, "RdBu_r"),
            (difference, "avatars - originals", scale, "PuOr_r"),
        ]
    ):
        axes = figure.add_subplot(1, 3, index + 1)
        image = axes.imshow(matrix.to_numpy(), vmin=-limit, vmax=limit, cmap=cmap)
        axes.set_title(title)
        axes.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        axes.set_yticks(range(len(labels)), labels, fontsize=7)
        figure.colorbar(image, ax=axes, shrink=0.8)
    caption = (
        "Pearson correlations between continuous variables in the originals and in the avatars, "
        f"and their difference (colour scale +/- {scale:.2f})."
    )
    return _figure_html(figure, "correlations", caption, "correlation matrices")


def local_cloaking_plot(privacy: PrivacyMetrics, new_figure) -> str:
    """Histogram of the local cloaking of every original, with the target and the median."""
    values = np.asarray(privacy.local_cloaking_per_individual, dtype=float)
    upper = max(float(np.percentile(values, 99)), LOCAL_CLOAKING_TARGET + 1)
    clipped = np.minimum(values, upper)
    bins = np.arange(0, np.ceil(upper) + 2) - 0.5 if upper <= 60 else 60
    figure = new_figure(7.5, 3.8)
    axes = figure.add_subplot()
    axes.hist(clipped, bins=bins, color=ORIGINAL_COLOUR, alpha=0.85)
    axes.axvline(LOCAL_CLOAKING_TARGET, color="#cf222e", linestyle="--",
                 label=f"target: > {LOCAL_CLOAKING_TARGET:g}")
    median = float(np.median(values))
    axes.axvline(median, color="#1f2328", label=f"median: {median:g}")
    axes.set_xlabel("local cloaking (avatars at least as close as the own avatar)")
    axes.set_ylabel("originals")
    axes.legend()
    at_risk = 100.0 * float((values <= LOCAL_CLOAKING_TARGET).mean())
    caption = (
        f"Local cloaking of each original (values above the 99th percentile, {upper:g}, drawn "
        f"in the last bin); {at_risk:.1f} % of originals have a local cloaking of "
        f"{LOCAL_CLOAKING_TARGET:g} or less."
    )
    return _figure_html(figure, "local-cloaking", caption, "local cloaking distribution")


def children_per_parent_plot(
    title: str, original_rows: np.ndarray, n_original: int, avatar_rows: np.ndarray,
    n_avatar: int, new_figure,
) -> str:
    """Share of parents with 0, 1, 2, ... children, originals and avatars side by side."""
    counts = [np.bincount(original_rows, minlength=n_original),
              np.bincount(avatar_rows, minlength=n_avatar)]
    support = np.arange(max(int(c.max()) if c.size else 0 for c in counts) + 1)
    figure = new_figure(7.5, 3.6)
    axes = figure.add_subplot()
    for offset, count, colour, label in (
        (-0.2, counts[0], ORIGINAL_COLOUR, "originals"),
        (0.2, counts[1], AVATAR_COLOUR, "avatars"),
    ):
        shares = np.bincount(count, minlength=len(support)) / max(len(count), 1)
        axes.bar(support + offset, shares, width=0.4, color=colour, alpha=0.85, label=label)
    axes.set_xticks(support)
    axes.set_xlabel("children per parent")
    axes.set_ylabel("share of parents")
    axes.set_title(title, fontsize=10)
    axes.legend()
    caption = f"Children per parent, {_esc(title)}: originals (original links) and avatars."
    return _figure_html(figure, "children-per-parent", caption, f"children per parent {title}")


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
    metric_timings: dict[str, float] = {}
    if privacy is None and individual_level:
        with steps.step(f"{name}: privacy metrics"), _clock(metric_timings, "privacy metrics"):
            privacy = privacy_metrics(original, unshuffled_avatars, ncp=ncp, types=types,
                                      backend=backend, **dict(privacy_options or {}))
    if signal is None:
        with steps.step(f"{name}: signal metrics"), _clock(metric_timings, "signal metrics"):
            signal = signal_metrics(original, avatars, types=types)
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
    parameters = {key: value for key, value in result.parameters.items() if key != "types"}
    parameters["seed"] = result.seed
    parameters["projection"] = result.projection_kind.upper()
    return dict(
        avatars=to_pandas(result.avatars), types=result.parameters["types"],
        ncp=result.parameters["ncp"],
        parameters=parameters, timings=result.timings, backend=result.parameters["backend"],
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


def _summary_matrix(summary: pd.DataFrame) -> str:
    head = "<th>individual-level table</th>" + "".join(f"<th>{_esc(c)}</th>" for c in summary)
    body = ""
    for table, row in summary.iterrows():
        cells = f"<th>{_esc(table)}</th>"
        for value in row:
            text = str(value or "")
            kind = "pass" if text.endswith("pass") else "fail" if text.endswith("FAIL") else "empty"
            cells += f'<td class="{kind}">{_esc(text) or "—"}</td>'
        body += f"<tr>{cells}</tr>"
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        '<p class="note">Rows: the people protected (individual-level tables); columns: the table '
        "they are measured against. Each cell is the worst scenario: hidden rate and median "
        "local cloaking (LC); pass means hidden rate &gt; 90 % and LC &gt; 5.</p>"
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
    from ..relational.scenarios import STANDALONE, _types, _variables

    new_figure = _matplotlib()
    db = result.database
    order = db.topological_order()
    metric_timings: dict[str, float] = {}
    if privacy is None:
        with steps.step(f"{name}: privacy scenarios"), _clock(metric_timings, "privacy"):
            privacy = result.privacy_metrics()
    if signal is None:
        with steps.step(f"{name}: signal scenarios"), _clock(metric_timings, "signal"):
            signal = result.signal_metrics()
    summary = result.metrics_summary(privacy)
    builder = _Builder(slug or slugify(name), level)

    rows = [["seed", _esc(result.parameters.get("seed"))],
            ["backend", _esc(result.parameters.get("backend"))]]
    table_rows = []
    for table in order:
        parents = ", ".join(f"{link.parent} ({link.foreign_key})" for link in db.parents_of(table))
        run = result.table_results[table].parameters
        table_rows.append([
            _esc(table), str(len(result.originals[table])), str(len(result.tables[table])),
            _esc(db.tables[table].primary_key), _number(db.is_individual_level(table)),
            _esc(parents or "none"), str(run["k"]), str(run["ncp"]),
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

    builder.section("summary-matrix", "Privacy summary matrix", _summary_matrix(summary))

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
        parameters = {key: run.parameters[key] for key in ("k", "ncp", "categorical",
                                                            "imputation", "backend")}
        parts.append(_table_part(
            _variables(result, table, False), _variables(result, table, True), steps,
            name=f"Table {table}", types=_types(result, table), ncp=run.parameters["ncp"],
            parameters=parameters, timings=run.timings,
            privacy=standalone(privacy, table), signal=standalone(signal, table),
            individual_level=db.is_individual_level(table), backend=result.parameters["backend"],
            slug=f"{builder.slug}-{slugify(table)}", level=level + 1,
        ).html)
    builder.section("tables", "Tables", "".join(parts))

    failing = int(sum(str(v).endswith("FAIL") for v in summary.to_numpy().ravel()))
    cells = int(sum(bool(str(v or "")) for v in summary.to_numpy().ravel()))
    lead = (f"{len(order)} tables, {len(result.links)} links; privacy summary: "
            f"{cells - failing} of {cells} cells pass.")
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
