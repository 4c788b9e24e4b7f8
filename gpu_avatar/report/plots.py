"""The report's plots, drawn by matplotlib's Agg backend as PNG figures, labelled in the
report's language: projection, per-variable distributions, correlation matrices, local
cloaking, children per parent."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import CONTINUOUS, TableEncoder
from ..metrics import PrivacyMetrics, SignalMetrics
from ..metrics.catalogue import PRIVACY_TARGETS
from .document import Figure
from .language import Translator

ORIGINAL_COLOUR, AVATAR_COLOUR = "#3b6fb6", "#e07b39"
DPI = 90
MAX_PLOTTED_VARIABLES = 48  # distributions; the report says how many were left out
MAX_CORRELATION_VARIABLES = 40
MAX_SCATTER_POINTS = 5000  # per side, a fixed random sample above that
MAX_MODALITIES = 15  # per categorical variable, the most frequent in the originals
MAX_LABEL = 30  # characters of a modality's label; longer ones are cut (``_label``)
# distributions, in inches: a plot's height, the gap under it for labels of up to 10
# characters, and what each further character takes (45 degrees, 7 points)
PLOT_HEIGHT, PLOT_GAP, LABEL_CHARACTER = 1.4, 1.0, 0.04
LOCAL_CLOAKING_TARGET = PRIVACY_TARGETS["local_cloaking"].threshold


def _matplotlib():
    """A figure factory on the Agg canvas (no pyplot, no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
        figure = Figure(figsize=(width, height), layout=layout)
        FigureCanvasAgg(figure)
        return figure

    return new_figure


def _figure(figure: Any, plot: str, caption: str, alt: str) -> Figure:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return Figure(plot, buffer.getvalue(), caption, alt)


def _sample(points: np.ndarray, seed: int = 0) -> np.ndarray:
    if len(points) <= MAX_SCATTER_POINTS:
        return points
    rows = np.random.default_rng(seed).choice(len(points), MAX_SCATTER_POINTS, replace=False)
    return points[np.sort(rows)]


def projection_plot(
    original: pd.DataFrame, avatars: pd.DataFrame, types: Mapping[Any, str], new_figure,
    tr: Translator,
) -> Figure:
    """Originals and avatars on the first two axes of a FAMD fitted on the originals."""
    from ..projection import FAMD

    model = FAMD(n_components=2, types=types).fit(original)
    points = [model.transform(frame).to_numpy() for frame in (original, avatars)]
    if points[0].shape[1] == 1:
        points = [np.column_stack([p, np.zeros(len(p))]) for p in points]
    inertia = list(np.asarray(model.explained_variance_ratio_, dtype=float)[:2] * 100) + [0, 0]
    figure = new_figure(7.5, 5.6)
    axes = figure.add_subplot()
    for coordinates, colour, label, count in (
        (points[0], ORIGINAL_COLOUR, tr("originals"), len(original)),
        (points[1], AVATAR_COLOUR, tr("avatars"), len(avatars)),
    ):
        shown = _sample(coordinates)
        axes.scatter(shown[:, 0], shown[:, 1], s=9, alpha=0.45, color=colour, linewidths=0,
                     label=f"{label} ({count})")
    for set_label, axis in ((axes.set_xlabel, 1), (axes.set_ylabel, 2)):
        set_label(tr("Dim. {axis} ({share} % of inertia)", axis=axis,
                     share=tr.number(inertia[axis - 1], ".1f")))
    axes.legend(loc="best", markerscale=2)
    axes.grid(alpha=0.3)
    caption = tr(
        "Originals and avatars on the first two axes of a {kind} fitted on the originals "
        "(avatars projected with the same model). Avatars should cover the same cloud without "
        "sitting on the originals.", kind=model.kind_.upper())
    return _figure(figure, "projection", caption, tr("projection of originals and avatars"))


def _label(modality: str) -> str:
    """A modality's tick label: whole up to ``MAX_LABEL`` characters (the plot leaves them
    room), else cut in the middle, an ellipsis marking the cut: labels that share their
    start (a family of modalities) stay apart by their ends."""
    if len(modality) <= MAX_LABEL:
        return modality
    return modality[: MAX_LABEL - 10] + "\u2026" + modality[-9:]


def _is_date(spec: Any) -> bool:
    """A datetime column (typed, or text declared datetime): its values are seconds since
    1970, drawn as dates."""
    if spec.text is not None:
        return spec.text.is_date
    return pd.api.types.is_datetime64_any_dtype(spec.dtype)


def _date_axis(axes: Any) -> None:
    """Dates on ``axes``' x axis, its values in matplotlib's date numbers (days)."""
    from matplotlib import dates

    locator = dates.AutoDateLocator(minticks=2, maxticks=6)  # room for their labels
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))


def _frequencies(series: pd.Series, missing: str) -> pd.Series:
    counts = series.astype(object).where(series.notna(), missing).value_counts(normalize=True)
    counts.index = [str(v) for v in counts.index]
    return counts.groupby(level=0).sum()


def distributions_plot(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    encoder: TableEncoder,
    signal: SignalMetrics | None,
    new_figure,
    tr: Translator,
) -> Figure:
    """One small plot per variable: histograms (continuous; dates on a date axis) or
    frequencies (categorical, labels whole up to ``MAX_LABEL`` characters), overlaid."""
    from matplotlib.dates import date2num

    columns = list(encoder.columns_)
    shown = columns[:MAX_PLOTTED_VARIABLES]
    ncols = min(4, len(shown))
    nrows = -(-len(shown) // ncols)
    missing = tr("(missing)")
    modalities = {}
    for column in shown:
        if encoder.specs_[column].kind != CONTINUOUS:
            frequencies = pd.concat(
                {"originals": _frequencies(original[column], missing),
                 "avatars": _frequencies(avatars[column], missing)}, axis=1,
            ).fillna(0.0)
            frequencies = frequencies.sort_values("originals", ascending=False)
            modalities[column] = frequencies.iloc[:MAX_MODALITIES]
    longest = max((len(_label(m)) for f in modalities.values() for m in f.index), default=0)
    room = LABEL_CHARACTER * max(0, longest - 10)  # the longest label's, below and left
    gap = PLOT_GAP + room
    height = nrows * (PLOT_HEIGHT + gap) + 0.5  # 0.6 above the plots, gap - 0.1 below
    figure = new_figure(3.1 * ncols, height, layout=None)  # constrained layout: seconds here
    figure.subplots_adjust(left=0.04 + room / (3.1 * ncols), right=0.99,
                           bottom=(gap - 0.1) / height,
                           top=1 - 0.6 / height, wspace=0.25, hspace=gap / PLOT_HEIGHT)
    hellinger = signal.hellinger_per_variable if signal is not None else {}
    epoch = date2num(np.datetime64("1970-01-01"))  # seconds since 1970: in days from it
    for index, column in enumerate(shown):
        axes = figure.add_subplot(nrows, ncols, index + 1)
        spec = encoder.specs_[column]
        if spec.kind == CONTINUOUS:
            values = [encoder.continuous_values(spec, frame[column])
                      for frame in (original, avatars)]
            values = [v[~np.isnan(v)] for v in values]
            if _is_date(spec):
                values = [epoch + v / 86400.0 for v in values]
                _date_axis(axes)
            pooled = np.concatenate(values)
            edges = np.histogram_bin_edges(pooled, bins=20) if pooled.size else 10
            for data, colour, label in zip(values, (ORIGINAL_COLOUR, AVATAR_COLOUR),
                                           (tr("originals"), tr("avatars")), strict=True):
                axes.hist(data, bins=edges, density=True, alpha=0.5, color=colour, label=label,
                          histtype="stepfilled")
            axes.set_yticks([])
        else:
            frequencies = modalities[column]
            positions = np.arange(len(frequencies))
            for offset, colour, side in (
                (-0.2, ORIGINAL_COLOUR, "originals"), (0.2, AVATAR_COLOUR, "avatars")
            ):
                axes.bar(positions + offset, frequencies[side], width=0.4, color=colour,
                         alpha=0.85, label=tr(side))
            axes.set_xticks(positions, [_label(v) for v in frequencies.index], rotation=45,
                            ha="right", fontsize=7)
        title = str(column)
        if str(column) in hellinger:
            title += f"  (H = {tr.number(hellinger[str(column)], '.2f')})"
        axes.set_title(title, fontsize=9)
        axes.tick_params(labelsize=7)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncols=2)
    left_out = len(columns) - len(shown)
    caption = tr(
        "Distribution of every variable, originals and avatars overlaid (continuous: density "
        "histograms on shared bins; categorical: relative frequencies, the {modalities} most "
        "frequent modalities). H: Hellinger distance.", modalities=MAX_MODALITIES)
    if left_out:
        caption += " " + tr("The last {count} variables are not drawn.", count=left_out)
    return _figure(figure, "distributions", caption, tr("per-variable distributions"))


def correlations_plot(
    original: pd.DataFrame, avatars: pd.DataFrame, encoder: TableEncoder, new_figure,
    tr: Translator,
) -> Figure | None:
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
            (matrices[0], tr("originals"), 1.0, "RdBu_r"),
            (matrices[1], tr("avatars"), 1.0, "RdBu_r"),
            (difference, tr("avatars - originals"), scale, "PuOr_r"),
        ]
    ):
        axes = figure.add_subplot(1, 3, index + 1)
        image = axes.imshow(matrix.to_numpy(), vmin=-limit, vmax=limit, cmap=cmap)
        axes.set_title(title)
        axes.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        axes.set_yticks(range(len(labels)), labels, fontsize=7)
        figure.colorbar(image, ax=axes, shrink=0.8)
    caption = tr(
        "Pearson correlations between continuous variables in the originals and in the "
        "avatars, and their difference (colour scale +/- {scale}).", scale=tr.number(scale, ".2f"))
    return _figure(figure, "correlations", caption, tr("correlation matrices"))


def local_cloaking_plot(privacy: PrivacyMetrics, new_figure, tr: Translator) -> Figure:
    """Histogram of the local cloaking of every original, with the target and the median."""
    values = np.asarray(privacy.local_cloaking_per_individual, dtype=float)
    upper = max(float(np.percentile(values, 99)), LOCAL_CLOAKING_TARGET + 1)
    clipped = np.minimum(values, upper)
    bins = np.arange(0, np.ceil(upper) + 2) - 0.5 if upper <= 60 else 60
    figure = new_figure(7.5, 3.8)
    axes = figure.add_subplot()
    axes.hist(clipped, bins=bins, color=ORIGINAL_COLOUR, alpha=0.85)
    axes.axvline(LOCAL_CLOAKING_TARGET, color="#cf222e", linestyle="--",
                 label=tr("target: > {target}", target=f"{LOCAL_CLOAKING_TARGET:g}"))
    median = float(np.median(values))
    axes.axvline(median, color="#1f2328", label=tr("median: {median}", median=tr.number(median)))
    axes.set_xlabel(tr("local cloaking (avatars at least as close as the own avatar)"))
    axes.set_ylabel(tr("originals"))
    axes.legend()
    at_risk = 100.0 * float((values <= LOCAL_CLOAKING_TARGET).mean())
    caption = tr(
        "Local cloaking of each original (values above the 99th percentile, {upper}, drawn in "
        "the last bin); {share} % of originals have a local cloaking of {target} or less.",
        upper=tr.number(upper), share=tr.number(at_risk, ".1f"),
        target=tr.number(LOCAL_CLOAKING_TARGET))
    return _figure(figure, "local-cloaking", caption, tr("local cloaking distribution"))


def children_per_parent_plot(
    title: str, original_rows: np.ndarray, n_original: int, avatar_rows: np.ndarray,
    n_avatar: int, new_figure, tr: Translator,
) -> Figure:
    """Share of parents with 0, 1, 2, ... children, originals and avatars side by side."""
    from ..relational.schema import children_counts

    counts = [children_counts(original_rows, n_original), children_counts(avatar_rows, n_avatar)]
    support = np.arange(max(int(c.max()) if c.size else 0 for c in counts) + 1)
    figure = new_figure(7.5, 3.6)
    axes = figure.add_subplot()
    for offset, count, colour, label in (
        (-0.2, counts[0], ORIGINAL_COLOUR, tr("originals")),
        (0.2, counts[1], AVATAR_COLOUR, tr("avatars")),
    ):
        shares = np.bincount(count, minlength=len(support)) / max(len(count), 1)
        axes.bar(support + offset, shares, width=0.4, color=colour, alpha=0.85, label=label)
    axes.set_xticks(support)
    axes.set_xlabel(tr("children per parent"))
    axes.set_ylabel(tr("share of parents"))
    axes.set_title(title, fontsize=10)
    axes.legend()
    caption = tr("Children per parent, {link}: originals (original links) and avatars.",
                 link=title)
    return _figure(figure, "children-per-parent", caption,
                   tr("children per parent {link}", link=title))


MAX_DRAWN_CURVES = 12  # per side, a fixed random sample of the individuals with a series


def time_series_plot(title: str, variable: str, samples: list, shape: Mapping[str, Any],
                     time_label: str, new_figure, tr: Translator) -> Figure:
    """One measurement variable of a time-series link: a sample of original and avatar
    curves against the time since their start (``samples``: (times since the series' start,
    values, series lengths) of the originals and of the avatars, sorted by series then time;
    ``time_label`` names that axis), and the mean curves on the normalised
    time grid with the originals' band of +/- one point-wise std (``shape``, from
    ``relational.scenarios.time_series_signal``)."""
    figure = new_figure(11, 3.8)
    curves, mean = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    for (times, values, lengths), colour, label in zip(
        samples, (ORIGINAL_COLOUR, AVATAR_COLOUR), (tr("originals"), tr("avatars")), strict=True
    ):
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        present = np.flatnonzero(lengths > 0)
        rng = np.random.default_rng(0)
        drawn = rng.choice(present, min(MAX_DRAWN_CURVES, len(present)), replace=False)
        for index, series in enumerate(np.sort(drawn)):
            rows = slice(offsets[series], offsets[series + 1])
            curves.plot(times[rows], values[rows], color=colour, alpha=0.6, marker=".",
                        linewidth=1, label=label if index == 0 else None)
    curves.set_xlabel(time_label)
    curves.set_title(tr("a sample of curves"), fontsize=10)
    curves.legend()
    grid = np.linspace(0.0, 1.0, len(shape["original mean"]))
    low = shape["original mean"] - shape["original std"]
    high = shape["original mean"] + shape["original std"]
    mean.fill_between(grid, low, high, color=ORIGINAL_COLOUR, alpha=0.2,
                      label=tr("originals: mean +/- std"))
    mean.plot(grid, shape["original mean"], color=ORIGINAL_COLOUR, label=tr("originals: mean"))
    mean.plot(grid, shape["avatar mean"], color=AVATAR_COLOUR, label=tr("avatars: mean"))
    mean.set_xlabel(tr("time within each series (0: start, 1: end)"))
    mean.set_title(tr("mean curves"), fontsize=10)
    mean.legend()
    figure.suptitle(f"{title}: {variable}", fontsize=11)
    caption = tr("{link}, {variable}: a sample of original and avatar curves, and the mean "
                 "curves on each series' own span with the originals' band of one standard "
                 "deviation.", link=title, variable=variable)
    return _figure(figure, "time-series", caption,
                   tr("curves of {variable}", variable=variable))
