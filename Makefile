# Set-up and everyday commands. `make demo` and `make test` work on a fresh
# machine: each creates .venv and installs what it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
# Installed before lm-eval[hf], which would otherwise pull a multi-GB CUDA
# build. On a GPU machine: make demo TORCH=torch (or any build that pip finds).
TORCH ?= torch==2.13.0

.PHONY: demo test bench clean

demo: $(VENV)/.installed-eval
	$(BIN)/ood-store demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/ingest_pythia.py
	$(BIN)/python benchmarks/analysis_partial.py
	$(BIN)/python benchmarks/evaluate_checkpoints.py

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	touch $@

$(VENV)/.installed-torch: $(VENV)/.created
	$(PIP) install --quiet "$(TORCH)"
	touch $@

$(VENV)/.installed-eval: pyproject.toml $(VENV)/.installed-torch
	$(PIP) install --quiet -e ".[eval]"
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed-eval
	$(PIP) install --quiet -e ".[eval,test]"
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info ood-store-demo.duckdb ood-store-demo lm-eval-results
