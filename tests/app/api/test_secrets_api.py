"""Secrets through the Python API: a script that imports `app.api` (and so never calls the
CLI's console setup) keeps API keys off loguru's default stderr handler, out of the
workspace's log file and out of every byte the run writes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from app.logging_setup import QuietFileSink
from app.secrets import process_secrets
from tests.app.test_secrets_run import ROOT, _canaries, _make_store, _needles

SCRIPT = textwrap.dedent(
    """
    import os, sys
    from loguru import logger
    from app import api

    ws, store = sys.argv[1], sys.argv[2]
    # what a provider's error text looks like when it echoes the key it was sent
    logger.warning("provider said: invalid key {}", os.environ["OPENAI_API_KEY"])
    api.init_workspace(ws, seed="sim-starter", questions="leaky", store=store)
    logger.info("retrying with {}", os.environ["SKILL_TRAINER_TEST_TOKEN"])
    result = api.train(ws, overrides={"epochs": 1, "task_types": ["ledger", "units"]})
    print(f"test {result.test_accuracy:.3f}")
    """
)


def test_api_scripts_never_print_or_write_a_secret(tmp_path: Path) -> None:
    canaries = _canaries()
    store, _ = _make_store(tmp_path, canaries)
    ws = tmp_path / "workspaces" / "ws"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ws), str(store)],
        cwd=tmp_path,
        env={**os.environ, **canaries, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert proc.stdout.startswith(b"test ")
    assert b"provider said: invalid key [REDACTED" in proc.stderr  # the line itself was kept
    assert b"epoch 1" in proc.stderr  # the default handler really carried the run's log
    for needle in _needles(canaries):
        assert needle not in proc.stdout + proc.stderr
    files = [p for p in ws.rglob("*") if p.is_file()]
    assert any(p.name == "skill-trainer.log" for p in files)
    assert [(p.name, n) for p in files for n in _needles(canaries) if n in p.read_bytes()] == []


def test_the_workspace_log_file_is_scrubbed_even_without_the_patcher(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-file-sink-canary-0123456789abcdef")
    process_secrets.cache_clear()
    try:
        sink = QuietFileSink(tmp_path / "skill-trainer.log")
        sink.write("call failed: key sk-file-sink-canary-0123456789abcdef rejected\n")
        sink.stop()
    finally:
        process_secrets.cache_clear()
    text = (tmp_path / "skill-trainer.log").read_text(encoding="utf-8")
    assert "call failed: key [REDACTED" in text
    assert "0123456789abcdef" not in text
