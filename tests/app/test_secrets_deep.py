"""app/secrets.py: the cheap tier (`scrub`) and the deep tier (`scrub_deep`, `scrub_json`)
both start from the environment's secret values."""

from __future__ import annotations

from app.secrets import process_secrets, scrub, scrub_deep, scrub_json
from core.redact import placeholder


def test_environment_secrets_come_first(monkeypatch):
    value = "plain-words-secret-value"  # no key format would find it
    monkeypatch.setenv("MY_SERVICE_TOKEN", value)
    process_secrets.cache_clear()
    try:
        assert scrub(f"x {value}") == f"x {placeholder(value)}"
        assert scrub_deep(f"x {value} 10.0.0.1") == (
            f"x {placeholder(value)} {placeholder('10.0.0.1')}"
        )
        assert scrub_json({"a": [value, 1]}) == {"a": [placeholder(value), 1]}
        # the cheap tier leaves addresses for the run's own log
        assert scrub("api_base http://10.0.0.1:8080/v1") == "api_base http://10.0.0.1:8080/v1"
    finally:
        process_secrets.cache_clear()
