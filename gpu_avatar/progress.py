"""Optional progress reporting for steps that can take a while.

Functions with a ``progress`` argument (``avatarize``, ``avatarize_database``, the report
writers) accept:

- ``None`` or ``False`` (the default): silent;
- ``True``: a tqdm bar on stderr, removed when done;
- a callable ``progress(step, done, total)``, called after each step (``total`` may be None).

A notice (``notice``: the kernels compiling on first use) is a line written above the bars.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from .errors import AvatarError

ProgressLike = bool | None | Callable[[str, int, int | None], Any]

_open_bars: weakref.WeakSet[Steps] = weakref.WeakSet()


class Steps:
    """A sequence of named steps reported to ``progress`` (see the module docstring)."""

    def __init__(self, progress: ProgressLike, description: str, total: int | None = None):
        self.description = description
        self.total = total
        self.done = 0
        self.label = ""
        self._callback = None
        self._tqdm = None
        self._bar = None
        if progress is True:
            from tqdm import tqdm

            self._tqdm = tqdm
        elif callable(progress):
            self._callback = progress
        elif progress not in (None, False):
            raise AvatarError(
                "progress must be None, True/False or a callable (step, done, total), got "
                f"{type(progress).__name__}"
            )

    def start(self, label: str) -> None:
        """Step ``label`` begins (shown next to the bar)."""
        self.label = label
        if self._tqdm is None:
            return
        if self._bar is None:
            self._bar = self._tqdm(
                total=self.total, desc=self.description, unit="step", leave=False,
                dynamic_ncols=True,
            )
            _open_bars.add(self)
        self._bar.set_postfix_str(label)

    def advance(self) -> None:
        """The current step is done."""
        self.done += 1
        if self._callback is not None:
            self._callback(self.label, self.done, self.total)
        if self._bar is not None:
            self._bar.update(1)
            if self.total is not None and self.done >= self.total:
                self.close()

    @contextmanager
    def step(self, label: str):
        """``with steps.step("name"): ...``: start, then advance (the bar closes on error)."""
        self.start(label)
        try:
            yield
        except BaseException:
            self.close()
            raise
        self.advance()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            _open_bars.discard(self)


def notice(text: str) -> bool:
    """Write ``text`` as a line above the open bars; False when none is open (no step under
    way reports to a bar: nothing is written)."""
    if not _open_bars:
        return False
    from tqdm import tqdm

    tqdm.write(text, file=sys.stderr)
    return True


def close_all() -> None:
    """Close every open bar (before printing an error, say)."""
    for steps in list(_open_bars):
        steps.close()
