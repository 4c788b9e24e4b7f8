# Two entry points for a fresh machine with only Python: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The Docker cpu image's install line (docker/Dockerfile): CI installs the project with exactly
# this line first, then the dev extras; tests/test_docker.py keeps the two lines identical.
RUNTIME_INSTALL := python -m pip install --no-cache-dir '.[report,parquet]'

.PHONY: demo test lint clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/$(RUNTIME_INSTALL)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Avatar tables, summary.txt and report.html (the AIDS table and the hospital database).
demo: $(STAMP)
	$(VENV)/bin/gpu-avatar demo demo-output

lint: $(STAMP)
	$(VENV)/bin/ruff check gpu_avatar tests benchmarks

test: lint
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) demo-output
