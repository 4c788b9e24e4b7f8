"""The documentation site (docs/, mkdocs.yml): its examples run, its build is strict, and the
code's citations of the specification point at sections that exist.

Runnable examples: a ```python block whose fence line directly follows the line
``<!-- test -->`` (an HTML comment, invisible on the site). The runnable blocks of a page run in
order, in one namespace, in a temporary working directory, on the bundled data; a page's
other blocks are illustrations (a GPU, a server, files of the reader's own). The site's build
(``mkdocs build --strict``) needs the docs' own environment, which ``make docs`` (a dependency
of ``make test``) creates: without it the build test is skipped, and fails in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
MARKER = "<!-- test -->"
FENCE = re.compile(r"^```(\w*)\s*$")
# A citation of the specification in the code: "docs/spec/metrics.md, section 2" (or 3.5).
CITATION = re.compile(r"docs/spec/(\w+)\.md,?\s+sections?\s+(\d+(?:\.\d+)?)")


def runnable_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of each runnable block of a page, in order; a marker not followed by
    a ```python fence is an error (a typo would silently leave an example untested)."""
    lines = text.splitlines()
    blocks = []
    for number, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        fence = FENCE.match(lines[number + 1]) if number + 1 < len(lines) else None
        if fence is None or fence.group(1) != "python":
            raise AssertionError(f"line {number + 1}: {MARKER} must be followed by ```python")
        end = next(i for i in range(number + 2, len(lines)) if lines[i].startswith("```"))
        blocks.append((number + 3, "\n".join(lines[number + 2:end]) + "\n"))
    return blocks


PAGES = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")
               if MARKER in path.read_text(encoding="utf-8"))


def test_runnable_examples_found():
    """The convention is in use: the getting-started page and the tutorials on bundled data."""
    assert {"getting-started.md", "tutorials/hospital-csv.md", "tutorials/sqlite-database.md",
            "tutorials/parquet-stream.md"} <= set(PAGES)


def test_marker_reading():
    text = (f"a\n{MARKER}\n```python\nx = 1\n```\n```python\nnot run\n```\n"
            f"{MARKER}\n```python\ny\n```\n")
    assert runnable_blocks(text) == [(4, "x = 1\n"), (11, "y\n")]
    with pytest.raises(AssertionError, match="must be followed"):
        runnable_blocks(f"{MARKER}\n```bash\nls\n```\n")


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page, tmp_path, monkeypatch):
    path = DOCS / page
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs.{page}"}
    for line, code in runnable_blocks(path.read_text(encoding="utf-8")):
        try:
            exec(compile(code, f"{path}:{line}", "exec"), namespace)
        except Exception as error:  # name the page and line of the failing block
            raise AssertionError(f"the example at docs/{page}, line {line} fails: "
                                 f"{type(error).__name__}: {error}") from error


def test_code_cites_existing_sections():
    """Each "docs/spec/PAGE.md, section N[.M]" in the package, tests and benchmarks names a
    page with a heading numbered so ("## N." or "### N.M")."""
    cited = []
    for folder in ("gpu_avatar", "tests", "benchmarks"):
        for source in (REPO / folder).rglob("*.py"):
            text = re.sub(r"\s+", " ", source.read_text(encoding="utf-8"))
            cited += [(source.relative_to(REPO), page, section)
                      for page, section in CITATION.findall(text)]
    assert cited, "no citation of docs/spec found"
    missing = []
    for source, page, section in cited:
        spec = DOCS / "spec" / f"{page}.md"
        headings = spec.read_text(encoding="utf-8") if spec.is_file() else ""
        if not re.search(rf"^#+ {re.escape(section)}\.? ", headings, re.MULTILINE):
            missing.append(f"{source}: docs/spec/{page}.md, section {section}")
    assert not missing, missing


def test_api_reference_covers_the_public_api():
    """Every name of ``gpu_avatar.__all__`` has its entry (``::: gpu_avatar.NAME``) in one of
    the API reference's pages, and no entry names anything else."""
    import gpu_avatar

    entries = []
    for page in sorted((DOCS / "api").glob("*.md")):
        entries += re.findall(r"^::: gpu_avatar\.(\w+)\s*$", page.read_text(encoding="utf-8"),
                              re.MULTILINE)
    assert sorted(entries) == sorted(set(entries)), "an entry is on two pages"
    assert set(entries) == set(gpu_avatar.__all__)


def _mkdocs() -> list[str] | None:
    """The command that runs mkdocs: ``$GA_MKDOCS``, the Makefile's .venv-docs, or this
    interpreter's mkdocs."""
    if os.environ.get("GA_MKDOCS"):
        return [os.environ["GA_MKDOCS"]]
    beside = REPO / ".venv-docs" / "bin" / "mkdocs"
    if beside.is_file():
        return [str(beside)]
    if find_spec("mkdocs") is not None and find_spec("mkdocstrings") is not None:
        return [sys.executable, "-m", "mkdocs"]
    return None


@pytest.mark.slow
def test_site_builds_strictly(tmp_path):
    mkdocs = _mkdocs()
    if mkdocs is None:
        message = "mkdocs not found: `make docs` creates .venv-docs (`make test` runs it first)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    site = tmp_path / "site"
    run = subprocess.run([*mkdocs, "build", "--strict", "--site-dir", str(site)], cwd=REPO,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-4000:]
    for page in ("index.html", "api/avatarization/index.html", "spec/metrics/index.html"):
        assert (site / page).is_file(), page
    assert "avatarize" in (site / "api" / "avatarization" / "index.html").read_text()
    shutil.rmtree(site)


def test_readme_is_short_and_links_into_the_site():
    """README.md (issue #38): at most 150 lines, its first code block the two commands CI runs,
    and every relative link it makes names a file of the repository (docs/ pages read on GitHub)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    first = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)]+)\)", text)
             if "://" not in link]
    assert any(link.startswith("docs/spec/") for link in links)
    missing = [link for link in links if not (REPO / link).is_file()]
    assert not missing, missing
