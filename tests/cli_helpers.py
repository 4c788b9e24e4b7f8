"""Running the real ``gpu-avatar`` command in a subprocess, and reading what it writes.

Shared by ``test_cli.py`` and ``test_report.py`` (the data sets come from conftest's
``datasets_path`` fixture: ``tests/data``, or ``$GPU_AVATAR_DATASETS``).
"""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def gpu_avatar_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m gpu_avatar``."""
    script = Path(sys.executable).with_name("gpu-avatar")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gpu_avatar"]


def run_cli(*args, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*gpu_avatar_command(), *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def run_main(capsys, *arguments) -> tuple[int, str, str]:
    """``gpu-avatar`` run in this process (``cli.main``): exit status, stdout, stderr."""
    from gpu_avatar.cli import main

    status = main([str(a) for a in arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def check_ok(process: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert process.returncode == 0, f"exit {process.returncode}\n{process.stderr}"
    assert process.stderr == "", process.stderr  # no bar off a terminal, no warning
    return process


class ReportParser(HTMLParser):
    """What a report holds: parts, sections and plots (in order), image sources, links."""

    def __init__(self) -> None:
        super().__init__()
        self.parts, self.sections, self.plots = [], [], []
        self.ids, self.sources, self.links, self.tags = set(), [], [], set()
        self.cell_classes = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.add(tag)
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if "data-part" in attributes:
            self.parts.append((attributes["data-part"], attributes.get("id")))
        if "data-section" in attributes:
            self.sections.append((attributes["data-section"], attributes.get("id")))
        if "data-plot" in attributes:
            self.plots.append(attributes["data-plot"])
        if "src" in attributes:
            self.sources.append(attributes["src"])
        for name in ("href", "action", "srcset", "poster", "data", "background"):
            if name in attributes:
                self.links.append(attributes[name])
        if tag == "td" and "class" in attributes:
            self.cell_classes.append(attributes["class"])


def parse_report(path: Path) -> ReportParser:
    parser = ReportParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser
