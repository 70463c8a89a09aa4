"""Real models' bad replies, through litellm and the fake OpenAI server (loopback only).

Each case is a way a small real model (or its server) misbehaves, with what the run does:
prose around JSON, code fences, Python instead of JSON, missing `ANSWER:` lines, ignored
tools, rejected response formats, slow drips and 429 bursts with Retry-After.
"""

# ruff: noqa: F811 - test arguments name the imported `fake_openai` fixture

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from app.cli import main
from app.harness.rollouts.telemetry import LogRecorder
from app.providers.cache import CachingProvider, ResponseCache
from app.providers.errors import TransientError
from app.providers.litellm_provider import LiteLLMProvider
from core.evolution.diagnose import DIAGNOSIS_SCHEMA, diagnosis_value
from core.structured import FormatLadder, structured_complete
from tests.fakes.fixtures import fake_openai  # noqa: F401 - pytest fixture
from tests.fakes.openai_server import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[3]
CAPITALS = {
    json.loads(line)["question"]: json.loads(line)["answer"]
    for line in (ROOT / "store/questions/real-easy/questions.jsonl").read_text().splitlines()
    if "capital" in line
}
GOOD_DIAGNOSIS = '{"category": "skill_gap", "target": "skill", "rationale": "no rule"}'
PYTHON_REPLY = "def diagnose(case):\n    return 'skill_gap'\n\nprint(diagnose(None))"
EDITS_IN_PROSE = (
    "Sure! Here are my edits:\n```json\n"
    '{"edits": [{"op": "add", "section": "Rules", "content": "- Name only the city.", '
    '"priority": 5, "rationale": "answers were sentences"}]}\n```\nHope this helps!'
)


def last_user(body: dict) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


class SmallModel:
    """Replies like SmolLM2 did: no ANSWER: lines, Python for diagnoses, fenced edits."""

    def __init__(self, diagnosis_repair: str = GOOD_DIAGNOSIS) -> None:
        self.diagnosis_repair = diagnosis_repair

    def __call__(self, body: dict) -> Reply:
        first = body["messages"][0]["content"] or ""
        text = last_user(body)
        if "## Task: diagnose-failure" in first:
            return Reply.ok(PYTHON_REPLY if len(body["messages"]) == 1 else self.diagnosis_repair)
        if "## Task: evolve-skill" in first:
            return Reply.ok(EDITS_IN_PROSE)
        if "## Task:" in first:
            return Reply.ok('{"edits": []}')
        if text.startswith("Here is a question and a reply"):
            return Reply.ok("ANSWER: none")
        question = re.search(r"<question>\s*(.*?)\s*</question>", text, re.S).group(1)
        if question in CAPITALS:
            city = CAPITALS[question]
            if "Name only the city" in first:  # the evolved skill is in the system prompt
                return Reply.ok(f"ANSWER: {city}")
            return Reply.ok(f"The capital city is {city}, a large city.")
        a, op, b = re.search(r"(\d+) ([-+*]) (\d+)", question).groups()
        value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        return Reply.ok(f"{a} {op} {b} = {value}")


CONFIG = """\
agent_model = "openai/small"
evolver_model = "openai/small"
judge_model = "openai/small"
max_retries = 1
concurrency = 4
epochs = 1
batch_size = 24
eval_min_per_class = 3
trainable_min_units = 6
evolve_prompts = false
momentum_samples = 0
[gate]
n_max = 12
"""


def setup_workspace(tmp_path: Path, fake: FakeOpenAI, extra: str = "") -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "real-starter", "--questions", "real-easy"]) == 0
    config = tmp_path / "real.toml"
    config.write_text(f'api_base = "{fake.base_url}"\n' + extra + CONFIG)
    return ws, config


def query(ws: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(ws / "harness.db") as db:
        return db.execute(sql).fetchall()


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# -- whole runs --------------------------------------------------------------------------------
def test_small_model_run_completes_learns_and_records_every_reply(fake_openai, tmp_path, capsys):
    fake_openai.responder = SmallModel()
    fake_openai.reject_formats = {"json_schema"}
    ws, config = setup_workspace(tmp_path, fake_openai)
    assert main(["train", "-w", str(ws), "--config", str(config), "--no-progress"]) == 0

    # missing ANSWER: lines -> the benchmark's fallbacks, marked as extracted
    sources = dict(
        query(
            ws,
            "SELECT answer_source, COUNT(*) FROM predictions "
            "WHERE run_id = 'baseline' GROUP BY answer_source",
        )
    )
    assert sources == {"last_number": 24, "last_line": 24}
    # Python instead of JSON -> one repair request each, which parsed; both recorded
    attempts = query(
        ws,
        "SELECT attempt, status, error FROM reply_attempts WHERE purpose = 'diagnosis' ORDER BY id",
    )
    assert attempts and {(a, s) for a, s, _ in attempts} == {(1, "parse_failed"), (2, "ok")}
    assert all("looks like code" in e for a, s, e in attempts if s == "parse_failed")
    assert query(ws, "SELECT COUNT(*) FROM diagnoses WHERE parse_error IS NOT NULL") == [(0,)]
    # diagnoses are the judge's calls; edits in prose and fences parse at once
    roles = {r for (r,) in query(ws, "SELECT DISTINCT role FROM llm_calls")}
    assert {"agent", "judge", "evolver", "extract"} <= roles  # extract: capitals fallback
    assert query(ws, "SELECT status FROM evolutions") == [("ok",)]
    # the evolved rule reached the gate and was accepted: capitals now answer correctly
    actions = [
        a for (a,) in query(ws, "SELECT action FROM step_reports WHERE task_type = 'capitals'")
    ]
    assert actions and actions[0] in ("accept", "accept_provisional")
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    assert final["test_accuracy"] > final["baseline_test_accuracy"]
    # the server rejected json_schema: the next level is used and remembered per model
    memo = json.loads((ws / "model_io.json").read_text())["formats"]["openai/small"]
    assert memo["level"] == "json_object_schema"
    formats = {
        f
        for (f,) in query(
            ws, "SELECT DISTINCT response_format FROM llm_calls WHERE role IN ('judge', 'evolver')"
        )
    }
    assert formats == {"json_object_schema"}  # detected from litellm for a local api_base
    sent = [b["response_format"] for b in fake_openai.requests if "response_format" in b]
    assert sent and all(f["type"] == "json_object" and f["schema"] for f in sent)

    capsys.readouterr()
    assert main(["report", str(ws)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"calls\[judge\] .*latency p50 \d+\.\d+s p95 \d+\.\d+s\s+retries 0", out)
    assert re.search(
        r"answers +\d+ extracted without an ANSWER: line \(last_line=\d+, "
        r"last_number=\d+; \d+ of them correct\)",
        out,
    )


def test_undiagnosable_replies_evolve_from_raw_packs(fake_openai, tmp_path):
    fake_openai.responder = SmallModel(diagnosis_repair="print('skill_gap')")
    ws, config = setup_workspace(tmp_path, fake_openai)
    assert main(["train", "-w", str(ws), "--config", str(config), "--no-progress"]) == 0
    rows = query(ws, "SELECT category, degraded, rationale, parse_error FROM diagnoses")
    assert rows and all(
        c == "skill_gap" and d == 1 and "raw failure" in r and p for c, d, r, p in rows
    )
    summaries = [s for (s,) in query(ws, "SELECT request_summary FROM evolutions")]
    assert summaries and all("raw, undiagnosed" in s for s in summaries)
    assert query(ws, "SELECT COUNT(*) FROM step_reports WHERE gate_run_id IS NOT NULL")[0][0] >= 1


def test_abort_names_the_keys_stores_the_reason_and_fits_the_command(fake_openai, tmp_path, capsys):
    fake_openai.responder = SmallModel(diagnosis_repair="still no json")
    ws, config = setup_workspace(tmp_path, fake_openai, 'on_degraded_diagnoses = "abort"\n')
    assert main(["train", "-w", str(ws), "--config", str(config), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "judge_model openai/small" in err and "diagnosis_degraded_max_share" in err
    assert "train --resume" in err
    [(status, summary)] = query(ws, "SELECT status, summary_json FROM _runs WHERE kind='train'")
    assert status == "failed" and "did not parse" in json.loads(summary)["reason"]
    assert main(["report", str(ws)]) == 0
    assert "reason: RunFailed:" in capsys.readouterr().out
    from app.tui.data import WorkspaceData

    status = WorkspaceData(ws).run_status()
    assert status.state == "failed" and "diagnoses did not parse" in status.detail
    assert (
        main(["diagnose", "baseline", "-w", str(ws), "--config", str(config), "--no-progress"]) == 1
    )
    err = capsys.readouterr().err
    assert "did not parse" in err and "--resume" not in err


def test_ignored_tools_are_flagged_in_the_step_report(fake_openai, tmp_path, capsys):
    fake_openai.responder = SmallModel()
    ws, config = setup_workspace(tmp_path, fake_openai, 'skill_mode = "tool"\n')
    assert main(["train", "-w", str(ws), "--config", str(config), "--no-progress"]) == 0
    reports = [json.loads(r) for (r,) in query(ws, "SELECT report_json FROM step_reports")]
    assert reports and all("no_tool_calls" in r["flags"] for r in reports)
    assert "no rollout called a tool" in capsys.readouterr().err


def test_tool_mode_warns_before_the_run_when_litellm_says_no_functions(monkeypatch):
    from app.harness.rollouts import model_io
    from app.harness.workspace.config import RunConfig

    monkeypatch.setattr(model_io, "supports_tools", lambda model: False)
    warning = model_io.tool_mode_warning(RunConfig(agent_model="openai/small", skill_mode="tool"))
    assert "skill_mode = 'tool'" in warning and "agent_model openai/small" in warning
    assert model_io.tool_mode_warning(RunConfig(agent_model="openai/small")) is None
    monkeypatch.setattr(model_io, "supports_tools", lambda model: True)
    assert model_io.tool_mode_warning(RunConfig(agent_model="openai/x", skill_mode="tool")) is None


# -- one structured call -----------------------------------------------------------------------
def provider_for(fake: FakeOpenAI, tmp_path: Path, **kw) -> tuple[CachingProvider, LogRecorder]:
    from app.harness.workspace.harness_log import HarnessLog

    log = HarnessLog(tmp_path / "h.db")
    recorder = LogRecorder(log)
    inner = LiteLLMProvider(
        "openai/small",
        api_base=fake.base_url,
        backoff_base_s=0.001,
        **{"timeout_s": 5, "max_retries": 3, **kw},
    )
    return CachingProvider(
        inner, ResponseCache(tmp_path / "c.db"), model_name="openai/small", recorder=recorder
    ), recorder


def diagnose_once(provider, ladder=None):
    return anyio.run(
        lambda: structured_complete(
            provider,
            [{"role": "user", "content": "diagnose [[case]]"}],
            parse=diagnosis_value,
            schema=DIAGNOSIS_SCHEMA,
            ladder=ladder,
            role="judge",
        )
    )


@pytest.mark.parametrize(
    "reply",
    [
        f"Here is my diagnosis: {GOOD_DIAGNOSIS} I hope it helps.",
        f"```json\n{GOOD_DIAGNOSIS}\n```",
        "```python\n{'category': 'skill_gap', 'target': 'skill', 'rationale': None}\n```",
    ],
)
def test_prose_fences_and_python_literals_parse_at_once(fake_openai, tmp_path, reply):
    fake_openai.push(Reply.ok(reply))
    provider, _ = provider_for(fake_openai, tmp_path)
    result = diagnose_once(provider)
    assert result.ok and result.value["category"] == "skill_gap"
    assert [a.status for a in result.attempts] == ["ok"] and len(fake_openai.requests) == 1


def test_unparsable_reply_gets_one_repair_then_gives_up_with_reasons(fake_openai, tmp_path):
    fake_openai.push(Reply.ok(PYTHON_REPLY), Reply.ok("skill_gap, I think"))
    provider, _ = provider_for(fake_openai, tmp_path)
    result = diagnose_once(provider)
    assert not result.ok and len(fake_openai.requests) == 2
    assert [(a.attempt, a.status) for a in result.attempts] == [
        (1, "parse_failed"),
        (2, "parse_failed"),
    ]
    assert "looks like code" in result.attempts[0].error
    repair = fake_openai.requests[1]["messages"]
    assert repair[1] == {"role": "assistant", "content": PYTHON_REPLY}
    assert "could not be used" in repair[2]["content"]


def test_rejected_format_falls_back_one_level_without_retries(fake_openai, tmp_path):
    fake_openai.reject_formats = {"json_schema"}
    fake_openai.push(Reply.ok(GOOD_DIAGNOSIS))
    changes = []
    ladder = FormatLadder(
        "openai/small", "json_schema", on_change=lambda m, level, why: changes.append((level, why))
    )
    provider, recorder = provider_for(fake_openai, tmp_path)
    result = diagnose_once(provider, ladder)
    assert result.ok and ladder.level == "json_object_schema"
    assert [a.status for a in result.attempts] == ["format_rejected", "ok"]
    assert [b["response_format"]["type"] for b in fake_openai.requests] == [
        "json_schema",
        "json_object",
    ]
    assert changes[0][0] == "json_object_schema" and "json_object" in changes[0][1]
    recorder.flush()
    rows = recorder.log.query("SELECT status, attempts, response_format FROM llm_calls")
    assert rows[0]["status"].startswith("error:") and rows[0]["attempts"] == 1
    assert rows[1] == {"status": "ok", "attempts": 1, "response_format": "json_object_schema"}


# -- slow servers and rate limits --------------------------------------------------------------
def test_429_burst_honours_retry_after_and_is_recorded(fake_openai, tmp_path):
    fake_openai.push(Reply.rate_limited(0.3), Reply.rate_limited(0.3), Reply.ok(GOOD_DIAGNOSIS))
    provider, recorder = provider_for(fake_openai, tmp_path, sleep=anyio.sleep)
    started = time.monotonic()
    result = diagnose_once(provider)
    assert result.ok and time.monotonic() - started >= 0.6
    recorder.flush()
    [row] = recorder.log.query("SELECT status, attempts, retries, timeouts FROM llm_calls")
    assert row == {"status": "retried", "attempts": 3, "retries": 2, "timeouts": 0}


def test_slow_drip_times_out_is_retried_and_recorded(fake_openai, tmp_path):
    fake_openai.push(Reply.drip(3.0), Reply.drip(3.0))
    provider, recorder = provider_for(fake_openai, tmp_path, timeout_s=0.5, max_retries=1)
    with pytest.raises(TransientError):
        diagnose_once(provider)
    recorder.flush()
    [row] = recorder.log.query("SELECT status, attempts, retries, timeouts FROM llm_calls")
    assert row == {"status": "timeout", "attempts": 2, "retries": 1, "timeouts": 2}


def test_api_key_env_and_token_prices_are_real_keys(fake_openai, tmp_path, monkeypatch, capsys):
    ws, config = setup_workspace(
        tmp_path,
        fake_openai,
        'api_key_env = "SMALL_KEY"\nprice_in_per_mtok = 1000.0\nprice_out_per_mtok = 2000.0\n',
    )
    monkeypatch.delenv("SMALL_KEY", raising=False)
    assert main(["eval", "v1", "-w", str(ws), "--config", str(config), "--no-progress"]) == 2
    assert "SMALL_KEY is not set" in capsys.readouterr().err
    monkeypatch.setenv("SMALL_KEY", "sk-small-test-key")
    fake_openai.responder = SmallModel()
    assert main(["eval", "v1", "-w", str(ws), "--config", str(config), "--no-progress"]) == 0
    [(cost, tin, tout)] = query(
        ws,
        "SELECT SUM(cost_usd), SUM(tokens_in), SUM(tokens_out) FROM llm_calls WHERE cache_hit = 0",
    )
    assert cost == pytest.approx((tin * 1000.0 + tout * 2000.0) / 1e6)


def test_cut_off_diagnosis_is_salvaged_and_recorded_as_such(fake_openai, tmp_path):
    # what SmolLM2 did under a JSON grammar: the rationale string ran on until max_tokens
    cut = (
        '{ "category": "skill_gap", "target": "system" , "rationale": "Spain is the '
        "capital of Spain. }\n<!-- momentum:start -->\nYou answer short questions."
    )
    fake_openai.push(Reply.ok(cut))
    provider, _ = provider_for(fake_openai, tmp_path)
    result = diagnose_once(provider)
    assert result.ok and result.salvaged and len(fake_openai.requests) == 1
    assert result.value["category"] == "skill_gap" and result.value["target"] == "system"
    assert result.attempts[0].status == "salvaged" and "cut off" in result.attempts[0].error
    assert diagnosis_value('{ "category": "feelings", "target": "x", "rationale": "')[0] is None


def test_edits_that_copy_the_prompts_placeholders_get_a_repair_and_are_never_applied(
    fake_openai, tmp_path
):
    from core.evolution.evolve import evolve

    copied = (
        '{"edits": [{"op": "add", "section": "Rules", "content": "- <one rule>"}, '
        '{"op": "replace", "section": "<title>", "old": "<exact text>", "new": "x"}]}'
    )
    mixed = (
        '{"edits": [{"op": "add", "section": "Rules", "content": "- <one rule>"}, '
        '{"op": "add", "section": "Rules", "content": "- Name only the city."}]}'
    )
    fake_openai.push(Reply.ok(copied), Reply.ok(mixed))
    provider, _ = provider_for(fake_openai, tmp_path)
    skill = "# Capitals\n\n## Rules\n- Answer with the result only.\n"
    record = anyio.run(
        lambda: evolve(
            provider,
            "improve [[x]]",
            original=skill,
            target_file="capitals.md",
            budget=3,
            target_kind="skill",
        )
    )
    assert [a.status for a in record.attempts] == ["parse_failed", "ok"]
    error = record.attempts[0].error
    assert "edit(s) 0, 1 copy the prompt's placeholder text" in error
    assert "this file's sections: Capitals, Rules" not in error and "sections: Rules" in error
    assert record.status == "ok" and "- Name only the city." in record.evolved
    assert "<one rule>" not in record.evolved
    assert any("placeholder" in e for e in record.parse_errors)


def test_edit_schema_needs_what_each_op_needs():
    from core.evolution.evolve import EDITS_SCHEMA

    shapes = {
        s["properties"]["op"]["const"]: s["required"]
        for s in EDITS_SCHEMA["properties"]["edits"]["items"]["anyOf"]
    }
    assert shapes == {
        "add": ["op", "section", "content"],
        "replace": ["op", "section", "old", "new"],
        "delete": ["op", "section", "old"],
    }


def test_raw_newlines_inside_json_strings_parse():
    reply = '{ "category": "skill_gap", "target": "skill", "rationale": "line one\nline two" }'
    value, error = diagnosis_value(reply)
    assert error == "" and value["rationale"] == "line one\nline two"


def test_edit_schema_for_a_file_names_its_sections_and_lines():
    from core.evolution.evolve import edits_schema

    skill = (
        "# Capitals\n\n## Approach\n- Read it.\n\n## Rules\n- Answer with the result only."
        "\n\n<!-- momentum:start -->\n- protected\n<!-- momentum:end -->\n"
    )
    add, replace, delete = edits_schema(skill)["properties"]["edits"]["items"]["anyOf"]
    assert add["properties"]["section"]["enum"] == ["Approach", "Rules"]
    assert replace["properties"]["old"]["enum"] == ["- Read it.", "- Answer with the result only."]
    assert delete["properties"]["old"] == replace["properties"]["old"]
    assert "<" in add["properties"]["content"]["pattern"]  # no placeholders by construction
