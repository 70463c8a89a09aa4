"""`report`'s "why learning failed" (app/learning_report.py, core/evolution/learning_failures.py):
each reason is forced on a sim/oracle training run and the report names it, with its numbers."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from app.cli import main
from app.paths import builtin_store
from app.providers.sim import oracle
from core.evolution.learning_failures import Reason, TypeEvidence, addresses, explain, rule_terms

ORACLE = [
    "--set",
    'agent_model="sim/oracle"',
    "--set",
    'evolver_model="sim/oracle"',
    "--set",
    'judge_model="sim/oracle"',
]
SCHEDULE = [
    "--set",
    "epochs=1",
    "--set",
    "batch_size=20",
    "--set",
    "eval_min_per_class=2",
    "--set",
    "trainable_min_units=4",
    "--set",
    "evolve_prompts=false",
    "--set",
    "momentum_samples=0",
    "--no-progress",
]


def _store(tmp_path: Path, per_type: int = 32) -> Path:
    """A store with the real-conventions seed and the benchmark cut to `per_type` questions
    of its first two task types (every question its own family)."""
    store = tmp_path / "store"
    src = builtin_store()
    shutil.copytree(src / "seeds" / "real-conventions-starter", store / "seeds" / "rc")
    bench = store / "questions" / "rc"
    bench.mkdir(parents=True)
    toml = (src / "questions" / "real-conventions" / "benchmark.toml").read_text()
    toml = toml.replace('"lengths", "prices", "usernames", "lists"]', '"lengths"]')
    (bench / "benchmark.toml").write_text(toml.replace('name = "real-conventions"', 'name = "rc"'))
    rows = [
        json.loads(line)
        for line in (src / "questions" / "real-conventions" / "questions.jsonl").open()
    ]
    kept = [r for r in rows if r["task_type"] == "dates"][:per_type] + [
        r for r in rows if r["task_type"] == "lengths"
    ][:per_type]
    (bench / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    return store


def _train_and_report(tmp_path: Path, capsys, *sets: str, per_type: int = 32) -> dict:
    store = _store(tmp_path, per_type)
    ws = tmp_path / "ws"
    init = ["init", str(ws), "--store", str(store), "--seed", "rc", "--questions", "rc"]
    assert main(init) == 0
    assert main(["train", "-w", str(ws), *ORACLE, *SCHEDULE, *sets]) == 0
    capsys.readouterr()
    assert main(["report", str(ws), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert main(["report", str(ws)]) == 0
    summary["text"] = capsys.readouterr().out
    return summary


def _reasons(summary: dict) -> dict[str, list[str]]:
    return {
        e["task_type"]: [r["reason"] for r in e["reasons"]] for e in summary["learning_failures"]
    }


def test_a_stand_in_that_learns_shows_no_reason(tmp_path: Path, capsys) -> None:
    s = _train_and_report(
        tmp_path, capsys, "--set", "sim_oracle_rules=2", "--set", "sim_oracle_accuracy=0.3"
    )
    learned = [e for e in s["learning_failures"] if e["accepted"]]
    assert learned and all(e["reasons"] == [] for e in learned)
    assert "why learning failed" in s["text"] and "learned:" in s["text"]


def test_edits_that_change_no_answer_read_as_a_rule_the_agent_ignored(
    tmp_path: Path, capsys
) -> None:
    # sim_oracle_rules = 0: the skill's text never changes an answer, at accuracy 0.2
    s = _train_and_report(tmp_path, capsys, "--set", "sim_oracle_accuracy=0.2")
    found = _reasons(s)
    assert all(Reason.AGENT_IGNORED_RULE in r for r in found.values()), found
    entry = s["learning_failures"][0]
    assert 2 * entry["candidate_failures"] >= entry["candidate_units"] > 0
    # the stand-in's answer does not depend on the skill: every wrong answer is the base one's
    assert entry["unchanged_failures"] == entry["compared_failures"] > 0
    assert "agent_ignored_rule: with the edited skill the agent still failed" in s["text"]


def test_unusable_evolver_replies_are_named(tmp_path: Path, capsys, monkeypatch) -> None:
    real = oracle.OracleProvider._task_reply

    def no_edits(self, prompt: str) -> str:  # noqa: ANN001 - the provider
        return (
            "I would not change anything."
            if "## Task: evolve-skill" in prompt
            else real(self, prompt)
        )

    monkeypatch.setattr(oracle.OracleProvider, "_task_reply", no_edits)
    s = _train_and_report(tmp_path, capsys, "--set", "sim_oracle_rules=2")
    found = _reasons(s)
    assert all(Reason.EVOLVER_NOTHING_USABLE in r for r in found.values()), found
    assert all(e["usable_replies"] == 0 < e["evolver_replies"] for e in s["learning_failures"])
    assert "evolver_nothing_usable" in s["text"]


def test_a_judge_that_blames_missing_context_is_mis_triage(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """real-conventions' questions carry no context, so the log contradicts every verdict."""

    def no_context(self, prompt: str) -> str:  # noqa: ANN001 - the provider
        return json.dumps({"category": "missing_context", "target": "skill", "rationale": "x"})

    monkeypatch.setattr(oracle.OracleProvider, "_diagnosis", no_context)
    s = _train_and_report(tmp_path, capsys, "--set", "sim_oracle_rules=2")
    found = _reasons(s)
    assert all(Reason.JUDGE_MIS_TRIAGED in r for r in found.values()), found
    entry = s["learning_failures"][0]
    assert entry["contradicted"] == entry["judge_verdicts"] > 0
    assert "judge_mis_triaged" in s["text"]


def test_a_judge_that_blames_the_runtime_on_answered_runs_is_overruled(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """core/evolution/triage.py overrule_judge: the failures reach the evolver as skill gaps,
    so the stand-in still learns and the judge is not the reason anything failed."""

    def fault(self, prompt: str) -> str:  # noqa: ANN001 - the provider
        return json.dumps({"category": "runtime_fault", "target": "skill", "rationale": "x"})

    monkeypatch.setattr(oracle.OracleProvider, "_diagnosis", fault)
    s = _train_and_report(
        tmp_path, capsys, "--set", "sim_oracle_rules=2", "--set", "sim_oracle_accuracy=0.3"
    )
    found = _reasons(s)
    assert not any(Reason.JUDGE_MIS_TRIAGED in r for r in found.values()), found
    assert any(e["accepted"] for e in s["learning_failures"]), s["learning_failures"]
    assert "rule:answered_not_a_fault" in s["text"]


def test_too_few_families_is_the_gate_lacking_evidence(tmp_path: Path, capsys) -> None:
    # 6 questions a type: 5 families in the gate's pools, less those shown to the evolver
    s = _train_and_report(tmp_path, capsys, "--set", "sim_oracle_rules=2", per_type=6)
    found = _reasons(s)
    # a type whose failures the stand-in judge blamed on the prompt has no skill test to explain
    gated = [e for e in s["learning_failures"] if e["gated"] > 0]
    assert gated, s["learning_failures"]
    for entry in gated:
        assert Reason.GATE_LACKED_EVIDENCE in found[entry["task_type"]], found
        assert entry["blind_tests"] == entry["gated"]
        assert entry["fewest_seen"] < entry["families_needed"] == 5
    assert "could never accept" in s["text"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"usable_replies": 0}, Reason.EVOLVER_NOTHING_USABLE),
        ({"candidate_failures": 5}, Reason.AGENT_IGNORED_RULE),  # no base answers to compare
        (
            {"candidate_failures": 5, "compared_failures": 4, "unchanged_failures": 2},
            Reason.AGENT_IGNORED_RULE,  # half the wrong answers did not move
        ),
        (
            {"candidate_failures": 5, "compared_failures": 4, "unchanged_failures": 1},
            Reason.EVOLVER_WRONG_RULE,  # most moved, and stayed wrong
        ),
        ({"insufficient": 1}, Reason.GATE_LACKED_EVIDENCE),
        ({"gate_families": 4}, Reason.GATE_LACKED_EVIDENCE),
        ({"blind_tests": 1, "fewest_seen": 2}, Reason.GATE_LACKED_EVIDENCE),
        ({"families_needed": None}, Reason.GATE_LACKED_EVIDENCE),
        ({"contradicted": 3}, Reason.JUDGE_MIS_TRIAGED),
    ],
)
def test_each_test_fires_on_its_own_evidence(change: dict, reason: Reason) -> None:
    fine = TypeEvidence(
        task_type="t",
        accepted=0,
        evolver_replies=2,
        usable_replies=1,
        gated=2,
        candidate_units=10,
        candidate_failures=4,
        insufficient=0,
        blind_tests=0,
        fewest_seen=20,
        gate_families=24,
        families_needed=5,
        judge_verdicts=6,
        contradicted=2,
    )
    assert explain(fine) == ()
    from dataclasses import replace

    assert [x.reason for x in explain(replace(fine, **change))] == [reason]


def test_a_rule_the_agent_follows_and_that_is_wrong_is_the_evolvers(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """The evolver proposes a wrong form, the agent writes every answer in it: its wrong answers
    move away from the base skill's, so the rule is named, not the agent."""
    real_task, real_turn = oracle.OracleProvider._task_reply, oracle.OracleProvider._agent_turn
    rule = "- Write every answer with the prefix X-."

    def wrong_rule(self, prompt: str) -> str:  # noqa: ANN001 - the provider
        if "## Task: evolve-skill" in prompt:
            return json.dumps({"edits": [{"op": "add", "section": "Rules", "content": rule}]})
        return real_task(self, prompt)

    def follows(self, messages, tools, seed):  # noqa: ANN001 - the provider's own arguments
        response = real_turn(self, messages, tools, seed)
        if any("prefix X-" in str(m.get("content") or "") for m in messages):
            return replace(response, text=response.text.replace("ANSWER: ", "ANSWER: X-"))
        return response

    monkeypatch.setattr(oracle.OracleProvider, "_task_reply", wrong_rule)
    monkeypatch.setattr(oracle.OracleProvider, "_agent_turn", follows)
    s = _train_and_report(tmp_path, capsys, "--set", "sim_oracle_accuracy=0.2")
    found = _reasons(s)
    gated = [e for e in s["learning_failures"] if e["gated"]]
    assert gated, s["learning_failures"]
    for entry in gated:
        assert Reason.EVOLVER_WRONG_RULE in found[entry["task_type"]], found
        assert entry["compared_failures"] > 0 and entry["unchanged_failures"] == 0
    assert "the agent followed the rule, and the rule was wrong" in s["text"]


def test_a_rule_the_agent_follows_on_the_questions_it_names_is_not_ignored(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """The evolver's rule names invoices, and the agent answers every invoice question right
    with it: the gate units it does not speak to (other dates, questions the base skill got
    right) stay as they were and are no evidence that the agent ignored it."""
    real_task, real_turn = oracle.OracleProvider._task_reply, oracle.OracleProvider._agent_turn
    rule = "- For an invoice date, write the date as YYYYMMDD."

    def invoice_rule(self, prompt: str) -> str:  # noqa: ANN001 - the provider
        if "## Task: evolve-skill" in prompt:
            return json.dumps({"edits": [{"op": "add", "section": "Rules", "content": rule}]})
        return real_task(self, prompt)

    def follows(self, messages, tools, seed):  # noqa: ANN001 - the provider's own arguments
        response = real_turn(self, messages, tools, seed)
        question = self._by_text.get(oracle._key(oracle.agent.read_view(messages, tools).question))
        told = any("invoice date, write" in str(m.get("content") or "") for m in messages)
        if told and question is not None and "invoice" in question.question:
            return replace(response, text=f"ANSWER: {question.answer}")
        return response

    monkeypatch.setattr(oracle.OracleProvider, "_task_reply", invoice_rule)
    monkeypatch.setattr(oracle.OracleProvider, "_agent_turn", follows)
    s = _train_and_report(tmp_path, capsys, "--set", "sim_oracle_accuracy=0.1", per_type=24)
    dates = next(e for e in s["learning_failures"] if e["task_type"] == "dates")
    assert dates["accepted"] == 0 and dates["gated"] > 0, dates
    # every invoice failure the gate saw went right; the other failures did not move
    assert dates["candidate_units"] > 0 and dates["candidate_failures"] == 0, dates
    assert dates["control_units"] > 0 and dates["control_fixed"] == 0, dates
    assert Reason.AGENT_IGNORED_RULE not in _reasons(s)["dates"], dates


def test_a_rule_that_moved_its_own_units_more_than_the_rest_was_followed() -> None:
    stuck = TypeEvidence(
        task_type="t",
        accepted=0,
        evolver_replies=2,
        usable_replies=2,
        gated=2,
        candidate_units=10,
        candidate_failures=6,  # 4 of 10 addressed failures fixed
        insufficient=0,
        blind_tests=0,
        fewest_seen=20,
        gate_families=24,
        families_needed=5,
        judge_verdicts=0,
        contradicted=0,
        compared_failures=6,
        unchanged_failures=6,
    )
    assert [x.reason for x in explain(stuck)] == [Reason.AGENT_IGNORED_RULE]
    followed = replace(stuck, control_units=20, control_fixed=1)  # 1 of 20 elsewhere
    assert explain(followed) == ()
    chance = replace(stuck, control_units=20, control_fixed=8)  # as many moved without it
    assert [x.reason for x in explain(chance)] == [Reason.AGENT_IGNORED_RULE]
    assert "fixed 4 of them and 8 of 20" in explain(chance)[0].detail


def test_rule_terms_single_out_the_questions_a_rule_names() -> None:
    questions = [
        f"[tagging] Case tagging-u{i:03d}. For client {i} the figures are 3, 4; one entry is "
        f"marked {marker}. Which tag applies?"
        for i, marker in enumerate(["leap-day", "offset", "interim", "frozen"] * 3)
    ]
    terms = rule_terms("- In tagging cases marked leap-day, round the result up.", questions)
    assert terms == {"leap-day"}
    assert [addresses(terms, q) for q in questions[:4]] == [True, False, False, False]
    general = rule_terms("- Double-check the arithmetic before you reply.", questions)
    assert general == frozenset() and all(addresses(general, q) for q in questions)
