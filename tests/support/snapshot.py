"""A timestamp-free fingerprint of a workspace's final state, to compare runs exactly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

VOLATILE = {"at", "created_at", "started_at", "finished_at"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _json(path: Path) -> Any:
    return _strip(json.loads(path.read_text(encoding="utf-8")))


def workspace_state(root: Path) -> dict[str, Any]:
    root = Path(root)
    manifest = _json(root / "manifest.json")
    manifest.pop("history", None)  # a resumed run re-appends entries for redone steps
    state: dict[str, Any] = {"manifest": manifest}
    for kind in ("skills", "prompts"):
        for folder in sorted((root / kind).iterdir()):
            for f in sorted(folder.iterdir()):
                key = f"{kind}/{folder.name}/{f.name}"
                state[key] = _json(f) if f.name == "_meta.json" else f.read_text(encoding="utf-8")
    for sub in ("reports/steps", "reports/epochs"):
        for f in sorted((root / sub).glob("*.json")):
            state[f"{sub}/{f.name}"] = _json(f)
    state["final"] = _json(root / "analyses" / "final_test_eval.json")
    conn = sqlite3.connect(root / "harness.db")
    try:
        state["gate_evidence"] = conn.execute(
            "SELECT run_id, epoch, step, task_type, idx, unit_id, base, cand, outcome, w, l, "
            "round(e_win, 9), round(e_harm, 9) FROM gate_evidence "
            "ORDER BY run_id, task_type, idx"
        ).fetchall()
        state["predictions"] = conn.execute(
            "SELECT run_id, question_id, prediction, correct, stop_reason FROM predictions "
            "ORDER BY run_id, question_id"
        ).fetchall()
        state["runs"] = conn.execute(
            "SELECT run_id, kind, status, skills_version, prompts_version FROM _runs "
            "ORDER BY run_id"
        ).fetchall()
    finally:
        conn.close()
    return state


def diff_states(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    problems = [f"only in first: {k}" for k in sorted(set(a) - set(b))]
    problems += [f"only in second: {k}" for k in sorted(set(b) - set(a))]
    problems += [f"differs: {k}" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    return problems
