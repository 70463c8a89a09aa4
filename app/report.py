"""`report`: a plain-text (or JSON) summary of a workspace. Reads only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.harness.atomic import read_json_object
from app.harness.checkpoint import load_checkpoint
from app.harness.log import HarnessLog
from app.harness.workspace import KINDS, list_versions, read_manifest, read_meta


def workspace_summary(root: Path) -> dict[str, Any]:
    root = Path(root)
    manifest = read_manifest(root)
    versions = {kind: [{"version": v, **read_meta(root, kind, v)} for v in list_versions(root, kind)]
                for kind in KINDS}
    runs: list[dict[str, Any]] = []
    epochs: list[dict[str, Any]] = []
    if (root / "harness.db").exists():
        with HarnessLog(root / "harness.db", readonly=True) as log:
            log.check_integrity()
            runs = [_run_row(r) for r in log.runs()]
            epochs = log.query("SELECT run_id, epoch, val_acc, test_acc FROM epoch_reports "
                               "ORDER BY id")
            calls = log.query("SELECT role, COUNT(*) AS calls, SUM(cache_hit) AS cache_hits, "
                              "SUM(cost_usd) AS cost_usd, SUM(tokens_in) AS tokens_in, "
                              "SUM(tokens_out) AS tokens_out FROM llm_calls GROUP BY role")
            spend = _spend(root, log)
    else:
        calls, spend = [], []
    checkpoint = load_checkpoint(root) if (root / "checkpoint.json").exists() else None
    final = root / "analyses" / "final_test_eval.json"
    return {"workspace": str(root), "current": manifest["current"], "best": manifest.get("best"),
            "seed": manifest.get("seed"), "versions": versions, "runs": runs, "epochs": epochs,
            "llm_calls": calls, "spend": spend,
            "spent_usd": sum(r["cost_usd"] for r in spend),
            "progress": checkpoint["progress"] if checkpoint else None,
            "final_test": read_json_object(final, "final test report") if final.exists()
            else None}


def _spend(root: Path, log: HarnessLog) -> list[dict[str, Any]]:
    """Money really paid, by run, from the response cache's spend ledger (it keeps the calls
    of killed processes and of redone steps, which `llm_calls` shows as free cache hits)."""
    cache = root / "response_cache.db"
    if cache.exists():
        with HarnessLog(cache, readonly=True) as ledger:  # a read-only SQLite reader
            if ledger.query("SELECT name FROM sqlite_master WHERE name = 'spend'"):
                return ledger.query(
                    "SELECT owner_run_id, COUNT(*) AS paid_calls, SUM(cost_usd) AS cost_usd "
                    "FROM spend GROUP BY owner_run_id ORDER BY MIN(id)")
    # a workspace from before the ledger: the best figure there is
    return log.query("SELECT run_id AS owner_run_id, COUNT(*) AS paid_calls, "
                     "SUM(cost_usd) AS cost_usd FROM llm_calls WHERE cache_hit = 0 "
                     "AND cost_usd > 0 GROUP BY run_id ORDER BY MIN(id)")


def _run_row(row: dict[str, Any]) -> dict[str, Any]:
    summary = json.loads(row.get("summary_json") or "{}")
    provenance = json.loads(row.get("provenance_json") or "{}")
    return {"run_id": row["run_id"], "kind": row["kind"], "status": row["status"],
            "skills": row["skills_version"], "prompts": row["prompts_version"],
            "started_at": row["started_at"], "finished_at": row["finished_at"],
            "accuracy": summary.get("accuracy"),
            "simulated_model": provenance.get("simulated_model"),
            "git_commit": provenance.get("git_commit")}


def format_summary(s: dict[str, Any]) -> str:
    lines = [f"workspace  {s['workspace']}  (seed {s['seed']})",
             f"current    {s['current']['skills']}  {s['current']['prompts']}  "
             f"questions={s['current']['questions']}"]
    best = s.get("best")
    if best:
        lines.append(f"best       {best['skills']}  {best['prompts']}  val_acc={best['val_acc']:.3f}"
                     f"  (epoch {best['epoch']}, run {best['run_id']})")
    if s.get("progress"):
        p = s["progress"]
        lines.append(f"progress   epoch {p['epoch']} {p['phase']} step {p['step_completed']}  "
                     f"global {p['global_step']}/{p['total_steps']}")
    for kind, versions in s["versions"].items():
        lines.append(f"\n{kind} versions")
        for v in versions:
            lines.append(f"  {v['version']:<5} {v['at']}  {v['source']:<22} parent={v['parent']}"
                         f"  {v['description'][:60]}")
    if s["epochs"]:
        lines.append("\nepochs")
        for e in s["epochs"]:
            test = f"{e['test_acc']:.3f}" if e["test_acc"] is not None else "-"
            lines.append(f"  {e['run_id']} epoch {e['epoch']}: val {e['val_acc']:.3f}  test {test}")
    if s["runs"]:
        lines.append("\nruns")
        for r in s["runs"][-25:]:
            acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
            lines.append(f"  {r['run_id']:<34} {r['kind']:<10} {r['status']:<8} "
                         f"{r['skills']}/{r['prompts']}  acc={acc}")
        if len(s["runs"]) > 25:
            lines.append(f"  ... {len(s['runs']) - 25} earlier runs (use --json for all)")
    for c in s["llm_calls"]:
        lines.append(f"calls[{c['role']}] {c['calls']} ({c['cache_hits']} cached)  "
                     f"tokens {c['tokens_in']}/{c['tokens_out']}  cost ${c['cost_usd'] or 0:.4f}")
    if s.get("spend"):
        sim = any(r.get("simulated_model") for r in s["runs"])
        lines.append(f"\nspent      ${s['spent_usd']:.4f} in paid model calls"
                     + (" (notional simulated prices)" if sim else "")
                     + ", including calls of killed processes and redone steps")
        for r in s["spend"]:
            lines.append(f"  {r['owner_run_id']:<34} ${r['cost_usd']:.4f}  "
                         f"({r['paid_calls']} paid calls)")
    if any(r.get("simulated_model") for r in s["runs"]):
        lines.append("\nnote: runs in this workspace used the SIMULATED model (sim/*)")
    return "\n".join(lines)
