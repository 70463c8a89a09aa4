"""pytest fixtures for the fakes. Import them into a test module explicitly, e.g.
`from tests.fakes.fixtures import fake_openai  # noqa: F401` (no shared conftest needed).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fresh fake OpenAI server on a free loopback port, stopped after the test."""
    with FakeOpenAI() as server:
        yield server
