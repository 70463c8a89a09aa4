"""The process's secret values (API keys from the environment), for redaction everywhere."""

from __future__ import annotations

import os
from functools import lru_cache

from core.redact import redact, redact_url_credentials, secret_values


@lru_cache(maxsize=1)
def process_secrets() -> tuple[str, ...]:
    return secret_values(os.environ)


def scrub(text: str) -> str:
    """Secret values from the environment and credentials inside URLs, replaced."""
    return redact_url_credentials(redact(text, process_secrets()))
