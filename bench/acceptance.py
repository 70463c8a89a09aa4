"""Does the acceptance rule let training learn? Every gate strategy on several simulated worlds.

A benchmark, not a test: it prints figures. For every strategy R
(`[gate] strategy` = eprocess | mcnemar | minibatch | accept_all | strict_improvement |
se_gate), every world seed W and every
share setting S it trains one fresh workspace on the simulated model with `app/demo.toml`:

    default          harmful 0.2  useless 0.15  adversarial 0.0  noise 0.03  (the demo's)
    harmful0.8       harmful 0.8  useless 0.15  adversarial 0.0  noise 0.03
    useless0.6       harmful 0.2  useless 0.6   adversarial 0.0  noise 0.03
    noisy0.3         harmful 0.2  useless 0.15  adversarial 0.0  noise 0.3
    adversarial0.2   harmful 0.2  useless 0.15  adversarial 0.2  noise 0.03  (no targets)
    decoys0.5        as default, and half the evolver's bundles of true rules also carry a
                     decoy (`sim_bundled_decoy_share`; the harmful rule count is targeted)

"noise" is `sim_noise_share`, the share of the simulated agent's answers re-drawn per request
(app/providers/sim/provider.py): at 0.3 a candidate and its baseline disagree by chance on about
a fifth of the units, so the null edits (the evolver's useless lines) really test the gate.

World W's benchmark is generated once (`python -m app.providers.sim.generate --seed W --units U`)
into a temporary store that also holds a copy of the `sim-starter` seed; each run is
`main.py init` then `main.py train --config app/demo.toml --set gate.strategy=R
--set gate.bundle_check=B --set sim_world_seed=W --set sim_units_per_type=U
--set sim_*_share=...` (noise: `sim_noise_share`; B is true for eprocess only: a rival rule
runs as its authors describe it, without skill-trainer's line check of accepted bundles), as
child processes
from the project root, at most `--jobs` (2) at a time. From each finished workspace it reads:

- final test: `analyses/final_test_eval.json` `test_accuracy`;
- harmful in final: how many of the world's decoy statements (a Rule's `decoy`: the harmful
  rule the simulated evolver proposes) occur, compared as `world.normalise`d text, in the files
  of the skills version the final test evaluated (`skills_version` of that file; the
  manifest's current skills if it is absent). For context it also shows the decoys in the
  last skills version written (training ends by restoring the best version, which can hide
  what a strategy let in) and how many distinct decoys the evolver proposed;
- useless in final: how many of the simulated evolver's useless lines
  (app/providers/sim/evolver.py `USELESS_LINES`, the world's null edits) occur, compared as
  `world.normalise`d text, in the final skills version's skill files, counted per file (the
  same line in two skills counts twice: each is an edit a gate let in);
- null accept rate: the null edits the gate accepted over those it tested, from the harness log.
  A null edit is an evolution of a skill whose every applied edit adds a useless line; it was
  tested when its step report's action is a gate decision, and accepted when that is `accept`,
  or `accept_provisional` and the probation kept it (or never settled it). Pooled over the
  seeds: the RESULT is the share, the table shows the counts;
- rejected beyond McNemar: of the candidates the gate rejected after seeing some evidence
  (step reports with action `reject` and W + L > 0), the share whose own counts W, L an exact
  one-sided McNemar test at the gate's α (0.05) would have accepted (`core.stats.mcnemar_exact`).
  It says whether a rejection left a confirmation on the table that a fixed test of the same
  evidence would have made (a share near 0: the evidence was too thin for any such test, and
  learning more needs candidates that win more questions, not a looser test). Pooled over the
  seeds, eprocess only;
- gate calls: `llm_calls` rows whose run_id contains "-gate" (the step's `<prefix>gate-<type>`
  candidate runs and `<prefix>gatebase` baseline runs) or "-anchor-" (probation's re-run of
  the pre-edit anchor at epoch end); total calls: all `llm_calls` rows. Both
  are reported as non-cached rows (the real model cost, `cache_hit = 0`) and as all rows.

A training that fails (exit code, timeout, no final_test_eval.json, or a train run whose
recorded config lacks the keys set here) prints its stderr tail and counts as missing; its
cell shows n < seeds and every target that needs it is MISSED.

Targets per setting (means over the seeds): eprocess final test >= the best of the other five
strategies - 0.03; eprocess leaves no harmful rule in any final skill (every run); eprocess
non-cached total calls <= 1.5 x minibatch's; in noisy0.3, eprocess leaves no useless line in
any final skill (every run). adversarial0.2 is measured but not targeted (only its harmful
rule count is: no setting may leave one). Each is printed MET or MISSED, and the eprocess
RESULT lines carry it as `target <op><value>` for bench/run_all.py. Figures come from the
simulated model, not a real LLM.

    .venv/bin/python bench/acceptance.py [--seeds 1 2 3 4 5] [--settings default harmful0.8 ...]
        [--strategies eprocess mcnemar minibatch accept_all strict_improvement se_gate] [--units 72] [--jobs 2]
        [--timeout 900] [--keep] [--tiny]

Full configuration: 5 seeds x 5 settings x 6 strategies = 150 trainings. One noisy0.3 eprocess
training took 6.5 CPU-s at 72 units (18 at 216, bench/acceptance_large.py), so the whole is
about 5 min at 72 units on 2 free cores and 9-10 min at 216 (bench/run_all.py gives the latter
a 2700 s floor over `make bench`'s 1200 s per bench).

`--tiny` (tests/bench/test_bench_tiny.py) trains one eprocess run of one epoch on a small world
(world seed 1, the default shares, `--units` 24 unless given): it shows the bench still runs
end to end, its figures measure nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's app/, whatever the installed package points at
MAIN = ROOT / "main.py"
CONFIG = ROOT / "app" / "demo.toml"
SEED_NAME = "sim-starter"

STRATEGIES = (
    "eprocess",
    "mcnemar",
    "minibatch",
    "accept_all",
    "strict_improvement",  # SkillOpt's and Reef's rule
    "se_gate",  # cap-evolve's Δ > 2·SE
)
# `sim_<key>_share` of each setting; "noise" is the agent's re-draw share (its default is
# app/providers/sim/provider.py NOISE_SHARE)
DEFAULT_SHARES = {
    "harmful": 0.2,
    "useless": 0.15,
    "adversarial": 0.0,
    "noise": 0.03,
    "bundled_decoy": 0.0,
}
SETTINGS = {
    "default": {},
    "harmful0.8": {"harmful": 0.8},
    "useless0.6": {"useless": 0.6},
    "noisy0.3": {"noise": 0.3},
    "adversarial0.2": {"adversarial": 0.2},
    "decoys0.5": {"bundled_decoy": 0.5},
}
# Settings whose final_test and total_calls are targeted (the harmful rule count always is).
TARGETED = ("default", "harmful0.8", "useless0.6", "noisy0.3")
# Settings where eprocess must leave no useless line: with enough noise a gate that accepts null
# edits shows it here (at the default 0.03 a useless line changes about 2% of the answers).
USELESS_TARGETED = ("noisy0.3",)
# the action of a step report whose gate ran (core/evolution/gate.py GateAction)
GATE_ACTIONS = ("accept", "accept_provisional", "reject")
FINAL_TEST_MARGIN = 0.03
# where eprocess must close this share of the gap from the seed's skills to the oracle's
HEADROOM_TARGETED = ("default",)
HEADROOM_MIN = 0.8
CALLS_RATIO_MAX = 1.5
TINY_UNITS = 24  # --tiny: a world this small trains one epoch in seconds
TAIL_LINES = 25
# gate runs: step.py's `<prefix>gate-<type>` (candidate) and `<prefix>gatebase` (baseline), and
# slow_update.py's `<prefix>anchor-<type>` (probation re-runs the pre-edit anchor as evidence)
GATE_SQL = "instr(run_id, '-gate') > 0 OR instr(run_id, '-anchor-') > 0"


@dataclass
class Job:
    setting: str
    strategy: str
    seed: int
    units: int
    store: str
    questions: str
    workspace: str
    timeout: float
    keep: bool
    extra_sets: tuple[str, ...] = ()  # further `--set KEY=VALUE` for train (--tiny: epochs=1)
    seed_name: str = SEED_NAME  # the store seed init starts from (an oracle run: its own)

    @property
    def label(self) -> str:
        return f"{self.setting} {self.strategy} seed {self.seed}"

    def shares(self) -> dict[str, float]:
        return {**DEFAULT_SHARES, **SETTINGS[self.setting]}


@dataclass
class Outcome:
    job: Job
    ok: bool
    seconds: float
    error: str = ""
    final_test: float = math.nan
    baseline_test: float = math.nan  # the seed's skills on the same test pool
    harmful: int = 0
    harmful_rules: list[str] = field(default_factory=list)
    harmful_proposed: int = 0  # distinct decoys the evolver proposed for a skill in the run
    harmful_last: int = 0  # decoys in the last skills version written (before best restore)
    useless: int = 0  # useless lines in the final skill files, counted per file
    null_tested: int = 0  # null (useless-line) edits a gate decided on
    null_accepted: int = 0  # ... that it accepted (or kept after probation)
    null_provisional: int = 0  # ... that it accepted provisionally (kept or not)
    last_version: str = ""
    skills_version: str = ""
    gate_calls: int = 0
    gate_rows: int = 0
    total_calls: int = 0
    total_rows: int = 0
    rejected: int = 0  # candidates rejected after some evidence (W + L > 0)
    rejected_mcnemar: int = 0  # ... whose W, L an exact one-sided McNemar test at α accepts


# -- child processes -------------------------------------------------------------------------
def run_child(args: list[str], timeout: float) -> tuple[int | str, str, str]:
    """(exit code or "timeout", stdout, stderr) of `python <args>` from the project root.

    The child stays in this process group, so bench/run_all.py's timeout (which kills the
    group it started) ends the trainings too; on this function's own timeout it is killed by id.
    """
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        proc.kill()  # the child started just above, by its id
        out, err = proc.communicate()
        return "timeout", out, err


def tail(text: str, n: int = TAIL_LINES) -> str:
    lines = text.rstrip().splitlines()[-n:]
    return "\n".join("    | " + line for line in lines) or "    | (no output)"


def generate_world(store: Path, seed: int, units: int) -> str:
    name = f"sim-w{seed}-u{units}"
    code, out, err = run_child(
        [
            "-m",
            "app.providers.sim.generate",
            "--seed",
            str(seed),
            "--units",
            str(units),
            "--name",
            name,
            "--out",
            str(store / "questions" / name),
        ],
        300,
    )
    if code != 0:
        raise SystemExit(f"generating world seed {seed} failed ({code}):\n{tail(out + err)}")
    return name


ORACLE = "oracle"  # the jobs that score the world's own rules (not a strategy)


def write_oracle_seed(store: Path, seed: int, units: int) -> str:
    """A copy of the starter seed that already knows world `seed`'s rules: every rule
    statement in its task type's skill, the system rules in the system prompt, the
    read_context rule in its tool prompt (what training can learn, and no more). Trained for
    one epoch, its run's `baseline_test_accuracy` is the oracle on the same test pool."""
    from app.providers.sim.world import SYSTEM_RULES, TOOL_RULE, build_world
    from core.evolution.budget import resolve_skill_file

    name = f"sim-oracle-w{seed}-u{units}"
    seed_dir = store / "seeds" / name
    shutil.copytree(store / "seeds" / SEED_NAME, seed_dir)
    world = build_world(world_name(), seed, units)
    skills = {p.name: "" for p in (seed_dir / "skills").glob("*.md")}
    for task_type in sorted({r.task_type for r in world.rules.values()}):
        # the file the task type reads (its own, else the shared default), as training edits it
        path = seed_dir / "skills" / resolve_skill_file(task_type, skills)
        rules = [r.statement for r in world.rules.values() if r.task_type == task_type]
        text = path.read_text(encoding="utf-8").rstrip("\n")
        path.write_text(text + "\n\n## Rules\n" + "".join(f"- {r}\n" for r in rules))
    for rel, lines in (
        ("prompts/system.md", [rule for _, rule in SYSTEM_RULES]),
        ("prompts/tool_read_context.md", [TOOL_RULE]),
    ):
        path = seed_dir / rel
        text = path.read_text(encoding="utf-8").rstrip("\n")
        path.write_text(text + "\n" + "".join(f"- {line}\n" for line in lines))
    return name


# -- one training (runs in a pool worker) ----------------------------------------------------
def train_one(job: Job) -> Outcome:
    start = time.perf_counter()
    ws = Path(job.workspace)
    try:
        code, out, err = run_child(
            [
                str(MAIN),
                "init",
                str(ws),
                "--seed",
                job.seed_name,
                "--questions",
                job.questions,
                "--store",
                job.store,
            ],
            300,
        )
        if code != 0:
            return Outcome(
                job, False, time.perf_counter() - start, f"init exited {code}:\n{tail(err or out)}"
            )
        sets = {
            "gate.strategy": f'"{gate_strategy(job)}"',
            "gate.bundle_check": str(line_check(job)).lower(),
            "sim_world_seed": str(job.seed),
            "sim_units_per_type": str(job.units),
        }
        sets.update({f"sim_{k}_share": repr(float(v)) for k, v in job.shares().items()})
        # only `train` takes --no-progress (`init` refuses options it does not know)
        cmd = [str(MAIN), "train", "-w", str(ws), "--config", str(CONFIG), "--no-progress"]
        for key, value in sets.items():
            cmd += ["--set", f"{key}={value}"]
        for kv in job.extra_sets:
            cmd += ["--set", kv]
        code, out, err = run_child(cmd, job.timeout)
        seconds = time.perf_counter() - start
        if code != 0:
            what = f"timed out after {job.timeout:.0f} s" if code == "timeout" else f"exited {code}"
            return Outcome(job, False, seconds, f"train {what}:\n{tail(err or out)}")
        try:
            return measure(job, ws, seconds)
        except Exception as e:  # noqa: BLE001 - any unreadable result is a missing run
            return Outcome(
                job,
                False,
                seconds,
                f"reading the workspace failed: {type(e).__name__}: {e}\n{tail(err or out)}",
            )
    finally:
        if not job.keep:
            shutil.rmtree(ws, ignore_errors=True)


def measure(job: Job, ws: Path, seconds: float) -> Outcome:
    from app.providers.sim.world import build_world, normalise
    from core.evolution.gate import GateParams

    final_path = ws / "analyses" / "final_test_eval.json"
    if not final_path.is_file():
        raise FileNotFoundError(f"{final_path} missing")
    final = json.loads(final_path.read_text(encoding="utf-8"))
    version = (
        final.get("skills_version")
        or json.loads((ws / "manifest.json").read_text(encoding="utf-8"))["current"]["skills"]
    )
    skills_dir = ws / "skills" / str(version).split("/")[-1]
    if not skills_dir.is_dir():
        raise FileNotFoundError(f"{skills_dir} missing")
    world = build_world(world_name(), job.seed, job.units)

    def decoys(version_dir: Path) -> list[str]:
        text = "\n".join(
            normalise(p.read_text(encoding="utf-8", errors="replace"))
            for p in sorted(version_dir.rglob("*"))
            if p.is_file()
        )
        return sorted(r.rule_id for r in world.rules.values() if normalise(r.decoy) in text)

    harmful = decoys(skills_dir)
    useless = useless_in(skills_dir)
    written = [p for p in (ws / "skills").iterdir() if p.is_dir() and p.name[1:].isdigit()]
    last = max(written, key=lambda p: int(p.name[1:]))

    conn = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    try:
        check_config(conn, job)
        proposed = set()
        for (edits,) in conn.execute(
            "SELECT edits_json FROM evolutions WHERE target_kind = 'skill'"
        ):
            said = normalise(edits or "")
            proposed |= {r.rule_id for r in world.rules.values() if normalise(r.decoy) in said}
        nulls = null_edit_tally(conn)
        rejected = rejected_counts(conn)
        total_rows, total_calls, gate_rows, gate_calls = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(COALESCE(cache_hit, 0) = 0), 0), "
            f"COALESCE(SUM({GATE_SQL}), 0), "
            f"COALESCE(SUM(({GATE_SQL}) AND COALESCE(cache_hit, 0) = 0), 0) "
            "FROM llm_calls"
        ).fetchone()
    finally:
        conn.close()
    return Outcome(
        job,
        True,
        seconds,
        final_test=float(final["test_accuracy"]),
        baseline_test=float(final.get("baseline_test_accuracy", math.nan)),
        harmful=len(harmful),
        harmful_rules=harmful,
        harmful_proposed=len(proposed),
        harmful_last=len(decoys(last)),
        useless=useless,
        null_tested=nulls.tested,
        null_accepted=nulls.accepted,
        null_provisional=nulls.provisional,
        last_version=last.name,
        skills_version=str(version),
        gate_calls=gate_calls,
        gate_rows=gate_rows,
        total_calls=total_calls,
        total_rows=total_rows,
        rejected=len(rejected),
        rejected_mcnemar=mcnemar_confirmable(rejected, GateParams().alpha),
    )


def rejected_counts(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """(W, L) of every gate test a step report rejected after some evidence."""
    rows = conn.execute(
        "SELECT w, l FROM step_reports WHERE action = 'reject' AND w + l > 0"
    ).fetchall()
    return [(int(won), int(lost)) for won, lost in rows]


def mcnemar_confirmable(counts: list[tuple[int, int]], alpha: float) -> int:
    """How many (W, L) an exact one-sided McNemar test at `alpha` accepts (W beats L)."""
    from core.stats import mcnemar_exact

    return sum(mcnemar_exact(won, lost, "greater") <= alpha for won, lost in counts)


def useless_in(version_dir: Path) -> int:
    """How many of the simulated evolver's useless lines the skill files hold, per file."""
    from app.providers.sim.evolver import USELESS_LINES
    from app.providers.sim.world import normalise

    lines = [normalise(line.removeprefix("- ")) for line in USELESS_LINES]
    texts = [normalise(p.read_text(encoding="utf-8")) for p in sorted(version_dir.rglob("*.md"))]
    return sum(line in text for text in texts for line in lines)


@dataclass(frozen=True)
class NullTally:
    """The null edits (every applied edit adds one of the evolver's useless lines) a run's
    gates decided on, and what they decided."""

    tested: int
    accepted: int
    provisional: int


def null_edit_tally(conn: sqlite3.Connection) -> NullTally:
    """From the harness log: each skill evolution (run `<prefix>evolve`) meets its step report
    (run `<prefix>report`, same task type); a provisional accept is looked up in the epoch
    reports' probation verdicts by the version it produced."""
    rows = conn.execute(
        "SELECT e.edits_json, e.apply_report_json, e.result_version, s.action "
        "FROM evolutions e JOIN step_reports s ON s.task_type = e.task_type "
        "AND substr(e.run_id, 1, length(e.run_id) - length('evolve')) "
        "= substr(s.run_id, 1, length(s.run_id) - length('report')) "
        "WHERE e.target_kind = 'skill' AND e.run_id LIKE '%-evolve' AND s.run_id LIKE '%-report'"
    ).fetchall()
    verdicts = probation_verdicts(conn)
    tested = accepted = provisional = 0
    for edits_json, report_json, result_version, action in rows:
        if action not in GATE_ACTIONS or not is_null_edit(edits_json, report_json):
            continue
        tested += 1
        provisional += action == "accept_provisional"
        # a provisional accept no probation settled stayed in the skills: counted as accepted
        kept = verdicts.get(result_version, "keep") == "keep"
        accepted += action == "accept" or (action == "accept_provisional" and kept)
    return NullTally(tested, accepted, provisional)


def is_null_edit(edits_json: str | None, report_json: str | None) -> bool:
    """Every edit the code applied adds a useless line (and at least one was applied)."""
    from app.providers.sim.evolver import USELESS_LINES
    from app.providers.sim.world import normalise

    edits = json.loads(edits_json or "[]")
    applied = [r["index"] for r in json.loads(report_json or "[]") if r.get("applied")]
    useless = {normalise(line) for line in USELESS_LINES}
    return bool(applied) and all(
        edits[i].get("op") == "add" and normalise(edits[i].get("content") or "") in useless
        for i in applied
    )


def probation_verdicts(conn: sqlite3.Connection) -> dict[str, str]:
    """{skills version a provisional accept produced: "keep" or "rollback"}."""
    verdicts: dict[str, str] = {}
    for (report,) in conn.execute("SELECT report_json FROM epoch_reports"):
        for p in json.loads(report or "{}").get("probations") or []:
            verdicts[str(p.get("accepted_version"))] = str(p.get("verdict"))
    return verdicts


def check_config(conn: sqlite3.Connection, job: Job) -> None:
    """The train run must have recorded the keys this run set (none silently ignored)."""
    row = conn.execute(
        "SELECT config_json FROM _runs WHERE kind = 'train' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise ValueError("no train run in the harness log")
    recorded = json.loads(row[0] or "{}")
    config = {**recorded, **{f"gate.{k}": v for k, v in recorded.get("gate", {}).items()}}
    want = {
        "gate.strategy": gate_strategy(job),
        "gate.bundle_check": line_check(job),
        "sim_world_seed": job.seed,
        "sim_units_per_type": job.units,
        **{f"sim_{k}_share": v for k, v in job.shares().items()},
    }
    wrong = {k: (config.get(k), v) for k, v in want.items() if config.get(k) != v}
    if wrong:
        raise ValueError(f"the train run recorded other settings (got, wanted): {wrong}")


def line_check(job: Job) -> bool:
    """Whether a job's accepted bundles get the line check (`[gate] bundle_check`,
    app/harness/training/bundle_check.py): eprocess's, as by default. A rival rule runs as its
    authors describe it, without one (`--set gate.bundle_check=true` gives it one)."""
    for kv in job.extra_sets:
        key, _, value = kv.partition("=")
        if key.strip() == "gate.bundle_check":
            return value.strip() == "true"
    return job.strategy == "eprocess"


def gate_strategy(job: Job) -> str:
    """What `[gate] strategy` a job trains with (an oracle run trains one epoch: any rule)."""
    return "accept_all" if job.strategy == ORACLE else job.strategy


def world_name() -> str:
    """The simulated world the demo config's agent model names ("sim/basic" -> "basic")."""
    from app.harness.workspace.config import load_config

    return load_config(CONFIG).agent_model.split("/", 1)[-1]


# -- figures ---------------------------------------------------------------------------------
def mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else math.nan


def sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else math.nan


def fmt(x: float, digits: int = 3) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


def summarise(outcomes: list[Outcome], setting: str, strategy: str) -> dict:
    runs = [o for o in outcomes if o.job.setting == setting and o.job.strategy == strategy]
    ok = [o for o in runs if o.ok]
    return {
        "n": len(ok),
        "planned": len(runs),
        "missing": len(runs) - len(ok),
        "test": mean([o.final_test for o in ok]),
        "test_sd": sd([o.final_test for o in ok]),
        "baseline": mean([o.baseline_test for o in ok]),
        # runs in which a null edit was accepted or a decoy is in the final skills
        "runs_false_accept": mean([float(o.null_accepted > 0 or o.harmful > 0) for o in ok]),
        "harmful": mean([o.harmful for o in ok]),
        "harmful_max": max((o.harmful for o in ok), default=math.nan),
        "proposed": mean([o.harmful_proposed for o in ok]),
        "last": mean([o.harmful_last for o in ok]),
        "useless": mean([o.useless for o in ok]),
        "useless_max": max((o.useless for o in ok), default=math.nan),
        "null_tested": sum(o.null_tested for o in ok),
        "null_accepted": sum(o.null_accepted for o in ok),
        "null_provisional": sum(o.null_provisional for o in ok),
        "rejected": sum(o.rejected for o in ok),
        "rejected_mcnemar": sum(o.rejected_mcnemar for o in ok),
        "gate": mean([o.gate_calls for o in ok]),
        "gate_rows": mean([o.gate_rows for o in ok]),
        "total": mean([o.total_calls for o in ok]),
        "total_rows": mean([o.total_rows for o in ok]),
        "seconds": mean([o.seconds for o in ok]),
    }


def report_setting(outcomes: list[Outcome], setting: str, strategies: list[str]) -> list[str]:
    """Print the table, RESULT lines and targets of one setting; return MISSED target names."""
    shares = {**DEFAULT_SHARES, **SETTINGS[setting]}
    print(
        f"\n== setting {setting}: harmful {shares['harmful']}, useless {shares['useless']}, "
        f"adversarial {shares['adversarial']}, noise {shares['noise']}"
        + (f", bundled decoys {shares['bundled_decoy']}" if shares["bundled_decoy"] else "")
        + ("" if setting in TARGETED else " (measured, not targeted)")
    )
    row = "{:<11} {:>5}  {:>15}  {:>16}  {:>7}  {:>8}  {:>15}  {:>14}  {:>17}  {:>17}  {:>5}"
    print(
        row.format(
            "strategy",
            "runs",
            "final test",
            "harmful in final",
            "in last",
            "proposed",
            "useless in final",
            "null accepts",
            "gate calls",
            "total calls",
            "s/run",
        )
    )
    print(
        row.format(
            "",
            "",
            "mean ± sd",
            "mean (max)",
            "mean",
            "mean",
            "mean (max)",
            "acc/tested (p)",
            "real / all rows",
            "real / all rows",
            "mean",
        )
    )
    stats = {r: summarise(outcomes, setting, r) for r in strategies}
    oracle = summarise(outcomes, setting, ORACLE)
    for r, s in stats.items():
        print(
            row.format(
                r,
                f"{s['n']}/{s['planned']}",
                f"{fmt(s['test'])} ± {fmt(s['test_sd'])}",
                f"{fmt(s['harmful'], 2)} ({fmt(float(s['harmful_max']), 0)})",
                fmt(s["last"], 2),
                fmt(s["proposed"], 1),
                f"{fmt(s['useless'], 2)} ({fmt(float(s['useless_max']), 0)})",
                f"{s['null_accepted']}/{s['null_tested']} ({s['null_provisional']})",
                f"{fmt(s['gate'], 0)} / {fmt(s['gate_rows'], 0)}",
                f"{fmt(s['total'], 0)} / {fmt(s['total_rows'], 0)}",
                fmt(s["seconds"], 1),
            )
        )
    bars = thresholds(stats, setting)
    for r, s in stats.items():
        name = f"acceptance.{setting}.{r}"

        def target(key: str, r: str = r) -> str:
            op, value, digits = bars.get(key, ("", math.nan, 0))
            return (
                "" if r != "eprocess" or math.isnan(value) else f" target {op}{fmt(value, digits)}"
            )

        print(f"RESULT {name}.final_test {fmt(s['test'], 4)} accuracy{target('final_test')}")
        print(
            f"RESULT {name}.harmful_in_final {fmt(s['harmful'], 2)} rules"
            f"{target('harmful_in_final')}"
        )
        print(
            f"RESULT {name}.useless_in_final {fmt(s['useless'], 2)} rules"
            f"{target('useless_in_final')}"
        )
        rate = s["null_accepted"] / s["null_tested"] if s["null_tested"] else math.nan
        # null edits accepted / tested: the rule's false-accept rate under the null, in training
        print(f"RESULT {name}.null_accept_rate {fmt(rate, 4)} rate")
        print(f"RESULT {name}.runs_with_false_accept {fmt(s['runs_false_accept'], 2)} share")
        if r == "eprocess" and s["rejected"]:
            share = s["rejected_mcnemar"] / s["rejected"]
            print(
                f"rejected with evidence: {s['rejected']}; of them an exact one-sided McNemar "
                f"test at alpha would have accepted {s['rejected_mcnemar']}"
            )
            print(f"RESULT {name}.rejected_mcnemar_confirmable {fmt(share, 3)} share")
        if oracle["n"]:
            gain = (s["test"] - s["baseline"]) / (oracle["baseline"] - s["baseline"])
            s["headroom"] = gain
            print(
                f"RESULT {name}.headroom_captured {fmt(gain, 3)} share{target('headroom_captured')}"
            )
        print(f"RESULT {name}.gate_calls {fmt(s['gate'], 1)} calls")
        print(f"RESULT {name}.total_calls {fmt(s['total'], 1)} calls{target('total_calls')}")
    if oracle["n"]:
        print(
            f"oracle (the world's own rules from the start, {oracle['n']} world(s)): test "
            f"{fmt(oracle['baseline'])}; headroom_captured = (final - baseline) / "
            "(oracle - baseline), the seed's skills as baseline, on the same test pool"
        )
        print(
            f"RESULT acceptance.{setting}.oracle.final_test {fmt(oracle['baseline'], 4)} accuracy"
        )
    return targets(setting, stats, bars)


def thresholds(stats: dict[str, dict], setting: str) -> dict[str, tuple[str, float, int]]:
    """eprocess's targets in `setting` (its RESULT lines' `target`) as (op, value, digits
    printed); a target the setting does not have is absent."""
    others = [stats[r]["test"] for r in stats if r != "eprocess" and stats[r]["n"]]
    minibatch = stats.get("minibatch", {"n": 0})
    bars = {"harmful_in_final": ("==", 0.0, 0)}
    if setting in USELESS_TARGETED:
        bars["useless_in_final"] = ("==", 0.0, 0)
    if setting in HEADROOM_TARGETED:
        bars["headroom_captured"] = (">=", HEADROOM_MIN, 1)
    if setting in TARGETED:
        bars["final_test"] = (">=", max(others, default=math.nan) - FINAL_TEST_MARGIN, 4)
        bars["total_calls"] = (
            "<=",
            CALLS_RATIO_MAX * minibatch["total"] if minibatch["n"] else math.nan,
            1,
        )
    return bars


def targets(
    setting: str, stats: dict[str, dict], bars: dict[str, tuple[str, float, int]]
) -> list[str]:
    """Print each target MET or MISSED; a target whose runs are incomplete is MISSED."""
    missed: list[str] = []

    def verdict(name: str, met: bool, text: str, incomplete: list[str]) -> None:
        if incomplete:
            met = False
            text += f" [incomplete: {', '.join(incomplete)}]"
        print(f"target {setting} {name}: {'MET' if met else 'MISSED'} — {text}")
        if not met:
            missed.append(f"{setting} {name}")

    def gaps(*names: str) -> list[str]:
        return [
            f"{r} {stats[r]['missing']} of {stats[r]['planned']} runs missing"
            for r in names
            if r in stats and stats[r]["missing"]
        ] + [f"{r} not run" for r in names if r not in stats]

    if "eprocess" not in stats:
        print(f"target {setting}: eprocess not run, no targets checked")
        return [f"{setting} (eprocess not run)"]
    e = stats["eprocess"]
    others = [r for r in stats if r != "eprocess"]
    if "final_test" in bars:
        best = max((stats[r]["test"] for r in others if stats[r]["n"]), default=math.nan)
        best_r = next((r for r in others if stats[r]["n"] and stats[r]["test"] == best), "-")
        bar = bars["final_test"][1]  # compared as printed (4 decimals), like run_all.py does
        verdict(
            "final_test",
            not math.isnan(bar) and round(e["test"], 4) >= round(bar, 4),
            f"eprocess {fmt(e['test'])} vs best other ({best_r}) {fmt(best)} - "
            f"{FINAL_TEST_MARGIN} = {fmt(bar)}",
            gaps("eprocess", *others) or ([] if others else ["no other strategy run"]),
        )
    for key, what in (("harmful", "harmful rule(s)"), ("useless", "useless line(s)")):
        if f"{key}_in_final" in bars:
            verdict(
                f"{key}_in_final",
                e["n"] > 0 and e[f"{key}_max"] == 0,
                f"eprocess max {fmt(float(e[f'{key}_max']), 0)} {what} in a final skill "
                f"over {e['n']} run(s)",
                gaps("eprocess"),
            )
    if "headroom_captured" in bars:
        got = e.get("headroom", math.nan)
        verdict(
            "headroom_captured",
            not math.isnan(got) and round(got, 3) >= HEADROOM_MIN,
            f"eprocess {fmt(got)} of the way from the seed's skills to the oracle's "
            f"(target >= {HEADROOM_MIN})",
            gaps("eprocess") or ([] if not math.isnan(got) else ["no oracle runs"]),
        )
    if "total_calls" in bars:
        m = stats.get("minibatch", {"total": math.nan})
        limit = bars["total_calls"][1]
        ratio = e["total"] / m["total"] if m["total"] else math.nan
        verdict(
            "total_calls",
            not math.isnan(limit) and round(e["total"], 1) <= round(limit, 1),
            f"eprocess {fmt(e['total'], 0)} vs {CALLS_RATIO_MAX} x minibatch "
            f"{fmt(m['total'], 0)} = {fmt(limit, 0)} (ratio {fmt(ratio, 2)})",
            gaps("eprocess", "minibatch"),
        )
    return missed


# -- main ------------------------------------------------------------------------------------
def add_set_option(parser: argparse.ArgumentParser, runs: str) -> None:
    """`--set KEY=VALUE`, repeatable, into `args.sets`: one more config setting for every
    `runs` (gepa_compare.py and skillopt_compare.py take it for their trainer runs)."""
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"one more config setting for every {runs} (repeatable)",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[1, 2, 3, 4, 5],
        help="simulated world seeds (sim_world_seed)",
    )
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument(
        "--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES)
    )
    parser.add_argument(
        "--units",
        type=int,
        default=None,
        help="units per task type (sim_units_per_type; default 72 = the built-in size, 24 "
        "with --tiny)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="trainings run at once")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per training")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    add_set_option(parser, "training")
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="one eprocess training of one epoch on a small world: checks the bench runs",
    )
    args = parser.parse_args()
    extra_sets: tuple[str, ...] = ()
    if args.tiny:
        args.seeds, args.settings, args.strategies = [1], ["default"], ["eprocess"]
        extra_sets = ("epochs=1",)
    extra_sets += tuple(args.sets)
    if args.units is None:
        args.units = TINY_UNITS if args.tiny else 72

    wall = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-acceptance-"))
    store = tmp / "store"
    shutil.copytree(ROOT / "store" / "seeds" / SEED_NAME, store / "seeds" / SEED_NAME)
    questions = {seed: generate_world(store, seed, args.units) for seed in args.seeds}
    jobs = [
        Job(
            setting,
            strategy,
            seed,
            args.units,
            str(store),
            questions[seed],
            str(tmp / "ws" / f"{setting}-{strategy}-w{seed}"),
            args.timeout,
            args.keep,
            extra_sets,
        )
        for setting in args.settings
        for seed in args.seeds
        for strategy in args.strategies
    ]
    if not args.tiny:  # the oracle: the world's rules from the start, trained one epoch
        # under accept_all: a `--set gate.*` varies the strategies compared, not the oracle
        oracle_sets = (*(kv for kv in extra_sets if not kv.startswith("gate.")), "epochs=1")
        oracles = {seed: write_oracle_seed(store, seed, args.units) for seed in args.seeds}
        jobs += [
            Job(
                setting,
                ORACLE,
                seed,
                args.units,
                str(store),
                questions[seed],
                str(tmp / "ws" / f"{setting}-oracle-w{seed}"),
                args.timeout,
                args.keep,
                oracle_sets,
                seed_name=oracles[seed],
            )
            for setting in args.settings
            for seed in args.seeds
        ]
    n_oracle = sum(job.strategy == ORACLE for job in jobs)
    print(
        f"acceptance: {len(jobs) - n_oracle} trainings = {len(args.strategies)} strategies x "
        f"{len(args.seeds)} world seeds {args.seeds} x {len(args.settings)} settings "
        f"(+ {n_oracle} one-epoch oracle runs), "
        f"{args.units} units per task type, {args.jobs} at a time; config {CONFIG.name}; "
        f"simulated model (figures show the harness, not a real LLM)",
        flush=True,
    )

    outcomes: list[Outcome] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(train_one, job): job for job in jobs}
        for done, future in enumerate(as_completed(futures), start=1):
            job = futures[future]
            try:
                o = future.result()
            except Exception as e:  # noqa: BLE001 - a crashed worker is a missing run too
                o = Outcome(job, False, math.nan, f"worker failed: {type(e).__name__}: {e}")
            outcomes.append(o)
            head = f"[{done:>3}/{len(jobs)}] {job.label:<32}"
            if o.ok and job.strategy == ORACLE:
                print(f"{head} oracle test {o.baseline_test:.3f}  {o.seconds:.1f} s", flush=True)
            elif o.ok:
                rules = f" {o.harmful_rules}" if o.harmful_rules else ""
                print(
                    f"{head} test {o.final_test:.3f}  harmful {o.harmful}{rules} "
                    f"(last {o.last_version}: {o.harmful_last}; {o.harmful_proposed} proposed)  "
                    f"useless {o.useless}  null accepts {o.null_accepted}/{o.null_tested} "
                    f"({o.null_provisional} provisional)  "
                    f"gate {o.gate_calls}/{o.gate_rows}  total {o.total_calls}/{o.total_rows} "
                    f" skills {o.skills_version}  {o.seconds:.1f} s",
                    flush=True,
                )
            else:
                print(
                    f"{head} FAILED (counted as missing) after {o.seconds:.1f} s: {o.error}",
                    flush=True,
                )
    if args.keep:
        print(f"kept workspaces under {tmp / 'ws'}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)

    missed: list[str] = []
    for setting in args.settings:
        missed += report_setting(outcomes, setting, args.strategies)
    failed = [o for o in outcomes if not o.ok]
    seconds = time.perf_counter() - wall
    print(
        f"\nmissing runs: {len(failed)} of {len(outcomes)}"
        + "".join(f"\n  {o.job.label}" for o in failed)
    )
    print(f"targets missed: {len(missed)}" + "".join(f"\n  {m}" for m in missed))
    print(
        f"wall time: {seconds:.0f} s for {len(jobs)} trainings "
        f"({seconds / max(1, len(jobs)):.1f} s each at {args.jobs} at a time)"
    )
    print(f"RESULT acceptance.wall_time {seconds:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
