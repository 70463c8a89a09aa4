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


# scheme://userinfo@ -- the user and password (or token) of a URL such as an `api_base`
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{0,15}://)([^\s/?#@\"'<>]+)@")


def redact_url_credentials(text: str) -> str:
    """`http://user:pass@host` -> `http://[REDACTED:…]@host` (a keyed placeholder)."""
    if "://" not in text or "@" not in text:  # the common case costs two scans
        return text
    return _URL_USERINFO.sub(_redact_userinfo, text)


def _redact_userinfo(m: re.Match[str]) -> str:
    if m.group(2).startswith("[REDACTED:"):  # already redacted: idempotent
        return m.group(0)
    return m.group(1) + placeholder(m.group(2)) + "@"
