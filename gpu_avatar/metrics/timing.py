"""The seconds a metric function took, kept on what it returns (``seconds``), so that a report
shows them whoever computed the metrics."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TypeVar

Function = TypeVar("Function", bound=Callable)


def timed(function: Function) -> Function:
    """``function`` setting ``seconds`` on its result to its wall time."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        result.seconds = time.perf_counter() - start
        return result

    return wrapper  # type: ignore[return-value]
