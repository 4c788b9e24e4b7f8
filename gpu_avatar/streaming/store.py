"""The destination of a streamed run: a folder on any file system fsspec opens (a local path,
``file://``, ``s3://``, ``gs://``, ``memory://``...), written by the driver and the tasks
alike. Every file is written under a temporary name and moved into place, so that a reader
never sees half a file."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .source import open_url


@dataclass
class Store:
    """A folder of a file system: ``fs`` (fsspec) and its absolute ``root``."""

    location: str  # as given, for messages
    fs: Any
    root: str

    @classmethod
    def open(cls, location: str | os.PathLike,
             storage_options: Mapping[str, Any] | None = None) -> Store:
        fs, root = open_url(location, storage_options)
        return cls(os.fspath(location), fs, root.rstrip("/") or "/")

    def path(self, *names: str) -> str:
        return "/".join([self.root, *names])

    def exists(self, *names: str) -> bool:
        return self.fs.exists(self.path(*names))

    def isdir(self, *names: str) -> bool:
        return self.fs.isdir(self.path(*names))

    def listdir(self, *names: str) -> list[str]:
        """Names in the folder (none if it does not exist)."""
        folder = self.path(*names)
        if not self.fs.isdir(folder):
            return []
        return sorted(os.path.basename(p.rstrip("/")) for p in self.fs.ls(folder, detail=False))

    def read_text(self, *names: str) -> str:
        with self.fs.open(self.path(*names), "r") as handle:
            return handle.read()

    @contextmanager
    def writing(self, *names: str):
        """A temporary path in this file system, moved onto ``names`` when the block ends
        without error, removed on an error."""
        final = self.path(*names)
        folder = final.rsplit("/", 1)[0]
        self.fs.makedirs(folder, exist_ok=True)
        temporary = f"{folder}/.{os.path.basename(final)}.{uuid.uuid4().hex[:12]}.tmp"
        try:
            yield temporary
            self.fs.mv(temporary, final)
        except BaseException:
            if self.fs.exists(temporary):
                self.fs.rm(temporary)
            raise

    def write_text(self, text: str, *names: str) -> None:
        with self.writing(*names) as temporary, self.fs.open(temporary, "w") as handle:
            handle.write(text)

    def move(self, source: tuple[str, ...], target: tuple[str, ...]) -> None:
        self.fs.mv(self.path(*source), self.path(*target))

    def remove(self, *names: str) -> None:
        """Remove a file or a folder with its content, if there."""
        target = self.path(*names)
        if self.fs.exists(target):
            self.fs.rm(target, recursive=True)

    def overlaps(self, fs: Any, path: str) -> bool:
        """Whether this folder and ``path`` of ``fs`` are one inside the other."""
        if type(fs) is not type(self.fs):
            return False
        a, b = self.root.rstrip("/") + "/", path.rstrip("/") + "/"
        return a.startswith(b) or b.startswith(a)
