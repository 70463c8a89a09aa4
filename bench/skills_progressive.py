"""Progressive skill mode on the simulated world: activation before/after training descriptions,
and test accuracy and prompt tokens of inline vs progressive mode.

From `examples/agent-skills/sim-vague` (Agent Skills whose descriptions are deliberately vague:
"Guidance for client files."), imported into a scratch store, two workspaces train with
`app/demo.toml` and `epochs = EPOCHS`: one with skill_mode "inline", one with "progressive"
(where the slow update also trains descriptions, app/harness/training/descriptions.py). A third
workspace starts progressive from `examples/agent-skills/sim-broad` (over-broad descriptions
naming every task type), where precision before training is defined.

- activation before: the progressive workspace's baseline run (seed descriptions), on the test
  pool's questions; after: its final test run (app/harness/skills/activation.py);
- test accuracy: each workspace's final test evaluation (analyses/final_test_eval.json);
- prompt tokens per rollout: mean `tokens_in` over the final test run's predictions (all turns
  of a rollout summed; the simulated provider counts 4 characters a token).

The simulated agent opens a skill only when its description names the question's cues
(app/providers/sim/agent.py choose_skill); these are simulated figures, not a real model's.

    .venv/bin/python bench/skills_progressive.py [--epochs 8] [--tiny]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.cli import main as cli_main  # noqa: E402
from app.harness.skills.activation import from_steps, summarise  # noqa: E402

SEED_SKILLS = ROOT / "examples" / "agent-skills" / "sim-vague"
# The same skills with one over-broad description each (every task type named): every skill
# ties, the first listed opens for everything, so precision is measurable before training.
BROAD_SKILLS = ROOT / "examples" / "agent-skills" / "sim-broad"


def main(argv: list[str]) -> int:
    """The CLI with its console log kept (and shown only when the command fails)."""
    log = io.StringIO()
    with contextlib.redirect_stderr(log), contextlib.redirect_stdout(log):
        rc = cli_main(argv)
    if rc != 0:
        print(log.getvalue(), file=sys.stderr)
    return rc


# The demo's world (app/api/training.py DEMO_QUESTIONS): on sim-basic the gate confirms no one-rule
# edit, so no run would learn and the accuracies would say nothing.
BENCHMARK, UNITS = "sim-large", 216


def train(store: Path, ws: Path, mode: str, epochs: int, seed: str = "vague") -> None:
    rc = main(["init", str(ws), "--seed", seed, "--questions", BENCHMARK, "--store", str(store)])
    assert rc == 0, f"init failed ({rc})"
    rc = main(
        [
            "train",
            "-w",
            str(ws),
            "--config",
            str(ROOT / "app" / "demo.toml"),
            "--set",
            f'skill_mode="{mode}"',
            "--set",
            f"epochs={epochs}",
            "--set",
            f"sim_units_per_type={UNITS}",
            "--no-progress",
            "--store",
            str(store),
        ]
    )
    assert rc == 0, f"train ({mode}) failed ({rc})"


def final(ws: Path) -> dict:
    return json.loads((ws / "analyses" / "final_test_eval.json").read_text())


def rows(ws: Path, run_id: str) -> list[sqlite3.Row]:
    con = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return con.execute(
            "SELECT question_id, task_type, steps_json, tokens_in FROM "
            "predictions WHERE run_id = ?",
            (run_id,),
        ).fetchall()
    finally:
        con.close()


def activation(ws: Path, run_id: str, only: set[str] | None = None) -> dict:
    recs = [
        a
        for r in rows(ws, run_id)
        if only is None or r["question_id"] in only
        if (a := from_steps(r["task_type"], r["steps_json"]))
    ]
    return summarise(recs)


def tokens_per_rollout(ws: Path, run_id: str) -> float:
    got = [r["tokens_in"] for r in rows(ws, run_id)]
    return sum(got) / len(got)


def all_inline_tokens(ws: Path, fin: dict) -> float:
    """Tokens of one turn whose system prompt holds every skill body (what a client without
    progressive disclosure loads), counted as the simulated provider counts (characters / 4),
    mean over the final test run's questions. Computed, not run."""
    from string import Template

    from app.harness.workspace.workspace import read_version_files
    from app.paths import read_prompt

    skills = read_version_files(ws / "skills" / fin["skills_version"])
    system = read_version_files(ws / "prompts" / fin["prompts_version"])["system.md"]
    system += "".join(
        f"\n\n# Skill {n[:-3]}\n\n{t}" for n, t in sorted(skills.items()) if n.endswith(".md")
    )
    user = read_prompt("agent_user.md")
    texts = {}
    for line in (ws / "questions" / "questions.jsonl").read_text().splitlines():
        if line.strip():
            q = json.loads(line)
            texts[q["question_id"]] = q["question"]
    got = [
        (len(system) + len(Template(user).safe_substitute(question=texts[r["question_id"]]))) // 4
        + 1
        for r in rows(ws, fin["run_id"])
    ]
    return sum(got) / len(got)


def fmt(x: float | None) -> str:
    return "nan" if x is None else f"{x:.3f}"


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="one epoch each (tests/bench/test_bench_tiny.py): checks the bench runs",
    )
    args = parser.parse_args()
    if args.tiny:
        args.epochs = 1
    with tempfile.TemporaryDirectory(prefix="skills-progressive-") as tmp:
        tmp = Path(tmp)
        store = tmp / "store"
        shutil.copytree(ROOT / "store", store)
        assert (
            main(["import-skills", str(SEED_SKILLS), "--name", "vague", "--store", str(store)]) == 0
        )
        inline, prog = tmp / "inline", tmp / "progressive"
        train(store, inline, "inline", args.epochs)
        train(store, prog, "progressive", args.epochs)
        fi, fp = final(inline), final(prog)
        test_ids = {r["question_id"] for r in rows(prog, fp["run_id"])}
        before = activation(prog, "baseline", test_ids)
        after = activation(prog, fp["run_id"])
        print(
            f"seed: {SEED_SKILLS.relative_to(ROOT)} (vague descriptions), config app/demo.toml "
            f"with epochs={args.epochs}; SIMULATED model"
        )
        print("activation on the test pool, progressive workspace (recall / precision):")
        print(f"  {'task type':<12} {'before':>15} {'after':>15}")
        for t in sorted(k for k in after if k != "*"):
            b, a = before.get(t, {}), after[t]
            print(
                f"  {t:<12} {fmt(b.get('recall')):>7} / {fmt(b.get('precision')):<6}"
                f" {fmt(a['recall']):>7} / {fmt(a['precision']):<6}"
            )
        print("  (precision is nan when nothing opened the skill)")
        desc = sorted((prog / "reports" / "epochs").glob("e*_descriptions.json"))
        for path in desc:
            for r in json.loads(path.read_text())["records"]:
                print(
                    f"  {path.name[:-18]} {r['file']:<20} {r['action']:<12} "
                    f"{(r.get('new') or '')[:70]!r}"
                )
                if r["action"] == "reject":
                    print(f"      {r.get('reason', '')}")
        r_before, r_after = before["*"]["recall"], after["*"]["recall"]
        acc_i, acc_p = fi["test_accuracy"], fp["test_accuracy"]
        tok_i = tokens_per_rollout(inline, fi["run_id"])
        tok_p = tokens_per_rollout(prog, fp["run_id"])
        tok_all = all_inline_tokens(prog, fp)
        print(
            f"test accuracy: inline {acc_i:.3f} (skills {fi['skills_version']}), progressive "
            f"{acc_p:.3f} (skills {fp['skills_version']})"
        )
        print(
            f"prompt tokens per rollout (final test run): inline {tok_i:.0f}, progressive "
            f"{tok_p:.0f}; a single turn with every skill body inline (computed, not run): "
            f"{tok_all:.0f}"
        )
        print(
            "  inline mode sends only the one skill the harness already knows the task type "
            "needs, in one turn; progressive mode sends the catalog, then re-sends it with the "
            "opened body in a second turn"
        )
        ok_recall = r_after - r_before >= 0.2
        ok_acc = abs(acc_p - acc_i) <= 0.05
        ok_tok = tok_p < tok_i
        print(
            f"{'MET' if ok_recall else 'MISSED'}: activation recall +{r_after - r_before:.3f} "
            "(target >= +0.2)"
        )
        print(
            f"{'MET' if ok_acc else 'MISSED'}: progressive test accuracy within "
            f"{abs(acc_p - acc_i):.3f} of inline (target <= 0.05)"
        )
        print(
            f"{'MET' if ok_tok else 'MISSED'}: progressive prompt tokens per rollout "
            f"{tok_p / tok_i:.2f}x inline (target < 1)"
        )
        print(f"RESULT skills.activation_recall_before {r_before:.3f} ratio")
        print(f"RESULT skills.activation_recall_after {r_after:.3f} ratio")
        print(f"RESULT skills.activation_recall_gain {r_after - r_before:.3f} ratio target >=0.2")
        print(f"RESULT skills.activation_precision_before {fmt(before['*']['precision'])} ratio")
        print(f"RESULT skills.activation_precision_after {fmt(after['*']['precision'])} ratio")
        print(f"RESULT skills.test_acc_inline {acc_i:.3f} ratio")
        print(f"RESULT skills.test_acc_progressive {acc_p:.3f} ratio")
        print(f"RESULT skills.test_acc_gap {abs(acc_p - acc_i):.3f} ratio target <=0.05")
        print(f"RESULT skills.prompt_tokens_inline {tok_i:.0f} tokens/rollout")
        print(f"RESULT skills.prompt_tokens_progressive {tok_p:.0f} tokens/rollout")
        # a second seed: over-broad descriptions (extra figures, same method)
        assert (
            main(["import-skills", str(BROAD_SKILLS), "--name", "broad", "--store", str(store)])
            == 0
        )
        broad = tmp / "broad"
        train(store, broad, "progressive", args.epochs, seed="broad")
        fb = final(broad)
        b_ids = {r["question_id"] for r in rows(broad, fb["run_id"])}
        bb, ba = activation(broad, "baseline", b_ids), activation(broad, fb["run_id"])
        print(
            f"over-broad seed {BROAD_SKILLS.relative_to(ROOT)}: recall "
            f"{fmt(bb['*']['recall'])} -> {fmt(ba['*']['recall'])}, precision "
            f"{fmt(bb['*']['precision'])} -> {fmt(ba['*']['precision'])}, test accuracy "
            f"{fb['test_accuracy']:.3f}"
        )
        print(f"RESULT skills.broad.activation_recall_before {fmt(bb['*']['recall'])} ratio")
        print(f"RESULT skills.broad.activation_recall_after {fmt(ba['*']['recall'])} ratio")
        print(f"RESULT skills.broad.activation_precision_before {fmt(bb['*']['precision'])} ratio")
        print(f"RESULT skills.broad.activation_precision_after {fmt(ba['*']['precision'])} ratio")
        print(f"RESULT skills.broad.test_acc_progressive {fb['test_accuracy']:.3f} ratio")
        print(f"RESULT skills.prompt_tokens_all_bodies_inline {tok_all:.0f} tokens/rollout")
        print(f"RESULT skills.prompt_tokens_ratio {tok_p / tok_i:.3f} ratio target <1")
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
