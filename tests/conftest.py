"""Suite-wide collection order: the long tests first.

pytest-xdist hands tests to its workers in collection order, so a minute-long test collected
last runs alone while the other workers sit idle, and the suite's wall time is that tail. Every
worker collects the same items and sorts them the same way (a stable sort on a marker), so the
order is identical on each, as xdist requires.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
