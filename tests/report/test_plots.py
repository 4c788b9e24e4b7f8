"""The distributions plot reads as its data (issue #37): a datetime column on a date axis, a
long modality's label whole (``report/plots.py``)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from matplotlib import dates

from gpu_avatar.encoding import TableEncoder
from gpu_avatar.report.language import Translator
from gpu_avatar.report.plots import _matplotlib, distributions_plot

LONG = "Chronic kidney disease 3b"  # 25 characters


def _axes(df: pd.DataFrame, types: dict[str, str]) -> dict[str, object]:
    """The distributions plot of ``df`` against itself, drawn: its axes by title."""
    made, factory = [], _matplotlib()

    def new_figure(*args, **kwargs):
        made.append(factory(*args, **kwargs))
        return made[-1]

    encoder = TableEncoder(types, missing_indicators=False).fit(df)
    distributions_plot(df, df, encoder, None, new_figure, Translator("en"))
    (figure,) = made
    figure.canvas.draw()
    return {axes.get_title(): axes for axes in figure.axes}


def _table(rows: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "visit": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, rows), "D"),
        "diagnosis": rng.choice([LONG, "Asthma", "x" * 40], rows),
        "age": rng.normal(50, 10, rows),
    })


def test_a_datetime_column_is_drawn_on_a_date_axis():
    visit = _axes(_table(), {"diagnosis": "categorical"})["visit"]
    assert isinstance(visit.xaxis.get_major_formatter(), dates.ConciseDateFormatter)
    labels = [label.get_text() for label in visit.get_xticklabels()]
    assert labels and all(re.fullmatch(r"20(19|2\d)", label) for label in labels), labels


def test_a_long_modality_label_is_shown_whole():
    diagnosis = _axes(_table(), {"diagnosis": "categorical"})["diagnosis"]
    labels = [label.get_text() for label in diagnosis.get_xticklabels()]
    assert LONG in labels and "Asthma" in labels


def test_a_label_past_the_limit_is_cut_in_the_middle():
    from gpu_avatar.report.plots import MAX_LABEL

    labels = [label.get_text() for label in
              _axes(_table(), {"diagnosis": "categorical"})["diagnosis"].get_xticklabels()]
    assert "x" * (MAX_LABEL - 10) + "\u2026" + "x" * 9 in labels
