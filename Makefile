# Set-up and everyday commands. `make demo` and `make test` work on a fresh
# machine: each creates .venv and installs what it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
# Installed before lm-eval[hf], which would otherwise pull a multi-GB CUDA
# build. On a GPU machine: make demo TORCH=torch (or any build that pip finds).
TORCH ?= torch==2.13.0

# pdflatex (with booktabs) and pdftotext, for the tests that compile exported LaTeX
# tables: installed from Debian's packages where apt-get can (root, as on CI);
# elsewhere those tests skip, except under CI=true, where they fail.
LATEX_PACKAGES := texlive-latex-base texlive-latex-recommended poppler-utils

.PHONY: demo test bench latex clean

demo: $(VENV)/.installed-eval
	$(BIN)/ood-store demo

test: $(VENV)/.installed-test latex
	$(BIN)/python -m pytest -n 2

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/ingest_pythia.py
	$(BIN)/python benchmarks/analysis_partial.py
	$(BIN)/python benchmarks/evaluate_checkpoints.py

latex:
	@if command -v pdflatex >/dev/null && command -v pdftotext >/dev/null && kpsewhich booktabs.sty >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing $(LATEX_PACKAGES) for the LaTeX export tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(LATEX_PACKAGES) >/dev/null; \
	else echo "No pdflatex: the LaTeX compile tests will skip (install $(LATEX_PACKAGES))"; fi

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
