# The two commands: `make run` and `make test`. Everything else is set-up they do.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export MIRROR_DATA_DIR ?= $(CURDIR)/.data

.PHONY: run test models lint typecheck unit clean

$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[dev,eval,convert]'
	@touch $@

models: $(BIN)/.installed
	$(BIN)/mirror models fetch

run: models
	$(BIN)/mirror run --source demo --identity grace_hopper $(ARGS)

unit: models
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

test: unit lint typecheck

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache
