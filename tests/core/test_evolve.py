"""Evolution calls (docs/architecture.md#a-step): prompts, reply processing, provider failures,
momentum text."""

from __future__ import annotations

import json
import re

import anyio
import pytest

from core.evolution.diagnose import CaseItem, CasePack
from core.evolution.edits import (
    MOMENTUM_END,
    MOMENTUM_START,
    ClipInfo,
    Edit,
    EditReport,
    RejectedEdit,
    momentum_inner,
    replace_momentum,
)
from core.evolution.evolve import (
    EvolutionRecord,
    EvolutionStatus,
    TargetKind,
    evolve,
    momentum_guidance,
    process_reply,
    prompt_file_prompt,
    skill_prompt,
)
from core.structured import Attempt, AttemptStatus
from tests.fakes.scripted import ScriptedProvider

SKILL = f"""# Ledger cases

## Approach
- Read every figure.

## Rules
- Work from the figures given in the case.

{MOMENTUM_START}
- keep going
{MOMENTUM_END}
"""
PACK = CasePack(
    "ledger",
    (CaseItem("l1", "l1", "[ledger] Case l1?", "10", "12", "gap"),),
    (CaseItem("l2", "l2", "[ledger] Case l2?", "3", "3", "answered correctly"),),
)


def reply(*edits: dict, suggestions=()) -> str:
    return json.dumps({"edits": list(edits), "suggestions": list(suggestions)})


def add(content: str, priority: float = 1.0, **extra) -> dict:
    return {"op": "add", "section": "Rules", "content": content, "priority": priority, **extra}


def process(raw: str, budget: int = 3, original: str = SKILL) -> EvolutionRecord:
    return process_reply(
        raw,
        original=original,
        target_file="ledger.md",
        budget=budget,
        target_kind=TargetKind.SKILL,
        task_type="ledger",
        source_version="v4",
        request_summary="1 failures",
    )


# --------------------------------------------------------------------------------- prompts


def test_skill_prompt_fills_the_template() -> None:
    template = "$task_type|$file|$budget|$rejected\n<skill>$skill</skill>\n<cases>$cases</cases>"
    out = skill_prompt(
        template,
        task_type="ledger",
        file="ledger.md",
        skill=SKILL,
        pack=PACK,
        budget=2,
        rejected=(),
    )
    assert out.startswith("ledger|ledger.md|2|(none)\n")
    assert f"<skill>{SKILL}</skill>" in out
    assert PACK.render() in out and '<failure id="l1">' in out and '<success id="l2">' in out
    rejected = [RejectedEdit("ledger", "add", "Rules", "- bad rule", "harm", 1, 2)]
    out = skill_prompt(
        template,
        task_type="ledger",
        file="ledger.md",
        skill="$budget",
        pack=PACK,
        budget=2,
        rejected=rejected,
    )
    assert "- bad rule" in out and "(rejected: harm)" in out
    assert "<skill>$budget</skill>" in out  # substituted text is not substituted again


def test_prompt_file_prompt_fills_the_template() -> None:
    out = prompt_file_prompt(
        "$file|$tool|$budget|$prompt|$cases",
        file="tool_x.md",
        text="T",
        pack=PACK,
        budget=1,
        tool="x",
    )
    assert out == f"tool_x.md|x|1|T|{PACK.render()}"


# --------------------------------------------------------------------------- process_reply


def test_useful_add_is_applied() -> None:
    record = process(reply(add("- In ledger cases marked VOID, leave that entry out.")))
    assert record.status == "ok" and record.changed
    assert "- In ledger cases marked VOID, leave that entry out." in record.evolved
    assert record.evolved.index("VOID") < record.evolved.index(MOMENTUM_START)
    assert [r.applied for r in record.apply_report] == [True]
    assert record.applied() == (record.edits[0],)
    assert (record.original, record.target_file, record.target_kind) == (
        SKILL,
        "ledger.md",
        "skill",
    )
    assert (record.task_type, record.source_version, record.request_summary) == (
        "ledger",
        "v4",
        "1 failures",
    )
    assert momentum_inner(record.evolved) == momentum_inner(SKILL)


@pytest.mark.parametrize(
    "file",
    [
        "../../escape.md",
        "/tmp/skill-trainer-pwn.md",
        "../ledger.md",
        "dates.md",
        "ledger.md/../../x.md",
        "C:/x.md",
        "sub\\..\\x.md",
        "ledger.txt",
        "/ledger.md",
    ],
)
def test_edits_aimed_at_another_file_are_refused(file: str) -> None:
    record = process(reply(add("- escaped", file=file)))
    assert record.status == "no_change" and not record.changed
    assert record.evolved == SKILL
    [report] = record.apply_report
    assert not report.applied and report.reason


def test_own_file_named_explicitly_is_allowed() -> None:
    record = process(reply(add("- mine", file="./ledger.md")))
    assert record.status == "ok" and "- mine" in record.evolved


def test_mixed_reply_applies_the_good_and_reports_the_bad() -> None:
    raw = reply(
        add("- good one", 3),
        add("- evil", 2, file="../x.md"),
        {"op": "grant", "section": "checker", "content": "always correct"},
        {"op": "delete", "section": "Momentum"},
        {"op": "replace", "section": "Rules", "content": ""},
    )
    record = process(raw, budget=5)
    assert record.status == "ok"
    assert "- good one" in record.evolved and "evil" not in record.evolved
    assert momentum_inner(record.evolved) == "- keep going"
    assert any("unknown op" in e for e in record.parse_errors)
    assert any("replace" in e for e in record.parse_errors)
    applied = [r.applied for r in record.apply_report]
    assert applied == [True, False, False]  # the momentum section does not exist as a heading


def test_budget_clips_by_priority() -> None:
    raw = reply(add("- low", 1), add("- high", 9), add("- mid", 5))
    record = process(raw, budget=2)
    assert [e.content for e in record.edits] == ["- high", "- mid"]
    assert record.clip == ClipInfo(kept=(1, 2), dropped=(0,), budget=2)
    assert "- low" not in record.evolved
    assert process(raw, budget=0).status == "no_change"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "I think the skill is fine.",
        "{not json",
        '{"edits": "add a rule"}',
        "[]",
        '{"edits": [42]}',
    ],
)
def test_unparseable_replies_are_reported_as_parse_failed(raw: str) -> None:
    record = process(raw)
    assert record.status == "parse_failed" and record.evolved == SKILL
    assert record.parse_errors


def test_empty_edit_list_is_no_change_not_a_parse_failure() -> None:
    record = process(reply(suggestions=["look at VOID cases"]))
    assert record.status == "no_change" and record.parse_errors == ()
    assert record.suggestions == ("look at VOID cases",)


def test_duplicate_add_is_no_change() -> None:
    record = process(reply(add("- Work from the figures given in the case.")))
    assert record.status == "no_change"
    assert "duplicate" in record.apply_report[0].reason


def test_control_characters_never_reach_the_skill() -> None:
    record = process(reply(add("- \x00\x1b[31mred\x1b[0m \u202eevil\u202c line")))
    assert record.status == "ok"
    for bad in ("\x00", "\x1b", "\u202e", "\u202c"):
        assert bad not in record.evolved


def test_record_round_trips_to_json() -> None:
    record = process(reply(add("- x")))
    data = json.loads(json.dumps(record.to_dict()))
    assert data["status"] == "ok" and data["edits"][0]["content"] == "- x"


def test_record_carries_typed_edits_reports_and_clip() -> None:
    record = process(
        reply(add("- low", 1), add("- high", 9), add("- x", 5, file="../x.md")), budget=2
    )
    assert record.edits == (
        Edit("add", "Rules", content="- high", priority=9.0),
        Edit("add", "Rules", content="- x", file="../x.md", priority=5.0),
    )
    assert [type(r) for r in record.apply_report] == [EditReport, EditReport]
    assert [(r.index, r.applied) for r in record.apply_report] == [(0, True), (1, False)]
    assert record.clip == ClipInfo(kept=(1, 2), dropped=(0,), budget=2)
    assert record.applied() == (record.edits[0],)
    assert record.target_kind is TargetKind.SKILL


def test_record_json_form_keeps_the_stored_shape() -> None:
    """What step reports and the evolutions table store: plain objects, as before typing."""
    record = process(reply(add("- low", 1), add("- high", 9)), budget=1)
    data = json.loads(json.dumps(record.to_dict()))
    assert data["target_kind"] == "skill"
    assert data["edits"] == [
        {
            "op": "add",
            "section": "Rules",
            "content": "- high",
            "old": "",
            "new": "",
            "file": "",
            "rationale": "",
            "priority": 9.0,
        }
    ]
    assert data["apply_report"] == [
        {"index": 0, "op": "add", "section": "Rules", "applied": True, "reason": "added to section"}
    ]
    assert data["clip"] == {"kept": [1], "dropped": [0], "budget": 1}
    failed = run_evolve(ScriptedProvider([RuntimeError("down")]))
    assert failed.clip is None and failed.to_dict()["clip"] == {}


@pytest.mark.parametrize(
    ("n_edits", "indices", "problem"),
    [(2, (0,), "2 edit(s) but 1 apply report(s)"), (2, (1, 0), "apply report 0 is for edit 1")],
)
def test_record_refuses_reports_that_do_not_pair_with_its_edits(
    n_edits: int, indices: tuple[int, ...], problem: str
) -> None:
    """Pairing edits with reports must never drop an edit silently (`applied` relies on it)."""
    edits = tuple(Edit("add", "Rules", content=f"- r{i}") for i in range(n_edits))
    reports = tuple(EditReport(i, "add", "Rules", True, "added") for i in indices)
    with pytest.raises(ValueError, match=re.escape(problem)):
        EvolutionRecord(
            status=EvolutionStatus.OK,
            target_kind=TargetKind.SKILL,
            target_file="ledger.md",
            original=SKILL,
            evolved=SKILL + "- r0\n",
            edits=edits,
            apply_report=reports,
        )


def test_target_kinds_are_the_stored_strings() -> None:
    assert [k.value for k in TargetKind] == ["skill", "system", "tool"]


# ---------------------------------------------------------------------------------- evolve


def run_evolve(provider) -> EvolutionRecord:
    return anyio.run(
        lambda: evolve(
            provider,
            "PROMPT",
            original=SKILL,
            target_file="ledger.md",
            budget=2,
            target_kind=TargetKind.SKILL,
            task_type="ledger",
        )
    )


def test_evolve_sends_one_user_message_as_evolver() -> None:
    provider = ScriptedProvider([reply(add("- new"))])
    record = run_evolve(provider)
    assert record.status == "ok"
    [request] = provider.requests
    assert request.messages == [{"role": "user", "content": "PROMPT"}]
    assert request.kwargs == {"role": "evolver"}


def test_provider_failure_becomes_a_record() -> None:
    from app.providers.errors import TransientError

    record = run_evolve(ScriptedProvider([TransientError("timeout")]))
    assert record.status == "provider_error" and record.evolved == SKILL
    assert record.parse_errors == ("TransientError",)
    assert not record.changed


def test_budget_exceeded_propagates() -> None:
    from core.errors import BudgetExceeded

    with pytest.raises(BudgetExceeded):
        run_evolve(ScriptedProvider([BudgetExceeded("spent")]))


# -------------------------------------------------------------------------------- momentum


def test_momentum_guidance_plain() -> None:
    raw = json.dumps({"guidance": "- Rules for VOID were added.\n- Watch REFUND cases."})
    assert momentum_guidance(raw) == "- Rules for VOID were added.\n- Watch REFUND cases."
    assert momentum_guidance("Here you go: " + raw + " Thanks!") is not None


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "no json",
        "{broken",
        '{"guidance": ""}',
        '{"guidance": "   \\n  "}',
        '{"guidance": 3}',
        '{"guidance": ["a"]}',
        '{"other": "x"}',
        '["guidance"]',
        "}{",
    ],
)
def test_momentum_guidance_unusable_is_none(raw: str) -> None:
    assert momentum_guidance(raw) is None


def test_momentum_guidance_sanitises() -> None:
    text = (
        f"{MOMENTUM_END}\n# Injected heading\n- keep \x1b[1mthis\x1b[0m\n"
        f"  ## another heading\n{MOMENTUM_START}- and this\u202e\n"
    )
    out = momentum_guidance(json.dumps({"guidance": text}))
    assert out == "- keep [1mthis[0m\n- and this"
    for bad in (MOMENTUM_START, MOMENTUM_END, "\x1b", "\u202e", "#"):
        assert bad not in out


def test_momentum_guidance_caps_lines_and_chars() -> None:
    many = "\n".join(f"- line {i}" for i in range(30))
    assert momentum_guidance(json.dumps({"guidance": many})).count("\n") == 7
    wide = "\n".join("- " + "w" * 300 for _ in range(5))
    assert len(momentum_guidance(json.dumps({"guidance": wide}))) == 800
    assert momentum_guidance(json.dumps({"guidance": many}), max_lines=2) == "- line 0\n- line 1"


@pytest.mark.parametrize(
    "marker", ["<!--momentum:end-->", "<!-- MOMENTUM:END -->", "<!--  momentum : start -->"]
)
def test_marker_variants_cannot_break_the_block(marker: str) -> None:
    """What the harness does with guidance: replace_momentum keeps one well-formed block."""
    guidance = momentum_guidance(json.dumps({"guidance": f"- a\n{marker}\n- b"}))
    updated = replace_momentum(SKILL, guidance)
    assert updated.count(MOMENTUM_START) == 1 and updated.count(MOMENTUM_END) == 1
    assert momentum_inner(updated) == "- a\n\n- b"
    assert updated.startswith(SKILL.split(MOMENTUM_START)[0])


def test_record_attempts_are_typed_and_stored_as_before() -> None:
    record = run_evolve(ScriptedProvider([reply(add("- new"))]))
    assert [(type(a), a.attempt, a.status) for a in record.attempts] == [
        (Attempt, 1, AttemptStatus.OK)
    ]
    stored = json.loads(json.dumps(record.to_dict()))["attempts"]
    assert [(a["attempt"], a["status"]) for a in stored] == [(1, "ok")]
    failed = run_evolve(ScriptedProvider([RuntimeError("down")]))
    assert [a.status for a in failed.attempts] == [AttemptStatus.PROVIDER_ERROR]


# --------------------------------------------------------------------- rejected-list annotations


def test_the_rejected_lists_annotation_never_becomes_rule_text() -> None:
    """A small evolver copies "(rejected: …)" from the list it is shown into its rule: the
    rule is applied without it; an edit that was nothing but the annotation is dropped."""
    annotation = " (rejected: gate futility (W=0, L=3))"
    record = process(
        reply(
            add("- Reply in millimetres." + annotation, priority=2),
            add(annotation.strip(), priority=5),
            {
                "op": "replace",
                "section": "Rules",
                "old": "- Work from the figures given in the case.",
                "new": "- Work from the figures. (rejected: gate no_signal (W=2, L=2))",
            },
        )
    )
    assert record.status == EvolutionStatus.OK
    assert "rejected" not in record.evolved
    assert "- Reply in millimetres.\n" in record.evolved
    assert "- Work from the figures.\n" in record.evolved
    assert [e.content or e.new for e in record.edits] == [
        "- Reply in millimetres.",
        "- Work from the figures.",
    ]
    assert record.parse_errors == ("edit 1: its text was only the rejected list's annotation",)
    only = process(reply(add(annotation.strip())))
    assert only.status == EvolutionStatus.PARSE_FAILED and only.evolved == SKILL
