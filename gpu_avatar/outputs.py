"""Outputs written whole or not at all, their paths checked before any work.

    with staged_outputs():                  # several files: all of them, or none
        write_table(avatars, "out/avatars.csv")
        write_report(result, "out/report.html")

- ``atomic_path(path)``: a temporary name next to ``path`` to write to, moved onto ``path``
  (``os.replace``) when the block ends without error and removed otherwise; inside a
  ``staged_outputs()`` block the move waits for the end of that block. ``write_table``, the
  reports, the command's files and the streamed Parquet parts (``alone``: the manifest
  records them as they come) are all written this way.
- ``staged_outputs()``: on an error, no output is moved, the temporaries are removed, and so
  are the folders the block created: every output is as it was before.
- ``check_output`` and ``OutputPaths``: an output's suffix, folder and permissions, and no
  output that is also an input or another output, checked before the work.
"""

from __future__ import annotations

import contextvars
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import AvatarError

PathLike = str | os.PathLike


class _Staging:
    """Temporary files waiting to be moved onto their outputs, and the folders made for them."""

    def __init__(self) -> None:
        self.moves: list[tuple[Path, Path]] = []  # (temporary, output)
        self.folders: list[Path] = []  # created here, outermost first

    def add(self, path: PathLike) -> Path:
        """A new temporary name for ``path`` (through a link: for the file it points to), in
        the same folder, made if missing."""
        final = Path(os.path.realpath(path))
        for folder in reversed([p for p in final.parents if not p.exists()]):
            folder.mkdir()
            self.folders.append(folder)
        temporary = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
        self.moves.append((temporary, final))
        return temporary

    def drop(self, temporary: Path) -> None:
        temporary.unlink(missing_ok=True)
        self.moves = [move for move in self.moves if move[0] != temporary]

    def commit(self) -> None:
        """Move every temporary onto its output (keeping a replaced file's permissions)."""
        for _, final in self.moves:  # the one move that could fail, refused before any move
            if final.is_dir():
                raise AvatarError(f"{final} is a folder, where a file is to be written: nothing "
                                  "was written; choose another path")
        for temporary, final in self.moves:
            if final.is_file():
                shutil.copymode(final, temporary)
            os.replace(temporary, final)

    def discard(self) -> None:
        for temporary, _ in self.moves:
            temporary.unlink(missing_ok=True)
        for folder in reversed(self.folders):
            try:
                folder.rmdir()
            except OSError:  # not empty: something else was written there meanwhile
                pass


_STAGING: contextvars.ContextVar[_Staging | None] = contextvars.ContextVar(
    "gpu_avatar_staging", default=None
)


@contextmanager
def _staging(join: bool) -> Iterator[_Staging]:
    """The enclosing staging (``join``), else a new one committed or discarded at the end."""
    outer = _STAGING.get()
    if join and outer is not None:
        yield outer
        return
    staging = _Staging()
    token = _STAGING.set(staging)
    try:
        yield staging
        staging.commit()
    except BaseException:
        staging.discard()
        raise
    finally:
        _STAGING.reset(token)


@contextmanager
def staged_outputs() -> Iterator[None]:
    """Hold back every ``atomic_path`` output of the block until it ends: then move them all
    into place, or on an error none (temporaries and the folders made for them removed). A
    block inside another is part of the outer one."""
    with _staging(join=True):
        yield


@contextmanager
def atomic_path(path: PathLike, *, alone: bool = False) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to: moved onto ``path`` when the block
    ends without error (or when the enclosing ``staged_outputs()`` block does, unless
    ``alone``: files with their own bookkeeping), removed on an error. Missing parent folders
    are made (and removed again on an error)."""
    with _staging(join=not alone) as staging:
        temporary = staging.add(path)
        try:
            yield temporary
        except BaseException:
            staging.drop(temporary)
            raise


def check_output(name: str, path: PathLike, format: Callable[[Path], Any] | None = None, *,
                 folder: bool = False) -> Path:
    """``path`` as a place to write ``name`` (the option or argument, for the message): a
    file (a folder with ``folder=True``) of the ``format`` (a function raising an
    ``AvatarError`` for a wrong suffix), writable, in a folder that exists or can be made."""
    path = Path(path)
    if format is not None:
        try:
            format(path)
        except AvatarError as error:
            raise AvatarError(f"{name} {error}") from None
    absolute = path.absolute()
    if absolute.exists() and absolute.is_dir() != folder:
        found = "a file, not a folder" if folder else "a folder, where a file is to be written"
        raise AvatarError(f"{name} {path} is {found}: choose another path")
    existing = next(p for p in (absolute, *absolute.parents) if p.exists())
    if existing != absolute and not existing.is_dir():
        raise AvatarError(f"{name} {path} cannot be created: {existing} is a file, not a "
                          "folder; choose another path")
    where = existing if existing.is_dir() else existing.parent  # where the file is written
    if not os.access(where, os.W_OK | os.X_OK):
        raise AvatarError(f"{name} {path}: no permission to write in {where}; choose another "
                          "path")
    if not folder and absolute.exists() and not os.access(absolute, os.W_OK):
        raise AvatarError(f"{name} {path} is read-only: make it writable or choose another path")
    return path


class OutputPaths:
    """The outputs of one command, each checked by ``check_output`` when added and refused
    when it is also an input or another output, or an existing file unless ``overwrite``
    (``--overwrite``: a second run must not replace the first's files without a word)."""

    def __init__(self, inputs: Mapping[str, PathLike | None] | None = None, *,
                 overwrite: bool) -> None:
        self.inputs: dict[Path, str] = {}
        self.outputs: dict[Path, str] = {}
        self.overwrite = overwrite
        self.add_inputs(inputs or {})

    def add_inputs(self, inputs: Mapping[str, PathLike | None]) -> None:
        """Files the run reads (``None`` ignored): never one of its outputs."""
        for name, path in inputs.items():
            if path is not None:
                self._refuse(self.outputs, name, path)
                self.inputs[Path(path).resolve()] = name

    def add(self, name: str, path: PathLike | None, format: Callable[[Path], Any] | None = None,
            *, folder: bool = False) -> Path | None:
        """``path`` checked as the output ``name`` (``None`` when not given)."""
        if path is None:
            return None
        path = check_output(name, path, format, folder=folder)
        self._refuse({**self.inputs, **self.outputs}, name, path)
        if not (folder or self.overwrite) and path.exists():
            raise AvatarError(f"{name} {path} already exists: pass --overwrite to replace it, "
                              "or choose another path")
        self.outputs[path.resolve()] = name
        return path

    @staticmethod
    def _refuse(taken: dict[Path, str], name: str, path: PathLike) -> None:
        other = taken.get(Path(path).resolve())
        if other is not None:
            raise AvatarError(f"{name} {path} is also {other}: choose another path")
