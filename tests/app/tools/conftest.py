"""Helpers for the tool tests: find every process whose command line carries a marker."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) pids whose command line contains `marker`."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def marker() -> str:
    return f"st-marker-{uuid.uuid4().hex[:12]}"
