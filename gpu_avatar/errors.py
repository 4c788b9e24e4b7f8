"""Exceptions raised by gpu_avatar.

Every error gpu_avatar raises on purpose is a ``GpuAvatarError`` whose message names the
offending argument, column or file and says what to do about it:

- ``AvatarError`` (also a ``ValueError``): an invalid input or parameter value;
- ``FixableError`` (an ``AvatarError``): one whose fix is worded per entry point (Python, the
  command line, a YAML file); ``worded`` and ``in_context`` keep each entry point's words;
- ``AvatarTypeError`` (an ``AvatarError``, also a ``TypeError``): an argument of the wrong type;
- ``BackendUnavailableError`` (also a ``RuntimeError``): the requested backend cannot run here;
- ``MissingExtraError`` (also an ``ImportError``): an optional dependency is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager


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
