"""The report's plots, drawn by matplotlib's Agg backend and embedded as PNG data URIs
(``pip install 'gpu_avatar[report]'``): projection, per-variable distributions, correlation
matrices, local cloaking, children per parent."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import CONTINUOUS, TableEncoder
from ..errors import import_extra
from ..metrics import PrivacyMetrics, SignalMetrics
from ..metrics.targets import PRIVACY_TARGETS

ORIGINAL_COLOUR, AVATAR_COLOUR = "#3b6fb6", "#e07b39"
DPI = 90
MAX_PLOTTED_VARIABLES = 48  # distributions; the report says how many were left out
MAX_CORRELATION_VARIABLES = 40
MAX_SCATTER_POINTS = 5000  # per side, a fixed random sample above that
MAX_MODALITIES = 15  # per categorical variable, the most frequent in the originals
LOCAL_CLOAKING_TARGET = PRIVACY_TARGETS["local_cloaking"].threshold


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
        f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
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
    from ..projection import FAMD

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
    from ..relational.schema import children_counts

    counts = [children_counts(original_rows, n_original), children_counts(avatar_rows, n_avatar)]
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
    caption = f"Children per parent, {html.escape(title)}: originals (original links) and avatars."
    return _figure_html(figure, "children-per-parent", caption, f"children per parent {title}")
