"""skill_mode = "progressive": catalog in the system prompt, read_skill by name, activation."""

from __future__ import annotations

import json

import anyio
import pytest

from app.harness.rollouts.agent_prompts import CATALOG_HEADING, AgentPrompts, ToolArgumentError
from app.harness.rollouts.inference import AgentSettings, answer_question
from app.harness.skills.activation import Activation, from_steps, summarise
from app.harness.skills.agent_skills import SIDECAR, write_sidecar
from app.providers.sim.agent import choose_skill
from app.providers.sim.provider import SimProvider
from app.providers.sim.world import build_world
from core.types import Question

BODY = "# Ledger cases\n\n## Rules\n- {rule}\n"


def prompts(
    descriptions: dict[str, str], mode: str = "progressive", rule: str = "x"
) -> AgentPrompts:
    skills = {f"{t}.md": BODY.format(rule=rule) for t in descriptions}
    skills[SIDECAR] = write_sidecar(
        {f"{t}.md": {"name": t, "description": d} for t, d in descriptions.items()}
    )
    return AgentPrompts(
        system="# Agent\n",
        tool_docs={"read_skill": "by task type"},
        skills=skills,
        user_template="<question>\n$question\n</question>",
        skill_mode=mode,
        skills_version="v1",
        prompts_version="v1",
    )


def question(task_type: str = "ledger") -> Question:
    world = build_world()
    case = next(c for c in world.cases.values() if c.task_type == task_type and not c.needs_context)
    return Question(
        question_id=case.question_id,
        task_type=task_type,
        question=case.question,
        answer=case.answer,
        unit_id=case.unit_id,
        family=case.family,
        checker=case.checker,
        checker_args=case.checker_args,
    )


def test_catalog_lists_names_and_descriptions_not_bodies():
    p = prompts({"ledger": "Use for ledger totals.", "units": "Use for units."}, rule="SECRET")
    system = p.opening_messages(question())[0]["content"]
    assert CATALOG_HEADING in system
    assert "- ledger: Use for ledger totals." in system and "- units: Use for units." in system
    assert "SECRET" not in system
    tool = p.tools_for(question())[0]
    assert tool.name == "read_skill" and tool.parameters["required"] == ["name"]
    assert "SECRET" in p.dispatch("read_skill", {"name": "units"}, question())
    with pytest.raises(ToolArgumentError, match="no skill named"):
        p.dispatch("read_skill", {"name": "nope"}, question())
    with pytest.raises(ToolArgumentError, match="missing argument 'name'"):
        p.dispatch("read_skill", {"task_type": "ledger"}, question())


def test_sim_agent_opens_a_skill_only_when_its_description_names_the_cues():
    q = question("ledger").question
    assert choose_skill((("a", "Guidance for client files."),), q) is None
    assert choose_skill((("a", "Guidance for client files."), ("b", "Ledger totals.")), q) == "b"
    # the most cues wins; a tie goes to the first listed
    assert choose_skill((("u", "units and ledger"), ("l", "ledger: the total")), q) == "l"
    assert choose_skill((("u", "units and ledger"), ("l", "ledger things")), q) == "u"


def run(p: AgentPrompts, q: Question):
    async def go():
        return await answer_question(SimProvider(), p, q, AgentSettings())

    return anyio.run(go)


def test_rollouts_record_which_skill_they_opened():
    q = question("ledger")
    vague = run(prompts({"ledger": "Guidance for client files.", "units": "Guidance."}), q)
    verdict = vague.steps[-1]
    assert verdict["skills_opened"] == [] and verdict["skill_expected"] == "ledger.md"
    assert not any(s["type"] == "tool" for s in vague.steps)
    good = run(
        prompts({"ledger": "Use for ledger cases asking for a total.", "units": "Use for units."}),
        q,
    )
    assert good.steps[-1]["skills_opened"] == ["ledger.md"]
    stolen = run(prompts({"ledger": "Guidance.", "units": "Use for units and ledger totals."}), q)
    assert stolen.steps[-1]["skills_opened"] == ["units.md"]
    a = from_steps("ledger", json.dumps(stolen.steps))
    assert a == Activation("ledger", "ledger.md", ("units.md",))


def test_inline_mode_records_no_activation_and_is_unchanged():
    p = prompts({"ledger": "Use for ledger totals."}, mode="inline")
    pred = run(p, question("ledger"))
    assert "skills_opened" not in pred.steps[-1]
    assert CATALOG_HEADING not in p.opening_messages(question())[0]["content"]


def test_recall_and_precision_per_task_type():
    records = [
        Activation("ledger", "ledger.md", ("ledger.md",)),
        Activation("ledger", "ledger.md", ()),
        Activation("units", "units.md", ("ledger.md",)),
        Activation("units", "units.md", ("units.md",)),
    ]
    s = summarise(records)
    assert s["ledger"]["recall"] == 0.5 and s["ledger"]["precision"] == 0.5
    assert s["units"]["recall"] == 0.5 and s["units"]["precision"] == 1.0
    assert s["ledger"]["opened_none"] == 1 and s["units"]["opened_wrong"] == 1
    assert s["*"]["recall"] == 0.5 and s["*"]["precision"] == 2 / 3
    assert from_steps("ledger", "not json") is None
    assert from_steps("ledger", json.dumps([{"type": "verdict"}])) is None


def test_parse_description_is_defensive():
    from app.harness.training.descriptions import parse_description

    assert parse_description('{"description": "Use for ledger\\n totals."}') == (
        "Use for ledger totals.",
        "",
    )
    assert parse_description('prose {"description": "x\\u001b[31m y"} more')[0] == "x[31m y"
    assert parse_description("no json")[0] is None
    assert parse_description('{"description": 3}')[0] is None
    assert parse_description('{"description": "   "}')[0] is None
    too_long = parse_description(json.dumps({"description": "x" * 1025}))
    assert too_long[0] is None and "max 1024" in too_long[1]


@pytest.mark.slow
def test_training_descriptions_raises_activation_and_versions_show_the_diff(tmp_path):
    import shutil
    from pathlib import Path

    from app.cli import main
    from app.harness.skills.agent_skills import MAX_DESCRIPTION, read_sidecar
    from app.harness.workspace.workspace import list_versions, read_meta, read_version_files
    from app.report import workspace_summary

    root = Path(__file__).resolve().parents[3]
    store = tmp_path / "store"
    shutil.copytree(root / "store", store)
    ws = tmp_path / "ws"
    assert (
        main(
            [
                "init",
                str(ws),
                "--skills-from",
                str(root / "examples" / "agent-skills" / "sim-vague"),
                "--seed",
                "vague",
                "--questions",
                "sim-basic",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "train",
                "-w",
                str(ws),
                "--config",
                str(root / "app" / "demo.toml"),
                "--set",
                'skill_mode="progressive"',
                "--set",
                "epochs=2",
                "--no-progress",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    versions = list_versions(ws, "skills")
    described = [
        v for v in versions if read_meta(ws, "skills", v)["source"] == "slow_update:description"
    ]
    assert described, "no description was accepted"
    v = described[0]
    parent = read_meta(ws, "skills", v)["parent"]
    before, after = (read_version_files(ws / "skills" / x) for x in (parent, v))
    changed = [f for f in after if after[f] != before.get(f)]
    assert changed == ["_skills.json"]  # a description change touches no body
    old, new = read_sidecar(before), read_sidecar(after)
    diff = [f for f in new if new[f]["description"] != old[f]["description"]]
    assert len(diff) == 1 and 0 < len(new[diff[0]]["description"]) <= MAX_DESCRIPTION
    activation = workspace_summary(ws)["activation"]
    assert activation["first"]["per_task_type"]["*"]["recall"] == 0.0
    assert activation["last"]["per_task_type"]["*"]["recall"] >= 0.5
    steps = sorted((ws / "reports" / "steps").glob("e2_s*_ledger.json"))
    assert json.loads(steps[0].read_text())["activation"]["recall"] > 0
    epoch1 = json.loads((ws / "reports" / "epochs" / "e1.json").read_text())
    assert epoch1["counts"]["descriptions_accepted"] >= 1
    records = json.loads((ws / "reports" / "epochs" / "e1_descriptions.json").read_text())
    assert {r["action"] for r in records["records"]} <= {"accept", "reject", "no_proposal"}


def test_tui_step_summary_shows_activation():
    from rich.console import Console

    from app.tui.widgets.step_detail import step_summary

    row = {"epoch": 1, "step": 0, "task_type": "ledger", "action": "reject"}
    report = {
        "activation": {
            "recall": 0.5,
            "precision": None,
            "n": 4,
            "opened_none": 2,
            "opened_wrong": 0,
            "skill": "ledger.md",
        }
    }
    console = Console(width=200, record=True)
    console.print(step_summary({"row": row, "report": report}))
    text = console.export_text()
    assert "activation in this step's rollout: recall 0.500  precision –" in text
    assert "opened none 2" in text and "skill ledger.md" in text
    console = Console(width=200, record=True)
    console.print(step_summary({"row": row, "report": {}}))
    assert "activation" not in console.export_text()


@pytest.mark.slow
def test_killed_in_the_description_phase_resumes_to_the_same_state(tmp_path):
    """SIGKILL right after the 2nd description version (epoch 1's slow update), resume: the
    same versions (contents and descriptions) and best as an uninterrupted run."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    store = tmp_path / "store"
    shutil.copytree(root / "store", store)
    args = [
        "--config",
        str(root / "app" / "demo.toml"),
        "--set",
        'skill_mode="progressive"',
        "--set",
        "epochs=3",
        "--store",
        str(store),
        "--no-progress",
    ]

    def cli(*extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "main.py", *extra],
            cwd=root,
            text=True,
            capture_output=True,
            env={**os.environ, **(env or {})},
            timeout=600,
        )

    def versions(ws: Path) -> tuple:
        manifest = json.loads((ws / "manifest.json").read_text())
        metas = [
            json.loads((v / "_meta.json").read_text())
            for v in sorted((ws / "skills").iterdir(), key=lambda p: int(p.name[1:]))
        ]
        return (
            manifest["current"],
            manifest["best"]["skills"],
            [(m["sha256"], m["source"], m["description"]) for m in metas],
        )

    assert (
        cli(
            "import-skills",
            str(root / "examples" / "agent-skills" / "sim-vague"),
            "--name",
            "vague",
            "--store",
            str(store),
        ).returncode
        == 0
    )
    for name in ("ref", "killed"):
        assert (
            cli(
                "init",
                str(tmp_path / name),
                "--seed",
                "vague",
                "--questions",
                "sim-basic",
                "--store",
                str(store),
            ).returncode
            == 0
        )
    assert cli("train", "-w", str(tmp_path / "ref"), *args).returncode == 0
    killed = cli(
        "train", "-w", str(tmp_path / "killed"), *args, env={"SKILL_TRAINER_KILL_AT": "version:3"}
    )
    assert killed.returncode == -9
    sources = [
        json.loads((v / "_meta.json").read_text())["source"]
        for v in (tmp_path / "killed" / "skills").iterdir()
    ]
    assert "slow_update:description" in sources  # it died inside the description phase
    resumed = cli(
        "train", "-w", str(tmp_path / "killed"), "--resume", "--store", str(store), "--no-progress"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert versions(tmp_path / "killed") == versions(tmp_path / "ref")
