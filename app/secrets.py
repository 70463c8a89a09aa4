"""The process's secret values (API keys from the environment), for redaction everywhere.

Two tiers, both with the keyed placeholder of core/redact.py (the same secret always becomes
the same `[REDACTED:…]`):

- `scrub` runs on every log line, cache entry, run summary and atomic file write, and the
  harness log's row writer (app/harness/workspace/harness_log/connection.py `_clean`) runs the same two passes:
  the environment's secret values and credentials inside URLs. It is kept to those two on
  purpose: on one of bench/log_write.py's 3.7 kB trajectory rows they cost about 4 µs of CPU,
  the key-format passes about 105 µs and all passes about 175 µs, against a budget of 50 µs a row
  for the log (bench/log_write.py: 20,000 rows/s); bench/redaction.py prints both tiers'
  cost per kB of ordinary text. Nothing secret is lost by it:
  what the process itself sends is its environment's keys, which the first pass knows.
- `scrub_deep` and `scrub_json` run every pass (`redact_all`: key formats, private-key
  blocks, bearer headers, e-mail addresses, private-range IPs and high-entropy tokens) on what
  comes from outside or leaves the workspace: imported traces and exported training data.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from core.redact import (
    redact,
    redact_all,
    redact_json,
    redact_url_credentials,
    secret_values,
)


@lru_cache(maxsize=1)
def process_secrets() -> tuple[str, ...]:
    return secret_values(os.environ)


def scrub(text: str) -> str:
    """Secret values from the environment and credentials inside URLs, replaced."""
    return redact_url_credentials(redact(text, process_secrets()))


def scrub_deep(text: str) -> str:
    """Every redaction pass on free text: `scrub`'s, plus e-mail addresses, private-range IP
    addresses and high-entropy tokens (digests, UUIDs and git hashes excepted)."""
    return redact_all(text, process_secrets())


def scrub_json(value: Any) -> Any:
    """`value` (a parsed JSON value) with every pass of `scrub_deep` applied to each string
    leaf: the structure, keys and numbers are kept, so the result dumps to valid JSON."""
    return redact_json(value, scrub_deep)
