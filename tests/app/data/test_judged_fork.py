"""Forks of rubric-checked questions: the `checker` verifier passes and fails them on the score
the fork recorded (training's checking path), the ranker sees that score, and `export` keeps a
branch only a rubric judge passed out of the training targets unless its id is audited
(app/harness/data/admission.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app import api
from app.errors import UserError
from app.harness.data.admission import read_audited
from app.harness.data.verifiers import recorded_check_verdict
from app.providers.sim.generate import write_benchmark
from app.providers.sim.world import build_world
from core.types import Question, StopReason

UNITS = 24
SIM = {
    "agent_model": "sim/judged",
    "evolver_model": "sim/judged",
    "judge_model": "sim/judged",
    "sim_units_per_type": UNITS,
}


@pytest.fixture(scope="module")
def judged_fork(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("judged-fork")
    store = root / "store"
    write_benchmark(
        build_world("judged", 7, UNITS), store / "questions" / "sim-judged", "sim-judged"
    )
    ws = root / "ws"
    api.init_workspace(ws, seed="sim-starter", questions="sim-judged", store=store)
    api.fork(ws, overrides=SIM, branches=4, temperature_range=(0.3, 1.2), limit=12, rollout_id="j1")
    api.rank(ws, "j1", overrides=SIM)
    return ws


def verdicts(ws: Path) -> list[dict]:
    import sqlite3

    con = sqlite3.connect(ws / "harness.db")
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT * FROM verdicts WHERE run_id = 'j1' AND verifier = 'checker'")
    return [dict(r) for r in rows]


def test_rubric_branches_pass_and_fail_on_their_recorded_score(judged_fork: Path) -> None:
    rows = verdicts(judged_fork)
    statuses = {r["status"] for r in rows}
    assert "unknown" not in statuses and {"pass", "fail"} <= statuses
    for r in rows:
        assert "score" in r["reason"] and r["score"] is not None
        assert (r["status"] == "pass") == (r["score"] >= 0.7 - 1e-9) or "no answer" in r["reason"]
    ranked = json.loads((judged_fork / "analyses" / "rank_j1.json").read_text())
    assert ranked["weights"]["check"] == 0.5 and ranked["pass_at_n"] > 0


def test_recorded_verdicts_never_score_an_invalid_judge_as_a_fail() -> None:
    q = Question("r1", "t", "?", "", checker="rubric", checker_args={"pass_threshold": 0.5})
    base = {"stop_reason": StopReason.FINAL, "prediction": "x"}
    ok = recorded_check_verdict(q, {**base, "check_status": "ok", "score": 0.5})
    low = recorded_check_verdict(q, {**base, "check_status": "ok", "score": 0.49})
    invalid = recorded_check_verdict(q, {**base, "check_status": "invalid", "score": None})
    broken = recorded_check_verdict(q, {**base, "check_status": "check_error", "check_reason": "x"})
    missing = recorded_check_verdict(q, base)
    assert (ok.status, low.status) == ("pass", "fail")
    assert invalid.status == "unknown" and invalid.score is None
    assert broken.status == "error" and missing.status == "unknown"


def test_export_leaves_judge_only_winners_out_unless_audited(
    judged_fork: Path, tmp_path: Path
) -> None:
    plain = api.export(judged_fork, "j1", out=tmp_path / "plain")
    sft = plain.files["sft.jsonl"]
    assert sft.judge_only_refused > 0 and sft.count == 0  # every winner is the judge's word
    assert plain.files["dpo_trl.jsonl"].count == 0
    assert plain.files["sft_openai_chat.jsonl"].count == 0
    kto = [json.loads(line) for line in (tmp_path / "plain" / "kto.jsonl").read_text().splitlines()]
    assert kto and not any(r["label"] for r in kto)  # negatives stay, no judged positive
    refused = sft.judge_only_refused_ids
    assert all(k.startswith("j1/") for k in refused)
    manifest = json.loads((tmp_path / "plain" / "sft.jsonl.manifest.json").read_text())
    assert manifest["judge_only_refused"] == len(refused)

    audit = tmp_path / "audited.txt"
    audit.write_text(f"# checked by hand\n{refused[0]}\n\nnot-a-branch\n", encoding="utf-8")
    checked = api.export(judged_fork, "j1", out=tmp_path / "audited", audited=audit)
    assert checked.files["sft.jsonl"].count == 1
    assert checked.files["sft.jsonl"].judge_only_audited == 1
    assert checked.files["sft.jsonl"].judge_only_refused == len(refused) - 1
    qid = refused[0].split("/")[1]
    audit.write_text(qid + "\n", encoding="utf-8")  # a question id audits its branches
    by_question = api.export(judged_fork, "j1", out=tmp_path / "by-q", audited=audit)
    assert by_question.files["sft.jsonl"].count == 1
    assert not any(
        k.split("/")[1] == qid for k in by_question.files["sft.jsonl"].judge_only_refused_ids
    )


def test_a_user_verifier_that_passes_the_answer_vouches_for_it(
    judged_fork: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    import shutil

    shutil.copytree(judged_fork, ws)
    api.rank(ws, "j1", overrides=SIM, verifiers=["checker", "tests.app.fork_plugins:passes"])
    result = api.export(ws, "j1", out=tmp_path / "out")
    assert result.files["sft.jsonl"].judge_only_refused == 0
    assert result.files["sft.jsonl"].count > 0


def test_a_bad_audited_file_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ids.txt"
    path.write_text("j1/q/0\nj1/q/1 extra\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"ids.txt:2: one id a line"):
        read_audited(path)
    with pytest.raises(UserError, match="no such file"):
        read_audited(tmp_path / "missing.txt")


def test_the_cli_says_what_it_left_out_and_what_the_judge_did(
    judged_fork: Path, tmp_path: Path, capsys
) -> None:
    from app.cli import main

    ws = tmp_path / "ws"
    import shutil

    shutil.copytree(judged_fork, ws)
    sets = [a for k, v in SIM.items() for a in ("--set", f"{k}={v}")]
    assert main(["rank", "-w", str(ws), "j1", "--no-progress", *sets]) == 0
    ranked = capsys.readouterr().out
    assert re.search(r"pairwise: \d+ compared in both orders, \d+ disagreed", ranked)
    assert main(["export", "-w", str(ws), "j1", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\d+ branch\(es\) passed by a rubric judge alone left out", out)
    ids = tmp_path / "ids.txt"
    ids.write_text("j1/no-such-question/0\n", encoding="utf-8")
    args = ["export", "-w", str(ws), "j1", "--out", str(tmp_path / "o2"), "--audited", str(ids)]
    assert main(args) == 0
    assert "left out" in capsys.readouterr().out  # an id naming nothing audits nothing
    assert main([*args[:-1], str(tmp_path / "missing.txt"), "--overwrite"]) == 2
    assert "no such file" in capsys.readouterr().err
