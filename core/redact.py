"""Secret redaction: pure string functions used before anything reaches a log or a report."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

SECRET_NAME_RE = re.compile(r"(API_KEY|_TOKEN|_SECRET|PASSWORD)$", re.IGNORECASE)
MIN_SECRET_LEN = 8


def secret_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """Values of variables whose names mark them as secrets, longest first."""
    values = {v for k, v in env.items() if SECRET_NAME_RE.search(k) and len(v) >= MIN_SECRET_LEN}
    return tuple(sorted(values, key=len, reverse=True))


def placeholder(secret: str, key: bytes = b"skill-trainer") -> str:
    """A stable keyed placeholder: the same secret always maps to the same token."""
    digest = hashlib.blake2b(secret.encode(), key=key, digest_size=6).hexdigest()
    return f"[REDACTED:{digest}]"


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, placeholder(secret))
    return text
