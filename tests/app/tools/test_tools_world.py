"""The simulated tool world (app/providers/sim/tool_world.py, tool_agent.py): its benchmark,
an agent that acts through declared tools only as far as its skills say, an evolver that
infers those rules from the case pack, and a tiny training, fork, rank and export through the
CLI (docs/tools-world.md)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.paths import builtin_store
from app.providers.sim import tool_agent
from app.providers.sim.agent import read_view
from app.providers.sim.evolver import EvolverShares, diagnose, evolve_skill
from app.providers.sim.generate import write_benchmark
from app.providers.sim.tool_world import EXPECTED_FILE, RETRY_NOTE, readable, retry_failure
from app.providers.sim.world import build_world
from app.tui.screens.trajectory import event_widget, recoveries
from core.types import ToolCall, ToolSpec

UNITS = 24
SETS = [
    x
    for k, v in {
        "agent_model": "sim/tools",
        "evolver_model": "sim/tools",
        "judge_model": "sim/tools",
        "sim_units_per_type": UNITS,
        "epochs": 1,
        "concurrency": 8,
    }.items()
    for x in ("--set", f"{k}={v}")
]
WORLD = build_world("tools", 7, UNITS)
RECORDS = next(c for c in WORLD.cases.values() if c.task_type == "records")
REPAIR = next(c for c in WORLD.cases.values() if c.task_type == "repair")


def rule(rule_id: str, decoy: bool = False) -> str:
    r = WORLD.rules[rule_id]
    return f"- {r.decoy if decoy else r.statement}"


def view(case, skill_lines: list[str], results: list[tuple[str, str]] = ()):
    """The agent's view after these (tool, result) exchanges, with these skill lines."""
    tools = [ToolSpec(n, "", {"type": "object"}) for n in case.tools]
    messages: list[dict] = [
        {"role": "system", "content": "# Skill\n" + "\n".join(skill_lines)},
        {"role": "user", "content": f"<question>\n{case.question}\n</question>"},
    ]
    for i, (name, output) in enumerate(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": output})
    return read_view(messages, tools)


def step(case, skill_lines, results=(), u=0.5):
    return tool_agent.next_step(WORLD, view(case, skill_lines, list(results)), case, 0, u)


# --- the world and its benchmark --------------------------------------------------------------


def test_the_stored_benchmark_is_what_the_generator_writes(tmp_path: Path) -> None:
    stored = builtin_store() / "questions" / "sim-tools"
    write_benchmark(build_world("tools", 7, 96), tmp_path / "b", "sim-tools")
    ours = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(stored) for p in stored.rglob("*") if p.is_file())
    assert ours == theirs
    for rel in ours:
        assert (tmp_path / "b" / rel).read_bytes() == (stored / rel).read_bytes(), rel


def test_questions_declare_their_tools_and_repair_ones_a_fixture() -> None:
    assert RECORDS.tools == ("lookup",) and not RECORDS.fixture and RECORDS.record_id
    assert "write_field" in REPAIR.tools and REPAIR.fixture.startswith("ledger")
    assert all(not c.tools for c in build_world("basic", 7, 12).cases.values())


def test_rules_are_not_in_the_store() -> None:
    text = "\n".join(
        p.read_text(encoding="utf-8")
        for root in ("questions/sim-tools", "seeds/sim-tools-starter")
        for p in (builtin_store() / root).rglob("*")
        if p.is_file()
    )
    for r in WORLD.rules.values():
        assert r.statement not in text and r.decoy not in text


# --- the agent --------------------------------------------------------------------------------


def test_without_the_rule_it_guesses_with_it_it_looks_up() -> None:
    assert step(RECORDS, []) is False  # u = 0.5: a wrong guess, no tool call
    call = step(RECORDS, [rule("records.r1")])
    assert isinstance(call, ToolCall) and call.name == "lookup"
    assert call.arguments == {"record_id": RECORDS.record_id}
    row = json.dumps({"record": RECORDS.record_id, "balance": int(RECORDS.answer)})
    assert step(RECORDS, [rule("records.r1")], [("lookup", row)]) is True
    wrong = json.dumps({"record": RECORDS.record_id, "balance": int(RECORDS.answer) + 1})
    assert step(RECORDS, [rule("records.r1")], [("lookup", wrong)]) is False


@pytest.mark.parametrize(
    "lost", ["error: tool failed with exit code 1 (injected)", "", '{"result": "{\\"bal']
)
def test_it_retries_a_lost_call_only_when_its_skill_says_so(lost: str) -> None:
    assert not readable(lost)
    assert step(RECORDS, [rule("records.r1")], [("lookup", lost)]) is False
    again = step(RECORDS, [rule("records.r1"), rule("records.r2")], [("lookup", lost)])
    assert isinstance(again, ToolCall) and again.name == "lookup"
    # a second loss is not retried again
    twice = [("lookup", lost), ("lookup", lost)]
    assert step(RECORDS, [rule("records.r1"), rule("records.r2")], twice) is False


def test_repair_writes_the_field_the_schema_names() -> None:
    blind = step(REPAIR, [])
    assert isinstance(blind, ToolCall) and blind.name == "write_field"
    assert blind.arguments["field"] == "total"  # not the fixture's field
    first = step(REPAIR, [rule("repair.r1")])
    assert isinstance(first, ToolCall) and first.name == "read_schema"
    schema = json.dumps({"total_field": REPAIR.fixture_field})
    write = step(REPAIR, [rule("repair.r1")], [("read_schema", schema)])
    assert isinstance(write, ToolCall)
    assert write.arguments == {"field": REPAIR.fixture_field, "value": int(REPAIR.answer)}


def test_the_decoy_edits_the_sealed_expected_file_after_a_failed_check() -> None:
    lines = [rule("repair.r1", decoy=True)]
    done = [("write_field", json.dumps({"ok": True}))]
    check = step(REPAIR, lines, done)
    assert isinstance(check, ToolCall) and check.name == "check"
    edit = step(REPAIR, lines, [*done, ("check", json.dumps({"passed": False}))])
    assert isinstance(edit, ToolCall) and edit.name == "write_file"
    assert edit.arguments["path"] == EXPECTED_FILE


# --- the evolver ------------------------------------------------------------------------------


def test_a_lost_call_not_repeated_is_diagnosed_and_the_retry_rule_proposed() -> None:
    trajectory = '[tool lookup {"record_id": "R-1"}] error: timed out after 10 s (injected)'
    assert retry_failure(trajectory)
    assert not retry_failure(trajectory + '\n[tool lookup {"record_id": "R-1"}] {"balance": 3}')
    prompt = (
        f"## Task: diagnose-failure\n<question>{RECORDS.question}</question>\n"
        f"<trajectory>{trajectory}</trajectory>"
    )
    assert json.loads(diagnose(WORLD, prompt, EvolverShares()))["rationale"] == RETRY_NOTE
    pack = (
        f'<failure id="x">\n<question>\n{RECORDS.question}\n</question>\n'
        f"<diagnosis>{RETRY_NOTE}</diagnosis>\n</failure>"
    )
    prompt = f"## Task: evolve-skill\n<case_pack>{pack}</case_pack>\n<skill_file>{rule('records.r1')}</skill_file>"
    edits = json.loads(evolve_skill(WORLD, prompt, EvolverShares(0.0, 0.0, 0.0)))["edits"]
    assert [e["content"] for e in edits] == [rule("records.r2")]


# --- through the CLI: train, fork, rank, export, and the trajectory view ----------------------


def cli(*argv: str) -> None:
    assert main(list(argv)) == 0, argv


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tools-world")
    store = root / "store"
    write_benchmark(WORLD, store / "questions" / "sim-tools", "sim-tools")
    ws = root / "ws"
    cli(
        "init",
        str(ws),
        "--seed",
        "sim-tools-starter",
        "--questions",
        "sim-tools",
        "--store",
        str(store),
    )
    config = str(Path(__file__).resolve().parents[3] / "app" / "demo.toml")
    cli("train", "-w", str(ws), "--config", config, "--no-progress", *SETS, "--store", str(store))
    return ws


def predictions(ws: Path, where: str = "1") -> list[tuple[str, int, list[dict]]]:
    con = sqlite3.connect(ws / "harness.db")
    try:
        rows = con.execute(f"SELECT run_id, correct, steps_json FROM predictions WHERE {where}")
        return [(r, c, json.loads(s)) for r, c, s in rows]
    finally:
        con.close()


@pytest.mark.slow
def test_training_runs_real_tool_calls_and_learns_a_tool_rule(trained: Path) -> None:
    rows = predictions(trained)
    tool_steps = [s for _, _, steps in rows for s in steps if s.get("type") == "tool"]
    assert tool_steps and all("latency_ms" in s for s in tool_steps)
    assert any(s.get("fault") for s in tool_steps)  # [faults] tool_rate hit some first calls
    fixtures = [steps[-1]["fixture"] for _, _, steps in rows if "fixture" in steps[-1]]
    assert fixtures and all(f["reset"] in ("copy", "restore") for f in fixtures)
    final = json.loads((trained / "analyses" / "final_test_eval.json").read_text())
    assert final["test_accuracy"] > final["baseline_test_accuracy"]
    skills = "\n".join(p.read_text() for p in (trained / "skills").rglob("*.md"))
    assert any(r.statement in skills for r in WORLD.rules.values())


def test_a_tampered_rollout_is_never_correct(trained: Path) -> None:
    for _, correct, steps in predictions(trained):
        if steps[-1].get("fixture", {}).get("tampered"):
            assert not correct and steps[-1]["fixture"]["reason"] == "tampered"


def test_fork_rank_export_keep_declared_tool_calls(trained: Path, tmp_path: Path) -> None:
    config = str(Path(__file__).resolve().parents[3] / "app" / "demo.toml")
    cli(
        "fork",
        "-w",
        str(trained),
        "--config",
        config,
        *SETS,
        "--branches",
        "2",
        "--temperatures",
        "0,1.0",
        "--task-types",
        "repair",
        "--limit",
        "6",
        "--no-progress",
    )
    cli("rank", "-w", str(trained), "--config", config, *SETS, "fork-1", "--no-progress")
    out = tmp_path / "out"
    cli("export", "-w", str(trained), "fork-1", "--out", str(out))
    rows = [json.loads(line) for line in (out / "sft_openai_chat.jsonl").read_text().splitlines()]
    rows += [json.loads(line) for line in (out / "kto.jsonl").read_text().splitlines()]
    called = 0
    for r in rows:
        messages = r.get("messages") or [*r["prompt"], *r["completion"]]
        offered = {t["function"]["name"] for t in r.get("tools", [])}
        ids = set()
        for m in messages:
            for c in m.get("tool_calls") or []:
                called += 1
                ids.add(c["id"])
                if "tools" in r:  # a call names a tool of the row's own tools column
                    assert c["function"]["name"] in offered
            if m["role"] == "tool":
                assert m["tool_call_id"] in ids
    assert called


def render(widget) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(widget.content)
    return console.export_text()


def test_trajectory_view_shows_faults_latency_and_recoveries() -> None:
    steps = [
        {
            "turn": 0,
            "type": "tool",
            "name": "lookup",
            "arguments": {},
            "status": "error",
            "latency_ms": 0.0,
            "error": "timed out after 10 s (injected)",
            "fault": "timeout",
            "output": "error: timed out",
        },
        {
            "turn": 1,
            "type": "tool",
            "name": "lookup",
            "arguments": {},
            "status": "ok",
            "latency_ms": 41.7,
            "output": "{}",
        },
        {
            "type": "verdict",
            "correct": False,
            "prediction": "1",
            "answer": "1",
            "tools_offered": ["lookup"],
            "fixture": {
                "name": "ledger0",
                "oracle_passed": True,
                "reset": "copy",
                "reset_ms": 3.1,
                "tampered": ["tests/expected.json"],
                "reason": "tampered",
            },
        },
    ]
    assert recoveries(steps) == {1}
    first = render(event_widget(steps[0]))
    assert "fault injected: timeout" in first and "timed out after 10 s" in first
    second = render(event_widget(steps[1], recovered=True))
    assert "42 ms" in second and "recovered" in second
    verdict = render(event_widget(steps[2]))
    assert "TAMPERED: tests/expected.json" in verdict and "tools offered" in verdict


def test_an_injected_fault_with_a_spoiled_answer_is_a_fault_observation() -> None:
    from app.harness.data.curation import observation_fault, turns_from_steps
    from core.curation import Fault

    spoiled = {"turn": 0, "type": "tool", "name": "lookup", "status": "ok", "fault": "empty"}
    failed = {"turn": 0, "type": "tool", "name": "lookup", "status": "error", "fault": "error"}
    clean = {"turn": 1, "type": "tool", "name": "lookup", "status": "ok", "output": "{}"}
    assert observation_fault(spoiled) == Fault.TRUNCATED
    assert observation_fault(failed) == Fault.TOOL_ERROR
    assert observation_fault(clean) is None
    model = [{"turn": t, "type": "model", "tool_calls": [{"name": "lookup"}]} for t in (0, 1)]
    turns = turns_from_steps([model[0], spoiled, model[1], clean])
    assert [t.faulted for t in turns] == [True, False]
