"""cuDF DataFrames in and out: inputs are read as pandas, outputs given back as cuDF when the
input was (checked without importing cudf)."""

from __future__ import annotations

from typing import Any

import pandas as pd

# pandas 3 always copies on write (pandas 2 when its option is set): a shallow copy then shares
# the data until either side writes.
_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3 or pd.get_option("mode.copy_on_write")


def is_cudf(frame: Any) -> bool:
    """Whether ``frame`` is a cuDF DataFrame (checked without importing cudf)."""
    return type(frame).__module__.split(".")[0] == "cudf"


def to_pandas(frame: Any) -> Any:
    """A pandas view of ``frame``: cuDF DataFrames are copied to the host, others unchanged."""
    return frame.to_pandas() if is_cudf(frame) else frame


def like_input(frame: Any, original: Any) -> Any:
    """``frame`` as a cuDF DataFrame when ``original`` was one, else unchanged."""
    if not is_cudf(original):
        return frame
    import cudf

    return cudf.from_pandas(frame)


def snapshot(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` that the caller's later edits cannot reach (kept in results):
    shallow, so free, under copy-on-write; deep otherwise."""
    return frame.copy(deep=not _COPY_ON_WRITE)
