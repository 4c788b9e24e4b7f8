"""cuDF DataFrames in and out: inputs are read as pandas, outputs given back as cuDF when the
input was (checked without importing cudf)."""

from __future__ import annotations

from typing import Any


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
