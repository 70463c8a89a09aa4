"""The process's secret values (API keys from the environment), for redaction everywhere."""

from __future__ import annotations

import os
from functools import lru_cache

from core.redact import redact, secret_values


@lru_cache(maxsize=1)
def process_secrets() -> tuple[str, ...]:
    return secret_values(os.environ)


def scrub(text: str) -> str:
    return redact(text, process_secrets())
