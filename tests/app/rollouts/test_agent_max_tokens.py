"""`agent_max_tokens` bounds the agent's replies only; the evolver's and the judge's requests
keep `max_tokens` (or their own bound), and without it nothing changes."""

# ruff: noqa: F811 - test arguments name the imported `fake_openai` fixture

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from app.harness.workspace.config import load_config
from tests.app.providers.test_role_endpoints import _task
from tests.app.rollouts.test_real_replies import CONFIG, SmallModel
from tests.fakes.fixtures import fake_openai  # noqa: F401 - pytest fixture


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_unset_it_is_max_tokens_and_it_must_be_positive() -> None:
    assert load_config(None).agent_max_tokens is None
    with pytest.raises(Exception, match="agent_max_tokens"):
        load_config(None, {"agent_max_tokens": 0})


@pytest.mark.slow  # a training against the fake server, with litellm imported
def test_only_the_agents_requests_take_it(fake_openai, tmp_path: Path) -> None:
    fake_openai.responder = SmallModel()
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "real-starter", "--questions", "real-easy"]) == 0
    config = tmp_path / "c.toml"
    config.write_text(f'api_base = "{fake_openai.base_url}"\nagent_max_tokens = 48\n' + CONFIG)
    assert main(["train", "-w", str(ws), "--config", str(config), "--no-progress"]) == 0
    bound: dict[str, set[int]] = {}
    for body in fake_openai.requests:
        bound.setdefault(_task(body), set()).add(body.get("max_tokens"))
    # the answer-extraction fallback (app/harness/rollouts/inference.py) has its own 64
    assert 48 in bound["agent"] and bound["agent"] <= {48, 64}
    assert 48 not in bound["evolve-skill"] and bound["evolve-skill"]
