# Two entry points for a fresh machine with only Python: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# anonymeter, the attacks' test-only oracle, pins numpy < 1.27: it gets an environment of its
# own (tests/metrics/anonymeter_oracle.py runs in it).
ORACLE := .venv-anonymeter
ORACLE_STAMP := $(ORACLE)/.installed
# The documentation site's tools (MkDocs, Material, mkdocstrings), pinned in docs/requirements.txt,
# in an environment of their own: the site reads the package's sources and imports nothing.
DOCS_VENV := .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed
# The Docker cpu image's install line (docker/Dockerfile): CI installs the project with exactly
# this line first, then the dev extras; tests/test_docker.py keeps the two lines identical.
RUNTIME_INSTALL := python -m pip install --no-cache-dir '.[parquet]'

.PHONY: demo test lint docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/$(RUNTIME_INSTALL)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(ORACLE_STAMP):
	$(PYTHON) -m venv $(ORACLE)
	$(ORACLE)/bin/python -m pip install --quiet 'anonymeter==1.1.0'
	touch $(ORACLE_STAMP)

# Made afresh when the pins change (a venv made over another Python's would mix the two).
$(DOCS_STAMP): docs/requirements.txt
	rm -rf $(DOCS_VENV)
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet -r docs/requirements.txt
	touch $(DOCS_STAMP)

# Avatar tables, summary.txt and report.html (the AIDS table and the hospital database).
demo: $(STAMP)
	$(VENV)/bin/gpu-avatar demo demo-output

lint: $(STAMP)
	$(VENV)/bin/ruff check gpu_avatar tests benchmarks

# The site, built strictly into site/: a broken link, page or API name fails (mkdocs.yml).
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --quiet

# CI skips nothing: the site is built strictly before the tests (tests/test_docs.py builds it
# again and runs the pages' examples).
test: lint docs $(ORACLE_STAMP)
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) $(ORACLE) $(DOCS_VENV) demo-output site
