"""The process's secret values (API keys from the environment), for redaction everywhere."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from core.redact import redact, redact_url_credentials, secret_values


@lru_cache(maxsize=1)
def process_secrets() -> tuple[str, ...]:
    return secret_values(os.environ)


def scrub(text: str) -> str:
    """Secret values from the environment and credentials inside URLs, replaced."""
    return redact_url_credentials(redact(text, process_secrets()))


def scrub_json(value: Any) -> Any:
    """A JSON value with `scrub` applied to every string leaf (keys stay as they are), as a
    new value: redaction that keeps every record valid JSON."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: scrub_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_json(v) for v in value]
    return value
