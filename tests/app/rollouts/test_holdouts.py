"""Holdouts beyond families (docs/scorecard.md#holdouts): renamed tool schemas at evaluation
(`eval --tool-alias`) and task types held out of training (`holdout_task_types`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.errors import UserError
from app.harness.rollouts.agent_prompts import (
    AgentPrompts,
    ToolArgumentError,
    check_tool_aliases,
)
from app.providers.sim.agent import context_tool
from core.types import Question

QUESTION = Question(
    question_id="q1",
    task_type="dates",
    question="When?",
    answer="4",
    context="summary line\nFACT: it is 4",
)


def prompts(**kw) -> AgentPrompts:
    return AgentPrompts(
        system="sys",
        tool_docs={"read_context": "Reads the context attached to the current case."},
        skills={},
        user_template="$question",
        **kw,
    )


def test_an_aliased_tool_is_offered_and_called_only_under_its_new_name() -> None:
    p = prompts(tool_aliases=(("read_context", "lookup"),))
    assert [t.name for t in p.tools_for(QUESTION)] == ["lookup"]
    assert p.dispatch("lookup", {"section": "full"}, QUESTION) == QUESTION.context
    with pytest.raises(ToolArgumentError, match="unknown tool 'read_context'"):
        p.dispatch("read_context", {"section": "full"}, QUESTION)
    assert p.real_name("lookup") == "read_context" and p.real_name("other") == "other"
    # without aliases nothing changes
    assert [t.name for t in prompts().tools_for(QUESTION)] == ["read_context"]


def test_tool_aliases_are_checked() -> None:
    assert check_tool_aliases({"read_context": "lookup"}) == (("read_context", "lookup"),)
    assert check_tool_aliases(None) == ()
    for bad, match in [
        ({"web_search": "x"}, "not a built-in tool"),
        ({"read_context": "read_skill"}, "taken"),
        ({"read_context": "9x"}, "new name"),
        ({"read_context": "a", "read_skill": "a"}, "taken"),
        (["read_context"], "mapping"),
    ]:
        with pytest.raises(UserError, match=match):
            check_tool_aliases(bad)


def test_the_sim_agent_finds_the_context_tool_by_its_description() -> None:
    doc = "Reads the context attached to the current case.\n\nUse section full."
    assert context_tool({"read_context": doc}) == "read_context"
    assert context_tool({"lookup": doc}) == "lookup"
    # a tool that does not say what it does is not one the agent knows how to use
    assert context_tool({"lookup": "Looks things up."}) is None


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("holdouts") / "ws"
    assert main(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def test_eval_with_a_renamed_tool_calls_it_by_the_new_name(ws: Path, capsys) -> None:
    assert main(["eval", "-w", str(ws), "v1", "--tool-alias", "read_context=lookup"]) == 0
    assert "renamed tools: read_context shown as lookup" in capsys.readouterr().out
    conn = sqlite3.connect(ws / "harness.db")
    run_id, provenance = conn.execute(
        "SELECT run_id, provenance_json FROM _runs WHERE kind='eval' ORDER BY seq DESC"
    ).fetchone()
    assert json.loads(provenance)["tool_aliases"] == {"read_context": "lookup"}
    names: set[str] = set()
    for (steps,) in conn.execute("SELECT steps_json FROM predictions WHERE run_id=?", (run_id,)):
        names |= {s["name"] for s in json.loads(steps) if s.get("type") == "tool"}
    assert names == {"lookup"}
    report = json.loads((ws / "analyses" / f"eval_{run_id}.json").read_text())
    assert report["tool_aliases"] == {"read_context": "lookup"}
    assert main(["eval", "-w", str(ws), "v1", "--tool-alias", "read_context"]) == 2


def test_hold_out_task_types_moves_them_to_the_test_pool() -> None:
    from app.harness.rollouts.pools import Pools, hold_out_task_types

    qs = [
        Question(question_id=f"{t}{i}", task_type=t, question="?", answer="1")
        for t in ("a", "b")
        for i in range(3)
    ]
    pools = Pools(diagnosis=(qs[0], qs[3]), validation=(qs[1], qs[4]), test=(qs[2], qs[5]))
    moved, wanted = hold_out_task_types(pools, qs, None, ["b"])
    assert [q.question_id for q in moved.test] == ["a2", "b0", "b1", "b2"]
    assert all(q.task_type == "a" for q in moved.diagnosis + moved.validation)
    assert wanted == ("a",)
    assert hold_out_task_types(pools, qs, None, []) == (pools, None)
    with pytest.raises(UserError, match="holdout_task_types: no task type c"):
        hold_out_task_types(pools, qs, None, ["c"])
    with pytest.raises(UserError, match="also in task_types"):
        hold_out_task_types(pools, qs, ["a", "b"], ["b"])


def test_train_never_trains_a_held_out_task_type(tmp_path: Path, capsys) -> None:
    from app import paths

    ws = api.init_workspace(tmp_path / "ws", seed="sim-starter", questions="sim-basic").root
    overrides = {"epochs": 1, "task_types": ["ledger", "units"]}
    code = main(
        ["train", "-w", str(ws), "--config", str(paths.demo_config()), "--no-progress",
         "--holdout-task-types", "dates", *[f"--set={k}={json.dumps(v)}" for k, v in overrides.items()]]
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "held out (never trained): dates" in text and "not held out:" in text
    report = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    assert report["holdout_task_types"] == ["dates"]
    assert report["per_task_type"]["dates"]["total"] == 72  # every dates unit is tested
    conn = sqlite3.connect(ws / "harness.db")
    kinds = {
        kind
        for kind, task_type in conn.execute(
            "SELECT r.kind, p.task_type FROM predictions p JOIN _runs r ON r.run_id = p.run_id"
        )
        if task_type == "dates"
    }
    # dates questions are answered only by the baseline (every question, for the baseline
    # test accuracy), the final test and the epoch's test-pool report (holdout): never in a
    # training step or validation
    assert kinds <= {"baseline", "test", "holdout"}, kinds
