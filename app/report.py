"""`report`: a plain-text (or JSON) summary of a workspace. Reads only."""

from __future__ import annotations

import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.estimate import estimate_vs_actual
from app.harness.training.checkpoint import load_checkpoint
from app.harness.training.run_progress import progress_view
from app.harness.training.vocabulary import Count, SkipAction
from app.harness.workspace.atomic import read_json_object
from app.harness.workspace.harness_log import Resume, RunStatus
from app.harness.workspace.harness_log.reader import LogReader, open_reader
from app.harness.workspace.harness_log.rows import RoleCalls, RunRow, SpendRow
from app.harness.workspace.workspace import KINDS, list_versions, read_manifest, read_meta
from app.learning_report import learning_failures, learning_lines
from app.providers.sim.notices import ORACLE_MODEL, ORACLE_NOTICE


def workspace_summary(root: Path) -> dict[str, Any]:
    root = Path(root)
    manifest = read_manifest(root)
    versions = {
        kind: [{"version": v, **read_meta(root, kind, v)} for v in list_versions(root, kind)]
        for kind in KINDS
    }
    runs: list[dict[str, Any]] = []
    epochs: list[dict[str, Any]] = []
    if (root / "harness.db").exists():
        with open_reader(root / "harness.db") as log:
            log.check_integrity()
            resumes = log.resumes()
            runs = [_run_row(r, resumes) for r in log.runs()]
            epochs = [asdict(e) for e in log.epoch_accuracies()]
            role_calls = log.calls.by_role()
            calls = [asdict(c) for c in role_calls]
            spend = [asdict(r) for r in _spend(root, log)]
            model_io = _model_io(log, role_calls)
            activation = _activation(log)
            triage = [asdict(t) for t in log.triage_counts()]
            contamination = _contamination(log)
            repeats = log.step_action_counts().get(SkipAction.SKIP_REPEAT, 0)
            ingested = log.ingested_counts()
            learning = learning_failures(root, log)
    else:
        learning = []
        calls, spend, model_io, activation, resumes, triage = [], [], {}, {}, [], []
        ingested = {}
        contamination = {"skill_edits": 0, "epoch_counts": 0}
        repeats = 0
    checkpoint = load_checkpoint(root) if (root / "checkpoint.json").exists() else None
    final = root / "analyses" / "final_test_eval.json"
    final_test = read_json_object(final, "final test report") if final.exists() else None
    return {
        "headline": headline(final_test),
        "workspace": str(root),
        "current": manifest["current"],
        "best": manifest.get("best"),
        "seed": manifest.get("seed"),
        "versions": versions,
        "runs": runs,
        "epochs": epochs,
        "llm_calls": calls,
        "spend": spend,
        "spent_usd": sum(r["cost_usd"] for r in spend),
        "model_io": model_io,
        "activation": activation,
        "triage": triage,
        "ingested": ingested,
        "learning_failures": learning,
        "contamination": contamination,
        # skill candidates not gated: an equal one's test had ended (app/harness/training/step.py
        # refuse_repeats), from the step reports
        "repeats": repeats,
        "progress": checkpoint["progress"] if checkpoint else None,
        "resumes": [asdict(r) for r in resumes],
        "final_test": final_test,
    }


def _fraction(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
    return float(value) if ok else None  # type: ignore[arg-type]


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def headline(final: dict[str, Any] | None) -> dict[str, Any]:
    """The held-out result at a glance, from analyses/final_test_eval.json: baseline and final
    test accuracy overall and per task type (None where the file has no such figure)."""
    final = final or {}
    per_type = _mapping(final.get("per_task_type"))
    base_of = _mapping(final.get("baseline_per_task_type"))
    types = []
    for task_type in sorted(set(per_type) | set(base_of)):
        entry = _mapping(per_type.get(task_type))
        types.append(
            {
                "task_type": task_type,
                "baseline": _fraction(base_of.get(task_type)),
                "final": _fraction(entry.get("accuracy")),
                "correct": entry.get("correct"),
                "total": entry.get("total"),
            }
        )
    return {
        "baseline_test_accuracy": _fraction(final.get("baseline_test_accuracy")),
        "test_accuracy": _fraction(final.get("test_accuracy")),
        "units": final.get("units"),
        "run_id": final.get("run_id"),
        "per_task_type": types,
    }


def _acc(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def headline_text(h: dict[str, Any]) -> str:
    """`test accuracy: baseline 0.216 -> final 0.923 (324 held-out units)`, as `demo` ends."""
    if h["test_accuracy"] is None and h["baseline_test_accuracy"] is None:
        return "test accuracy: no final test yet (`train` writes it after its last epoch)"
    units = f" ({h['units']} held-out units)" if isinstance(h.get("units"), int) else ""
    return (
        f"test accuracy: baseline {_acc(h['baseline_test_accuracy'])} -> "
        f"final {_acc(h['test_accuracy'])}{units}"
    )


def _per_type_lines(h: dict[str, Any]) -> list[str]:
    """Baseline vs final test accuracy per task type (the web report's and TUI's bars)."""
    if not h["per_task_type"]:
        return []
    lines = [f"\ntest accuracy by task type (baseline -> final, run {h['run_id']})"]
    for t in h["per_task_type"]:
        base, final = t["baseline"], t["final"]
        change = f"{final - base:+.3f}" if base is not None and final is not None else "-"
        units = f"  {t['correct']}/{t['total']}" if isinstance(t["total"], int) else ""
        lines.append(f"  {t['task_type']:<16} {_acc(base)} -> {_acc(final)}  ({change}){units}")
    return lines


def _spend(root: Path, log: LogReader) -> list[SpendRow]:
    """Money really paid, by run, from the response cache's spend ledger (it keeps the calls
    of killed processes and of redone steps, which `llm_calls` shows as free cache hits)."""
    cache = root / "response_cache.db"
    if cache.exists():
        with open_reader(cache) as ledger:
            paid = ledger.calls.spend_ledger()
            if paid is not None:
                return paid
    # a workspace from before the ledger: the best figure there is
    return log.calls.spend_from_calls()


def _run_row(row: RunRow, resumes: list[Resume]) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "kind": row.kind,
        "status": row.status,
        "skills": row.skills_version,
        "prompts": row.prompts_version,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "accuracy": row.summary.get("accuracy"),
        "reason": row.summary.get("reason"),
        "resumes": [asdict(r) for r in resumes if r.run_id == row.run_id],
        "simulated_model": row.provenance.get("simulated_model"),
        "sim_oracle": ORACLE_MODEL in (row.provenance.get("models") or {}).values(),
        "git_commit": row.provenance.get("git_commit"),
    }


def _activation(log: LogReader) -> dict[str, Any]:
    """Skill activation (app/harness/skills/activation.py) of the first and the latest baseline,
    validation, test or eval run that recorded it (progressive and tool skill modes)."""
    from app.harness.skills.activation import run_activation

    found = []
    for run_id in log.done_run_ids(("baseline", "validation", "test", "eval")):
        summary = run_activation(log.log, run_id)
        if summary:
            found.append({"run_id": run_id, "per_task_type": summary})
    return {"first": found[0], "last": found[-1]} if found else {}


def _contamination(log: LogReader) -> dict[str, int]:
    """Changes refused because their added text holds a held-out question
    (core/evolution/contamination.py): skill edits from the step reports (the epoch in flight
    too), and every kind (skill edits, descriptions, prompt changes) from the finished epochs'
    counts."""
    in_epochs = sum(
        int((e.report.get("counts") or {}).get(Count.CONTAMINATION) or 0) for e in log.epochs()
    )
    steps = log.step_action_counts().get(SkipAction.CONTAMINATION, 0)
    return {"skill_edits": steps, "epoch_counts": in_epochs}


def _percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of sorted values (None when there are none)."""
    if not values:
        return None
    rank = max(1, min(len(values), -(-len(values) * q // 1)))  # ceil(n * q), within [1, n]
    return values[int(rank) - 1]


def _model_io(log: LogReader, calls: list[RoleCalls]) -> dict[str, Any]:
    """Latency, retries and timeouts per role; answers found without an `ANSWER:` line;
    structured replies that did not parse. Logs older than schema 3 lack the columns."""
    out: dict[str, Any] = {"roles": {}}
    have = log.columns("llm_calls")
    for c in calls:
        lat = log.calls.latencies(c.role)
        entry: dict[str, Any] = {
            "p50_latency_s": _percentile(lat, 0.5),
            "p95_latency_s": _percentile(lat, 0.95),
        }
        if {"retries", "timeouts"} <= have:
            entry.update(asdict(log.calls.role_io(c.role)))
        if "response_format" in have:
            entry["response_formats"] = log.calls.response_formats(c.role)
        out["roles"][c.role] = entry
    if "answer_source" in log.columns("predictions"):
        out["answers"] = log.answer_sources()
        out["answers_extracted"] = sum(n for k, n in out["answers"].items() if k != "answer_line")
        out["extracted_correct"] = log.extracted_correct()
    if log.has_table("reply_attempts"):
        out["structured"] = log.calls.reply_statuses()
    return out


def format_summary(s: dict[str, Any]) -> str:
    head = s.get("headline") or headline(s.get("final_test"))
    lines = [
        headline_text(head),
        f"workspace  {s['workspace']}  (seed {s['seed']})",
        f"current    {s['current']['skills']}  {s['current']['prompts']}  "
        f"questions={s['current']['questions']}",
    ]
    best = s.get("best")
    if best:
        lines.append(
            f"best       {best['skills']}  {best['prompts']}  val_acc={best['val_acc']:.3f}"
            f"  (epoch {best['epoch']}, run {best['run_id']})"
        )
    if s.get("progress"):
        lines.append(f"progress   {progress_view(s['progress']).text}")
    lines += _resume_lines(s.get("resumes") or [])
    for kind, versions in s["versions"].items():
        lines.append(f"\n{kind} versions")
        for v in versions:
            lines.append(
                f"  {v['version']:<5} {v['at']}  {v['source']:<22} parent={v['parent']}"
                f"  {textwrap.shorten(v['description'], 72, placeholder=' …')}"
            )
    if s["epochs"]:
        lines.append("\nepochs")
        for e in s["epochs"]:
            test = f"{e['test_acc']:.3f}" if e["test_acc"] is not None else "-"
            lines.append(f"  {e['run_id']} epoch {e['epoch']}: val {e['val_acc']:.3f}  test {test}")
    lines += _per_type_lines(head)
    if s["runs"]:
        lines.append("\nruns")
        for r in s["runs"][-25:]:
            acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
            lines.append(
                f"  {r['run_id']:<34} {r['kind']:<10} {r['status']:<8} "
                f"{r['skills']}/{r['prompts']}  acc={acc}"
            )
            if r.get("reason") and r["status"] != RunStatus.DONE:
                lines.append(f"      reason: {r['reason']}")
            if r.get("resumes"):
                last = Resume(**r["resumes"][-1]).text()
                lines.append(f"      resumed {_times(len(r['resumes']))}, last {last}")
        if len(s["runs"]) > 25:
            lines.append(f"  ... {len(s['runs']) - 25} earlier runs (use --json for all)")
    if s.get("ingested"):
        lines.append("\ningested traces (app/harness/ingest/; tui: Runs -> ingest-...)")
        for source, n in s["ingested"].items():
            lines.append(
                f"  {source:<14} {n['traces']:>6} traces  {n['failed']:>5} failed  "
                f"{n['families']:>5} families"
            )
    roles = s.get("model_io", {}).get("roles", {})
    for c in s["llm_calls"]:
        lines.append(
            f"calls[{c['role']}] {c['calls']} ({c['cache_hits']} cached)  "
            f"tokens {c['tokens_in']}/{c['tokens_out']}  cost ${c['cost_usd'] or 0:.4f}"
            + _latency_text(roles.get(c["role"], {}))
        )
    lines += _model_io_lines(s.get("model_io", {}))
    lines += _activation_lines(s.get("activation") or {})
    lines += _triage_lines(s.get("triage") or [])
    lines += learning_lines(s.get("learning_failures") or [])
    refused = s.get("contamination") or {}
    if any(refused.values()):
        lines.append(
            f"\ncontamination  refused before the gate: {refused['skill_edits']} skill edit(s) "
            f"in step reports; {refused['epoch_counts']} change(s) in finished epochs' counts "
            "(skill edits, descriptions, prompts)"
        )
    if s.get("repeats"):
        lines.append(
            f"\nrepeats    {s['repeats']} skill candidate(s) not gated: the same edits on the same "
            "file had been gated before (step reports, action skip_repeat)"
        )
    if s.get("spend"):
        sim = any(r.get("simulated_model") for r in s["runs"])
        lines.append(
            f"\nspent      ${s['spent_usd']:.4f} in paid model calls"
            + (" (notional simulated prices)" if sim else "")
            + ", including calls of killed processes and redone steps"
        )
        for r in s["spend"]:
            lines.append(
                f"  {r['owner_run_id']:<34} ${r['cost_usd']:.4f}  ({r['paid_calls']} paid calls)"
            )
    if any(r.get("simulated_model") for r in s["runs"]):
        lines.append("\nnote: runs in this workspace used the SIMULATED model (sim/*)")
    lines += estimate_vs_actual(Path(s["workspace"]))
    if any(r.get("sim_oracle") for r in s["runs"]):
        lines.append(ORACLE_NOTICE)
    return "\n".join(lines)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _resume_lines(resumes: list[dict[str, Any]], shown: int = 10) -> list[str]:
    """Every `train --resume` in the log (the last `shown`), so a resumed run never reads
    as a plain `done`."""
    if not resumes:
        return []
    runs = sorted({r["run_id"] for r in resumes})
    lines = [f"resumed    {', '.join(runs)}: {_times(len(resumes))}"]
    if len(resumes) > shown:
        lines.append(f"  ... {len(resumes) - shown} earlier (use --json for all)")
    for r in resumes[-shown:]:
        lines.append(f"  {r['run_id']}  {Resume(**r).text()}")
    return lines


def _activation_lines(a: dict[str, Any]) -> list[str]:
    if not a:
        return []
    lines = [
        "\nskill activation (recall = right skill opened / rollouts of the task type; "
        "precision = right / all opens of that skill)"
    ]
    for label in ("first", "last"):
        entry = a[label]
        lines.append(f"  {label:<5} run {entry['run_id']}")
        for task_type, e in entry["per_task_type"].items():
            prec = "-" if e["precision"] is None else f"{e['precision']:.2f}"
            lines.append(
                f"    {task_type:<14} recall {e['recall']:.2f}  precision {prec}  "
                f"(n={e['n']}, none={e['opened_none']}, wrong={e['opened_wrong']})"
            )
    return lines


# What a user can do about the failures no evolution acts on (core/evolution/diagnose.py).
NOWHERE_HINTS = {
    "missing_context": "no edit can fix these: the agent answered without the question's context",
    "runtime_fault": "no edit can fix these: the rollout broke (see calls, retries above)",
}


def _triage_lines(counts: list[dict[str, Any]]) -> list[str]:
    """Training steps' failures by category and by who decided them (rules first, then the
    judge, core/evolution/triage.py); missing context and runtime faults with examples."""
    if not counts:
        return []
    by_cat: dict[str, list[dict[str, Any]]] = {}
    for c in counts:
        by_cat.setdefault(c["category"], []).append(c)
    total = sum(c["failures"] for c in counts)
    lines = [f"\nfailure triage  {total} failures diagnosed in training steps (rules, then judge)"]
    for category, rows in sorted(by_cat.items(), key=lambda kv: -sum(r["failures"] for r in kv[1])):
        n = sum(r["failures"] for r in rows)
        who = ", ".join(f"{r['decided_by']} {r['failures']}" for r in rows)
        lines.append(f"  {category:<16} {n:>5}  ({who})")
        if category in NOWHERE_HINTS:
            ids = [q for r in rows for q in r["examples"]][:3]
            lines.append(f"      {NOWHERE_HINTS[category]}; e.g. {', '.join(ids)}")
    return lines


def _latency_text(entry: dict[str, Any]) -> str:
    if entry.get("p50_latency_s") is None:
        return ""
    text = f"  latency p50 {entry['p50_latency_s']:.2f}s p95 {entry['p95_latency_s']:.2f}s"
    if "retries" in entry:
        text += f"  retries {entry['retries']}  timeouts {entry['timeouts']}"
        text += f"  failed {entry['failed']}" if entry.get("failed") else ""
    if entry.get("response_formats"):
        text += f"  format {'/'.join(entry['response_formats'])}"
    return text


def _model_io_lines(m: dict[str, Any]) -> list[str]:
    lines = []
    answers = m.get("answers")
    if answers and m.get("answers_extracted"):
        detail = ", ".join(f"{k}={v}" for k, v in sorted(answers.items()) if k != "answer_line")
        lines.append(
            f"answers    {m['answers_extracted']} extracted without an ANSWER: line "
            f"({detail}; {m['extracted_correct']} of them correct), "
            f"{answers.get('answer_line', 0)} from ANSWER: lines"
        )
    structured = m.get("structured")
    if structured:
        lines.append("replies    " + ", ".join(f"{k}={v}" for k, v in sorted(structured.items())))
    return lines
