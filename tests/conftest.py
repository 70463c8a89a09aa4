"""Suite-wide collection order: the modules with long tests first.

pytest-xdist hands tests to its workers in collection order, so a minute-long test collected
last runs alone while the other workers sit idle, and the suite's wall time is that tail. A
module keeps its tests together (splitting one would set its module-scoped fixtures up twice),
and every worker collects the same items and sorts them the same way (a stable sort), so the
order is identical on each, as xdist requires.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_modules)
