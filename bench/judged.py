"""Judged training on the simulated rubric-checked benchmark (docs/checkers.md).

A benchmark, not a test: it prints figures. The judged world's benchmark (`sim-judged`:
world "judged", 216 units per task type, every question `checker = "rubric"`; `--units`
writes another size into a scratch store) is trained with `app/demo.toml` on `sim/judged`
models, through the CLI like a user:

- `judged.baseline_test`, `judged.final_test` at judge noise 0, and `judged.gain` (their
  difference; target >= 0.2);
- `judge_quality.agreement` of `judge-quality` on the world's labelled cases
  (app/providers/sim/generate.py judge_case_lines: reference, known-bad and empty control
  answers) at judge noise 0 (target >= the pass line 0.9) and 0.2 (target < 0.9), and
  `judge_quality.warning_fired`: after the failing check, `train` warns (target 1);
- `judged.invalid_replies_scored_zero`: a training with `sim_judge_invalid_share = 0.25`
  (that share of judge replies is unreadable); for every rubric-checked prediction the judge's
  replies are asked again from the (deterministic) simulated judge and parsed here, on their
  own, and an invalid reply counts when the stored score is the mean with it scored 0 rather
  than the mean of the valid replies (target 0); `judged.invalid_replies` says how many
  invalid replies there were to get wrong, `judged.score_mismatches` how many stored scores
  differ from the mean of the valid replies at all (target 0);
- `checker.call_ms`: one `module:function` checker call to a warm worker process, and
  `checker.spawn_call_ms`, the same call in a fresh worker each time (why training keeps its
  workers, app/harness/rollouts/custom_checkers.py).

Figures come from the simulated model, not a real LLM.

    .venv/bin/python bench/judged.py [--units 216] [--epochs 4] [--tiny]

`--tiny` (tests/bench/test_bench_tiny.py): 24 units per type, one epoch, two judge cases per
type; it shows the bench runs end to end, its figures measure little.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402

from app.cli import main as cli_main  # noqa: E402
from app.harness.rollouts.custom_checkers import CheckerPool, _Worker  # noqa: E402
from app.harness.rollouts.rubric import rubric_prompt  # noqa: E402
from app.harness.workspace.config import RunConfig  # noqa: E402
from app.harness.workspace.store import load_benchmark  # noqa: E402
from app.providers.factory import sim_settings  # noqa: E402
from app.providers.sim.generate import judge_case_lines, write_benchmark  # noqa: E402
from app.providers.sim.provider import SimProvider  # noqa: E402
from app.providers.sim.world import build_world  # noqa: E402
from core.types import Question  # noqa: E402

CONFIG = ROOT / "app" / "demo.toml"
SEED_NAME = "sim-starter"
WORLD = "judged"
PASS_LINE = 0.9
INVALID_SHARE = 0.25


def cli(argv: list[str]) -> str:
    log = io.StringIO()
    with contextlib.redirect_stderr(log), contextlib.redirect_stdout(log):
        rc = cli_main(argv)
    if rc != 0:
        print(log.getvalue(), file=sys.stderr)
        raise SystemExit(f"{argv[0]} failed ({rc})")
    return log.getvalue()


def model_sets(units: int, extra: dict[str, object]) -> list[str]:
    sets = {
        "agent_model": f"sim/{WORLD}",
        "evolver_model": f"sim/{WORLD}",
        "judge_model": f"sim/{WORLD}",
        "sim_units_per_type": units,
        **extra,
    }
    return [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]


def init(store: Path, ws: Path) -> None:
    cli(["init", str(ws), "--seed", SEED_NAME, "--questions", "sim-judged", "--store", str(store)])


def train(store: Path, ws: Path, sets: list[str]) -> str:
    argv = ["train", "-w", str(ws), "--config", str(CONFIG), "--no-progress", *sets]
    return cli([*argv, "--store", str(store)])


def test_figures(ws: Path) -> tuple[float, float]:
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    return float(final["baseline_test_accuracy"]), float(final["test_accuracy"])


def judge_quality(ws: Path, cases: Path, sets: list[str]) -> float:
    text = cli(["judge-quality", "-w", str(ws), "--cases", str(cases), "--json", *sets])
    return float(json.loads(text[text.index("{") :])["agreement"])


def strict_score(text: str) -> float | None:
    """The bench's own reading of a judge reply: a JSON object with a 0-10 number `score`."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    score = obj.get("score") if isinstance(obj, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 10:
        return None
    return score / 10.0


def scored_zero(ws: Path, units: int, epochs: int) -> tuple[int, int, int]:
    """(invalid replies counted as 0, invalid replies, stored scores unlike the valid mean)."""
    config = RunConfig(
        judge_model=f"sim/{WORLD}",
        sim_units_per_type=units,
        sim_judge_invalid_share=INVALID_SHARE,
        epochs=epochs,
    )
    judge = SimProvider(
        f"sim/{WORLD}", sim_settings(config), world=build_world(WORLD, config.sim_world_seed, units)
    )
    questions = {q.question_id: q for q in load_benchmark(ws / "questions").questions}
    con = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT question_id, prediction, score FROM predictions "
            "WHERE stop_reason = 'final' AND check_status IS NOT NULL"
        ).fetchall()
    finally:
        con.close()
    zero = invalid = mismatches = 0
    for qid, prediction, stored in rows:
        q: Question = questions[qid]
        prompt = rubric_prompt(q, prediction)
        replies = anyio.run(_replies, judge, prompt, config.rubric_samples)
        parsed = [strict_score(t) for t in replies]
        valid = [x for x in parsed if x is not None]
        k = len(parsed) - len(valid)
        invalid += k
        expected = sum(valid) / len(valid) if valid else None
        if (stored is None) != (expected is None) or (
            stored is not None and expected is not None and abs(stored - expected) > 1e-9
        ):
            mismatches += 1
            with_zero = sum(valid) / len(parsed)
            if k and stored is not None and abs(stored - with_zero) <= 1e-9:
                zero += k
    return zero, invalid, mismatches


async def _replies(judge: SimProvider, prompt: str, k: int) -> list[str]:
    out = []
    for seed in range(k):
        reply = await judge.complete(
            [{"role": "user", "content": prompt}],
            temperature=RunConfig().rubric_temperature,
            max_tokens=256,
            seed=seed,
            role="judge",
        )
        out.append(reply.text)
    return out


def checker_latency(calls: int) -> tuple[float, float]:
    q = Question(question_id="q", task_type="t", question="?", answer="42")
    spec = "bench._checker_example:exact"
    pool = CheckerPool(workers=1, timeout_s=30)
    try:
        pool.check(spec, q, "42")  # start the worker
        t = time.perf_counter()
        for _ in range(calls):
            pool.check(spec, q, "42")
        warm = (time.perf_counter() - t) / calls * 1000
    finally:
        pool.close()
    spawns = max(2, calls // 50)
    t = time.perf_counter()
    for _ in range(spawns):
        worker = _Worker(spec, "checker", pool.env, 30)
        worker.call((q, "42"), 30)
        worker.kill()
    return warm, (time.perf_counter() - t) / spawns * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=216)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    units, epochs, per_type = (24, 1, 2) if args.tiny else (args.units, args.epochs, 6)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-judged-") as tmp:
        root = Path(tmp)
        store = root / "store"
        world = build_world(WORLD, 7, units)
        write_benchmark(world, store / "questions" / "sim-judged", "sim-judged")
        cases = root / "judge_cases.jsonl"
        cases.write_text("\n".join(judge_case_lines(world, per_type)) + "\n", encoding="utf-8")

        clean = model_sets(units, {"epochs": epochs, "sim_judge_noise": 0.0})
        ws0 = root / "noise0"
        init(store, ws0)
        agreement0 = judge_quality(ws0, cases, clean)
        train(store, ws0, clean)
        baseline, final = test_figures(ws0)

        noisy = model_sets(units, {"epochs": 1, "sim_judge_noise": 0.2})
        ws2 = root / "noise02"
        init(store, ws2)
        agreement2 = judge_quality(ws2, cases, noisy)
        warned = "judge-quality -w WS --cases FILE" in train(store, ws2, noisy)

        bad = model_sets(units, {"epochs": epochs, "sim_judge_invalid_share": INVALID_SHARE})
        ws3 = root / "invalid"
        init(store, ws3)
        train(store, ws3, bad)
        zero, invalid, mismatches = scored_zero(ws3, units, epochs)
        _, final_invalid = test_figures(ws3)
    warm_ms, spawn_ms = checker_latency(20 if args.tiny else 500)

    print(f"sim-judged: {units} units per type, {epochs} epoch(s), simulated model")
    print(f"RESULT judged.baseline_test {baseline:.3f} accuracy")
    print(f"RESULT judged.final_test {final:.3f} accuracy")
    print(f"RESULT judged.gain {final - baseline:.3f} accuracy target >=0.2")
    print(f"RESULT judge_quality.agreement_noise0 {agreement0:.3f} share target >={PASS_LINE}")
    print(f"RESULT judge_quality.agreement_noise0.2 {agreement2:.3f} share target <{PASS_LINE}")
    print(f"RESULT judge_quality.warning_fired {int(warned)} flag target ==1")
    print(f"RESULT judged.invalid_replies_scored_zero {zero} replies target ==0")
    print(f"RESULT judged.invalid_replies {invalid} replies")
    print(f"RESULT judged.score_mismatches {mismatches} predictions target ==0")
    print(f"RESULT judged.final_test_invalid{INVALID_SHARE} {final_invalid:.3f} accuracy")
    print(f"RESULT checker.call_ms {warm_ms:.3f} ms")
    print(f"RESULT checker.spawn_call_ms {spawn_ms:.1f} ms")
    print(f"RESULT judged.wall_s {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
