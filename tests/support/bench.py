"""A bench script loaded as a module: bench/ is not a package the tests import by name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str, alias: str) -> ModuleType:
    """bench/<name>.py as the module `alias` (registered, so its dataclasses resolve)."""
    spec = importlib.util.spec_from_file_location(alias, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
