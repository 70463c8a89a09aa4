"""Per-role endpoints: each role may name its own server (`<role>_api_base`, in TOML also
`[<role>] api_base`) and key variable (`<role>_api_key_env`); unset, the global `api_base` /
`api_key_env` serve it (app/harness/workspace/config.py, RunConfig.endpoint).

A whole training on two fake OpenAI-compatible servers on 127.0.0.1: the agent and the judge on
the global one, the evolver on its own.
"""

# ruff: noqa: F811 - test arguments name the imported `fake_openai` fixture

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.errors import UserError
from app.harness.workspace.config import Endpoint, fingerprint, load_config
from tests.app.rollouts.test_real_replies import CONFIG, SmallModel
from tests.fakes.fixtures import fake_openai  # noqa: F401 - pytest fixture
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EVOLVER_KEY", raising=False)


def _task(body: dict) -> str:
    """The prompt kind of one request: the system prompt's `## Task:` line, else the agent."""
    first = body["messages"][0]["content"] or ""
    for line in first.splitlines():
        if line.startswith("## Task:"):
            return line.removeprefix("## Task:").strip()
    return "agent"


def test_role_table_and_keys_override_the_global_endpoint(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        'api_base = "http://127.0.0.1:1/v1"\napi_key_env = "ALL_KEY"\n'
        '[evolver]\napi_base = "http://127.0.0.1:2/v1"\napi_key_env = "EVOLVER_KEY"\n'
    )
    config = load_config(path, {"judge_api_base": "http://127.0.0.1:3/v1"})
    assert config.endpoint("agent") == Endpoint("http://127.0.0.1:1/v1", "ALL_KEY")
    assert config.endpoint("evolver") == Endpoint("http://127.0.0.1:2/v1", "EVOLVER_KEY")
    assert config.endpoint("judge") == Endpoint("http://127.0.0.1:3/v1", "ALL_KEY")
    with pytest.raises(UserError, match=r"unknown config key 'evolver_api_url'"):
        load_config(None, {"evolver.api_url": "http://x"})


def test_agent_and_evolver_calls_go_to_their_own_servers(
    fake_openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    with FakeOpenAI() as evolver_server:
        fake_openai.responder = SmallModel()
        evolver_server.responder = SmallModel()
        ws = tmp_path / "ws"
        assert main(["init", str(ws), "--seed", "real-starter", "--questions", "real-easy"]) == 0
        config = tmp_path / "two.toml"
        config.write_text(
            f'api_base = "{fake_openai.base_url}"\n'
            f'evolver_api_base = "{evolver_server.base_url}"\n'
            'evolver_api_key_env = "EVOLVER_KEY"\n' + CONFIG
        )
        train = ["train", "-w", str(ws), "--config", str(config), "--no-progress"]

        # the evolver's own key variable is checked before any call; the agent needs none
        assert main(train) == 2
        assert "EVOLVER_KEY is not set" in capsys.readouterr().err
        assert fake_openai.requests == [] and evolver_server.requests == []

        monkeypatch.setenv("EVOLVER_KEY", "sk-evolver-test")
        assert main([*train, "--fresh"]) == 0

    on_global = {_task(b) for b in fake_openai.requests}
    on_evolver = {_task(b) for b in evolver_server.requests}
    assert "agent" in on_global and "diagnose-failure" in on_global  # agent and judge
    assert on_evolver == {"evolve-skill"}  # every evolver call, and nothing else
    assert "evolve-skill" not in on_global


def test_resume_asks_again_for_a_role_api_base_that_held_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Credentials in a URL are never stored (config.fingerprint redacts them), so a resume
    would send the evolver's calls to a redacted URL: it asks for the URL instead."""
    import app.api.training

    secret = "http://alice:s3cret@127.0.0.1:9/v1"
    config = load_config(None, {"evolver_model": "openai/strong", "evolver_api_base": secret})
    saved = {"config_fingerprint": fingerprint(config, "hash")}
    assert "s3cret" not in json.dumps(saved)
    (tmp_path / "checkpoint.json").write_text(json.dumps(saved))  # the config is read from it
    monkeypatch.setattr(app.api.training, "load_checkpoint", lambda root: saved)  # its other keys
    with pytest.raises(
        UserError, match=r"run's evolver_api_base held credentials.*--set evolver_api_base="
    ):
        app.api.resume_config(tmp_path)
    resumed = app.api.resume_config(tmp_path, {"evolver_api_base": secret})
    assert resumed.endpoint("evolver").api_base == secret


def test_model_io_json_keeps_no_credentials_of_a_role_api_base(tmp_path: Path) -> None:
    """The remembered response format records its server redacted, and a later run on the same
    URL with credentials still finds it (it compared the raw URL with the redacted one)."""
    from app.harness.rollouts.model_io import ModelIO

    secret = "http://alice:s3cret@127.0.0.1:9/v1"
    config = load_config(None, {"judge_model": "openai/small", "judge_api_base": secret})
    first = ModelIO(tmp_path, config).ladder("judge")
    assert first is not None
    text = (tmp_path / "model_io.json").read_text()
    assert "s3cret" not in text and "[REDACTED:" in text
    # a later run with the same URL starts from the remembered level, not a new detection
    again = ModelIO(tmp_path, config)
    again._state["formats"]["openai/small"]["level"] = "prompt"
    assert again.ladder("judge").level == "prompt"
