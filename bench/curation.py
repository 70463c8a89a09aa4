"""Curated training data on the simulated world (docs/curation.md): trajectory classes, the
cost-ordered verifier cascade, a token-weighted mix and per-record lineage.

A benchmark, not a test: it prints figures. On a fresh workspace (seed `sim-starter`,
benchmark `sim-basic`, model `sim/basic`):

1. fork: the diagnosis pool's questions as 8 branches, temperatures 0 .. 1;
2. rank twice with the verifiers `trajectory`, `checker`, `completed` (declared in that,
   the most expensive, order): once running every verifier on every branch, once with
   `--cascade`. The sim's verifiers cost microseconds, so their costs are declared as the
   stages of a real pipeline would cost (docs/curation.md#the-verifier-cascade): `completed`
   a syntax check (50 us), `checker` a static check (120 ms), `trajectory` a sandbox replay
   (8.5 s); pass rates are measured. `curation.cascade_cost_ratio` is the cascade's cost
   (each stage's entered branches x its cost) over every verifier on every branch, with the
   accepted set checked identical (`curation.cascade_same_accepted`);
3. the classes' shares of all ranked branches: the sim's tool fault is a `read_context`
   call without `section="full"` (a partial view), so a recovery here is a pass after that
   partial view (`curation.recovery_retry_share`: the recoveries that re-called the tool);
4. export `--mix pristine=0.65,recovery=0.25 --by tokens`: the largest realised-vs-requested
   token share error in percentage points;
5. `export verify` on the untouched export (0 failures) and after one byte of one record is
   changed (1 failure);
6. `scorecard` (docs/scorecard.md): yield, verifier flakiness over 2 reruns, planted-canary
   leak rate, and the held-out test pool answered with up to 3 of the fork's memories per
   question vs without: `curation.scorecard_p_task_gain` in percentage points and its exact
   McNemar p (`curation.scorecard_p_task_gain_p`), whether that comparison is powered.

    .venv/bin/python bench/curation.py [--tiny]

`--tiny` (tests/bench/test_bench_tiny.py): 24 questions x 4 branches; the share-error target
is left out of the exit code there (too few records to hit 2 pp).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for _name in ("pandas", "numpy"):  # sqlite-utils imports pandas if present; not needed here
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from loguru import logger  # noqa: E402

from app import api  # noqa: E402
from app.harness.workspace.store import benchmark_dir, load_seed, seed_dir  # noqa: E402
from app.harness.workspace.workspace import init_workspace  # noqa: E402
from app.paths import builtin_store  # noqa: E402

VERIFIERS = ["trajectory", "checker", "completed"]
DECLARED_COSTS = {"completed": 50e-6, "checker": 0.120, "trajectory": 8.5}
MIX = "pristine=0.65,recovery=0.25"
TARGET_CASCADE_RATIO = 0.5
TARGET_SHARE_ERROR_PP = 2.0


def accepted(ws: Path, rollout: str) -> set[tuple[str, int]]:
    conn = sqlite3.connect(ws / "harness.db")
    try:
        return set(
            conn.execute(
                "SELECT question_id, branch_index FROM rankings WHERE run_id = ? AND objective = 1",
                (rollout,),
            )
        )
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="24 questions x 4 branches")
    args = parser.parse_args()
    logger.remove()
    branches, limit = (4, 24) if args.tiny else (8, None)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        init_workspace(
            ws,
            load_seed(seed_dir(builtin_store(), "sim-starter")),
            benchmark_dir(builtin_store(), "sim-basic"),
        )
        api.fork(ws, branches=branches, temperature_range=(0.0, 1.0), limit=limit, rollout_id="c")
        api.rank(ws, "c", verifiers=VERIFIERS, remember=False)
        every = accepted(ws, "c")
        ranked = api.rank(  # its verified winners become memories for the scorecard
            ws,
            "c",
            verifiers=VERIFIERS,
            remember=True,
            cascade=True,
            verifier_costs=DECLARED_COSTS,
        )
        same = accepted(ws, "c") == every
        k, c = ranked.cascade, ranked.classes
        assert k is not None and c is not None
        total = sum(c.counts.values())
        out = Path(tmp) / "export"
        result = api.export(ws, ["c"], out=out, mix=MIX, by="tokens", seed=0)
        curated = result.curation
        assert curated is not None and curated.mix_max_error_pp is not None
        untouched = api.export_verify(out, ws).failures
        changed = Path(tmp) / "changed"
        shutil.copytree(out, changed)
        path = changed / "sft_trl.jsonl"
        data = bytearray(path.read_bytes())
        at = data.index(b"ANSWER: ") + len(b"ANSWER: ")
        data[at] = ord("7") if data[at] != ord("7") else ord("8")
        path.write_bytes(bytes(data))
        one_byte = api.export_verify(changed).failures
        manifest = json.loads((out / "curation.manifest.json").read_text())
        card = api.scorecard(ws, "c", reruns=2, memory_k=3)
    print(f"# {total} branches; order {' > '.join(k.order)}; mix used {manifest['mix']['used']}")
    print(f"RESULT curation.pristine_share {c.counts['pristine'] / total:.3f} share")
    print(f"RESULT curation.recovery_share {c.counts['recovery'] / total:.3f} share")
    print(f"RESULT curation.negative_share {c.counts['negative'] / total:.3f} share")
    retry = c.recovery_with_retry / c.counts["recovery"] if c.counts["recovery"] else 0.0
    print(f"RESULT curation.recovery_retry_share {retry:.3f} share")
    ratio = k.cost_ratio if k.cost_ratio is not None else float("nan")
    print(f"RESULT curation.cascade_cost_ratio {ratio:.3f} ratio target <={TARGET_CASCADE_RATIO}")
    print(f"RESULT curation.cascade_same_accepted {int(same)} bool target ==1")
    print(f"RESULT curation.cascade_yield {k.yield_rate:.4f} rate")
    per = k.cost_per_accepted_s if k.cost_per_accepted_s is not None else float("nan")
    print(f"RESULT curation.cascade_cost_per_accepted_s {per:.3f} s")
    error = curated.mix_max_error_pp
    target = "" if args.tiny else f" target <={TARGET_SHARE_ERROR_PP}"
    print(f"RESULT curation.mix_token_share_error_pp {error:.2f} pp{target}")
    print(f"RESULT curation.lineage_verify_failures_untouched {untouched} records target ==0")
    print(f"RESULT curation.lineage_verify_failures_one_byte {one_byte} records target ==1")
    for f in card.figures:
        print(f"# scorecard {f.name}: {f.basis}")
    for w in card.warnings:
        print(f"# scorecard warning: {w}")
    gain = card.figure("heldout_gain_pp").value
    p_value = card.heldout_mcnemar_p
    print(f"RESULT curation.scorecard_yield {card.figure('yield_eta').value:.4f} share")
    print(f"RESULT curation.scorecard_r_flake {card.figure('flakiness_r_flake').value:.4f} share")
    print(
        f"RESULT curation.scorecard_canary_leak_rate {card.figure('canary_leak_rate').value:.4f} share"
    )
    print(f"RESULT curation.scorecard_p_task_gain {_num(gain):.2f} pp")
    print(f"RESULT curation.scorecard_p_task_gain_p {_num(p_value):.4g} p")
    print(f"RESULT curation.scorecard_powered {int(bool(card.heldout_powered))} bool")
    met = (
        ratio <= TARGET_CASCADE_RATIO
        and same
        and untouched == 0
        and one_byte == 1
        and (args.tiny or error <= TARGET_SHARE_ERROR_PP)
    )
    return 0 if met else 1


def _num(value: float | None) -> float:
    return float("nan") if value is None else value


if __name__ == "__main__":
    sys.exit(main())
