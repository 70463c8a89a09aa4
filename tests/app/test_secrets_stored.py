"""The response cache is redacted like the log, and URL credentials are never stored or shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.providers.cache import ResponseCache
from app.secrets import process_secrets
from core.redact import placeholder, redact_url_credentials
from core.types import LLMResponse, ToolCall, Usage

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]
PASSWORD = "s3cret-pass-9f2c"
API_BASE = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"


@pytest.fixture
def canary(monkeypatch):
    key = "sk-echoed-canary-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    process_secrets.cache_clear()
    yield key
    process_secrets.cache_clear()


def test_an_echoed_key_is_not_stored_in_the_response_cache(tmp_path, canary):
    cache = ResponseCache(tmp_path / "response_cache.db")
    echoed = LLMResponse(
        text=f"your key is {canary}",
        usage=Usage(1, 1),
        cost_usd=0.001,
        tool_calls=(ToolCall(id="c1", name="t", arguments={"k": canary}),),
        model="m",
    )
    cache.put("k1", echoed, ("run", "run", "agent", "m"))
    cache.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert canary.encode() not in raw
    assert placeholder(canary).encode() in raw


def test_url_credentials_are_redacted():
    assert (
        redact_url_credentials(API_BASE)
        == f"http://{placeholder('alice:' + PASSWORD)}@127.0.0.1:9/v1"
    )
    token = "https://ghp_tok3n@github.com/x"
    assert "ghp_tok3n" not in redact_url_credentials(token)
    assert (
        redact_url_credentials("mail me at a@b.c, see http://host/x")
        == "mail me at a@b.c, see http://host/x"
    )


def test_api_base_password_is_stored_and_printed_nowhere(tmp_path):
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    outputs = []
    for extra in ([], ["--resume"]):
        done = subprocess.run(
            [
                sys.executable,
                "main.py",
                "train",
                "-w",
                str(ws),
                "-v",
                *extra,
                *TRAIN,
                "--set",
                f'api_base="{API_BASE}"',
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert b"api_base" not in outputs[1], "resume saw an api_base change that is not one"
    for out in outputs:
        assert PASSWORD.encode() not in out
    hits = [str(p) for p in ws.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert hits == []
    assert placeholder("alice:" + PASSWORD).encode() in (ws / "checkpoint.json").read_bytes()


def test_redaction_is_idempotent():
    once = redact_url_credentials(API_BASE)
    assert redact_url_credentials(once) == once
