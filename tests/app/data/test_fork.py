"""Best-of-N rollouts (docs/best-of-n.md): fork, verifiers, judge, ranker,
memories, on the sim."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from app.cli import main
from app.errors import UserError
from app.harness.data.fork import ForkSpec, branch_temperatures, run_fork, select_questions
from app.harness.data.judge import CallBudget, Judge, JudgeSettings, parse_pairwise, parse_scalar
from app.harness.data.rank import parse_weights, rank_rollout
from app.harness.data.verifiers import Verdict, coerce_verdict, objective_score, verify_rollout
from app.harness.rollouts.session import Session
from app.harness.workspace.config import load_config
from app.providers.sim.provider import SimProvider
from app.providers.sim.world import build_world
from tests.fakes.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parents[3]


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


@pytest.fixture(scope="module")
def fresh_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("forkws") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


def copy_ws(src: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(src, ws)
    return ws


def fork(
    ws: Path, rollout: str, n_questions: int = 30, temps=None, concurrency: int = 8, **overrides
):
    config = load_config(None, overrides or None)
    with Session(ws, config) as s:
        qs = select_questions(s.benchmark, "diagnosis", None, None, n_questions)
        spec = ForkSpec(
            tuple(q.question_id for q in qs),
            temps or branch_temperatures(8, temperature_range=(0.2, 1.0)),
            concurrency,
        )
        return anyio.run(lambda: run_fork(s, spec, rollout))


@pytest.fixture(scope="module")
def forked(tmp_path_factory, fresh_ws) -> Path:
    ws = tmp_path_factory.mktemp("forked") / "ws"
    shutil.copytree(fresh_ws, ws)
    fork(ws, "r1", n_questions=40)
    return ws


# -- fork -------------------------------------------------------------------------------------


def test_fork_rows_share_the_rollout_and_carry_branch_fields(forked: Path) -> None:
    conn = sqlite3.connect(forked / "harness.db")
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM branches WHERE run_id = 'r1'").fetchall()
    assert len(rows) == 40 * 8
    assert {r["branch_index"] for r in rows} == set(range(8))
    temps = {r["branch_index"]: r["temperature"] for r in rows}
    assert temps[0] == pytest.approx(0.2) and temps[7] == pytest.approx(1.0)
    sids = [r["session_id"] for r in rows]
    assert len(set(sids)) == len(sids)
    assert all(
        re.fullmatch(rf"r1-b{r['branch_index']}-[0-9a-f]{{12}}", r["session_id"]) for r in rows
    )
    run = conn.execute("SELECT kind, status, summary_json FROM _runs WHERE run_id='r1'").fetchone()
    assert (run["kind"], run["status"]) == ("fork", "done")
    summary = json.loads(run["summary_json"])
    assert summary["pass_at_n"] > summary["pass_at_1"]


def test_tool_outputs_are_stored_as_the_model_saw_them(forked: Path) -> None:
    conn = sqlite3.connect(forked / "harness.db")
    rows = conn.execute(
        "SELECT steps_json, tool_calls_json FROM branches WHERE run_id='r1' "
        "AND tool_calls_json != '[]'"
    ).fetchall()
    assert rows, "no branch used a tool (context questions should)"
    for steps_json, tools_json in rows:
        steps = json.loads(steps_json)
        tools = json.loads(tools_json)
        assert tools == [s for s in steps if s["type"] == "tool"]
        assert all(t["name"] == "read_context" and t["output"] for t in tools)


def test_branches_really_differ_and_are_seeded(forked: Path, tmp_path: Path, fresh_ws) -> None:
    conn = sqlite3.connect(forked / "harness.db")
    per_q = {}
    for qid, pred in conn.execute("SELECT question_id, prediction FROM branches WHERE run_id='r1'"):
        per_q.setdefault(qid, set()).add(pred)
    assert sum(len(v) > 1 for v in per_q.values()) >= 0.8 * len(per_q)
    ws = copy_ws(fresh_ws, tmp_path)
    fork(ws, "again", n_questions=40)
    again = sqlite3.connect(ws / "harness.db")
    key = "SELECT question_id, branch_index, prediction FROM branches WHERE run_id=? ORDER BY 1, 2"
    assert conn.execute(key, ("r1",)).fetchall() == again.execute(key, ("again",)).fetchall()


def test_sim_temperature_changes_answers_only_above_zero() -> None:
    world = build_world()
    sim = SimProvider("sim/basic", world=world)
    cases = list(world.cases.values())[:200]

    def answers(temperature: float, seed: int = 0) -> list[str]:
        async def go():
            out = []
            for case in cases:
                msgs = [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": f"<question>\n{case.question}\n</question>"},
                ]
                r = await sim.complete(msgs, temperature=temperature, seed=seed)
                out.append(r.text)
            return out

        return anyio.run(go)

    base = answers(0.0)
    assert answers(0.0) == base  # deterministic
    hot = answers(1.0)
    assert sum(a != b for a, b in zip(base, hot, strict=True)) >= 40
    assert answers(1.0) == hot  # seeded: the same temperature and seed give the same answers
    warm = answers(0.3)
    changed = sum(a != b for a, b in zip(base, warm, strict=True))
    assert 5 <= changed < sum(a != b for a, b in zip(base, hot, strict=True))


def test_one_concurrency_limit_covers_the_whole_fork(fresh_ws, tmp_path) -> None:
    ws = copy_ws(fresh_ws, tmp_path)
    with Session(ws, load_config(None)) as s:
        agent = s.providers["agent"]
        # a short wait per call lets calls overlap; `peak` counts the most in flight at once
        counting = ScriptedProvider(respond=lambda r: r.forward_to(agent), delay=0.001)
        s.providers["agent"] = counting
        qs = select_questions(s.benchmark, "diagnosis", None, None, 12)
        spec = ForkSpec(tuple(q.question_id for q in qs), (0.5,) * 6, concurrency=5)
        result = anyio.run(lambda: run_fork(s, spec, "c1"))
    assert result.ran == 72
    assert counting.peak == 5


@pytest.mark.slow
def test_killed_fork_resumes_without_repeating_finished_branches(fresh_ws, tmp_path) -> None:
    ws = copy_ws(fresh_ws, tmp_path / "a")
    ref = copy_ws(fresh_ws, tmp_path / "b")
    args = [
        "fork",
        "-w",
        str(ws),
        "--no-progress",
        "--limit",
        "40",
        "-n",
        "8",
        "--temperature-range",
        "0.2:1.0",
        "--rollout-id",
        "k1",
        "--concurrency",
        "4",
    ]
    killed = run_cli(*args, env={"SKILL_TRAINER_KILL_AT": "branch:150"})
    assert killed.returncode == -9, killed.stderr
    conn = sqlite3.connect(ws / "harness.db")
    kept = conn.execute("SELECT COUNT(*) FROM branches WHERE run_id='k1'").fetchone()[0]
    conn.close()
    assert 0 < kept < 320
    again = run_cli(*args)  # without --resume the id is refused, nothing is touched
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = run_cli("fork", "-w", str(ws), "--no-progress", "--rollout-id", "k1", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"({320 - kept} run, {kept} already done)" in resumed.stdout
    full = run_cli(*[a if a != str(ws) else str(ref) for a in args])
    assert full.returncode == 0, full.stderr
    key = (
        "SELECT question_id, branch_index, temperature, prediction, correct, steps_json "
        "FROM branches WHERE run_id='k1' ORDER BY 1, 2"
    )
    got = sqlite3.connect(ws / "harness.db").execute(key).fetchall()
    want = sqlite3.connect(ref / "harness.db").execute(key).fetchall()
    assert len(got) == 320 and got == want
    status = (
        sqlite3.connect(ws / "harness.db")
        .execute("SELECT status FROM _runs WHERE run_id='k1'")
        .fetchone()[0]
    )
    assert status == "done"


def test_fork_cli_rejects_bad_temperatures(fresh_ws, tmp_path) -> None:
    ws = copy_ws(fresh_ws, tmp_path)
    proc = run_cli("fork", "-w", str(ws), "--no-progress", "-n", "3", "--temperatures", "0.1,0.2")
    assert proc.returncode == 2 and "--temperatures: 2 values for 3 branches" in proc.stderr
    proc = run_cli("fork", "-w", str(ws), "--no-progress", "-n", "2", "--temperatures", "0.1,9")
    assert proc.returncode == 2 and "within [0, 2]" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- verifiers ----------------------------------------------------------------------------------


def test_running_and_unknown_always_fail() -> None:
    for status in ("running", "unknown", "fail", "error"):
        assert objective_score([Verdict("pass"), Verdict(status)]) == 0
    assert objective_score([Verdict("pass"), Verdict("pass")]) == 1
    assert objective_score([]) == 0
    assert coerce_verdict({"status": "maybe"}).status == "unknown"
    assert coerce_verdict({"ok": True}).status == "pass"
    assert coerce_verdict(None).status == "unknown"
    assert coerce_verdict({"status": "pass", "cost_usd": float("nan")}).cost_usd == 0.0


def test_verifier_pipeline_stores_verdicts_with_reason_and_cost(forked: Path) -> None:
    with Session(forked, load_config(None)) as s:
        names = ["checker", "tests.app.fork_plugins:passes"]
        scores = verify_rollout(s.log, "r1", s.questions_by_id, names)
        truth = {
            (r["question_id"], r["branch_index"]): r["correct"]
            for r in s.log.query(
                "SELECT question_id, branch_index, correct FROM branches WHERE run_id='r1'"
            )
        }
        assert scores == truth  # the user verifier passes everything: the checker decides
        rows = s.log.query(
            "SELECT * FROM verdicts WHERE run_id='r1' AND verifier = ?",
            ("tests.app.fork_plugins:passes",),
        )
        assert len(rows) == 320 and all(r["cost_usd"] == 0.01 for r in rows)
        assert rows[0]["reason"].startswith("looked at ")
        for name in ("says_running", "says_unknown", "raises", "returns_junk"):
            scores = verify_rollout(
                s.log, "r1", s.questions_by_id, ["checker", f"tests.app.fork_plugins:{name}"]
            )
            assert set(scores.values()) == {0}, name
        stored = s.log.query(
            "SELECT status, reason, cost_usd FROM verdicts WHERE run_id='r1' "
            "AND verifier LIKE '%returns_junk'"
        )
        assert stored[0]["status"] == "unknown" and "list" in stored[0]["reason"]


def test_unknown_verifier_is_a_one_line_error(forked: Path) -> None:
    proc = run_cli(
        "rank", "-w", str(forked), "r1", "--no-progress", "--verifier", "no_such_module_xyz:f"
    )
    assert proc.returncode == 2 and "no_such_module_xyz" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_rank_weights_name_known_components_only() -> None:
    assert parse_weights(["judge=0", "bt=0.5", "my_rewards:f=2"]) == {
        "objective": 1.0,
        "judge": 0.0,
        "bt": 0.5,
        "check": 0.5,
        "my_rewards:f": 2.0,
    }
    for bad, says in (
        ("objectiv=0", "unknown key 'objectiv'"),
        ("judge", "expected key=number"),
        ("judge=nan", "expected key=number"),
    ):
        with pytest.raises(UserError, match=says):
            parse_weights([bad])


def test_resuming_a_fork_that_never_ran_is_refused(fresh_ws, tmp_path) -> None:
    ws = copy_ws(fresh_ws, tmp_path)
    proc = run_cli("fork", "-w", str(ws), "--no-progress", "--rollout-id", "ghost", "--resume")
    assert proc.returncode == 2, proc.stderr
    assert "no fork of that id to resume" in proc.stderr and "Traceback" not in proc.stderr
    conn = sqlite3.connect(ws / "harness.db")
    try:
        assert conn.execute("SELECT 1 FROM _runs WHERE run_id = 'ghost'").fetchone() is None
    finally:
        conn.close()


# -- judge --------------------------------------------------------------------------------------


def test_judge_reply_parsing_is_defensive() -> None:
    assert parse_scalar('sure! {"score": 7, "reasoning": "ok"}')[0] == 7.0
    assert parse_scalar('{"score": 11}')[0] is None
    assert parse_scalar('{"score": "abc"}')[2]
    assert parse_scalar("no json")[2] == "no JSON object in the reply"
    assert parse_pairwise('{"preferred": "b"}')[0] == "b"
    assert parse_pairwise('{"preferred": "C"}')[0] is None


def _judge(noise=0.0, bias=0.0, samples=3):
    world = build_world()
    from app.providers.sim.provider import SimSettings

    sim = SimProvider(
        "sim/basic", SimSettings(judge_noise=noise, judge_position_bias=bias), world=world
    )
    return world, Judge(sim, JudgeSettings(samples=samples))


def test_judge_cap_is_exact_and_capped_samples_are_neutral() -> None:
    world, judge = _judge()
    case = next(iter(world.cases.values()))
    right = f"ANSWER: {case.answer}"
    budget = CallBudget(4)

    async def go():
        a = await judge.score(case.question, right, budget)
        b = await judge.compare(case.question, right, f"ANSWER: {case.wrong_answers[0]}", budget)
        return a, b

    scalar, pairwise = anyio.run(go)
    assert budget.used == 4 and budget.capped == 5
    assert [s.capped for s in scalar] == [False] * 3
    assert all(s.score == 9 for s in scalar)
    assert len(pairwise) == 6 and sum(not s.capped for s in pairwise) == 1
    assert all(s.preferred == "tie" for s in pairwise if s.capped)
    assert {s.shown_first for s in pairwise} == {"a", "b"}  # both orders asked


def test_both_orders_cancel_position_bias() -> None:
    world, judge = _judge(bias=1.0, samples=1)  # always prefers whatever is shown first
    case = next(iter(world.cases.values()))
    right, wrong = f"ANSWER: {case.answer}", f"ANSWER: {case.wrong_answers[0]}"

    async def go():
        return await judge.compare(case.question, wrong, right, CallBudget(10))

    samples = anyio.run(go)
    assert sorted(s.preferred for s in samples) == ["a", "b"]  # a win each: a wash
    world, judge = _judge(bias=0.4, samples=5)
    wins = {"a": 0, "b": 0, "tie": 0}
    for case in list(world.cases.values())[:30]:
        right, wrong = f"ANSWER: {case.answer}", f"ANSWER: {case.wrong_answers[1]}"
        for s in anyio.run(
            lambda c=case, r=right, w=wrong: judge.compare(c.question, w, r, CallBudget(100))
        ):
            wins[s.preferred] += 1
    assert wins["b"] > 2 * wins["a"]  # the right answer (shown second first) still wins


def test_judge_noise_is_settable() -> None:
    world, judge = _judge(noise=1.0, samples=5)
    scores = []
    for case in list(world.cases.values())[:20]:
        samples = anyio.run(
            lambda c=case: judge.score(c.question, f"ANSWER: {c.answer}", CallBudget(100))
        )
        scores += [s.score for s in samples]
    assert len(set(scores)) >= 5 and any(s != 9 for s in scores)


# -- rank end to end ------------------------------------------------------------------------------


def test_rank_report_and_tables(forked: Path, tmp_path: Path) -> None:
    ws = copy_ws(forked, tmp_path)
    config = load_config(
        None,
        {"judge_max_calls_per_batch": 20, "sim_judge_noise": 0.2, "sim_judge_position_bias": 0.3},
    )
    with Session(ws, config) as s:
        report = anyio.run(
            lambda: rank_rollout(
                s,
                "r1",
                weights={
                    "objective": 1.0,
                    "judge": 0.3,
                    "bt": 0.3,
                    "tests.app.fork_plugins:prefer_short": 0.1,
                },
            )
        )
        judgments = s.log.query(
            "SELECT question_id, COUNT(*) AS n, SUM(capped) AS capped, "
            "SUM(capped = 0) AS real FROM judgments WHERE run_id='r1' "
            "GROUP BY question_id"
        )
        ranks = s.log.query("SELECT * FROM rankings WHERE run_id='r1'")
        judge_calls = s.log.query(
            "SELECT run_id, COUNT(*) AS n FROM llm_calls WHERE role = 'judge' GROUP BY run_id"
        )
    assert report["judge"]["calls_over_cap"] == 0
    assert max(j["real"] for j in judgments) == 20
    assert report["judge"]["calls"] == sum(j["real"] for j in judgments)
    assert report["judge"]["same_model_as_agent"] is True
    assert judge_calls == [{"run_id": "r1", "n": report["judge"]["calls"]}]  # paid by the fork
    assert report["ranker_top_correct_share"] == 1.0
    st = report["top_vs_branch0"]
    assert st["n"] == 40 and st["powered"] is True
    assert st["mcnemar_p"] < 0.001 and st["min_detectable_delta_pp"] > 0
    assert len(ranks) == 320
    assert all(
        "tests.app.fork_plugins:prefer_short" in json.loads(r["components_json"]) for r in ranks
    )
    assert (ws / "analyses" / "rank_r1.json").is_file()
    # judge calls run concurrently, yet which samples are capped is the same every time
    key = (
        "SELECT question_id, kind, branch_a, branch_b, shown_first, sample, score, "
        "preferred, capped FROM judgments WHERE run_id='r1' ORDER BY id"
    )
    with Session(ws, config) as s:
        first = s.log.query(key)
        anyio.run(lambda: rank_rollout(s, "r1", remember=False))
        assert s.log.query(key) == first


def test_small_rollout_is_flagged_unpowered(fresh_ws, tmp_path) -> None:
    ws = copy_ws(fresh_ws, tmp_path)
    fork(ws, "tiny", n_questions=4)
    with Session(ws, load_config(None)) as s:
        report = anyio.run(lambda: rank_rollout(s, "tiny"))
    st = report["top_vs_branch0"]
    assert st["n"] == 4 and st["powered"] is False
    assert st["min_detectable_delta_pp"] is None  # 4 pairs cannot reach 5 % two-sided


# -- memories -------------------------------------------------------------------------------------


def test_only_verified_winners_are_remembered_and_bm25_finds_the_same_rule(forked, tmp_path):
    from app.harness.rollouts import memory

    ws = copy_ws(forked, tmp_path)
    with Session(ws, load_config(None)) as s:
        report = anyio.run(lambda: rank_rollout(s, "r1"))
        m = report["memories"]
        assert m["stored"] + m["dropped_unverified"] == 40
        rows = s.log.query(
            "SELECT m.question_id, m.branch_index, b.correct FROM memories m "
            "JOIN branches b ON b.run_id = m.run_id AND b.question_id = "
            "m.question_id AND b.branch_index = m.branch_index"
        )
        assert len(rows) == m["stored"] and all(r["correct"] == 1 for r in rows)
        world = build_world()
        stored_q = {r["question_id"] for r in rows}
        probe = next(
            c
            for c in world.cases.values()
            if c.question_id not in stored_q
            and any(
                world.cases[k].rule_id == c.rule_id and world.cases[k].question_id in stored_q
                for k in world.cases
            )
        )
        found = memory.retrieve(s.log, probe.question, 3)
        assert found and world.case_for_text(found[0].task).rule_id == probe.rule_id
        # question text is never read as FTS syntax: quotes and operators are just words
        assert len(memory.retrieve(s.log, 'ledger" OR NEAR( * "marked', 3)) == 3
        assert memory.retrieve(s.log, '" ) ( *', 3) == []
        block = memory.format_block(found)
        assert block.startswith("<memories>") and block.endswith("</memories>")


def test_memory_k_injects_the_block_and_helps_held_out_questions(forked, tmp_path) -> None:
    ws = copy_ws(forked, tmp_path)
    with Session(ws, load_config(None)) as s:
        anyio.run(lambda: rank_rollout(s, "r1"))
    on = run_cli(
        "infer",
        "-w",
        str(ws),
        "--no-progress",
        "--run-id",
        "mem-on",
        "--set",
        "memory_k=3",
        "--task-types",
        "ledger",
        "units",
    )
    off = run_cli(
        "infer",
        "-w",
        str(ws),
        "--no-progress",
        "--run-id",
        "mem-off",
        "--task-types",
        "ledger",
        "units",
    )
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    with sqlite3.connect(ws / "harness.db") as conn:
        (stored,) = conn.execute("SELECT COUNT(*) FROM memories").fetchone()
    assert f"memories: up to 3 per question, from {stored} stored" in on.stdout and stored > 0
    assert "memories:" not in off.stdout
    conn = sqlite3.connect(ws / "harness.db")
    steps = conn.execute("SELECT steps_json FROM predictions WHERE run_id='mem-on'").fetchall()
    assert steps
    acc = {
        r: conn.execute("SELECT AVG(correct) FROM predictions WHERE run_id=?", (r,)).fetchone()[0]
        for r in ("mem-on", "mem-off")
    }
    assert acc["mem-on"] > acc["mem-off"], acc


def test_memory_k_with_no_memories_stored_says_it_added_nothing(forked, tmp_path) -> None:
    ws = copy_ws(forked, tmp_path)
    ev = run_cli("eval", "v1", "-w", str(ws), "--no-progress", "--set", "memory_k=2")
    assert ev.returncode == 0, ev.stderr
    assert "memories: none stored yet, so memory_k=2 added nothing" in ev.stdout


@pytest.mark.slow
def test_eval_and_train_run_with_memories(forked, tmp_path) -> None:
    ws = copy_ws(forked, tmp_path)
    with Session(ws, load_config(None)) as s:
        anyio.run(lambda: rank_rollout(s, "r1"))
    ev = run_cli("eval", "v1", "-w", str(ws), "--no-progress", "--set", "memory_k=2")
    assert ev.returncode == 0, ev.stderr
    assert "memories: up to 2 per question" in ev.stdout
    report = json.loads(next((ws / "analyses").glob("eval_*.json")).read_text())
    assert report["accuracy"] > 0
    tr = run_cli(
        "train",
        "-w",
        str(ws),
        "--no-progress",
        "--set",
        "memory_k=2",
        "--set",
        "epochs=1",
        "--set",
        "batch_size=24",
    )
    assert tr.returncode == 0, tr.stderr
    conn = sqlite3.connect(ws / "harness.db")
    cfg = json.loads(conn.execute("SELECT config_json FROM _runs WHERE kind='train'").fetchone()[0])
    assert cfg["memory_k"] == 2


def test_resume_uses_the_versions_the_fork_started_with(fresh_ws, tmp_path) -> None:
    ws = copy_ws(fresh_ws, tmp_path)
    fork(ws, "v-fork", n_questions=5, temps=(0.5, 0.9))
    with Session(ws, load_config(None)) as s:
        with s.log._txn():
            s.log.conn.execute("DELETE FROM branches WHERE run_id='v-fork' AND branch_index=1")
        files = s.version_files("skills", "v1")
        name = next(iter(files))
        s.publish_version(
            "skills",
            {**files, name: files[name] + "\n- another rule\n"},
            source="test",
            description="moved on",
            run_id="test",
        )
        assert s.paths.skills_version == "v2"
        spec = ForkSpec((), (0.0,))
        result = anyio.run(lambda: run_fork(s, spec, "v-fork", resume=True))
        assert (result.ran, result.skipped) == (5, 5)
        versions = {
            r["skills_version"]
            for r in s.log.query("SELECT skills_version FROM branches WHERE run_id='v-fork'")
        }
    assert versions == {"v1"}


def _spec_json(**fields: object) -> str:
    """A stored fork spec, well formed but for `fields`."""
    spec = {"question_ids": ["q"], "temperatures": [0.5], "concurrency": 2, "pool": "diagnosis"}
    return json.dumps({"fork": {**spec, **fields}})


@pytest.mark.parametrize(
    ("provenance", "says"),
    [
        ("{not json", "provenance_json is not JSON"),
        ('["a list"]', "holds no fork spec"),
        ('{"fork": "text"}', "holds no fork spec"),
        ('{"fork": {"question_ids": ["q"]}}', "fork spec is damaged"),
        # checked as strictly as the command line: 0 waited forever, -3 was a traceback, NaN
        # was taken as a temperature
        (_spec_json(concurrency=0), "concurrency: 0 is not a whole number >= 1"),
        (_spec_json(concurrency=-3), "concurrency: -3 is not a whole number >= 1"),
        (_spec_json(concurrency=2.5), "concurrency: 2.5 is not a whole number >= 1"),
        (_spec_json(temperatures=[0.5, float("nan")]), "temperatures: nan is not a number"),
        (_spec_json(temperatures=[3.0]), "temperatures: 3.0 is not a number within [0, 2]"),
        (_spec_json(temperatures=[]), "temperatures: must be a list of 1 to 64"),
        (_spec_json(question_ids=[]), "question_ids: must be a non-empty list"),
        (_spec_json(pool="everything"), "pool: 'everything' is not one of"),
    ],
)
def test_resuming_a_fork_with_a_garbage_spec_is_one_line(
    fresh_ws, tmp_path, provenance: str, says: str
) -> None:
    ws = copy_ws(fresh_ws, tmp_path)
    fork(ws, "g-fork", n_questions=2, temps=(0.5, 0.9))
    conn = sqlite3.connect(ws / "harness.db")
    try:
        with conn:
            conn.execute(
                "UPDATE _runs SET provenance_json=?, status='stopped' WHERE run_id='g-fork'",
                (provenance,),
            )
    finally:
        conn.close()
    proc = run_cli("fork", "-w", str(ws), "--no-progress", "--rollout-id", "g-fork", "--resume")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "harness.db: run g-fork" in lines[0] and says in lines[0]
    assert "another --rollout-id" in lines[0]
    conn = sqlite3.connect(ws / "harness.db")
    try:
        row = conn.execute("SELECT status FROM _runs WHERE run_id='g-fork'").fetchone()
    finally:
        conn.close()
    assert row == ("stopped",)  # nothing was resumed or changed
