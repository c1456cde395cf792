# The two commands of the README's quickstart, and the checks CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3

.PHONY: install up demo test lint typecheck unit bench-tools clean

$(STAMP): pyproject.toml sdk/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ./sdk -e '.[dev,bench]'
	touch $(STAMP)

install: $(STAMP)

## make up: the whole stack against live Binance (needs internet)
up: install
	$(VENV)/bin/ladder up $(ARGS)

## make demo: the whole stack against the built-in fake venue
demo: install
	$(VENV)/bin/ladder up --venue fake $(ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy book_store ingest_nodes control_plane read_functions fake_venue sdk/ladder_sdk bench tests sdk/tests

## make test: lint, type-check, then the whole suite in parallel against real servers
test: lint typecheck
	$(VENV)/bin/python -m pytest -n auto -q $(PYTEST_ARGS)

## make bench-tools: wrk, the read bench's load generator (Debian's package; without it the bench
## falls back to a built-in aiohttp client that takes much of the CPU it measures)
bench-tools: install
	command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; } \
		|| { sudo apt-get update -q && sudo apt-get install -y -q wrk; }

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
