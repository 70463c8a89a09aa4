"""`demo`: a fresh workspace from the sim seed, a full training run, and what to look at next."""

from __future__ import annotations

import time
from pathlib import Path

from loguru import logger

from app.harness.config import RunConfig
from app.harness.runner import Runner, read_final
from app.harness.session import SIM_NOTICE, Session
from app.harness.store import benchmark_dir, load_seed, seed_dir
from app.harness.vocabulary import Count
from app.harness.workspace import archive_workspace, init_workspace
from app.harness.writer_lock import WriterLock
from app.paths import STORE_DIR
from app.progress import Bars
from app.sanitize import visible

DEMO_SEED = "sim-starter"
DEMO_QUESTIONS = "sim-basic"


def run_demo(workspace: Path, config: RunConfig, bars: Bars) -> int:
    started = time.perf_counter()
    lock = WriterLock(workspace, "demo")
    try:  # a demo still being trained must not be archived under its feet
        if workspace.exists():
            if (workspace / "manifest.json").is_file():
                lock.acquire()
            archived = archive_workspace(workspace)
            logger.info("archived the previous demo workspace to {}", archived)
        init_workspace(
            workspace,
            load_seed(seed_dir(STORE_DIR, DEMO_SEED)),
            benchmark_dir(STORE_DIR, DEMO_QUESTIONS),
            lock=lock,
        )
        logger.info(
            "created {} from seed {} and benchmark {}", workspace, DEMO_SEED, DEMO_QUESTIONS
        )
        with Session(workspace, config, bars) as session:
            Runner(session).run_train(resume=False)
            totals = dict(session.recorder.totals)
    finally:
        lock.release()
    print(visible(demo_summary(workspace, totals, time.perf_counter() - started)))
    return 0


def demo_summary(workspace: Path, totals: dict, seconds: float) -> str:
    final = read_final(workspace) or {}
    curve = final.get("curve", [])
    lines = ["", "learning curve (validation accuracy by epoch; test = held-out, never tuned on)"]
    baseline_val = final.get("best", {}).get("val_acc")
    for row in curve:
        bar = "#" * round(row["val_acc"] * 40)
        test = f"  test {row['test_acc']:.3f}" if row.get("test_acc") is not None else ""
        lines.append(f"  epoch {row['epoch']}: val {row['val_acc']:.3f}{test}  {bar}")
    counts = {
        k: sum(r.get(k, 0) for r in curve)
        for k in (Count.ACCEPTED, Count.PROVISIONAL, Count.REJECTED, Count.ROLLED_BACK, Count.KEPT)
    }
    lines += [
        "",
        f"gate decisions: {counts[Count.ACCEPTED]} accepted, "
        f"{counts[Count.PROVISIONAL]} provisional ({counts[Count.KEPT]} kept, "
        f"{counts[Count.ROLLED_BACK]} rolled back at epoch end), {counts[Count.REJECTED]} rejected",
        f"test accuracy: baseline {final.get('baseline_test_accuracy', 0):.3f} -> "
        f"final {final.get('test_accuracy', 0):.3f} "
        f"(best {final.get('skills_version')}/{final.get('prompts_version')}, "
        f"best validation {baseline_val if baseline_val is None else f'{baseline_val:.3f}'})",
        f"model calls: {totals['calls']} ({totals['cache_hits']} from cache), "
        f"simulated cost ${totals['cost_usd']:.4f}, wall time {seconds:.1f}s",
        SIM_NOTICE,
        "",
        "next:",
        f"  python main.py tui {workspace}        # browse steps, gate evidence, diffs",
        f"  python main.py report {workspace}     # plain-text summary",
    ]
    return "\n".join(lines)


__all__ = ["run_demo", "DEMO_SEED"]
