"""`scorecard` on the sim (docs/scorecard.md): every figure with its basis, the held-out
comparison with the rollout's memories against the same test pool without them, and the
command's lines, JSON and refusals."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.errors import UserError
from app.harness.data.scorecard import CANARY_KINDS, canary_leaks


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("scorecard") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    api.fork(ws, branches=4, temperature_range=(0.0, 1.0), limit=24, rollout_id="s1")
    api.rank(ws, "s1", verifiers=["checker", "completed"])
    return ws


def test_scorecard_figures_have_their_bases(ranked: Path) -> None:
    result = api.scorecard(ranked, "s1", reruns=2)
    names = [f.name for f in result.figures]
    assert names == [
        "yield_eta",
        "flakiness_r_flake",
        "canary_leak_rate",
        "cost_per_clean_usd",
        "tokens_per_clean",
        "heldout_gain_pp",
    ]
    conn = sqlite3.connect(ranked / "harness.db")
    generated = conn.execute("SELECT COUNT(*) FROM branches WHERE run_id='s1'").fetchone()[0]
    accepted = conn.execute(
        "SELECT COUNT(*) FROM rankings WHERE run_id='s1' AND objective = 1"
    ).fetchone()[0]
    eta = result.figure("yield_eta")
    assert eta.value == pytest.approx(accepted / generated)
    assert f"{accepted} accepted" in eta.basis and f"of {generated}" in eta.basis
    # the built-in verifiers are functions of the stored branch: nothing flips on a rerun
    flake = result.figure("flakiness_r_flake")
    assert flake.value == 0.0 and f"{2 * generated} (branch, verifier)" in flake.basis
    assert result.figure("canary_leak_rate").value == 0.0
    assert all(f.basis for f in result.figures)
    report = json.loads(result.report_path.read_text())
    assert report["figures"][0]["value"] == eta.value
    assert len(report["questions"]) == 24


def test_heldout_pairs_the_test_pool_with_and_without_memories(ranked: Path) -> None:
    result = api.scorecard(ranked, "s1", reruns=2)
    report = json.loads(result.report_path.read_text())
    held = report["heldout"]
    assert held["memories"] > 0
    with_id, without_id = held["run_ids"]
    conn = sqlite3.connect(ranked / "harness.db")
    query = "SELECT question_id, unit_id, correct FROM predictions WHERE run_id=?"
    a_rows, b_rows = list(conn.execute(query, (with_id,))), list(conn.execute(query, (without_id,)))
    assert {r[0] for r in a_rows} == {r[0] for r in b_rows}
    assert len(a_rows) == held["test_questions"]
    # no test question was forked or remembered: the gain is on held-out units
    remembered = {q for (q,) in conn.execute("SELECT question_id FROM memories")}
    assert not remembered & {r[0] for r in a_rows}

    def by_unit(rows: list[tuple[str, str, int]]) -> dict[str, bool]:
        units: dict[str, bool] = {}
        for _q, unit, correct in rows:  # a pair is right only when both members are
            units[unit] = units.get(unit, True) and bool(correct)
        return units

    a, b = by_unit(a_rows), by_unit(b_rows)
    paired = held["paired"]
    wins = sum(1 for u in a if a[u] and not b[u])
    losses = sum(1 for u in a if b[u] and not a[u])
    assert (paired["n"], paired["wins"], paired["losses"]) == (len(a), wins, losses)
    gain = result.figure("heldout_gain_pp")
    assert gain.value == pytest.approx(100 * (sum(a.values()) - sum(b.values())) / len(a))
    assert result.heldout_mcnemar_p == paired["mcnemar_p"]
    assert f"p={paired['mcnemar_p']:.4g}" in gain.basis


def test_memory_k_zero_skips_the_heldout_test(ranked: Path) -> None:
    result = api.scorecard(ranked, "s1", reruns=2, memory_k=0)
    gain = result.figure("heldout_gain_pp")
    assert gain.value is None and gain.basis.startswith("not measured")
    assert result.heldout_mcnemar_p is None


def test_canaries_leak_when_redaction_is_bypassed(monkeypatch) -> None:
    rows = [{"final_text": "ANSWER: 4", "tool_calls_json": "[]"} for _ in range(12)]
    assert canary_leaks(rows) == (0, 12)
    monkeypatch.setattr("app.harness.data.scorecard.scrub_json", lambda v: v)
    assert canary_leaks(rows) == (12, 12)
    assert len(CANARY_KINDS) == 6


def test_cli_lines_json_and_refusals(ranked: Path, capsys) -> None:
    assert main(["scorecard", "-w", str(ranked), "s1", "--reruns", "2", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "yield_eta" in text and "heldout_gain_pp" in text and "loop health" in text
    assert main(["scorecard", "-w", str(ranked), "s1", "--json", "--memory-k", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rollout_id"] == "s1" and len(doc["figures"]) == 6
    with pytest.raises(UserError, match="no branches"):
        api.scorecard(ranked, "nope")
    with pytest.raises(UserError, match="reruns"):
        api.scorecard(ranked, "s1", reruns=1)
    assert main(["scorecard", "-w", str(ranked), "nope"]) == 2


def test_fork_select_informative_takes_the_questions_whose_branches_disagreed(
    ranked: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    conn = sqlite3.connect(ws / "harness.db")
    passed: dict[str, set[float]] = {}
    for q, objective in conn.execute(
        "SELECT question_id, objective FROM rankings WHERE run_id='s1'"
    ):
        passed.setdefault(q, set()).add(objective)
    informative = sorted(q for q, seen in passed.items() if seen == {0.0, 1.0})
    assert 0 < len(informative) < len(passed)
    result = api.fork(ws, branches=2, select="informative", rollout_id="s2")
    got = {
        q for (q,) in conn.execute("SELECT DISTINCT question_id FROM branches WHERE run_id='s2'")
    }
    assert sorted(got) == informative and result.questions == len(informative)
    with pytest.raises(UserError, match="not ranked"):
        api.scorecard(ws, "s2")
    api.rank(ws, "s2", verifiers=["checker", "completed"], remember=False)
    # the scorecard of s2 compares it with s1, the fork before it
    report = json.loads(api.scorecard(ws, "s2", memory_k=0).report_path.read_text())
    assert report["compared_with"] == "s1"
    assert report["loop_health"]["questions"] == len(informative)


def test_select_informative_needs_an_earlier_fork(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    with pytest.raises(UserError, match="no earlier fork"):
        api.fork(ws, branches=2, select="informative")
    with pytest.raises(UserError, match="select"):
        api.fork(ws, branches=2, select="hardest")


def test_memories_dedupe_by_tool_sequence_and_retire_after_versions(tmp_path: Path) -> None:
    from app.harness.rollouts import memory
    from app.harness.workspace.harness_log import HarnessLog

    log = HarnessLog(tmp_path / "harness.db")
    steps = [
        ("q1", '[{"name": "read_context"}]', "v1"),
        ("q2", '[{"name": "Read_Context"}, {"name": "read_context"}]', "v3"),
        ("q3", '[{"name": "lookup"}]', "v4"),
        ("q4", "[]", None),
    ]
    winners = [
        {
            "question_id": q,
            "branch_index": 0,
            "task_type": "dates",
            "question": "when is the invoice due for the ledger",
            "prediction": "ANSWER: 4",
            "tool_calls_json": calls,
            "skills_version": version,
        }
        for q, calls, version in steps
    ]
    objective = {(q, 0): 1 for q, _, _ in steps}
    assert memory.store_winners(log, "r", winners, objective)["stored"] == 4
    task = "when is the ledger invoice due"
    assert len(memory.retrieve(log, task, 4)) == 4
    deduped = memory.retrieve(log, task, 4, how=memory.Retrieval(dedupe=True))
    # q1 and q2 are one procedure (case and a repeated call folded): three distinct sequences
    assert len(deduped) == 3
    assert len({memory.normalised_steps(m.key_steps) for m in deduped}) == 3
    # at v5, retiring after 2 versions drops v1 and v3; q4 has no version and stays
    kept = memory.retrieve(log, task, 4, how=memory.Retrieval(retire_after=2, skills_version="v5"))
    assert sorted(m.question_id for m in kept) == ["q3", "q4"]
    only = memory.retrieve(log, task, 4, how=memory.Retrieval(run_id="other"))
    assert only == []


def test_a_flaky_verifier_shows_in_r_flake_and_its_cost_in_cost_per_clean(
    ranked: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    flaky = "tests.app.scorecard_plugins:flaky"
    api.rank(ws, "s1", verifiers=["checker", flaky], remember=False)
    result = api.scorecard(ws, "s1", reruns=2, memory_k=0)
    # 24 questions x 4 branches, two verifiers: 192 verdicts, those of flaky on branch 0 flip
    figure = result.figure("flakiness_r_flake")
    assert figure.value == pytest.approx(24 / 192)
    assert figure.basis.startswith("192 (branch, verifier) verdicts re-run 2 times")
    cost = result.figure("cost_per_clean_usd")
    assert "verifiers $0.960000" in cost.basis
