# Set-up and everyday commands. `make demo` and `make test` work on a fresh
# machine: each creates .venv and installs what it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
# Installed before lm-eval[hf], which would otherwise pull a multi-GB CUDA
# build. On a GPU machine: make demo TORCH=torch (or any build that pip finds).
TORCH ?= torch==2.13.0

# pdflatex (with booktabs), pdftotext and pandoc, for the tests that compile exported
# LaTeX tables and render Markdown ones. `make test` installs nothing outside .venv:
# without them those tests skip and say why (under CI=true they fail). `make latex`
# installs them from Debian's packages (as root); CI runs it.
LATEX_PACKAGES := texlive-latex-base texlive-latex-recommended poppler-utils pandoc
# Chromium and the chromedriver built with it (Debian's chromium-driver depends on the same version), for
# the viewer's browser tests (tests/test_serve_browser.py): without them those tests skip and say why (under
# CI=true they fail). `make browser` installs them from Debian's packages (as root); CI runs it.
BROWSER_PACKAGES := chromium chromium-driver
# A real Slurm (two clusters: without and with accounting) and a Ray head on this machine, for
# tests/test_evaluate_cluster.py (without them those tests skip and say why; under CI=true they fail).
# `make cluster` installs Debian's packages (as root) and starts them (tests/cluster/start.sh);
# `make cluster-stop` stops them by PID. CI runs both around `make test`.
CLUSTER_PACKAGES := slurm-wlm slurmdbd munge mariadb-server
# DuckLake stores' tests (pytest -m lake) run in an environment of their own, $(LAKE_VENV): the lake extra pins
# DuckDB to 1.5.5, for which DuckLake's extensions are on PyPI (.venv keeps the newest DuckDB). No torch: the
# lake tests evaluate nothing. `make postgres` installs Debian's postgresql (as root) and starts a private
# PostgreSQL for the catalog (tests/lake/start.sh; it writes $(LAKE_ENV), the connection strings);
# `make postgres-stop` stops it by PID. `make test-lake` runs the lake tests against it (OOD_STORE_TEST_LAKE,
# from $(LAKE_ENV), names the catalog; without it, OOD_STORE_TEST_LAKE is unset). CI runs all three.
LAKE_VENV ?= .venv-lake
LAKE_BIN := $(LAKE_VENV)/bin
LAKE_EXTRAS := lake,test,bootstrap,serve
LAKE_ENV := build/lake/pg.env
# The library folders, type-checked as the one package they install as.
PACKAGE_DIRS := finetune evaluate ingest store schema analysis export serve

.PHONY: demo test test-lake bench-lake lint typecheck tree docs check bench latex browser strace reference cluster cluster-stop \
	postgres postgres-stop clean

demo: $(VENV)/.installed-eval
	$(BIN)/ood-store demo

test: $(VENV)/.installed-test
	@command -v pdflatex >/dev/null || echo "No pdflatex: the LaTeX compile tests will skip (make latex installs $(LATEX_PACKAGES))"
	@command -v chromedriver >/dev/null || echo "No chromedriver: the viewer's browser tests will skip (make browser installs $(BROWSER_PACKAGES))"
	$(BIN)/python -m pytest -n 2

# The environment variables of $(LAKE_ENV) (OOD_STORE_TEST_LAKE: the catalog's connection string) reach pytest.
test-lake: $(LAKE_VENV)/.installed
	@[ -f $(LAKE_ENV) ] || echo "No $(LAKE_ENV): OOD_STORE_TEST_LAKE is unset, no PostgreSQL catalog (make postgres starts one)"
	if [ -f $(LAKE_ENV) ]; then set -a; . ./$(LAKE_ENV); set +a; fi; $(LAKE_BIN)/python -m pytest -n 2 -m lake

# ruff's lint rules and formatting, over the whole tree.
lint: $(VENV)/.installed-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The library as it installs: the top-level folders linked into one ood_store tree under build/tree, as
# setuptools' package-dir maps them (ood_store/ as it is, each stage folder as ood_store/_<stage>). mypy
# checks it, and the API reference of the docs is read from it.
tree:
	@rm -rf build/tree && mkdir -p build/tree/ood_store
	@for f in ood_store/*; do ln -s ../../../$$f build/tree/ood_store/; done
	@for d in $(PACKAGE_DIRS); do ln -s ../../../$$d build/tree/ood_store/_$$d; done

typecheck: $(VENV)/.installed-lint tree
	cd build/tree && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p ood_store

# The documentation site (MkDocs), built offline into site/ with every warning an error: the API
# reference comes from the docstrings, the CLI reference from the click commands themselves.
docs: $(VENV)/.installed-docs tree
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# What CI runs besides the LaTeX install: lint, type check, tests.
check: lint typecheck test

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/ingest_pythia.py
	$(BIN)/python benchmarks/ingest_scale.py
	$(BIN)/python benchmarks/analysis_partial.py
	$(BIN)/python benchmarks/evaluate_checkpoints.py
	$(BIN)/python benchmarks/evaluate_cluster.py
	$(BIN)/python benchmarks/evaluate_series.py
	$(BIN)/python benchmarks/stores.py
	$(BIN)/python benchmarks/serve_pages.py
	$(BIN)/python benchmarks/plan_speed.py
	$(BIN)/python benchmarks/analysis_import.py
	$(BIN)/python benchmarks/items_speed.py
	$(BIN)/python benchmarks/compare_speed.py
	$(BIN)/python benchmarks/crossed_verdicts.py
	$(BIN)/python benchmarks/crossed_between.py
	$(BIN)/python benchmarks/crossed_oracle.py
	$(BIN)/python benchmarks/crossed_variance.py
	$(BIN)/python benchmarks/item_variance.py
	$(BIN)/python benchmarks/finetune.py

# The R reference values the analysis tests compare with (tests/reference/*.csv), made again from
# make_reference.R. Needs R with mgcv, metafor, pwr and jsonlite (Debian: r-base-core r-cran-mgcv
# r-cran-metafor r-cran-pwr r-cran-jsonlite); the tests themselves read the committed CSVs and need no R.
reference:
	@command -v Rscript >/dev/null || { echo "No Rscript: install R with mgcv, metafor and pwr (apt-get install r-base-core r-cran-mgcv r-cran-metafor r-cran-pwr r-cran-jsonlite)"; exit 1; }
	Rscript tests/reference/make_reference.R

latex:
	@if command -v pdflatex >/dev/null && command -v pdftotext >/dev/null && command -v pandoc >/dev/null \
		&& kpsewhich booktabs.sty >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing $(LATEX_PACKAGES) for the LaTeX export tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(LATEX_PACKAGES) >/dev/null; \
	else echo "Cannot install $(LATEX_PACKAGES) (needs root and apt-get): install them yourself"; exit 1; fi

# Other processes may hold dpkg's lock (unattended upgrades, another install): wait up to 15 minutes for it.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing $(BROWSER_PACKAGES) for the viewer's browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
			$(BROWSER_PACKAGES) >/dev/null; \
	else echo "Cannot install $(BROWSER_PACKAGES) (needs root and apt-get): install them yourself"; exit 1; fi

# strace's fault injection widens the window in which DuckDB reads a store's headers before its lock
# (tests/test_store_birth.py); the test fails without strace under CI=true.
strace:
	@if command -v strace >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing strace for the store's concurrency test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
			strace >/dev/null; \
	else echo "Cannot install strace (needs root and apt-get): install it yourself"; exit 1; fi

cluster: $(VENV)/.installed-test
	@if command -v slurmctld >/dev/null && command -v slurmdbd >/dev/null && command -v munged >/dev/null \
		&& command -v mariadbd >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing $(CLUSTER_PACKAGES) for the real-cluster tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
			--no-install-recommends $(CLUSTER_PACKAGES) >/dev/null; \
	else echo "Cannot install $(CLUSTER_PACKAGES) (needs root and apt-get): install them yourself"; exit 1; fi
	tests/cluster/start.sh $(BIN)

cluster-stop:
	tests/cluster/stop.sh

# Debian's initdb and pg_ctl are in /usr/lib/postgresql/VERSION/bin, not on PATH: start.sh finds them there.
# A lake against a store file (benchmarks/lake.py): ingest, compare, many writers; on the PostgreSQL of
# `make postgres`.
bench-lake: $(LAKE_VENV)/.installed
	cd benchmarks && ../$(LAKE_BIN)/python lake.py

postgres:
	@if command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing postgresql for the lake tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
			--no-install-recommends postgresql >/dev/null; \
	else echo "Cannot install postgresql (needs root and apt-get): install it yourself"; exit 1; fi
	tests/lake/start.sh

postgres-stop:
	tests/lake/stop.sh

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	touch $@

$(VENV)/.installed-torch: $(VENV)/.created
	$(PIP) install --quiet "$(TORCH)"
	touch $@

# What `make demo` and the tutorial it leads to use: evaluate and finetune (the demo), the block bootstrap
# (analyze --bootstrap 200) and the viewer (ood-store serve). tests/test_install_hints.py checks it.
DEMO_EXTRAS := eval,finetune,bootstrap,serve

$(VENV)/.installed-eval: pyproject.toml $(VENV)/.installed-torch
	$(PIP) install --quiet -e ".[$(DEMO_EXTRAS)]"
	touch $@

# every-eval-ever (its validator checks the EEE files the tests export) declares Python >= 3.12;
# on 3.11 it is installed without its dependencies, which the test extra already brings.
# $(call install-eee,VENV_BIN)
install-eee = $(1)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' || \
	$(1)/python -m pip --disable-pip-version-check install --quiet --no-deps --ignore-requires-python \
	"every-eval-ever==0.3.0"

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed-eval
	$(PIP) install --quiet -e ".[$(DEMO_EXTRAS),test]"
	$(call install-eee,$(BIN))
	touch $@

$(VENV)/.installed-lint: pyproject.toml $(VENV)/.installed-test
	$(PIP) install --quiet -e ".[$(DEMO_EXTRAS),test,lint]"
	touch $@

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed-test
	$(PIP) install --quiet -e ".[$(DEMO_EXTRAS),test,docs]"
	touch $@

# The lake tests' environment; the .gitignore in it (as venv writes from Python 3.13 on) keeps git out of it.
# tomli-w (of the finetune extra, which brings torch): pytest -m lake imports every test module to select,
# and tests/test_finetune_prompt_length.py imports it. moto's S3 server and boto3: the tests of a lake whose
# data path is on S3 (served on 127.0.0.1, offline).
$(LAKE_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(LAKE_VENV)
	echo '*' >$(LAKE_VENV)/.gitignore
	$(LAKE_BIN)/python -m pip --disable-pip-version-check install --quiet --upgrade pip
	$(LAKE_BIN)/python -m pip --disable-pip-version-check install --quiet -e ".[$(LAKE_EXTRAS)]" "tomli-w>=1.0" \
		"moto[server]>=5,<6" "boto3>=1.34"
	$(call install-eee,$(LAKE_BIN))
	touch $@

clean: postgres-stop
	rm -rf $(VENV) $(LAKE_VENV) build site *.egg-info .mypy_cache .ruff_cache ood-store-demo.duckdb ood-store-demo lm-eval-results
