"""The simulated world and what keeps it honest (docs/architecture.md#models).

Everything here goes through the real harness code (AgentPrompts, answer_question /
run_inference, diagnose_failures, build_packs, skill_prompt, process_reply) against the sim
provider, so a shortcut in either the sim or the harness shows up as a failing number.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from string import Template
from types import SimpleNamespace

import anyio
import pytest

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.inference import AgentSettings, answer_question, run_inference
from app.harness.rollouts.question_units import build_units, unit_correctness_view
from app.harness.training.step import failures_from_rows, rollout_rows
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.store import benchmark_dir, load_benchmark, load_seed, seed_dir
from app.harness.workspace.workspace import (
    WorkspacePaths,
    advance_version,
    init_workspace,
    resolve_paths,
    update_manifest,
)
from app.paths import builtin_store, read_prompt
from app.providers.errors import TransientError
from app.providers.retry import RetryingProvider
from app.providers.sim import provider as sim_provider_module
from app.providers.sim.evolver import USELESS_LINES, EvolverShares
from app.providers.sim.generate import benchmark_lines
from app.providers.sim.provider import SimProvider, SimRateLimit, SimSettings, SimTimeout
from app.providers.sim.world import (
    SYSTEM_RULES,
    TASK_TYPES,
    TOOL_RULE,
    build_world,
    normalise,
)
from core.evolution.budget import resolve_skill_file
from core.evolution.diagnose import (
    CaseItem,
    CasePack,
    Failure,
    build_packs,
    diagnose_failures,
    diagnosis_prompt,
)
from core.evolution.edits import Edit, apply_edits, parse_edits
from core.evolution.evolve import process_reply, prompt_file_prompt, skill_prompt
from core.types import LLMResponse, Question
from tests.fakes.scripted import ScriptedProvider

WORLD = build_world()
TEMPLATES = {
    name: read_prompt(f"{name}.md")
    for name in ("diagnose_failure", "evolve_skill", "evolve_system", "evolve_tool", "momentum")
}


# --------------------------------------------------------------------------------- helpers


def run(fn, *args):
    return anyio.run(fn, *args)


def add_rules(prompts: AgentPrompts, lines_by_type: dict[str, Sequence[str]]) -> AgentPrompts:
    """The prompts with lines added to each task type's skill `Rules` section (real edit code)."""
    skills = dict(prompts.skills)
    for task_type, lines in lines_by_type.items():
        target = resolve_skill_file(task_type, skills)
        text, reports = apply_edits(
            skills[target], [Edit("add", "Rules", content="\n".join(lines))], target
        )
        assert reports[0].applied, reports
        skills[target] = text
    return dataclasses.replace(prompts, skills=skills, skills_version="rules")


def true_rules(task_types: Sequence[str] = TASK_TYPES) -> dict[str, list[str]]:
    return {t: [f"- {r.statement}" for r in WORLD.rules_for(t)] for t in task_types}


def fair(prompts: AgentPrompts) -> AgentPrompts:
    """System rules in the system prompt and the full-context rule in the tool description."""
    system = prompts.system.rstrip() + "\n" + "".join(f"- {s}\n" for _, s in SYSTEM_RULES)
    docs = dict(prompts.tool_docs)
    docs["read_context"] = docs["read_context"].rstrip() + f"\n- {TOOL_RULE}\n"
    return dataclasses.replace(prompts, system=system, tool_docs=docs, prompts_version="fair")


async def answer_all(
    provider,
    prompts: AgentPrompts,
    questions: Sequence[Question],
    settings: AgentSettings | None = None,
) -> dict[str, object]:
    settings = settings or AgentSettings()
    out: dict[str, object] = {}

    async def one(q: Question) -> None:
        out[q.question_id] = await answer_question(provider, prompts, q, settings)

    async with anyio.create_task_group() as tg:
        for q in questions:
            tg.start_soon(one, q)
    return out


def correctness(provider, prompts: AgentPrompts, questions: Sequence[Question]) -> dict[str, bool]:
    preds = run(answer_all, provider, prompts, questions)
    return {qid: p.correct for qid, p in preds.items()}


def unit_acc(questions: Sequence[Question], correct: dict[str, bool]) -> float:
    view = unit_correctness_view(build_units(questions), correct)
    assert view, "no units"
    return sum(view.values()) / len(view)


def acc_by_type(questions: Sequence[Question], correct: dict[str, bool]) -> dict[str, float]:
    return {
        t: unit_acc([q for q in questions if q.task_type == t], correct)
        for t in sorted({q.task_type for q in questions})
    }


def injecting(inner, message: dict) -> ScriptedProvider:
    """Wraps a provider and appends an extra message to every agent request."""
    return ScriptedProvider(respond=lambda r: r.forward_to(inner, [*r.messages, message]))


# -------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> WorkspacePaths:
    root = tmp_path_factory.mktemp("simworld") / "ws"
    return init_workspace(
        root,
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )


@pytest.fixture(scope="module")
def questions(ws: WorkspacePaths) -> tuple[Question, ...]:
    return load_benchmark(ws.questions_dir).questions


@pytest.fixture(scope="module")
def starter(ws: WorkspacePaths) -> AgentPrompts:
    return AgentPrompts.load(ws.skills_dir, ws.prompts_dir, "inline")


@pytest.fixture(scope="module")
def sim() -> SimProvider:
    return SimProvider()


@pytest.fixture(scope="module")
def baseline_correct(sim, starter, questions) -> dict[str, bool]:
    return correctness(sim, starter, questions)


@pytest.fixture(scope="module")
def full_correct(sim, starter, questions) -> dict[str, bool]:
    """All true rules, system rules and the tool rule: what a well-trained agent is sent."""
    return correctness(sim, add_rules(fair(starter), true_rules()), questions)


# ----------------------------------------------------------------------- (a) determinism


def _requests(questions: Sequence[Question], starter: AgentPrompts) -> list[tuple[list, dict]]:
    """Several request kinds, exactly as the harness builds them."""
    plain = next(q for q in questions if not q.context)
    ctx_q = next(q for q in questions if q.context)
    tool_mode = dataclasses.replace(starter, skill_mode="tool")
    reqs: list[tuple[list, dict]] = []
    for prompts, q in ((starter, plain), (starter, ctx_q), (tool_mode, plain)):
        reqs.append((prompts.opening_messages(q), {"tools": prompts.tools_for(q) or None}))
    failure = Failure(
        question=plain,
        prediction="12",
        stop_reason="final",
        steps=(),
        system=starter.system,
        skill=starter.skill_text(plain.task_type),
        tools="(none)",
    )
    pack = CasePack(
        plain.task_type,
        (CaseItem(plain.question_id, plain.unit_id, plain.question, plain.answer, "12"),),
    )
    ctx_pack = CasePack(
        "tool:read_context",
        (CaseItem(ctx_q.question_id, ctx_q.unit_id, ctx_q.question, ctx_q.answer, "1"),),
    )
    user_prompts = [
        diagnosis_prompt(TEMPLATES["diagnose_failure"], failure),
        skill_prompt(
            TEMPLATES["evolve_skill"],
            task_type=plain.task_type,
            file="x.md",
            skill=starter.skill_text(plain.task_type),
            pack=pack,
            budget=2,
            rejected=(),
        ),
        prompt_file_prompt(
            TEMPLATES["evolve_system"], file="system.md", text=starter.system, pack=pack, budget=2
        ),
        prompt_file_prompt(
            TEMPLATES["evolve_tool"],
            file="tool_read_context.md",
            text=starter.tool_docs["read_context"],
            pack=ctx_pack,
            budget=2,
            tool="read_context",
        ),
        Template(TEMPLATES["momentum"]).safe_substitute(
            task_type=plain.task_type,
            previous=starter.skill_text(plain.task_type),
            current=starter.skill_text(plain.task_type),
            samples=f"- {plain.question} | previous: wrong, current: wrong",
        ),
    ]
    reqs += [([{"role": "user", "content": p}], {"role": "evolver"}) for p in user_prompts]
    return reqs


def test_same_seed_and_request_give_the_same_response(questions, starter) -> None:
    reqs = _requests(questions, starter)

    async def replies(provider, order) -> dict[int, LLMResponse]:
        return {i: await provider.complete(reqs[i][0], **reqs[i][1]) for i in order}

    order = list(range(len(reqs)))
    first = run(replies, SimProvider(), order)
    again = run(replies, SimProvider(), order[::-1])  # fresh instance, other call order
    assert first == again
    assert [bool(r.tool_calls) for r in first.values()][:3] == [False, True, True]
    for i in range(3, len(reqs)):  # every evolver task got its own JSON reply
        assert isinstance(json.loads(first[i].text), dict)
    assert len({first[i].text for i in range(3, len(reqs))}) == len(reqs) - 3


def test_faults_are_reproducible_too(questions, starter) -> None:
    """Fault injection is a pure function of (world seed, request, attempt number)."""
    requests = _agent_requests(questions, starter, 120) * 2  # second pass = second attempts

    async def outcomes() -> list[str]:
        provider = SimProvider(settings=SimSettings(fault_rate=0.3))
        out = []
        for messages in requests:
            try:
                out.append((await provider.complete(messages)).text)
            except TransientError as e:
                out.append(type(e).__name__)
        return out

    a, b = run(outcomes), run(outcomes)
    assert a == b
    assert a[:120] != a[120:]  # a retried request is not doomed to repeat its fault


def test_sample_seed_is_part_of_the_request(questions, starter) -> None:
    """Same request, other `seed`: some answers differ; the same seed repeats exactly."""
    qs = [q for q in questions if not q.context][:120]

    async def finals(seed: int) -> list[str]:
        provider = SimProvider()
        return [(await provider.complete(starter.opening_messages(q), seed=seed)).text for q in qs]

    a, b, c = run(finals, 0), run(finals, 0), run(finals, 1)
    assert a == b
    assert sum(x != y for x, y in zip(a, c, strict=True)) >= 10


def test_other_world_seed_has_other_rules_and_benchmark(questions) -> None:
    other = build_world("basic", 8)
    assert build_world("basic", 7).rules == WORLD.rules  # a pure function of (name, seed)
    mine = {r.statement for r in WORLD.rules.values()}
    theirs = {r.statement for r in other.rules.values()}
    assert len(mine & theirs) <= 3
    assert set(benchmark_lines(other)).isdisjoint(benchmark_lines(WORLD))
    # The stored benchmark is world seed 7's, question for question.
    stored = {q.question_id: q for q in questions}
    assert len(stored) == len(WORLD.cases)
    for spec in WORLD.cases.values():
        q = stored[spec.question_id]
        assert (q.question, q.answer, q.unit_id) == (spec.question, spec.answer, spec.unit_id)
    # A provider for the other world cannot place our questions at all.
    provider = SimProvider(world=other)
    q = questions[0]
    starter_like = AgentPrompts(system="s", tool_docs={}, skills={}, user_template="$question")
    reply = run(lambda: provider.complete(starter_like.opening_messages(q)))
    assert reply.text.endswith("ANSWER: unknown")


def test_hidden_rules_are_not_in_the_store() -> None:
    seed = load_seed(seed_dir(builtin_store(), "sim-starter"))
    text = normalise("\n".join([*seed.skills.values(), *seed.prompts.values()]))
    secrets = [r.statement for r in WORLD.rules.values()] + [r.decoy for r in WORLD.rules.values()]
    secrets += [s for _, s in SYSTEM_RULES] + [TOOL_RULE]
    assert not [s for s in secrets if normalise(s) in text]


# ------------------------------------------------------------------------ (b) skills matter


@pytest.fixture(scope="module")
def inference_by_condition(ws, sim, starter, questions):
    """run_inference over the whole benchmark: starter skill vs all rules, same prompts."""
    prompts = fair(starter)
    out = {}
    with HarnessLog(ws.db) as log:
        for name, p in (("starter", prompts), ("rules", add_rules(prompts, true_rules()))):
            out[name] = run(
                lambda p=p, name=name: run_inference(
                    questions,
                    provider=sim,
                    prompts=p,
                    log=log,
                    run_id=f"skills-{name}",
                    settings=AgentSettings(),
                )
            )
    return out


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_stating_a_types_rules_raises_unit_accuracy(inference_by_condition, task_type: str) -> None:
    starter = inference_by_condition["starter"].per_task_type[task_type]
    rules = inference_by_condition["rules"].per_task_type[task_type]
    assert starter["total"] == rules["total"] >= 60
    assert rules["accuracy"] - starter["accuracy"] >= 0.35, (starter, rules)
    assert rules["accuracy"] >= 0.8


def test_plain_starter_is_near_chance(baseline_correct, questions) -> None:
    accs = acc_by_type(questions, baseline_correct)
    assert all(0.05 <= a <= 0.4 for a in accs.values()), accs


# ------------------------------------------------------------------------------ (c) evolver


def _interleaved(questions: Sequence[Question]) -> list[Question]:
    by_type: dict[str, list[Question]] = {}
    for q in questions:
        by_type.setdefault(q.task_type, []).append(q)
    out: list[Question] = []
    for i in range(max(len(v) for v in by_type.values())):
        out += [v[i] for v in by_type.values() if i < len(v)]
    return out


@pytest.fixture(scope="module")
def real_packs(ws, sim, starter, questions) -> list[tuple[str, CasePack]]:
    """Rollout with the starter skills, then the harness's diagnosis and pack building, in
    batches of 24 questions (as training steps would): failure packs from real failures."""
    with HarnessLog(ws.db) as log:
        run(
            lambda: run_inference(
                questions,
                provider=sim,
                prompts=starter,
                log=log,
                run_id="packs-rollout",
                settings=AgentSettings(),
            )
        )
        rows = rollout_rows(log, "packs-rollout")
    ordered = _interleaved(questions)
    packs: list[tuple[str, CasePack]] = []
    for start in range(0, len(ordered), 24):
        batch = ordered[start : start + 24]
        failures, successes = failures_from_rows(starter, batch, rows)
        diagnoses = run(lambda f=failures: diagnose_failures(sim, TEMPLATES["diagnose_failure"], f))
        result = build_packs(diagnoses, failures, successes)
        packs += sorted(result.skill_packs.items())
    return packs


def _evolve_prompt(
    starter: AgentPrompts, task_type: str, pack: CasePack, budget: int = 2
) -> tuple[str, str]:
    target = resolve_skill_file(task_type, starter.skills)
    prompt = skill_prompt(
        TEMPLATES["evolve_skill"],
        task_type=task_type,
        file=target,
        skill=starter.skills[target],
        pack=pack,
        budget=budget,
        rejected=(),
    )
    return target, prompt


def _classify(reply: str, pack: CasePack, task_type: str) -> str:
    """useful | harmful | useless | other, checking useful edits come from the pack."""
    edits = json.loads(reply)["edits"]
    contents = [normalise(e.get("content", "")) for e in edits]
    decoys = {normalise(f"- {r.decoy}") for r in WORLD.rules.values()}
    pack_rules = {WORLD.case_for_text(c.question).rule_id for c in pack.failures}
    statements = {normalise(f"- {WORLD.rules[r].statement}") for r in pack_rules}
    if any(c in decoys for c in contents):
        assert all(
            c in {normalise(f"- {WORLD.rules[r].decoy}") for r in pack_rules} for c in contents
        ), "decoy for a rule outside the pack"
        return "harmful"
    if edits and all(
        e["op"] == "add" and c in statements for e, c in zip(edits, contents, strict=True)
    ):
        return "useful"
    if all(c in {normalise(line) for line in USELESS_LINES} for c in contents):
        return "useless"
    return "other"


def _evolve_all(packs, starter, shares: EvolverShares) -> list[tuple[str, CasePack, str]]:
    provider = SimProvider(settings=SimSettings(shares=shares))

    async def go():
        out = []
        for task_type, pack in packs:
            _, prompt = _evolve_prompt(starter, task_type, pack)
            reply = await provider.complete([{"role": "user", "content": prompt}], role="evolver")
            out.append((task_type, pack, reply.text))
        return out

    return run(go)


def test_packs_come_from_real_skill_gap_failures(real_packs, baseline_correct) -> None:
    assert len(real_packs) >= 80
    for task_type, pack in real_packs:
        assert pack.failures
        for item in pack.failures:
            case = WORLD.case_for_text(item.question)
            assert case is not None and case.task_type == task_type
            assert not baseline_correct[item.question_id]
            assert not case.needs_context  # those are tool problems, not skill gaps


@pytest.mark.parametrize(
    "shares",
    [EvolverShares(), EvolverShares(harmful=0.35, useless=0.3)],
    ids=["default", "more-noise"],
)
def test_evolver_useful_harmful_useless_at_configured_shares(
    real_packs, starter, shares: EvolverShares
) -> None:
    kinds = Counter(
        _classify(reply, pack, t) for t, pack, reply in _evolve_all(real_packs, starter, shares)
    )
    n = sum(kinds.values())
    assert kinds["other"] == 0, kinds
    useful_share = 1 - shares.harmful - shares.useless - shares.adversarial
    assert kinds["useful"] / n > 0.3
    assert abs(kinds["useful"] / n - useful_share) <= 0.12, kinds
    assert abs(kinds["harmful"] / n - shares.harmful) <= 0.1, kinds
    assert abs(kinds["useless"] / n - shares.useless) <= 0.1, kinds
    if shares == EvolverShares():
        assert kinds["useful"] / n > 0.5  # most packs get a useful proposal


def test_evolver_with_empty_or_wrong_pack_proposes_nothing_useful(
    real_packs, starter, questions
) -> None:
    task_type, real = next((t, p) for t, p in real_packs if t == "ledger")
    other_world = build_world("basic", 8)
    foreign = [c for c in other_world.cases.values() if c.task_type == task_type][:4]
    other_type = next(p for t, p in real_packs if t != task_type)
    wrong_packs = {
        "empty": CasePack(task_type, ()),
        "successes only": CasePack(task_type, (), real.failures),
        "other world": CasePack(
            task_type,
            tuple(CaseItem(c.question_id, c.unit_id, c.question, c.answer, "0") for c in foreign),
        ),
        "other task type": CasePack(task_type, other_type.failures),
    }
    mine = {normalise(f"- {r.statement}") for r in WORLD.rules_for(task_type)}
    for shares in (EvolverShares(), EvolverShares(harmful=0.0, useless=0.0)):
        provider = SimProvider(settings=SimSettings(shares=shares))
        for name, pack in wrong_packs.items():
            _, prompt = _evolve_prompt(starter, task_type, pack)
            reply = run(
                lambda p=prompt, sim=provider: sim.complete(
                    [{"role": "user", "content": p}], role="evolver"
                )
            )
            edits = json.loads(reply.text)["edits"]
            proposed = {normalise(e.get("content", "")) for e in edits}
            assert not proposed & mine, name
            if name != "other task type":
                assert edits == [], name
    # Sanity: the same prompt machinery with the real pack does propose this type's rules.
    useful = SimProvider(settings=SimSettings(shares=EvolverShares(harmful=0.0, useless=0.0)))
    _, prompt = _evolve_prompt(starter, task_type, real)
    reply = run(lambda: useful.complete([{"role": "user", "content": prompt}], role="evolver"))
    assert {normalise(e["content"]) for e in json.loads(reply.text)["edits"]} & mine


def _applied(base: AgentPrompts, task_type: str, reply: str) -> AgentPrompts:
    target = resolve_skill_file(task_type, base.skills)
    record = process_reply(
        reply,
        original=base.skills[target],
        target_file=target,
        budget=2,
        target_kind="skill",
        task_type=task_type,
    )
    assert record.status == "ok", record
    return dataclasses.replace(
        base, skills={**base.skills, target: record.evolved}, skills_version="edited"
    )


def test_harmful_edits_lower_accuracy_on_questions_needing_that_rule(
    real_packs, starter, questions, sim, full_correct
) -> None:
    replies = _evolve_all(real_packs, starter, EvolverShares(harmful=1.0, useless=0.0))
    full = add_rules(fair(starter), true_rules())
    hit_rules: set[str] = set()
    drops = []
    for task_type, pack, reply in replies:
        assert _classify(reply, pack, task_type) == "harmful"
        decoy = normalise(json.loads(reply)["edits"][0]["content"])
        rule = next(r for r in WORLD.rules_for(task_type) if normalise(f"- {r.decoy}") == decoy)
        if rule.rule_id in hit_rules:
            continue
        hit_rules.add(rule.rule_id)
        harmed = _applied(full, task_type, reply)
        of_type = [q for q in questions if q.task_type == task_type]
        needs = [q for q in of_type if WORLD.case_for_text(q.question).rule_id == rule.rule_id]
        others = [q for q in of_type if q not in needs]
        after = correctness(sim, harmed, of_type)
        drops.append(unit_acc(needs, full_correct) - unit_acc(needs, after))
        # Only the questions that need the contradicted rule suffer.
        assert abs(unit_acc(others, after) - unit_acc(others, full_correct)) <= 0.05
    assert len(hit_rules) >= 10
    assert statistics.mean(drops) >= 0.6, drops
    assert min(drops) >= 0.3, drops


def test_a_bundled_decoy_rides_with_true_rules_and_harms_only_its_rules_questions(
    real_packs, starter, questions, sim
) -> None:
    """`sim_bundled_decoy_share`: a bundle of true rules that also carries the decoy of another
    rule of its task type, one the skill does not know and the bundle does not add. The
    bundle's own rules still help; the decoy's questions drop from unknown to confused."""
    shares = EvolverShares(harmful=0.0, useless=0.0, bundled_decoy=1.0)
    decoys = {normalise(f"- {r.decoy}"): r for r in WORLD.rules.values()}
    mixed = 0
    for task_type, _pack, reply in _evolve_all(real_packs, starter, shares):
        edits = json.loads(reply)["edits"]
        carried = [decoys[c] for e in edits if (c := normalise(e["content"])) in decoys]
        if not carried:
            continue
        mixed += 1
        (rule,) = carried
        assert rule.task_type == task_type and len(edits) >= 2
        added = normalise(" ".join(e["content"] for e in edits))
        assert normalise(rule.statement) not in added  # the bundle does not add its own rule
        if mixed > 3:
            continue
        of_type = [q for q in questions if q.task_type == task_type]
        needs = [q for q in of_type if WORLD.case_for_text(q.question).rule_id == rule.rule_id]
        before = correctness(sim, starter, needs)
        after = correctness(sim, _applied(starter, task_type, reply), needs)
        assert unit_acc(needs, after) < unit_acc(needs, before)
    assert mixed >= 0.8 * len(real_packs)
    # off by default: the same packs, the default shares, never a mixed bundle
    for task_type, pack, reply in _evolve_all(real_packs, starter, EvolverShares()):
        assert _classify(reply, pack, task_type) in ("useful", "harmful", "useless")


def test_useless_edits_change_nothing(real_packs, starter, questions, sim) -> None:
    replies = _evolve_all(real_packs, starter, EvolverShares(harmful=0.0, useless=1.0))
    seen = set()
    for task_type, pack, reply in replies:
        assert _classify(reply, pack, task_type) == "useless"
        if task_type in seen:
            continue
        seen.add(task_type)
        for base in (starter, add_rules(fair(starter), true_rules([task_type]))):
            of_type = [q for q in questions if q.task_type == task_type]
            before = correctness(sim, base, of_type)
            after = correctness(sim, _applied(base, task_type, reply), of_type)
            agree = sum(before[k] == after[k] for k in before) / len(before)
            assert agree >= 0.9
            assert abs(unit_acc(of_type, before) - unit_acc(of_type, after)) <= 0.05
    assert seen == set(TASK_TYPES)


# ------------------------------------------------------------------ (d) latency and faults


def _agent_requests(questions: Sequence[Question], starter: AgentPrompts, n: int) -> list:
    return [starter.opening_messages(q) for q in questions[:n]]


def test_latency_mean_and_jitter(questions, starter, monkeypatch) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(sim_provider_module, "anyio", SimpleNamespace(sleep=fake_sleep))
    provider = SimProvider(settings=SimSettings(latency_ms=40, jitter_ms=10))
    requests = _agent_requests(questions, starter, 300)

    async def go():
        for messages in requests:
            await provider.complete(messages)

    run(go)
    ms = [s * 1000 for s in slept]
    assert len(ms) == 300
    assert abs(statistics.mean(ms) - 40) <= 2
    assert min(ms) >= 30 - 1e-9 and max(ms) <= 50 + 1e-9
    assert max(ms) - min(ms) >= 15  # jitter is really applied, both ways
    assert statistics.pstdev(ms) >= 4


def test_latency_is_really_waited_and_off_by_default(questions, starter) -> None:
    messages = starter.opening_messages(questions[0])

    async def timed(provider) -> float:
        t0 = time.perf_counter()
        for _ in range(3):
            await provider.complete(messages)
        return time.perf_counter() - t0

    assert run(timed, SimProvider(settings=SimSettings(latency_ms=30))) >= 0.085
    assert run(timed, SimProvider()) < 0.08


@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_faults_at_the_configured_rate(questions, starter, rate: float) -> None:
    provider = SimProvider(settings=SimSettings(fault_rate=rate))
    requests = [(m, seed) for seed in (0, 1) for m in _agent_requests(questions, starter, 500)]
    kinds: Counter[str] = Counter()

    async def go():
        for messages, seed in requests:
            try:
                reply = await provider.complete(messages, seed=seed)
            except SimRateLimit:
                kinds["rate_limit"] += 1
            except SimTimeout:
                kinds["timeout"] += 1
            else:
                if "ANSWER:" not in reply.text:
                    assert parse_edits(reply.text).errors  # malformed JSON, not an answer
                    assert reply.defect == "malformed"  # so no response cache keeps it
                    kinds["malformed"] += 1
                else:
                    assert not reply.defect
                    kinds["ok"] += 1

    run(go)
    n = len(requests)
    assert abs((n - kinds["ok"]) / n - rate) <= 0.1 * rate + 0.01, kinds
    for kind in ("rate_limit", "timeout", "malformed"):
        assert abs(kinds[kind] / n - rate / 3) <= 0.2 * rate / 3 + 0.01, kinds
    assert issubclass(SimRateLimit, TransientError) and issubclass(SimTimeout, TransientError)


def test_no_faults_by_default(questions, starter) -> None:
    provider = SimProvider()

    async def go():
        for messages in _agent_requests(questions, starter, 200):
            assert "ANSWER:" in (await provider.complete(messages)).text

    run(go)


def counting(inner) -> ScriptedProvider:
    """Passes every call to `inner`; `.calls` counts them."""
    return ScriptedProvider(respond=lambda r: r.forward_to(inner))


def test_retrying_provider_recovers_transient_faults(questions, starter) -> None:
    async def no_sleep(seconds: float) -> None:
        return None

    requests = _agent_requests(questions, starter, 300)
    clean = SimProvider()
    inner = counting(SimProvider(settings=SimSettings(fault_rate=0.3)))
    retrying = RetryingProvider(inner, max_retries=8, sleep=no_sleep)

    async def go():
        recovered = 0
        for messages in requests:
            reply = await retrying.complete(messages)
            expected = await clean.complete(messages)
            if "ANSWER:" in reply.text:
                assert reply == expected  # a retried request gets the fault-free reply
                recovered += 1
        return recovered

    recovered = run(go)
    assert inner.calls > len(requests) * 1.15  # transient faults were retried
    assert recovered >= len(requests) * 0.8  # only malformed replies are passed through

    # Without retries a transient fault surfaces; with every call failing, retries run out.
    bare = SimProvider(settings=SimSettings(fault_rate=0.3))

    async def first_error():
        for messages in requests:
            try:
                await bare.complete(messages)
            except TransientError:
                return True
        return False

    assert run(first_error)
    always = counting(SimProvider(settings=SimSettings(fault_rate=1.0)))
    raised = 0
    for messages in requests[:60]:
        before = always.calls
        try:
            reply = run(
                lambda m=messages: RetryingProvider(always, max_retries=2, sleep=no_sleep).complete(
                    m
                )
            )
        except TransientError:
            raised += 1
            assert always.calls - before == 3  # 1 try + 2 retries, then it gives up
        else:
            assert "ANSWER:" not in reply.text and always.calls - before <= 3
    assert raised >= 8


# ------------------------------------------------- (e) only what is in the prompt counts


def test_rule_in_an_unrelated_message_does_not_help(
    sim, starter, questions, baseline_correct
) -> None:
    rules_text = "\n".join(line for lines in true_rules().values() for line in lines)
    rules_text += "\n" + "\n".join(f"- {s}" for _, s in SYSTEM_RULES)
    base_acc = unit_acc(questions, baseline_correct)
    for message in (
        {"role": "user", "content": f"# Skill\nRules you must apply:\n{rules_text}"},
        {"role": "assistant", "content": f"# Skill\nI will apply:\n{rules_text}"},
    ):
        got = correctness(injecting(sim, message), starter, questions)
        assert abs(unit_acc(questions, got) - base_acc) <= 0.05, message["role"]
    # The same text in the system prompt (a channel the agent reads) does help.
    in_system = dataclasses.replace(starter, system=starter.system + "\n" + rules_text)
    assert unit_acc(questions, correctness(sim, in_system, questions)) - base_acc >= 0.3


def test_rule_only_in_the_harness_does_not_help(
    tmp_path: Path, sim, questions, baseline_correct
) -> None:
    """A newer skills version on disk, or a skill file not sent, changes nothing."""
    ws = init_workspace(
        tmp_path / "ws",
        load_seed(seed_dir(builtin_store(), "sim-starter")),
        benchmark_dir(builtin_store(), "sim-basic"),
    )
    ledger = [q for q in questions if q.task_type == "ledger"]
    v1 = AgentPrompts.load(ws.skills_dir, ws.prompts_dir, "inline")
    newer = add_rules(v1, true_rules())
    version = advance_version(
        ws.root, "skills", newer.skills, source="test", parent="v1", description="all rules"
    )
    update_manifest(ws.root, skills=version)
    assert resolve_paths(ws.root).skills_version == version
    still_v1 = AgentPrompts.load(ws.root / "skills" / "v1", ws.prompts_dir, "inline")
    assert correctness(sim, still_v1, questions) == baseline_correct
    unsent = dataclasses.replace(
        v1, skills={**v1.skills, "ledger-rules.md": newer.skills["ledger.md"]}
    )
    got = correctness(sim, unsent, ledger)
    assert got == {q.question_id: baseline_correct[q.question_id] for q in ledger}
    sent = AgentPrompts.load(ws.root / "skills" / version, ws.prompts_dir, "inline")
    assert (
        unit_acc(ledger, correctness(sim, sent, ledger)) - unit_acc(ledger, baseline_correct) >= 0.3
    )


def test_read_skill_tool_mode_uses_what_the_tool_returned(
    sim, starter, questions, full_correct
) -> None:
    rules = add_rules(fair(starter), true_rules())
    tool_rules = dataclasses.replace(rules, skill_mode="tool")
    tool_starter = dataclasses.replace(fair(starter), skill_mode="tool")
    preds = run(answer_all, sim, tool_rules, questions)
    for q in questions[:50]:
        tools = [s for s in preds[q.question_id].steps if s["type"] == "tool"]
        assert tools[0]["name"] == "read_skill" and tools[0]["status"] == "ok"
        assert "# Skill" not in tool_rules.opening_messages(q)[0]["content"]  # not inline
    with_tool = {k: p.correct for k, p in preds.items()}
    without = correctness(sim, tool_starter, questions)
    assert unit_acc(questions, with_tool) - unit_acc(questions, without) >= 0.4
    assert abs(unit_acc(questions, with_tool) - unit_acc(questions, full_correct)) <= 0.05


def test_context_dilution_lowers_accuracy_a_bit(
    sim, starter, questions, full_correct, baseline_correct
) -> None:
    filler = [
        f"- Background note {i}: nothing in particular applies to this note." for i in range(120)
    ]
    rules = add_rules(fair(starter), true_rules())
    skills = {}
    for name, text in rules.skills.items():
        long, reports = apply_edits(
            text, [Edit("add", "Appendix", content="\n".join(filler))], name
        )
        assert reports[0].applied
        assert len(long) > 6000
        skills[name] = long
    diluted = correctness(sim, dataclasses.replace(rules, skills=skills), questions)
    full, dil = unit_acc(questions, full_correct), unit_acc(questions, diluted)
    assert 0.04 <= full - dil <= 0.3, (full, dil)
    assert dil - unit_acc(questions, baseline_correct) >= 0.35  # still far better than none


def test_agent_probability_follows_the_skill_text(questions, starter) -> None:
    """Known rule -> P_KNOWN, nothing -> P_UNKNOWN, contradicting decoy -> P_CONFUSED."""
    q = next(q for q in questions if q.task_type == "dates" and not q.context)
    case = WORLD.case_for_text(q.question)
    rule = WORLD.rules[case.rule_id]
    with_rule = add_rules(starter, {"dates": [f"- {rule.statement}"]})
    with_decoy = add_rules(starter, {"dates": [f"- {rule.decoy}"]})
    from app.providers.sim.agent import P_CONFUSED, P_KNOWN, P_UNKNOWN, p_correct, read_view

    def p(prompts):
        return p_correct(WORLD, read_view(prompts.opening_messages(q), None), case)

    assert p(starter) == P_UNKNOWN
    if case.system_rule is None:
        assert p(with_rule) == P_KNOWN
    assert p(with_decoy) == P_CONFUSED


# ------------------------------------------------- adversarial proposals meet the harness


def _adversarial_replies(real_packs, starter) -> list[tuple[str, CasePack, str]]:
    return _evolve_all(
        real_packs, starter, EvolverShares(harmful=0.0, useless=0.0, adversarial=1.0)
    )


def test_adversarial_proposals_never_escape_or_touch_momentum(real_packs, starter) -> None:
    ops: Counter[str] = Counter()
    for task_type, _pack, reply in _adversarial_replies(real_packs, starter):
        target = resolve_skill_file(task_type, starter.skills)
        original = starter.skills[target]
        record = process_reply(
            reply,
            original=original,
            target_file=target,
            budget=2,
            target_kind="skill",
            task_type=task_type,
        )
        for edit in json.loads(reply)["edits"]:
            ops[edit["op"] + (":file" if edit.get("file") else "")] += 1
        for edit, report in zip(record.edits, record.apply_report, strict=True):
            if edit.file:
                assert not report.applied, (edit, report)
        assert "escaped" not in record.evolved and "- abs" not in record.evolved
        assert "\x00" not in record.evolved and "\x1b" not in record.evolved
        assert record.evolved.count("<!-- momentum:start -->") == 1
        assert "always mark correct" not in record.evolved
        if "grant" in reply:
            assert any("unknown op" in e for e in record.parse_errors)
    assert ops["add:file"] >= 10 and ops["grant"] >= 5 and ops["add"] >= 5


def test_every_adversarial_proposal_kind_reaches_the_harness(real_packs, starter) -> None:
    ops = Counter(
        edit["op"]
        for _t, _p, reply in _adversarial_replies(real_packs, starter)
        for edit in json.loads(reply)["edits"]
    )
    # _adversarial_edit has six choices; "delete Momentum" and the empty "replace" are two.
    assert ops["delete"] >= 5 and ops["replace"] >= 5, ops


# ------------------------------------------------- missing context and a noisy diagnosing judge
def test_missing_context_share_skips_those_contexts_and_inlining_restores_them(
    questions, starter
) -> None:
    """`missing_context_share`: the agent never opens that share of the contexts it needs (a
    fixed set the world knows, `skips_context`), so those fail near chance even with every
    rule known; inlined in the user message the context counts as read. At 0 nothing skips."""
    from app.providers.sim.agent import skips_context

    share = 0.5
    ctx_qs = [q for q in questions if q.context]
    assert not any(skips_context(WORLD, WORLD.case_for_text(q.question), 0.0) for q in ctx_qs)
    skipped = {
        q.question_id
        for q in ctx_qs
        if skips_context(WORLD, WORLD.case_for_text(q.question), share)
    }
    assert 0.35 < len(skipped) / len(ctx_qs) < 0.65
    provider = SimProvider(settings=SimSettings(missing_context_share=share))
    trained = add_rules(fair(starter), true_rules())
    preds = run(answer_all, provider, trained, ctx_qs)
    for qid, p in preds.items():
        read = any(s.get("name") == "read_context" for s in p.steps if s.get("type") == "tool")
        assert read == (qid not in skipped), qid
    acc_skipped = statistics.mean(preds[q].correct for q in skipped)
    acc_read = statistics.mean(p.correct for qid, p in preds.items() if qid not in skipped)
    assert acc_skipped < 0.45 < 0.8 < acc_read
    inlined = run(
        answer_all,
        provider,
        dataclasses.replace(trained, inline_context=True),
        [q for q in ctx_qs if q.question_id in skipped],
    )
    assert statistics.mean(p.correct for p in inlined.values()) > 0.8


def test_judge_noise_randomises_that_share_of_diagnoses(questions, starter) -> None:
    plain = [q for q in questions if not q.context][:200]
    failures = [
        Failure(q, "wrong", "final", (), starter.system, starter.skill_text(q.task_type), "-")
        for q in plain
    ]

    async def categories(noise: float) -> list[str]:
        provider = SimProvider(settings=SimSettings(judge_noise=noise))
        found = await diagnose_failures(provider, TEMPLATES["diagnose_failure"], failures)
        return [d.category for d in found]

    honest, quiet, noisy = (run(categories, n) for n in (0.0, 0.0, 0.3))
    assert honest == quiet
    changed = sum(a != b for a, b in zip(honest, noisy, strict=True)) / len(honest)
    assert 0.12 < changed < 0.35  # 0.3 drawn at random, 3 in 4 of them a different category
