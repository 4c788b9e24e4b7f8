# Two entry points for a fresh machine with only Python: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# anonymeter, the attacks' test-only oracle, pins numpy < 1.27: it gets an environment of its
# own (tests/metrics/anonymeter_oracle.py runs in it).
ORACLE := .venv-anonymeter
ORACLE_STAMP := $(ORACLE)/.installed
# The Docker cpu image's install line (docker/Dockerfile): CI installs the project with exactly
# this line first, then the dev extras; tests/test_docker.py keeps the two lines identical.
RUNTIME_INSTALL := python -m pip install --no-cache-dir '.[parquet]'

.PHONY: demo test lint clean

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

# Avatar tables, summary.txt and report.html (the AIDS table and the hospital database).
demo: $(STAMP)
	$(VENV)/bin/gpu-avatar demo demo-output

lint: $(STAMP)
	$(VENV)/bin/ruff check gpu_avatar tests benchmarks

test: lint $(ORACLE_STAMP)
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) $(ORACLE) demo-output
