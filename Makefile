# Two entry points a new user needs; both set up .venv idempotently first.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast setup lint typecheck bench real-model

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (set PY=python3.11)")'
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python main.py demo

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q

# The edit-test loop: no formatter, type checker or slow reliability tests (CI runs them all).
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(VENV)/bin/python bench/run_all.py --timeout 1200

# Not in CI: builds llama-cpp-python into .venv-real (about 25 min on 2 cores, once), then
# trains on SmolLM2-135M served on 127.0.0.1 and prints RESULT lines (bench/real_model.py).
real-model: $(STAMP)
	$(VENV)/bin/python bench/real_model.py
