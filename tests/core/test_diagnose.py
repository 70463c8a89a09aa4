"""Two-stage diagnosis (docs/architecture.md#a-step): defensive parsing, then grouping into case
packs."""

from __future__ import annotations

import json
from string import Template

import anyio
import pytest

from core.evolution.diagnose import (
    CATEGORIES,
    EARLIER_NOTE,
    MAX_FAILURES_PER_PACK,
    MAX_SUCCESSES_PER_PACK,
    CaseItem,
    CasePack,
    Diagnosis,
    Failure,
    build_packs,
    diagnose_failures,
    diagnosis_prompt,
    merge_packs,
    parse_diagnosis,
    render_trajectory,
    with_earlier_failures,
)
from core.types import Question
from tests.fakes.scripted import ScriptedProvider, containing

Q = Question(
    question_id="ledger-u001",
    task_type="ledger",
    question="[ledger] Case 1. Total?",
    answer="12",
    unit_id="ledger-u001",
)


def q(qid: str, task_type: str = "ledger", unit: str = "") -> Question:
    return Question(
        question_id=qid,
        task_type=task_type,
        question=f"[{task_type}] Case {qid}?",
        answer=f"a-{qid}",
        unit_id=unit,
    )


def failure(
    question: Question, prediction: str = "wrong", stop: str = "final", steps: tuple = ()
) -> Failure:
    return Failure(
        question=question,
        prediction=prediction,
        stop_reason=stop,
        steps=steps,
        system="SYS",
        skill="SKILL",
        tools="(none)",
    )


def diag(question: Question, category: str, target: str = "skill") -> Diagnosis:
    return Diagnosis(
        question.question_id,
        question.unit_id,
        question.task_type,
        category,
        target,
        f"why {question.question_id}",
    )


# ------------------------------------------------------------------------------- parsing


def test_parse_valid_reply() -> None:
    d = parse_diagnosis('{"category": "skill_gap", "target": "skill", "rationale": "no rule"}', Q)
    assert d == Diagnosis(
        "ledger-u001", "ledger-u001", "ledger", "skill_gap", "skill", "no rule", degraded=False
    )


@pytest.mark.parametrize(
    "reply",
    [
        'Sure! Here it is:\n```json\n{"category": "interface", "target": "system", '
        '"rationale": "format"}\n```\nHope that helps.',
        '{"category": "interface", "target": "system", "rationale": "format {braces} inside"}',
    ],
)
def test_parse_tolerates_prose_and_fences(reply: str) -> None:
    d = parse_diagnosis(reply, Q)
    assert (d.category, d.target, d.degraded) == ("interface", "system", False)


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "no json at all",
        "{not json}",
        "[1, 2, 3]",
        '{"category": "skill_gap"',
        '{"category": "bad_vibes", "target": "skill"}',
        '{"category": null}',
        '{"category": ["skill_gap"]}',
        '{"target": "skill"}',
        "{" * 50,
        "}{",
        None,
    ],
)
def test_parse_junk_degrades_never_raises(reply) -> None:
    d = parse_diagnosis(reply, Q)
    assert d.degraded and d.category == "unknown" and d.target == "skill"
    assert (d.question_id, d.unit_id, d.task_type) == ("ledger-u001", "ledger-u001", "ledger")


def test_valid_object_followed_by_prose_with_braces_parses() -> None:
    reply = (
        '{"category": "skill_gap", "target": "skill", "rationale": "no rule"}\n'
        "(The skill says nothing about {VOID} entries.)"
    )
    d = parse_diagnosis(reply, Q)
    assert (d.category, d.degraded) == ("skill_gap", False)


def test_parse_time_is_bounded_on_brace_heavy_junk() -> None:
    import time

    # CPU time, not wall time: a loaded CI machine must not fail it. A quadratic scan took
    # 6-10 s on 20,000 braces; the bounded one takes ~0.08 s whatever the length.
    for n in (20_000, 80_000):
        started = time.process_time()
        assert parse_diagnosis("{\n" * n, Q).degraded
        assert time.process_time() - started < 0.5, n


@pytest.mark.parametrize(
    "target",
    [
        "../../etc/passwd",
        "/abs/path.md",
        "tool:../../escape",
        "tool:read_context/../../x",
        "tool:",
        "tool:" + "x" * 65,
        "system; rm -rf /",
        "skills/ledger.md",
        "tool:a b",
        3,
        None,
        ["system"],
        "tool:read_context\n",
        "SYSTEM",
    ],
)
def test_injected_or_invalid_targets_fall_back_to_skill(target) -> None:
    reply = json.dumps({"category": "interface", "target": target, "rationale": "r"})
    assert parse_diagnosis(reply, Q).target == "skill"


@pytest.mark.parametrize("target", ["skill", "system", "tool:read_context", "tool:x-y_2"])
def test_valid_targets_are_kept(target: str) -> None:
    reply = json.dumps({"category": "interface", "target": target, "rationale": "r"})
    assert parse_diagnosis(reply, Q).target == target


def test_every_category_parses_and_rationale_is_capped() -> None:
    for category in CATEGORIES:
        d = parse_diagnosis(json.dumps({"category": category, "rationale": "r" * 5000}), Q)
        assert d.category == category and not d.degraded
        assert d.target == "skill" and len(d.rationale) == 500


# -------------------------------------------------------------------- prompt and calls


def test_render_trajectory_and_truncation() -> None:
    steps = (
        {
            "turn": 0,
            "type": "model",
            "text": "look",
            "tool_calls": [{"id": "c", "name": "read_context", "arguments": {"section": "full"}}],
        },
        {
            "turn": 0,
            "type": "tool",
            "name": "read_context",
            "arguments": {"section": "full"},
            "status": "ok",
            "output": "FACT: 3",
        },
        {
            "turn": 1,
            "type": "tool",
            "name": "read_context",
            "arguments": '{"bad',
            "status": "error",
            "output": "error: arguments are not valid JSON",
        },
        {"turn": 2, "type": "error", "error": "timeout"},
        {"type": "verdict", "prediction": "", "correct": False},
    )
    text = render_trajectory(steps)
    assert text.splitlines() == [
        '[model] look -> calls read_context({"section": "full"})',
        '[tool read_context {"section": "full"}] FACT: 3',
        '[tool read_context "{\\"bad"] error: arguments are not valid JSON',
        "[error] timeout",
    ]
    long = render_trajectory(({"type": "model", "text": "x" * 5000},), limit=100)
    assert long.startswith("[model] x") and long.endswith("[... trajectory truncated ...]")
    assert len(long) < 140


def test_diagnosis_prompt_fills_every_field_once() -> None:
    template = (
        "$task_type|$question|$answer|$prediction|$stop_reason|$system|$skill|$tools|$trajectory"
    )
    f = Failure(
        question=Q,
        prediction="",
        stop_reason="refused",
        steps=({"type": "error", "error": "boom"},),
        system="SYS $answer",
        skill="SK",
        tools="- read_context: x",
    )
    out = diagnosis_prompt(template, f)
    assert out == (
        "ledger|[ledger] Case 1. Total?|12|(no answer)|refused|SYS $answer|SK|"
        "- read_context: x|[error] boom"
    )


def replies(script: dict[str, object]) -> ScriptedProvider:
    """The judge's reply for each case, picked by a text its prompt contains."""
    return ScriptedProvider({k: [v] for k, v in script.items()}, key=containing(*script))


def assert_judge_calls(provider: ScriptedProvider) -> None:
    # diagnoses are the judge's; a reply that does not parse gets one repair request
    for request in provider.requests:
        assert request.kwargs.get("role") == "judge" and len(request.messages) in (1, 3)


def test_diagnose_failures_keeps_order_and_degrades_only_the_broken_call() -> None:
    qs = [q(f"q{i}") for i in range(5)]
    ok = '{"category": "skill_gap", "target": "skill", "rationale": "r"}'
    provider = replies(
        {
            "q0?": ok,
            "q1?": RuntimeError("down"),
            "q2?": "junk",
            "q3?": ok,
            "q4?": '{"category": "interface", "target": "tool:read_context"}',
        }
    )
    template = "Case: $question"
    diagnoses = anyio.run(
        lambda: diagnose_failures(
            provider, template, [failure(x) for x in qs], limiter=anyio.CapacityLimiter(2)
        )
    )
    assert [d.question_id for d in diagnoses] == [x.question_id for x in qs]
    assert [d.degraded for d in diagnoses] == [False, True, True, False, False]
    assert diagnoses[4].target == "tool:read_context"
    # q2's junk reply earned exactly one repair request (6 requests in all)
    assert_judge_calls(provider)
    assert len(provider.requests) == 6
    assert sum("q2?" in r.prompt for r in provider.requests) == 2
    assert "did not parse: no JSON object" in diagnoses[2].rationale


def test_budget_exceeded_is_not_degraded_away() -> None:
    from core.errors import BudgetExceeded

    provider = replies({"q0?": BudgetExceeded("spent")})
    with pytest.raises(BaseException) as info:
        anyio.run(lambda: diagnose_failures(provider, "$question", [failure(q("q0"))]))
    error = info.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, BudgetExceeded)
    assert_judge_calls(provider)


# --------------------------------------------------------------------------------- packs


def test_build_packs_groups_by_category_and_target() -> None:
    ledger = [q(f"l{i}") for i in range(4)]
    dates = [q(f"d{i}", "dates") for i in range(2)]
    failures = [failure(x) for x in ledger + dates]
    diagnoses = [
        diag(ledger[0], "skill_gap"),
        diag(ledger[1], "interface", "system"),
        diag(ledger[2], "interface", "tool:read_context"),
        diag(ledger[3], "runtime_fault"),
        diag(dates[0], "skill_gap"),
        diag(dates[1], "missing_context"),
    ]
    successes = [(q("s1"), "a-s1"), (q("s2", "dates"), "a-s2"), (q("s0"), "a-s0")]
    result = build_packs(diagnoses, failures, successes)
    assert sorted(result.skill_packs) == ["dates", "ledger"]
    assert [c.question_id for c in result.skill_packs["ledger"].failures] == ["l0"]
    assert [c.question_id for c in result.skill_packs["ledger"].successes] == ["s0", "s1"]
    assert [c.question_id for c in result.skill_packs["dates"].successes] == ["s2"]
    assert [c.question_id for c in result.system_pack.failures] == ["l1"]
    assert list(result.tool_packs) == ["read_context"]
    assert result.tool_packs["read_context"].target == "tool:read_context"
    assert [c.question_id for c in result.tool_packs["read_context"].failures] == ["l2"]
    assert result.diagnoses == tuple(diagnoses)
    item = result.skill_packs["ledger"].failures[0]
    assert item == CaseItem("l0", "l0", ledger[0].question, "a-l0", "wrong", "why l0")
    success = result.skill_packs["ledger"].successes[0]
    assert (success.prediction, success.note) == ("a-s0", "answered correctly")


def test_build_packs_includes_every_skill_gap_up_to_the_cap() -> None:
    qs = [q(f"x{i:02d}", unit=f"u{i // 2}") for i in range(MAX_FAILURES_PER_PACK + 5)]
    result = build_packs(
        [diag(x, "skill_gap") for x in reversed(qs)],
        [failure(x) for x in qs],
        [(q(f"s{i}"), "ok") for i in range(MAX_SUCCESSES_PER_PACK + 4)],
    )
    pack = result.skill_packs["ledger"]
    assert [c.question_id for c in pack.failures] == [
        x.question_id for x in qs[:MAX_FAILURES_PER_PACK]
    ]
    assert len(pack.successes) == MAX_SUCCESSES_PER_PACK
    assert pack.unit_ids >= {f"u{i}" for i in range(MAX_FAILURES_PER_PACK // 2)}
    assert result.system_pack is None and result.tool_packs == {}


def test_degraded_diagnoses_and_no_failures_give_no_packs() -> None:
    x = q("x1")
    degraded = parse_diagnosis("junk", x)
    result = build_packs([degraded], [failure(x)], [(q("s"), "ok")])
    assert result.skill_packs == {} and result.system_pack is None and not result.tool_packs
    assert result.degraded_count == 1
    empty = build_packs([], [], [(q("s"), "ok")])
    assert empty.skill_packs == {} and empty.degraded_count == 0


def test_pack_render_and_round_trip() -> None:
    pack = CasePack(
        "ledger",
        (CaseItem("a", "ua", "Q <1>?", "1", "2", "note"),),
        (CaseItem("b", "ub", "Q2?", "3", "3", "answered correctly"),),
    )
    text = pack.render()
    assert '<failure id="a">\n<question>\nQ <1>?\n</question>' in text
    assert "<expected>1</expected>\n<got>2</got>\n<diagnosis>note</diagnosis>" in text
    assert '<success id="b">' in text and text.index("<failure") < text.index("<success")
    assert CasePack.from_dict(json.loads(json.dumps(pack.to_dict()))) == pack
    assert pack.unit_ids == frozenset({"ua", "ub"})


def test_a_pack_names_its_tool_only_for_a_tool_target() -> None:
    assert CasePack("tool:read_context", ()).tool_name == "read_context"
    assert CasePack("system", ()).tool_name is None
    assert CasePack("dates", ()).tool_name is None  # a task type's pack


def test_merge_packs_dedupes_sorts_and_caps() -> None:
    items = [CaseItem(f"q{i:02d}", f"q{i:02d}", "?", "1", "2") for i in range(30)]
    packs = [CasePack("system", tuple(items[:20])), CasePack("system", tuple(items[10:]))]
    merged = merge_packs(packs, "system")
    assert merged.target == "system"
    ids = [c.question_id for c in merged.failures]
    assert ids == sorted(set(ids)) and len(ids) == min(30, MAX_FAILURES_PER_PACK * 2)
    assert merge_packs([], "system") is None
    assert merge_packs([CasePack("system", ())], "system") is None


def _items(*ids: str) -> tuple[CaseItem, ...]:
    return tuple(CaseItem(i, i, "?", "1", "2") for i in ids)


def test_earlier_failures_still_failing_follow_the_fresh_ones_newest_first() -> None:
    pack = CasePack("dates", _items("q5", "q6"), successes=_items("s1"))
    earlier = _items("q1", "q2", "q3", "q5")  # oldest first; q5 is in the pack again
    carried = with_earlier_failures(pack, earlier, lambda q: q != "q2")  # q2 passes now
    assert [c.question_id for c in carried.failures] == ["q5", "q6", "q3", "q1"]
    assert carried.successes == pack.successes and carried.target == "dates"
    assert [c.note.startswith(EARLIER_NOTE) for c in carried.failures] == [0, 0, 1, 1]


def test_earlier_failures_fill_the_pack_only_up_to_its_cap() -> None:
    fresh = _items(*(f"f{i:02d}" for i in range(MAX_FAILURES_PER_PACK - 2)))
    earlier = _items(*(f"e{i:02d}" for i in range(20)))
    carried = with_earlier_failures(CasePack("dates", fresh), earlier, lambda q: True)
    assert len(carried.failures) == MAX_FAILURES_PER_PACK
    assert [c.question_id for c in carried.failures[-2:]] == ["e19", "e18"]
    full = CasePack("dates", _items(*(f"f{i:02d}" for i in range(MAX_FAILURES_PER_PACK))))
    assert with_earlier_failures(full, earlier, lambda q: True) is full


def test_no_earlier_failure_still_failing_leaves_the_pack_as_it_was() -> None:
    pack = CasePack("dates", _items("q1"))
    assert with_earlier_failures(pack, (), lambda q: True) is pack
    assert with_earlier_failures(pack, _items("q2"), lambda q: False) is pack


# ------------------------------------------------------- the real pipeline, on the sim


def test_sim_failures_route_to_the_right_packs(tmp_path) -> None:
    """Rollout with the starter seed, sim diagnosis, build_packs: each failure lands where
    the world says its cause is, and every skill gap of a type is in that type's pack."""
    from app.harness.rollouts.agent_prompts import AgentPrompts
    from app.harness.rollouts.inference import AgentSettings, answer_question
    from app.harness.workspace.store import benchmark_dir, load_benchmark, load_seed, seed_dir
    from app.harness.workspace.workspace import init_workspace
    from app.paths import builtin_store, read_prompt
    from app.providers.sim.provider import SimProvider
    from app.providers.sim.world import build_world

    ws = init_workspace(
        tmp_path / "ws",
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )
    prompts = AgentPrompts.load(ws.skills_dir, ws.prompts_dir, "inline")
    world, sim = build_world(), SimProvider()
    questions = load_benchmark(ws.questions_dir).questions
    batch = [x for x in questions if x.task_type in ("ledger", "dates")][::4]

    async def rollout():
        return [await answer_question(sim, prompts, x, AgentSettings()) for x in batch]

    preds = anyio.run(rollout)
    failures = [
        Failure(
            question=x,
            prediction=p.prediction,
            stop_reason=p.stop_reason,
            steps=p.steps,
            system=prompts.system,
            skill=prompts.skill_text(x.task_type),
            tools="\n".join(f"- {t.name}: {t.description}" for t in prompts.tools_for(x))
            or "(none)",
        )
        for x, p in zip(batch, preds, strict=True)
        if not p.correct
    ]
    successes = [(x, p.prediction) for x, p in zip(batch, preds, strict=True) if p.correct]
    template = read_prompt("diagnose_failure.md")
    assert Template(template).safe_substitute().count("## Task: diagnose-failure") == 1
    diagnoses = anyio.run(lambda: diagnose_failures(sim, template, failures))
    result = build_packs(diagnoses, failures, successes)
    expected: dict[str, set[str]] = {"skill": set(), "system": set(), "tool": set()}
    for f in failures:
        case = world.case_for_text(f.question.question)
        kind = "tool" if case.needs_context else "system" if case.system_rule else "skill"
        expected[kind].add(f.question.question_id)
    skill_ids = {c.question_id for p in result.skill_packs.values() for c in p.failures}
    assert all(len(p.failures) <= MAX_FAILURES_PER_PACK for p in result.skill_packs.values())
    capped = {t for t, p in result.skill_packs.items() if len(p.failures) == MAX_FAILURES_PER_PACK}
    uncapped_expected = {qid for qid in expected["skill"] if qid.split("-")[0] not in capped}
    assert uncapped_expected <= skill_ids <= expected["skill"]
    assert {c.question_id for c in result.system_pack.failures} == expected["system"]
    assert {c.question_id for c in result.tool_packs["read_context"].failures} == expected["tool"]
    assert not any(d.degraded for d in diagnoses)
    assert len(failures) >= 20 and expected["system"] and expected["tool"]
