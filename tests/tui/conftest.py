"""A small, deterministic synthetic workspace for the TUI tests, built with the project's writers.

`make_workspace(tmp_path)` is the one function to swap for a real demo workspace later: the
tests only rely on what it returns (`DemoWorkspace`: the path plus the facts to look for).
Every timestamp is fixed so SVG snapshots are stable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.store import benchmark_dir, load_seed, seed_dir
from app.harness.workspace.workspace import (
    advance_version,
    init_workspace,
    read_version_files,
    update_best,
    update_manifest,
)
from app.paths import builtin_store
from app.tui.data import unified_diff
from tests.support.log_rows import insert_rows, upsert_predictions

T0 = "2025-01-02T03:04:05+00:00"
TRAIN_RUN = "train-20250102-0304"
ROLLOUT_RUN = "e1_s1_rollout"


@dataclass
class DemoWorkspace:
    root: Path
    step_files: list[Path] = field(default_factory=list)
    accepted_step: dict[str, Any] = field(default_factory=dict)
    added_lines: list[str] = field(default_factory=list)
    rollout_run: str = ROLLOUT_RUN
    predictions: list[dict[str, Any]] = field(default_factory=list)
    skills_versions: list[str] = field(default_factory=list)


def _stamp(i: int) -> str:
    return f"2025-01-02T03:{i // 60:02d}:{i % 60:02d}+00:00"


def _fix_meta_times(root: Path) -> None:
    """advance_version stamps the wall clock; pin it so snapshots do not drift."""
    for i, meta_path in enumerate(sorted(root.glob("*/v*/_meta.json"))):
        meta = json.loads(meta_path.read_text())
        meta["at"] = _stamp(i)
        write_json_atomic(meta_path, meta)


def _evidence(gate_run: str, epoch: int, step: int, task: str, pattern: str) -> list[dict]:
    rows, w, l_, e_win, e_harm = [], 0, 0, 1.0, 1.0
    for idx, ch in enumerate(pattern):
        base, cand = {"W": (0, 1), "L": (1, 0), "t": (1, 1), "0": (0, 0)}[ch]
        outcome = "W" if ch == "W" else "L" if ch == "L" else "tie"
        if outcome == "W":
            w += 1
            e_win, e_harm = e_win * 1.8, e_harm * 0.2
        elif outcome == "L":
            l_ += 1
            e_win, e_harm = e_win * 0.2, e_harm * 1.8
        rows.append(
            {
                "run_id": gate_run,
                "epoch": epoch,
                "step": step,
                "task_type": task,
                "idx": idx,
                "unit_id": f"{task}-u{idx:03d}",
                "base": base,
                "cand": cand,
                "outcome": outcome,
                "w": w,
                "l": l_,
                "e_win": round(e_win, 4),
                "e_harm": round(e_harm, 4),
            }
        )
    return rows


def _trajectory(
    qid: str, answer: str, prediction: str, correct: bool, stop: str, turns: int
) -> list[dict]:
    steps: list[dict] = []
    for turn in range(turns - 1):
        call = {
            "id": f"call_{qid}_{turn}",
            "name": "read_context" if turn == 0 else "read_skill",
            "arguments": {"question_id": qid} if turn == 0 else {"task_type": "ledger"},
        }
        steps.append(
            {
                "turn": turn,
                "type": "model",
                "text": f"Thinking about {qid}, turn {turn}.",
                "tool_calls": [call],
            }
        )
        steps.append(
            {
                "turn": turn,
                "type": "tool",
                "name": call["name"],
                "arguments": call["arguments"],
                "status": "ok",
                "output": f"tool output {turn} for {qid}: figures 185, 248",
            }
        )
    if stop == "error":
        steps.append({"turn": turns - 1, "type": "error", "error": "provider timeout after 30s"})
    else:
        steps.append(
            {"turn": turns - 1, "type": "model", "text": f"ANSWER: {prediction}", "tool_calls": []}
        )
    steps.append(
        {
            "type": "verdict",
            "prediction": prediction,
            "answer": answer,
            "correct": correct,
            "checker": "numeric",
            "stop_reason": stop,
        }
    )
    return steps


# A step report's `diagnosis` (core/evolution/diagnose.py FailureTally.to_dict) with failures
# decided by triage rules, including two kinds no edit can fix.
ACCEPTED_DIAGNOSIS = {
    "failures": 7,
    "by_category": {"skill_gap": 4, "missing_context": 2, "runtime_fault": 1},
    "contradictory": 0,
    "decided_by": {"judge": 4, "rule:context_unread": 2, "rule:stop_error": 1},
}


def make_workspace(tmp_path: Path, name: str = "demo-ws") -> DemoWorkspace:
    root = Path(tmp_path) / name
    seed = load_seed(seed_dir(builtin_store(), "sim-starter"))
    init_workspace(root, seed, benchmark_dir(builtin_store(), "sim-basic"))
    demo = DemoWorkspace(root=root)

    # -- versions: skills v2 (ledger rule), v3 (units rule), v4 (provisional routing rule) ---
    v1 = read_version_files(root / "skills" / "v1")
    added = [
        "- Exclude entries marked bulk from the total.",
        "- Entries marked reversal are subtracted, not added.",
    ]
    v2 = dict(v1)
    v2["ledger.md"] = v1["ledger.md"].replace(
        "- Work from the figures given in the case.\n",
        "- Work from the figures given in the case.\n" + "".join(a + "\n" for a in added),
    )
    advance_version(
        root,
        "skills",
        v2,
        source="evolve:e1_s1_ledger",
        parent="v1",
        description="ledger: exclude bulk entries, subtract reversals",
    )
    v3 = dict(v2)
    v3["units.md"] = v2["units.md"] + "\n- Convert to the unit asked for before rounding.\n"
    advance_version(
        root,
        "skills",
        v3,
        source="evolve:e1_s2_units",
        parent="v2",
        description="units: convert before rounding",
    )
    v4 = dict(v3)
    v4["routing.md"] = v3["routing.md"] + "\n- Prefer the shortest route by hop count.\n"
    advance_version(
        root,
        "skills",
        v4,
        source="evolve:e2_s1_routing",
        parent="v3",
        description="routing: shortest route (provisional)",
    )
    p1 = read_version_files(root / "prompts" / "v1")
    p2 = dict(p1)
    p2["system.md"] = p1["system.md"] + "\nAlways end with a line `ANSWER: <value>`.\n"
    advance_version(
        root,
        "prompts",
        p2,
        source="slow_update:e1",
        parent="v1",
        description="system: insist on the ANSWER line",
    )
    _fix_meta_times(root)
    update_manifest(root, skills="v4", prompts="v2", run_id=TRAIN_RUN)
    update_best(root, skills="v3", prompts="v2", val_acc=0.655, run_id=TRAIN_RUN, epoch=2)
    demo.skills_versions = ["v1", "v2", "v3", "v4"]
    demo.added_lines = added

    # -- the log --------------------------------------------------------------------------
    log = HarnessLog(root / "harness.db")
    runs = [
        (TRAIN_RUN, "train", None),
        (ROLLOUT_RUN, "rollout", TRAIN_RUN),
        ("e1_s1_ledger_gate", "gate", TRAIN_RUN),
        ("e1_s1_units_gate", "gate", TRAIN_RUN),
        ("e2_s1_routing_gate", "gate", TRAIN_RUN),
        ("e1_val", "eval", TRAIN_RUN),
    ]
    for i, (run_id, kind, parent) in enumerate(runs):
        log.register_run(
            run_id,
            kind=kind,
            skills_version="v1",
            prompts_version="v1",
            questions_ref="sim-basic",
            parent_run_id=parent,
            provenance={"simulated_model": True, "git_commit": "abc1234"},
        )
        if kind != "train":
            log.finish_run(run_id, "done", {"accuracy": 0.5 + i / 20})
        log.conn.execute(
            "UPDATE _runs SET started_at = ?, finished_at = CASE WHEN finished_at "
            "IS NULL THEN NULL ELSE ? END WHERE run_id = ?",
            (_stamp(i), _stamp(i + 30), run_id),
        )
    # train stays "running" with no train.lock: the TUI must call it "stopped".

    # -- step reports (files + rows) + gate evidence --------------------------------------
    ledger_diff = unified_diff(
        v1["ledger.md"], v2["ledger.md"], "skills/v1/ledger.md", "skills/v2/ledger.md"
    )
    steps = [
        (
            1,
            1,
            "ledger",
            "accept",
            "e1_s1_ledger_gate",
            0.71,
            0.52,
            9,
            1,
            24.7,
            14,
            "accept",
            3,
            "v1",
            "v2",
            ledger_diff,
            "WWtWWLWtWW0WWW",
        ),
        (
            1,
            1,
            "units",
            "reject",
            "e1_s1_units_gate",
            0.40,
            0.48,
            2,
            6,
            0.05,
            12,
            "harm",
            3,
            "v2",
            None,
            "--- a\n+++ b\n@@ -1 +1 @@\n-old units rule\n+new units rule\n",
            "LLWLtLLWLL0L",
        ),
        (
            1,
            1,
            "dates",
            "skip_cooldown",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            3,
            "v2",
            None,
            "",
            "",
        ),
        (
            1,
            2,
            "tagging",
            "evolve_failed",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            2,
            "v2",
            None,
            "",
            "",
        ),
        (
            1,
            2,
            "ledger",
            "skip_no_change",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            2,
            "v2",
            None,
            "",
            "",
        ),
        (
            2,
            1,
            "routing",
            "accept_provisional",
            "e2_s1_routing_gate",
            0.60,
            0.55,
            5,
            3,
            4.2,
            20,
            "budget",
            2,
            "v3",
            "v4",
            "--- a\n+++ b\n@@ -1 +1,2 @@\n routing\n+- shortest\n",
            "WLWtWLWWtL",
        ),
        (
            2,
            1,
            "pricing",
            "skip_no_failures",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            2,
            "v4",
            None,
            "",
            "",
        ),
    ]
    step_rows, evidence_rows = [], []
    for (
        epoch,
        step,
        task,
        action,
        gate,
        cand,
        base,
        w,
        l_,
        e_value,
        n_used,
        stop,
        budget,
        base_v,
        new_v,
        diff,
        pattern,
    ) in steps:
        report = {
            "run_id": TRAIN_RUN,
            "epoch": epoch,
            "step": step,
            "task_type": task,
            "action": action,
            "gate_run_id": gate,
            "target_file": f"{task}.md",
            "base_version": base_v,
            "new_version": new_v,
            "cand_acc": cand,
            "base_acc": base,
            "W": w,
            "L": l_,
            "e_value": e_value,
            "e_harm": 0.02 if action == "accept" else None,
            "threshold": 20.0 if gate else None,  # the accept level (the Steps chart's line)
            "n_used": n_used,
            "stop_reason": stop,
            "delta_hat": None if cand is None else round(cand - base, 3),
            "delta_shrunk": None if cand is None else round((cand - base) * 0.8, 3),
            "edit_budget": budget,
            "edits": [{"op": "add_rule", "section": "Rules", "text": a} for a in added]
            if action == "accept"
            else [],
            "apply_report": [
                {"index": 0, "op": "add_rule", "section": "Rules", "applied": True, "reason": ""}
            ]
            if diff
            else [],
            "clip": None,
            "diff": diff,
            "summary": f"{task}: {action.replace('_', ' ')}",
            "at": _stamp(epoch * 10 + step),
        }
        if action == "accept":  # the triaged failures line (app/tui/widgets/step_detail.py)
            report["diagnosis"] = ACCEPTED_DIAGNOSIS
        path = root / "reports" / "steps" / f"e{epoch}_s{step}_{task}.json"
        write_json_atomic(path, report)
        demo.step_files.append(path)
        step_rows.append(
            {
                "run_id": TRAIN_RUN,
                "epoch": epoch,
                "step": step,
                "task_type": task,
                "action": action,
                "cand_acc": cand,
                "base_acc": base,
                "w": w,
                "l": l_,
                "e_value": e_value,
                "n_used": n_used,
                "stop_reason": stop,
                "edit_budget": budget,
                "gate_run_id": gate,
                "report_json": json.dumps(report),
            }
        )
        if gate:
            evidence_rows += _evidence(gate, epoch, step, task, pattern)
        if action == "accept":
            demo.accepted_step = report
    insert_rows(log, "step_reports", step_rows)
    insert_rows(log, "gate_evidence", evidence_rows)

    # -- predictions with trajectories ----------------------------------------------------
    questions = [
        json.loads(line)
        for line in (root / "questions" / "questions.jsonl").read_text().splitlines()[::21][:24]
    ]
    preds = []
    for i, q in enumerate(questions):
        stop = "error" if i == 5 else "max_steps" if i == 9 else "final"
        correct = i % 3 != 0 and stop == "final"
        prediction = q["answer"] if correct else ("" if stop != "final" else "999")
        if i == 3:
            prediction = "[bold]999[/bold] [oops"  # model text that looks like markup
        turns = 1 + i % 3
        steps_json = _trajectory(q["question_id"], q["answer"], prediction, correct, stop, turns)
        preds.append(
            {
                "run_id": ROLLOUT_RUN,
                "question_id": q["question_id"],
                "unit_id": q.get("unit_id") or q["question_id"],
                "task_type": q["task_type"],
                "prediction": prediction,
                "answer": q["answer"],
                "correct": int(correct),
                "stop_reason": stop,
                "steps_json": json.dumps(steps_json),
                "tokens_in": 100 + i,
                "tokens_out": 20 + i,
                "cost_usd": 0.0,
                "latency_s": 0.01,
                "skills_version": "v1",
                "prompts_version": "v1",
                "created_at": _stamp(i),
            }
        )
    upsert_predictions(log, preds)
    demo.predictions = preds

    calls = []
    for i in range(40):
        role = ("agent", "agent", "evolver", "diagnoser")[i % 4]
        calls.append(
            {
                "run_id": ROLLOUT_RUN,
                "role": role,
                "model": f"sim/{role}",
                "tokens_in": 100,
                "tokens_out": 10,
                "cost_usd": 0.001 * (i % 4 + 1),
                "latency_s": 0.0,
                "status": "ok",
                "cache_hit": int(i % 5 == 0),
                "at": _stamp(i),
            }
        )
    insert_rows(log, "llm_calls", calls)

    # -- epoch reports + checkpoint --------------------------------------------------------
    epoch_rows = []
    for epoch, val, test, counts in (
        (
            1,
            0.583,
            0.561,
            {
                "accepted": 1,
                "provisional": 0,
                "rejected": 1,
                "rolled_back": 0,
                "skipped": 1,
                "cooldown": 1,
            },
        ),
        (
            2,
            0.655,
            None,
            {
                "accepted": 0,
                "provisional": 1,
                "rejected": 0,
                "rolled_back": 1,
                "skipped": 1,
                "cooldown": 0,
            },
        ),
    ):
        report = {
            "epoch": epoch,
            "val_acc": val,
            "test_acc": test,
            "best": {"skills": "skills/v3", "prompts": "prompts/v2", "val_acc": 0.655, "epoch": 2},
            "counts": counts,
            "probations": [{"task_type": "routing", "verdict": "rollback"}] if epoch == 2 else [],
            "holdout": {"seed": 0.5, "best": val},
            "prompts_changed": epoch == 1,
            "r2_acc": round(val - 0.02, 3),
        }
        write_json_atomic(root / "reports" / "epochs" / f"e{epoch}.json", report)
        epoch_rows.append(
            {
                "run_id": TRAIN_RUN,
                "epoch": epoch,
                "val_acc": val,
                "test_acc": test,
                "report_json": json.dumps(report),
            }
        )
    insert_rows(log, "epoch_reports", epoch_rows)
    log.close()
    write_json_atomic(
        root / "checkpoint.json",
        {
            "schema": 1,
            "progress": {
                "epoch": 2,
                "phase": "in_epoch",
                "step_completed": 1,
                "global_step": 3,
                "total_steps": 6,
            },
            "state": {"baseline_val_acc": 0.21},  # the Overview curve's epoch 0
        },
    )
    # the held-out result per task type (the Overview's baseline vs final bars)
    write_json_atomic(
        root / "analyses" / "final_test_eval.json",
        {
            "run_id": f"{TRAIN_RUN}-final-test",
            "baseline_test_accuracy": 0.22,
            "test_accuracy": 0.61,
            "units": 72,
            "per_task_type": {
                t: {"accuracy": acc, "correct": round(acc * 12), "total": 12}
                for t, acc in (("dates", 0.75), ("ledger", 0.5), ("units", 0.583))
            },
            "baseline_per_task_type": {"dates": 0.25, "ledger": 0.167, "units": 0.25},
        },
    )
    return demo


@pytest.fixture(scope="session")
def demo_ws(tmp_path_factory: pytest.TempPathFactory) -> DemoWorkspace:
    """Shared read-only workspace (the TUI never writes, so tests can share it)."""
    return make_workspace(tmp_path_factory.mktemp("tui"))


@pytest.fixture
def fresh_ws(tmp_path: Path) -> DemoWorkspace:
    """A private workspace for tests that write to it (live refresh)."""
    return make_workspace(tmp_path)
