"""How many useless system/tool prompt lines survive training, on the simulated model.

A benchmark, not a test: it prints figures. The simulated evolver's useless prompt edit is
`app/providers/sim/evolver.py`'s `USELESS_LINES[0]` ("Read the case carefully..."): it adds
nothing the simulated agent can use, so every copy of a useless line in the prompts the final
test evaluated is a prompt change the slow update kept without earning it
(app/harness/training/slow_update.py, `settle_prompt_change`).

For every setting and world seed W it trains one fresh workspace like `bench/acceptance.py`
does (`python -m app.providers.sim.generate --seed W --units U` into a temporary store with a
copy of the `sim-starter` seed; `main.py init`, then `main.py train --config app/demo.toml
--set sim_world_seed=W --set sim_units_per_type=U --set sim_*_share=...`), and reads:

- useless lines: copies of any `USELESS_LINES` entry in the prompts version of
  `analyses/final_test_eval.json`;
- prompt changes kept / reverted: the epoch reports' `prompts_kept` / `prompts_reverted`;
- final test: `test_accuracy` of `analyses/final_test_eval.json` (what the rule costs).

Settings: `default` (the demo's shares), `null` (every evolver proposal useless: useless 1.0,
harmful 0.0, so no prompt change can help) and `useless0.6` (bench/acceptance.py's: useless
0.6, harmful 0.2).

    .venv/bin/python bench/prompt_lines.py [--seeds 1 2 3 4 5] [--settings null useless0.6]
        [--strategy eprocess] [--units 72] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's app/, whatever the installed package points at
MAIN = ROOT / "main.py"
CONFIG = ROOT / "app" / "demo.toml"
SEED_NAME = "sim-starter"
SETTINGS = {
    "default": {"useless": 0.15, "harmful": 0.2, "adversarial": 0.0},
    "null": {"useless": 1.0, "harmful": 0.0, "adversarial": 0.0},
    "useless0.6": {"useless": 0.6, "harmful": 0.2, "adversarial": 0.0},
}


@dataclass(frozen=True)
class Job:
    setting: str
    seed: int
    units: int
    strategy: str
    store: Path
    questions: str
    workspace: Path
    extra_sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    job: Job
    error: str = ""
    useless_lines: int = 0
    kept: int = 0
    reverted: int = 0
    final_test: float = 0.0


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )


def generate_world(store: Path, seed: int, units: int) -> str:
    name = f"sim-w{seed}-u{units}"
    out = store / "questions" / name
    if not out.exists():
        proc = run(
            ["-m", "app.providers.sim.generate", "--seed", str(seed), "--units", str(units)]
            + ["--name", name, "--out", str(out)]
        )
        if proc.returncode != 0:
            raise SystemExit(f"generating world {seed} failed:\n{proc.stderr[-2000:]}")
    return name


def train_one(job: Job) -> Outcome:
    ws = job.workspace
    init = [str(MAIN), "init", str(ws), "--seed", SEED_NAME, "--questions", job.questions]
    proc = run([*init, "--store", str(job.store)])
    if proc.returncode != 0:
        return Outcome(job, f"init exited {proc.returncode}: {proc.stderr[-500:]}")
    sets = {
        "gate.strategy": f'"{job.strategy}"',
        "sim_world_seed": str(job.seed),
        "sim_units_per_type": str(job.units),
    }
    sets.update({f"sim_{k}_share": repr(v) for k, v in SETTINGS[job.setting].items()})
    cmd = [str(MAIN), "train", "-w", str(ws), "--config", str(CONFIG), "--no-progress"]
    for key, value in sets.items():
        cmd += ["--set", f"{key}={value}"]
    for kv in job.extra_sets:
        cmd += ["--set", kv]
    proc = run(cmd)
    if proc.returncode != 0:
        return Outcome(job, f"train exited {proc.returncode}: {proc.stderr[-500:]}")
    return measure(job)


def measure(job: Job) -> Outcome:
    from app.providers.sim.evolver import USELESS_LINES

    final = json.loads((job.workspace / "analyses" / "final_test_eval.json").read_text())
    prompts = job.workspace / "prompts" / str(final["prompts_version"]).split("/")[-1]
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(prompts.glob("*.md")))
    useless = sum(text.count(line) for line in USELESS_LINES)
    kept = reverted = 0
    for path in (job.workspace / "reports" / "epochs").glob("*.json"):
        counts = json.loads(path.read_text())["counts"]
        kept += counts.get("prompts_kept", 0)
        reverted += counts.get("prompts_reverted", 0)
    return Outcome(
        job,
        useless_lines=useless,
        kept=kept,
        reverted=reverted,
        final_test=float(final["test_accuracy"]),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument(
        "--settings", nargs="+", choices=sorted(SETTINGS), default=["null", "useless0.6"]
    )
    ap.add_argument("--strategy", default="eprocess")
    ap.add_argument("--units", type=int, default=72)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--tiny", action="store_true", help="one null run on a 24-unit world")
    args = ap.parse_args(argv)
    if args.tiny:
        args.seeds, args.settings, args.units, args.jobs = [1], ["null"], 24, 1
    with tempfile.TemporaryDirectory(prefix="prompt-lines-") as tmp:
        store = Path(tmp) / "store"
        shutil.copytree(ROOT / "store" / "seeds" / SEED_NAME, store / "seeds" / SEED_NAME)
        names = {seed: generate_world(store, seed, args.units) for seed in args.seeds}
        jobs = [
            Job(
                s,
                seed,
                args.units,
                args.strategy,
                store,
                names[seed],
                Path(tmp) / f"{s}-{seed}",
                tuple(args.sets),
            )
            for s in args.settings
            for seed in args.seeds
        ]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(train_one, jobs))
    for setting in args.settings:
        rows = [o for o in outcomes if o.job.setting == setting]
        print(f"== {setting} (gate.strategy={args.strategy}, units {args.units})")
        for o in rows:
            what = o.error or (
                f"useless prompt lines in final {o.useless_lines}  "
                f"prompt changes kept {o.kept} reverted {o.reverted}  final test {o.final_test:.3f}"
            )
            print(f"  seed {o.job.seed}: {what}")
        ok = [o for o in rows if not o.error]
        runs_kept = sum(o.useless_lines > 0 for o in ok)
        mean_test = sum(o.final_test for o in ok) / max(len(ok), 1)
        print(
            f"  runs with a useless line kept: {runs_kept} of "
            f"{len(ok)}; useless lines in total: {sum(o.useless_lines for o in ok)}; "
            f"mean final test {mean_test:.3f}"
        )
        name = f"prompt_lines.{setting}.{args.strategy}"
        print(f"RESULT {name}.runs_with_useless_line {runs_kept / max(len(ok), 1):.3f} share")
        print(f"RESULT {name}.final_test {mean_test:.4f} accuracy")
    return 1 if any(o.error for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
