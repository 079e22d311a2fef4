# Set-up and everyday commands. `make demo` and `make test` work on a fresh
# machine: each creates .venv and installs what it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: demo test bench clean

demo: $(VENV)/.installed
	$(BIN)/ood-store demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/ingest_pythia.py
	$(BIN)/python benchmarks/analysis_partial.py

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PIP) install --quiet -e ".[test]"
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info ood-store-demo.duckdb
