"""Export layouts field by field, as documented in app/harness/data/export.py:
TRL's conversational preference type (huggingface.co/docs/trl, "Dataset formats"), OpenAI's
preference fine-tuning input (developers.openai.com, "Direct preference optimization"),
chat-messages SFT lines, reward records; manifests; the test pool left out unless asked."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import anyio
import pytest

from app.cli import main
from app.harness.data.export import LAYOUTS, export_rollouts
from app.harness.data.fork import ForkSpec, held_out_question_ids, run_fork
from app.harness.data.rank import rank_rollout
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config

ROLES = {"system", "user", "assistant"}


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("export") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    with Session(ws, load_config(None)) as s:
        test_ids = sorted(held_out_question_ids(s.benchmark))[:6]
        other = [
            q.question_id
            for q in s.benchmark.questions
            if q.question_id not in set(held_out_question_ids(s.benchmark))
        ][:24]
        spec = ForkSpec(tuple(other + test_ids), (0.3, 0.6, 0.9, 1.2), 8, "all")
        anyio.run(lambda: run_fork(s, spec, "x1"))
        anyio.run(lambda: rank_rollout(s, "x1"))
    return ws


def export(ws: Path, out: Path, include_test: bool = False) -> dict:
    with Session(ws, load_config(None)) as s:
        return export_rollouts(s, ["x1"], out, include_test=include_test)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_message(m: dict, role: str | None = None) -> None:
    assert set(m) == {"role", "content"}
    assert m["role"] in ROLES and isinstance(m["content"], str) and m["content"]
    if role:
        assert m["role"] == role


def check_prompt(messages: list) -> None:
    assert isinstance(messages, list) and [m["role"] for m in messages] == ["system", "user"]
    for m in messages:
        check_message(m)


def test_trl_conversational_preference_layout(ranked: Path, tmp_path: Path) -> None:
    export(ranked, tmp_path)
    rows = read_jsonl(tmp_path / "dpo_trl.jsonl")
    assert rows
    for row in rows:
        assert set(row) == {"prompt", "chosen", "rejected"}
        check_prompt(row["prompt"])
        for key in ("chosen", "rejected"):
            assert len(row[key]) == 1
            check_message(row[key][0], "assistant")
        assert row["chosen"] != row["rejected"]


def test_openai_preference_layout(ranked: Path, tmp_path: Path) -> None:
    export(ranked, tmp_path)
    rows = read_jsonl(tmp_path / "dpo_openai.jsonl")
    trl = read_jsonl(tmp_path / "dpo_trl.jsonl")
    assert len(rows) == len(trl)
    for row, t in zip(rows, trl, strict=True):
        assert set(row) == {"input", "preferred_output", "non_preferred_output"}
        assert set(row["input"]) == {"messages", "tools", "parallel_tool_calls"}
        check_prompt(row["input"]["messages"])
        assert row["input"]["tools"] == [] and row["input"]["parallel_tool_calls"] is True
        for key in ("preferred_output", "non_preferred_output"):
            assert len(row[key]) == 1  # exactly one assistant message each
            check_message(row[key][0], "assistant")
        assert row["preferred_output"] == t["chosen"]
        assert row["non_preferred_output"] == t["rejected"]


def test_chosen_is_verified_and_rejected_is_not(ranked: Path, tmp_path: Path) -> None:
    export(ranked, tmp_path)
    from core.checkers import extract_answer

    with Session(ranked, load_config(None)) as s:
        by_text = {q.question: q for q in s.benchmark.questions}
    for row in read_jsonl(tmp_path / "dpo_trl.jsonl"):
        user = row["prompt"][1]["content"]
        q = next(q for text, q in by_text.items() if text in user)
        assert extract_answer(row["chosen"][0]["content"]) == q.answer
        assert extract_answer(row["rejected"][0]["content"]) != q.answer


def test_sft_and_reward_layouts(ranked: Path, tmp_path: Path) -> None:
    export(ranked, tmp_path)
    sft = read_jsonl(tmp_path / "sft.jsonl")
    assert sft
    for row in sft:
        assert set(row) == {"messages"}
        assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
        for m in row["messages"]:
            check_message(m)
    rewards = read_jsonl(tmp_path / "rewards.jsonl")
    assert len(rewards) == 24 * 4  # every ranked branch of the non-test questions
    for row in rewards:
        assert set(row) == {
            "prompt",
            "completion",
            "score",
            "components",
            "rollout_id",
            "question_id",
            "branch_index",
            "rank",
        }
        check_prompt(row["prompt"])
        check_message(row["completion"][0], "assistant")
        assert isinstance(row["score"], float) and row["rollout_id"] == "x1"
        assert set(row["components"]) == {"objective", "judge", "bt"}
        assert 1 <= row["rank"] <= 4 and 0 <= row["branch_index"] < 4


def test_test_pool_left_out_unless_asked_and_manifests(ranked: Path, tmp_path: Path) -> None:
    default = export(ranked, tmp_path / "a")
    included = export(ranked, tmp_path / "b", include_test=True)
    assert default["rewards.jsonl"]["test_questions_skipped"] == 6
    assert included["rewards.jsonl"]["count"] == 30 * 4
    with Session(ranked, load_config(None)) as s:
        test_ids = held_out_question_ids(s.benchmark)
    assert not {r["question_id"] for r in read_jsonl(tmp_path / "a" / "rewards.jsonl")} & test_ids
    for name in LAYOUTS:
        manifest = json.loads((tmp_path / "a" / f"{name}.manifest.json").read_text())
        body = (tmp_path / "a" / name).read_bytes()
        assert manifest["sha256"] == hashlib.sha256(body).hexdigest()
        assert manifest["count"] == len(body.splitlines())
        assert manifest["rollout_ids"] == ["x1"]
        assert manifest["source_versions"] == [{"skills": "v1", "prompts": "v1"}]
        assert manifest["test_pool_included"] is False and manifest["simulated_model"] is True


def test_files_load_with_the_datasets_json_loader(ranked: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    export(ranked, tmp_path)
    for name, columns in (
        ("dpo_trl.jsonl", {"prompt", "chosen", "rejected"}),
        ("dpo_openai.jsonl", {"input", "preferred_output", "non_preferred_output"}),
        ("sft.jsonl", {"messages"}),
    ):
        ds = datasets.load_dataset(
            "json",
            data_files=str(tmp_path / name),
            split="train",
            cache_dir=str(tmp_path / "hf-cache"),
        )
        assert set(ds.column_names) == columns
        assert len(ds) == len(read_jsonl(tmp_path / name))
    ds = datasets.load_dataset(
        "json",
        data_files=str(tmp_path / "dpo_trl.jsonl"),
        split="train",
        cache_dir=str(tmp_path / "hf-cache"),
    )
    assert ds[0]["chosen"][0]["role"] == "assistant"


def test_export_refuses_an_unranked_rollout(ranked: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    from app.errors import UserError

    with Session(ws, load_config(None)) as s, pytest.raises(UserError, match="no ranking"):
        export_rollouts(s, ["nope"], tmp_path / "out")


def test_test_pool_questions_never_become_memories(ranked: Path) -> None:
    with Session(ranked, load_config(None)) as s:
        test_ids = held_out_question_ids(s.benchmark)
        stored = {r["question_id"] for r in s.log.query("SELECT question_id FROM memories")}
        report = json.loads((ranked / "analyses" / "rank_x1.json").read_text())
    assert stored and not stored & test_ids
    assert report["memories"]["test_pool_skipped"] == 6


def test_the_export_command_writes_what_the_function_does(ranked: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    expected = export(ws, tmp_path / "by-function")
    assert main(["export", "-w", str(ws), "x1", "--out", str(tmp_path / "by-cli")]) == 0
    for name, manifest in expected.items():
        rows = read_jsonl(tmp_path / "by-cli" / name)
        assert len(rows) == manifest["count"] > 0
    assert main(["export", "-w", str(ws), "x1"]) == 0  # the default folder, inside the workspace
    assert (ws / "exports" / "x1").is_dir()


def test_prompts_carry_skills_as_export_skills_writes_them(ranked: Path, tmp_path: Path) -> None:
    """The seed's skills hold the momentum markers; no training prompt may carry them, and the
    skill in the prompt is the body an exported SKILL.md has (one stripping function)."""
    from app.harness.skills.agent_skills import body_of
    from app.harness.workspace.workspace import read_version_files

    skills = read_version_files(ranked / "skills" / "v1")
    assert any("<!-- momentum:start -->" in t for t in skills.values())
    export(ranked, tmp_path)
    prompts = [row["prompt"] for row in read_jsonl(tmp_path / "dpo_trl.jsonl")]
    prompts += [row["input"]["messages"] for row in read_jsonl(tmp_path / "dpo_openai.jsonl")]
    prompts += [row["messages"][:2] for row in read_jsonl(tmp_path / "sft.jsonl")]
    prompts += [row["prompt"] for row in read_jsonl(tmp_path / "rewards.jsonl")]
    assert prompts
    for messages in prompts:
        system = messages[0]["content"]
        assert "momentum" not in system.lower() and "<!--" not in system
        skill = system.split("# Skill for task type ", 1)[1].split("\n\n", 1)[1]
        assert any(skill.rstrip() + "\n" == body_of(t) for t in skills.values()), skill
