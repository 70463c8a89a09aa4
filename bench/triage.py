"""Triage before the judge on a world with missing-context failures (core/evolution/triage.py).

A benchmark, not a test: it prints figures. For every world seed W it writes world W's
benchmark (`--units` per task type, app/providers/sim/generate.py) into a scratch store and
trains two fresh workspaces with `app/demo.toml`, `epochs = --epochs` and
`sim_missing_context_share = --share` (the simulated agent never opens that share of the
contexts it needs; which ones is a fixed property of each question, `skips_context`): one with
the honest simulated judge, one with `sim_judge_noise = 0.3` (that share of diagnoses is a
random category). `--probe` adds a third, noisy run with `triage_probe = true`.

The world knows each failure's true cause, checked in this order: runtime_fault (the rollout
ended with stop reason "error"); missing_context (its context is one the agent never opens);
interface (it needed context and no read returned the context's FACT line, or its system rule
is not in the system prompt it was sent); otherwise skill_gap. Over every diagnosed failure of
the training steps (`diagnoses` rows of run ids `...-diag`, with the rollout's trajectory):

- `triage.missing_context_recall` (honest judge): truly missing-context failures diagnosed
  `missing_context` / truly missing-context failures. Target >= 0.95.
- `triage.skill_edits_from_non_skill_failures` (honest judge): skill evolutions that applied an
  edit and whose case pack held a failure whose true cause is not a skill gap. The pack is
  rebuilt from the step's diagnoses as core/evolution/diagnose.py build_packs builds it (skill
  gaps of the task type by question id, the first MAX_FAILURES_PER_PACK). Target = 0.
- `triage.rule_decided_changed_under_judge_noise`: failures diagnosed in both the honest and
  the noisy run at the same step with the same trajectory whose rule verdict differs (decided
  by a rule in one run and not the other, or by different rules or categories). Target = 0.
  The rules compared are those that decide before the judge (core/evolution/triage.py
  RULE_NAMES); the check after it (`rule:answered_not_a_fault`) reads the judge's verdict, so
  judge noise moves it by design.
- `triage.overruled_judge` (honest judge; target 0: the simulated judge says runtime_fault only
  on a run that broke) and `triage.noisy0.3.overruled_judge` (no target): the judge's
  runtime_fault verdicts on answered runs that `rule:answered_not_a_fault` turned into skill
  gaps.
- for context, no target: the same recall and edit count in the noisy run (`triage.noisy0.3.*`;
  interface failures the noisy judge calls skill gaps do reach skill packs: only the rules'
  categories are immune), and the judge alone: the simulated judge asked about the honest run's
  truly missing-context failures, as it was before triage (`triage.judge_only.*`).

Figures are means over the world seeds (counts are totals); they come from the simulated
model, not a real LLM.

    .venv/bin/python bench/triage.py [--seeds 1 2 3 4 5] [--epochs 2] [--units 72]
        [--share 0.3] [--probe] [--tiny]

`--tiny` (tests/bench/test_bench_tiny.py): world seed 1, 24 units per type, one epoch; it
shows the bench runs end to end, its figures measure little.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.cli import main as cli_main  # noqa: E402
from app.providers.sim.agent import skips_context  # noqa: E402
from app.providers.sim.generate import write_benchmark  # noqa: E402
from app.providers.sim.world import FACT_MARKER, World, build_world, normalise  # noqa: E402
from core.evolution.diagnose import MAX_FAILURES_PER_PACK  # noqa: E402
from core.evolution.triage import RULE_ANSWERED_NOT_A_FAULT, RULE_NAMES  # noqa: E402

CONFIG = ROOT / "app" / "demo.toml"
SEED_NAME = "sim-starter"
NOISE = 0.3


@dataclass(frozen=True)
class Run:
    """One training's diagnosed failures, with the world's truth for each."""

    world: World
    ws: Path
    rows: list[dict]  # diagnoses joined with their rollout prediction, each with its "truth"
    evolutions: list[dict]  # skill evolutions: run_id, task_type, apply_report_json


def cli(argv: list[str]) -> None:
    log = io.StringIO()
    with contextlib.redirect_stderr(log), contextlib.redirect_stdout(log):
        rc = cli_main(argv)
    if rc != 0:
        print(log.getvalue(), file=sys.stderr)
        raise SystemExit(f"{argv[0]} failed ({rc})")


def train(store: Path, ws: Path, questions: str, sets: dict[str, str]) -> None:
    cli(["init", str(ws), "--seed", SEED_NAME, "--questions", questions, "--store", str(store)])
    argv = ["train", "-w", str(ws), "--config", str(CONFIG), "--no-progress"]
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    cli([*argv, "--store", str(store)])


def read_run(ws: Path, world: World, share: float) -> Run:
    con = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        rows = [
            dict(r)
            for r in con.execute(
                "SELECT d.run_id, d.question_id, d.task_type, d.category, d.decided_by, "
                "p.stop_reason, p.steps_json, p.prompts_version FROM diagnoses d "
                "JOIN predictions p ON p.run_id = substr(d.run_id, 1, length(d.run_id) - 4) "
                "|| 'rollout' AND p.question_id = d.question_id WHERE d.run_id LIKE '%-diag'"
            )
        ]
        evolutions = [
            dict(r)
            for r in con.execute(
                "SELECT run_id, task_type, apply_report_json FROM evolutions "
                "WHERE target_kind = 'skill'"
            )
        ]
    finally:
        con.close()
    texts = {}
    for line in (ws / "questions" / "questions.jsonl").read_text().splitlines():
        if line.strip():
            q = json.loads(line)
            texts[q["question_id"]] = q["question"]
    systems: dict[str, str] = {}
    for r in rows:
        v = r["prompts_version"]
        if v not in systems:
            systems[v] = normalise((ws / "prompts" / v / "system.md").read_text())
        r["truth"] = true_cause(world, texts[r["question_id"]], r, systems[v], share)
    rows.sort(key=lambda r: (r["run_id"], r["question_id"]))
    return Run(world, ws, rows, evolutions)


def true_cause(world: World, text: str, row: dict, system: str, share: float) -> str:
    if row["stop_reason"] == "error":
        return "runtime_fault"
    case = world.case_for_text(text)
    assert case is not None, text
    if skips_context(world, case, share):
        return "missing_context"
    steps = json.loads(row["steps_json"])
    read = [
        str(s.get("output", ""))
        for s in steps
        if s.get("type") == "tool" and s.get("name") == "read_context"
    ]
    if case.needs_context and not any(FACT_MARKER in o for o in read):
        return "interface"
    if case.system_rule and normalise(world.system_rules[case.system_rule]) not in system:
        return "interface"
    return "skill_gap"


def recall(run: Run) -> tuple[int, int]:
    truly = [r for r in run.rows if r["truth"] == "missing_context"]
    return sum(r["category"] == "missing_context" for r in truly), len(truly)


def polluting_causes(run: Run) -> dict[str, int]:
    """True causes of the non-skill failures that sat in the packs of applied skill edits."""
    out: dict[str, int] = {}
    for r in _packed(run):
        if r["truth"] != "skill_gap":
            out[r["truth"]] = out.get(r["truth"], 0) + 1
    return out


def _packed(run: Run) -> list[dict]:
    by_step: dict[tuple[str, str], list[dict]] = {}
    for r in run.rows:
        if r["category"] == "skill_gap":
            by_step.setdefault((r["run_id"].removesuffix("diag"), r["task_type"]), []).append(r)
    packed = []
    for e in run.evolutions:
        if any(a.get("applied") for a in json.loads(e["apply_report_json"] or "[]")):
            key = (e["run_id"].removesuffix("evolve"), e["task_type"])
            packed += sorted(by_step.get(key, []), key=lambda r: r["question_id"])[
                :MAX_FAILURES_PER_PACK
            ]
    return packed


def probe_counts(ws: Path) -> tuple[int, int]:
    """(probe answers that passed, probe answers) of a workspace trained with triage_probe."""
    con = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    try:
        ((passed, n),) = con.execute(
            "SELECT COALESCE(SUM(correct), 0), COUNT(*) FROM predictions WHERE run_id LIKE '%-probe'"
        ).fetchall()
    finally:
        con.close()
    return int(passed), int(n)


def skill_edits_from_non_skill(run: Run) -> tuple[int, int]:
    """(skill evolutions that applied an edit with a non-skill failure in their pack, all
    skill evolutions that applied an edit)."""
    by_step: dict[tuple[str, str], list[dict]] = {}
    for r in run.rows:
        if r["category"] == "skill_gap":
            by_step.setdefault((r["run_id"].removesuffix("diag"), r["task_type"]), []).append(r)
    bad = total = 0
    for e in run.evolutions:
        if not any(a.get("applied") for a in json.loads(e["apply_report_json"] or "[]")):
            continue
        total += 1
        key = (e["run_id"].removesuffix("evolve"), e["task_type"])
        pack = sorted(by_step.get(key, []), key=lambda r: r["question_id"])[:MAX_FAILURES_PER_PACK]
        bad += any(r["truth"] != "skill_gap" for r in pack)
    return bad, total


def rule_changes(a: Run, b: Run) -> tuple[int, int]:
    """(failures whose rule verdict differs, failures compared): same step, question and
    trajectory in both runs."""
    other = {(r["run_id"], r["question_id"]): r for r in b.rows}
    changed = compared = 0
    for r in a.rows:
        s = other.get((r["run_id"], r["question_id"]))
        if s is None or s["steps_json"] != r["steps_json"]:
            continue
        compared += 1
        ruled = [x["decided_by"] in RULE_NAMES for x in (r, s)]  # the rules before the judge
        if ruled[0] != ruled[1] or (
            ruled[0] and (r["decided_by"], r["category"]) != (s["decided_by"], s["category"])
        ):
            changed += 1
    return changed, compared


def overruled(run: Run) -> tuple[int, int]:
    """(judge verdicts overruled by rule:answered_not_a_fault, failures diagnosed)."""
    return sum(r["decided_by"] == RULE_ANSWERED_NOT_A_FAULT for r in run.rows), len(run.rows)


def judge_only_recall(run: Run, noise: float) -> tuple[int, int]:
    """The simulated judge asked about every truly missing-context failure, as every failure
    was diagnosed before triage (the same prompt the step builds)."""
    import anyio

    from app.harness.rollouts.agent_prompts import AgentPrompts
    from app.harness.workspace.store import load_benchmark
    from app.paths import read_prompt
    from app.providers.sim.provider import SimProvider, SimSettings
    from core.evolution.diagnose import Diagnosis, Failure, diagnose_failures

    truly = [r for r in run.rows if r["truth"] == "missing_context"]
    if not truly:
        return 0, 0
    questions = {q.question_id: q for q in load_benchmark(run.ws / "questions").questions}
    failures = []
    for r in truly:
        skills_version = _rollout_skills(run.ws, r["run_id"])
        prompts = AgentPrompts.load(
            run.ws / "skills" / skills_version, run.ws / "prompts" / r["prompts_version"], "inline"
        )
        q = questions[r["question_id"]]
        tools = "\n".join(f"- {t.name}: {t.description}" for t in prompts.tools_for(q))
        failures.append(
            Failure(
                q,
                "",
                r["stop_reason"],
                tuple(json.loads(r["steps_json"])),
                prompts.system,
                prompts.skill_text(q.task_type),
                tools or "(none)",
            )
        )
    judge = SimProvider(settings=SimSettings(judge_noise=noise), world=run.world)

    async def ask() -> list[Diagnosis]:
        return await diagnose_failures(judge, read_prompt("diagnose_failure.md"), failures)

    found = anyio.run(ask)
    return sum(d.category == "missing_context" for d in found), len(found)


def _rollout_skills(ws: Path, diag_run: str) -> str:
    con = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    try:
        (v,) = con.execute(
            "SELECT skills_version FROM _runs WHERE run_id = ?",
            (diag_run.removesuffix("diag") + "rollout",),
        ).fetchone()
    finally:
        con.close()
    return str(v).split("+")[0]


def share_of(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1] if pair[1] else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--units", type=int, default=72)
    parser.add_argument("--share", type=float, default=0.3)
    parser.add_argument("--probe", action="store_true", help="also a noisy run with the probe")
    parser.add_argument("--tiny", action="store_true", help="one small world, one epoch")
    args = parser.parse_args()
    if args.tiny:
        args.seeds, args.epochs, args.units = [1], 1, 24
    started = time.perf_counter()
    per_seed = []
    with tempfile.TemporaryDirectory(prefix="triage-bench-") as tmp:
        store = Path(tmp) / "store"
        shutil.copytree(ROOT / "store" / "seeds" / SEED_NAME, store / "seeds" / SEED_NAME)
        for seed in args.seeds:
            world = build_world("basic", seed, args.units)
            name = f"sim-w{seed}-u{args.units}"
            write_benchmark(world, store / "questions" / name, name)
            base = {
                "epochs": str(args.epochs),
                "sim_world_seed": str(seed),
                "sim_units_per_type": str(args.units),
                "sim_missing_context_share": repr(args.share),
            }
            runs = {}
            settings = {"honest": {}, "noisy": {"sim_judge_noise": repr(NOISE)}}
            if args.probe:
                settings["probe"] = {"sim_judge_noise": repr(NOISE), "triage_probe": "true"}
            for label, extra in settings.items():
                ws = Path(tmp) / f"w{seed}-{label}"
                train(store, ws, name, {**base, **extra})
                runs[label] = read_run(ws, world, args.share)
            figures = {
                "recall": recall(runs["honest"]),
                "edits": skill_edits_from_non_skill(runs["honest"]),
                "changed": rule_changes(runs["honest"], runs["noisy"]),
                "noisy_recall": recall(runs["noisy"]),
                "noisy_edits": skill_edits_from_non_skill(runs["noisy"]),
                "overruled": overruled(runs["honest"]),
                "noisy_overruled": overruled(runs["noisy"]),
                "judge_recall": judge_only_recall(runs["honest"], 0.0),
                "judge_noisy_recall": judge_only_recall(runs["honest"], NOISE),
            }
            if args.probe:
                figures["probe_edits"] = skill_edits_from_non_skill(runs["probe"])
                figures["probed"] = probe_counts(runs["probe"].ws)
            per_seed.append(figures)
            f = figures
            print(
                f"world {seed}: missing-context recall {f['recall'][0]}/{f['recall'][1]} "
                f"(judge alone {f['judge_recall'][0]}, noisy judge alone "
                f"{f['judge_noisy_recall'][0]}); skill edits from non-skill failures "
                f"{f['edits'][0]}/{f['edits'][1]} (noisy judge {f['noisy_edits'][0]}/"
                f"{f['noisy_edits'][1]}"
                + (
                    f", noisy + probe {f['probe_edits'][0]}/{f['probe_edits'][1]}"
                    if args.probe
                    else ""
                )
                + f"); rule verdicts changed under judge noise {f['changed'][0]} of "
                f"{f['changed'][1]} failures compared"
            )
            probed = f.get("probed", (0, 0))
            print(
                "  noisy judge: true causes of the non-skill failures in applied skill edits' "
                f"packs {polluting_causes(runs['noisy'])}"
                + (f"; probe: {probed[0]} of {probed[1]} re-runs passed" if args.probe else "")
            )
    mean = lambda key: statistics.mean(share_of(f[key]) for f in per_seed)  # noqa: E731
    total = lambda key: sum(f[key][0] for f in per_seed)  # noqa: E731
    print(
        f"{len(args.seeds)} world(s), {args.units} units per type, {args.epochs} epoch(s), "
        f"missing-context share {args.share}; SIMULATED model; {time.perf_counter() - started:.0f} s"
    )
    print(f"RESULT triage.missing_context_recall {mean('recall'):.3f} share target >=0.95")
    print(f"RESULT triage.skill_edits_from_non_skill_failures {total('edits')} edits target ==0")
    print(
        f"RESULT triage.rule_decided_changed_under_judge_noise {total('changed')} failures "
        "target ==0"
    )
    print(f"RESULT triage.overruled_judge {total('overruled')} failures target ==0")
    print(f"RESULT triage.noisy{NOISE}.overruled_judge {total('noisy_overruled')} failures")
    print(f"RESULT triage.judge_only.missing_context_recall {mean('judge_recall'):.3f} share")
    print(
        f"RESULT triage.judge_only.noisy{NOISE}.missing_context_recall "
        f"{mean('judge_noisy_recall'):.3f} share"
    )
    print(f"RESULT triage.noisy{NOISE}.missing_context_recall {mean('noisy_recall'):.3f} share")
    print(
        f"RESULT triage.noisy{NOISE}.skill_edits_from_non_skill_failures "
        f"{total('noisy_edits')} edits"
    )
    if args.probe:
        print(
            f"RESULT triage.noisy{NOISE}_probe.skill_edits_from_non_skill_failures "
            f"{total('probe_edits')} edits"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
