"""Exceptions raised by gpu_avatar.

Every error gpu_avatar raises on purpose is a ``GpuAvatarError`` whose message names the
offending argument, column or file and says what to do about it:

- ``AvatarError`` (also a ``ValueError``): an invalid input or parameter value;
- ``FixableError`` (an ``AvatarError``): one whose fix is worded per entry point (Python, the
  command line, a YAML file); ``worded`` and ``in_context`` keep each entry point's words;
- ``AvatarTypeError`` (an ``AvatarError``, also a ``TypeError``): an argument of the wrong type;
- ``BackendUnavailableError`` (also a ``RuntimeError``): the requested backend cannot run here;
- ``MissingExtraError`` (also an ``ImportError``): an optional dependency is not installed.

No message quotes a data cell (a value of a real person leaves only where the user declared
it so): ``described`` words a cell by its kind and shape, ``rows_named`` by its rows.
"""

from __future__ import annotations

import datetime
import numbers
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any


class GpuAvatarError(Exception):
    """An error raised by gpu_avatar on purpose; the message says what to do."""


class AvatarError(GpuAvatarError, ValueError):
    """Invalid input or parameter: the message names it and says how to fix it."""


class FixableError(AvatarError):
    """An invalid input whose fix depends on the entry point: ``fixes`` maps "python", "cli"
    and "yaml" to the fix in that entry point's words (a missing one: the Python one);
    ``str()`` is the problem and the Python fix. Subclasses keep this signature."""

    def __init__(self, problem: str, fixes: Mapping[str, str]) -> None:
        self.problem, self.fixes = problem, dict(fixes)
        super().__init__(self.worded("python"))

    def worded(self, entry: str) -> str:
        """The message with the fix of ``entry`` ("python", "cli" or "yaml")."""
        fix = self.fixes.get(entry) or self.fixes.get("python")
        return f"{self.problem}; {fix}" if fix else self.problem

    def within(self, context: str) -> FixableError:
        """The same error with ``context`` (a table, a file) before its problem, fixes kept."""
        return type(self)(f"{context}: {self.problem}", self.fixes)

    def __reduce__(self):  # pickled (from a worker process) with its fixes
        return type(self), (self.problem, self.fixes)


class AvatarTypeError(AvatarError, TypeError):
    """An argument of the wrong type: the message names it and the type expected."""


class BackendUnavailableError(GpuAvatarError, RuntimeError):
    """The requested compute backend cannot run on this machine."""


class MissingExtraError(GpuAvatarError, ImportError):
    """An optional dependency is not installed: the message names the extra to install."""


def worded(error: BaseException, entry: str) -> str:
    """An error's message in the words of ``entry`` (a ``FixableError``'s fix for it)."""
    return error.worded(entry) if isinstance(error, FixableError) else str(error)


def foreign_words(error: BaseException) -> str:
    """What ``error`` says, in words that quote no cell: gpu_avatar's own message, with its
    class a memory or system error's, another's class only (pandas, numpy and drivers quote
    the value they could not read)."""
    if isinstance(error, GpuAvatarError):
        return str(error)
    if isinstance(error, (MemoryError, OSError)):
        return f"{type(error).__name__}: {error}"
    return type(error).__name__


def failure_text(error: BaseException) -> str:
    """A failed task's error: its class, and what it says where that quotes no cell."""
    words = foreign_words(error)
    return f"{type(error).__name__}: {words}" if isinstance(error, GpuAvatarError) else words


def in_context(error: GpuAvatarError, context: str) -> GpuAvatarError:
    """``error`` with ``context`` (a table, a file) before its message: the same class, a
    ``FixableError``'s fixes kept."""
    if isinstance(error, FixableError):
        return error.within(context)
    return type(error)(f"{context}: {error}")


@contextmanager
def error_context(context: str) -> Iterator[None]:
    """Errors of gpu_avatar raised inside name ``context`` (the table or file at work)."""
    try:
        yield
    except GpuAvatarError as error:
        raise in_context(error, context) from None


def import_extra(module: str, extra: str | None, purpose: str, install: str | None = None):
    """Import the optional ``module``, or raise ``MissingExtraError`` saying how to install
    it: the pip extra ``extra``, or ``install`` for what pip does not carry (RAPIDS)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        how = install or f"pip install 'gpu_avatar[{extra}]'"
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed: {how}"
        ) from error


_NAMES_SHOWN = 8
_SHAPED = 20  # a text up to this long is shown by its shape: 9 for a digit, a for a letter
_ROWS_SHOWN = 3


def among(names: Iterable[Any], asked: Iterable[Any] = ()) -> str:
    """``names`` to choose from (columns, tables) on a short line: those closest to the
    ``asked`` ones first, a few more, and how many there are in all."""
    import difflib

    names = [str(name) for name in names]
    close = [m for a in asked for m in difflib.get_close_matches(str(a), names, n=3)]
    shown = list(dict.fromkeys(close + names))[:_NAMES_SHOWN]
    more = f", ... ({len(names)} in all)" if len(names) > len(shown) else ""
    return ", ".join(shown) + more


def _shape(char: str) -> str:
    return "9" if char.isdigit() else "a" if char.isalpha() else " " if char.isspace() else char


def described(value: Any) -> str:
    """A data cell in words that do not quote it: its kind and size ("a 10-character text
    shaped 99/99/9999", "a 42-character text of 6 words", "a number", "a date")."""
    if isinstance(value, str):
        text = value.strip()
        said = f"a {len(text)}-character text"
        if len(text) <= _SHAPED:
            return f"{said} shaped {''.join(map(_shape, text))}"
        words = len(text.split())
        return f"{said} of {words} word{'' if words == 1 else 's'}"
    if value is None:
        return "a missing value"
    if type(value).__name__ in ("bool", "bool_"):
        return "a boolean"
    if isinstance(value, numbers.Number):
        return "a number"
    if isinstance(value, datetime.date) or type(value).__name__ == "datetime64":
        return "a date"
    if isinstance(value, datetime.timedelta) or type(value).__name__ == "timedelta64":
        return "a duration"
    if isinstance(value, (bytes, bytearray)):
        return f"a {len(value)}-byte value"
    return f"a value of type {type(value).__name__}"


def rows_named(rows: Iterable[int], count: int | None = None) -> str:
    """1-based ``rows`` in words, the first few only ("row 12", "rows 3, 7, 9 and 2 more");
    ``count``: how many there are in all, when ``rows`` holds only some."""
    rows = [int(r) for r in rows]
    count = len(rows) if count is None else count
    shown = ", ".join(map(str, rows[:_ROWS_SHOWN]))
    more = count - min(len(rows), _ROWS_SHOWN)
    return f"row{'' if count == 1 else 's'} {shown}" + (f" and {more:,} more" if more > 0 else "")
