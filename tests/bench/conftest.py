"""Fixtures for the bench tests."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.support.bench import load_bench


@pytest.fixture(scope="module")
def rm(request: pytest.FixtureRequest) -> ModuleType:
    """bench/real_model.py, loaded once per test module under its own name."""
    return load_bench(
        "real_model", f"bench_real_model_{request.module.__name__.rsplit('.', 1)[-1]}"
    )
