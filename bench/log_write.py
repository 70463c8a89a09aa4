"""How fast does the harness log take predictions? (docs/architecture.md#the-harness-log:
batched inserts, WAL.)

A benchmark, not a test: it prints figures. Builds N prediction rows shaped like
`app.harness.rollouts.inference.prediction_row` (every column of the `predictions` table, a multi-turn
trajectory of about --traj-bytes of JSON each), then writes them into a fresh harness.db:

  harness   `HarnessLog.upsert_predictions` in batches of --batch (one transaction each; the
            path `run_inference` uses; the schema's three indexes are maintained)
  insert    `HarnessLog.insert("predictions", ...)` in the same batches
  plain     one `sqlite3.executemany` in one transaction into the same schema and pragmas
            (WAL, synchronous=NORMAL): the floor the harness is compared against

Row building is not timed. Each variant runs --reps times (order rotated each round, fresh
database each time) and medians are reported, because a shared machine makes single runs
differ by 20-30 %.

    .venv/bin/python bench/log_write.py [--rows 100000] [--batch 500] [--traj-bytes 3000] [--reps 3]
        [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere
for _name in ("pandas", "numpy"):  # sqlite-utils imports pandas if present; not needed here
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from app.harness.workspace.harness_log import HarnessLog  # noqa: E402
from app.harness.workspace.harness_log.predictions import PredictionRecord  # noqa: E402

TARGET_ROWS_PER_S = 20_000
TASK_TYPES = ("dates", "ledger", "pricing", "routing", "tagging", "units")
WORDS = (
    "ledger",
    "balance",
    "invoice",
    "route",
    "tag",
    "unit",
    "convert",
    "total",
    "rule",
    "date",
    "period",
    "account",
    "credit",
    "debit",
    "carrier",
    "zone",
    "price",
    "tier",
)


def _phrases(rng: random.Random, n: int, lo: int, hi: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def trajectory(
    rng: random.Random, qid: str, answer: str, traj_bytes: int, texts: list[str], outputs: list[str]
) -> list[dict]:
    """A realistic agent trajectory: model turns with tool calls, tool outputs, a verdict."""
    steps: list[dict[str, Any]] = []
    turn = 0
    size = 0
    while size < traj_bytes - 400:
        text = f"{rng.choice(texts)} (case {qid}, turn {turn})"
        call = {
            "id": f"call_{turn}_{rng.getrandbits(32):08x}",
            "name": "read_context",
            "arguments": {"question_id": qid, "section": rng.choice(WORDS)},
        }
        steps.append({"turn": turn, "type": "model", "text": text, "tool_calls": [call]})
        output = f"{rng.choice(outputs)} [{rng.getrandbits(24)}]"
        steps.append(
            {
                "turn": turn,
                "type": "tool",
                "name": "read_context",
                "arguments": call["arguments"],
                "status": "ok",
                "output": output,
            }
        )
        size += len(text) + len(output) + 220
        turn += 1
    final = f"Applying the rules to case {qid}.\nANSWER: {answer}"
    steps.append({"turn": turn, "type": "model", "text": final, "tool_calls": []})
    steps.append(
        {
            "type": "verdict",
            "prediction": answer,
            "answer": answer,
            "correct": True,
            "checker": "exact",
            "stop_reason": "final",
        }
    )
    return steps


def build_rows(n: int, traj_bytes: int, seed: int = 7) -> list[dict[str, Any]]:
    """Distinct rows: 1,000 trajectory templates, each row with its own ids and numbers.

    Templates keep building fast (a few seconds for 100k rows); every steps_json is still a
    different string (question id, call ids, answer) of about `traj_bytes`.
    """
    rng = random.Random(seed)
    texts, outputs = _phrases(rng, 500, 20, 60), _phrases(rng, 500, 40, 120)
    templates = [
        json.dumps(
            trajectory(rng, "@QID@", "@ANS@", traj_bytes, texts, outputs), ensure_ascii=False
        )
        for _ in range(1000)
    ]
    created = "2026-01-01T00:00:00+00:00"
    rows = []
    for i in range(n):
        task = TASK_TYPES[i % len(TASK_TYPES)]
        qid = f"{task}-q{i:06d}"
        answer = str(rng.randint(100, 9999))
        correct = rng.random() < 0.6
        steps_json = templates[i % len(templates)].replace("@QID@", qid).replace("@ANS@", answer)
        rows.append(
            {
                "run_id": f"train1-e{1 + i // 50_000}-s{(i // 500) % 100}-rollout",
                "question_id": qid,
                "unit_id": qid[:-1] if i % 2 else qid,
                "task_type": task,
                "prediction": answer if correct else str(int(answer) + 1),
                "answer": answer,
                "correct": int(correct),
                "stop_reason": "final",
                "steps_json": steps_json,
                "tokens_in": rng.randint(500, 4000),
                "tokens_out": rng.randint(20, 400),
                "cost_usd": rng.random() / 1000,
                "latency_s": round(rng.random() * 5, 4),
                "skills_version": "v3",
                "prompts_version": "v1",
                "created_at": created,
            }
        )
    return rows


def db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def run_harness(path: Path, rows: list[dict], batch: int, method: str) -> tuple[float, float]:
    records = [PredictionRecord.from_columns(r) for r in rows]  # as the harness builds them
    log = HarnessLog(path)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(0, len(records), batch):
            chunk = records[i : i + batch]
            if method == "upsert":
                log.upsert_predictions(chunk)
            else:
                log.insert(chunk)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        log.close()
    return elapsed, cpu


def run_plain(path: Path, rows: list[dict]) -> tuple[float, float]:
    HarnessLog(path).close()  # the same schema and indexes, created untimed
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    columns = list(rows[0])
    sql = (
        f"INSERT INTO predictions ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    )
    try:
        start, cpu = time.perf_counter(), time.process_time()
        conn.execute("BEGIN")
        conn.executemany(sql, [tuple(r[c] for c in columns) for r in rows])
        conn.execute("COMMIT")
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        conn.close()
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--traj-bytes", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--small-traj-bytes",
        type=int,
        default=400,
        help="also time the harness with short trajectories like the sim's "
        "(about 300 bytes); 0 skips",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="scratch folder (default: the system temp dir, /tmp); e.g. "
        "/dev/shm to see how much of the time is the disk",
    )
    parser.add_argument(
        "--with-insert-rows",
        action="store_true",
        help="also time HarnessLog.insert (same SQL minus OR REPLACE)",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="2,000 rows once (tests/bench/test_bench_tiny.py): checks the bench runs",
    )
    args = parser.parse_args()
    if args.tiny:
        args.rows, args.reps = 2000, 1

    t0 = time.perf_counter()
    rows = build_rows(args.rows, args.traj_bytes)
    mean_traj = statistics.fmean(len(r["steps_json"]) for r in rows)
    print(
        f"built {len(rows)} prediction rows in {time.perf_counter() - t0:.1f} s "
        f"(steps_json mean {mean_traj:.0f} bytes, untimed)"
    )

    variants = {
        "harness": lambda p: run_harness(p, rows, args.batch, "upsert"),
        "plain": lambda p: run_plain(p, rows),
    }
    if args.with_insert_rows:
        variants["insert"] = lambda p: run_harness(p, rows, args.batch, "insert")
    label = {
        "harness": f"HarnessLog.upsert_predictions, batches of {args.batch}",
        "insert": f"HarnessLog.insert, batches of {args.batch}",
        "plain": "sqlite3.executemany, one transaction",
    }
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    sizes: dict[str, int] = {}
    names = list(variants)
    with tempfile.TemporaryDirectory(prefix="bench-log-", dir=args.dir) as tmp:
        for rep in range(args.reps):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                path = Path(tmp) / f"{name}-{rep}.db"
                elapsed, cpu = variants[name](path)
                walls[name].append(elapsed)
                cpus[name].append(cpu)
                sizes[name] = db_size(path)
                print(
                    f"rep {rep + 1} {name:<8} {len(rows) / elapsed:9.0f} rows/s "
                    f"({elapsed:5.2f} s wall, {cpu:5.2f} s CPU, db {sizes[name] / 1e6:6.1f} MB)",
                    flush=True,
                )
                for p in Path(tmp).glob(path.name + "*"):
                    os.unlink(p)
        small_rate = small_mean = None
        if args.small_traj_bytes:
            small = build_rows(args.rows, args.small_traj_bytes)
            small_mean = statistics.fmean(len(r["steps_json"]) for r in small)
            small_walls = []
            for rep in range(args.reps):
                path = Path(tmp) / f"small-{rep}.db"
                elapsed, cpu = run_harness(path, small, args.batch, "upsert")
                small_walls.append(elapsed)
                print(
                    f"rep {rep + 1} harness, short trajectories ({small_mean:.0f} bytes) "
                    f"{len(small) / elapsed:9.0f} rows/s ({elapsed:5.2f} s wall, {cpu:5.2f} s "
                    f"CPU, db {db_size(path) / 1e6:6.1f} MB)",
                    flush=True,
                )
                for p in Path(tmp).glob(path.name + "*"):
                    os.unlink(p)
            small_rate = len(small) / statistics.median(small_walls)

    rate = {name: len(rows) / statistics.median(t) for name, t in walls.items()}
    cpu_us = {name: statistics.median(t) * 1e6 / len(rows) for name, t in cpus.items()}
    print()
    for name in names:
        print(
            f"median {name:<8} {rate[name]:9.0f} rows/s, {cpu_us[name]:5.1f} us CPU/row "
            f"({label[name]})"
        )
    ratio = rate["harness"] / rate["plain"]
    size = sizes["harness"]
    print(
        f"ratio harness/plain: rows/s {ratio:.2f}, CPU/row "
        f"{cpu_us['harness'] / cpu_us['plain']:.2f}"
    )
    print(
        f"database size for {len(rows)} rows: {size / 1e6:.1f} MB ({size / len(rows):.0f} "
        f"bytes/row); the harness wrote {rate['harness'] * size / len(rows) / 1e6:.0f} MB/s. "
        f"this process's CPU alone would allow {1e6 / cpu_us['harness']:.0f} rows/s; the "
        "rest of the wall time is waiting (disk flushes at WAL checkpoints, or other "
        "processes on a shared machine)"
    )
    if small_rate is not None:
        print(
            f"median harness, short trajectories ({small_mean:.0f} bytes): {small_rate:.0f} rows/s"
        )
    print(
        f"RESULT log_write.upsert_rows_per_s {rate['harness']:.0f} rows/s "
        f"target >={TARGET_ROWS_PER_S}"
    )
    if "insert" in rate:
        print(
            f"RESULT log_write.insert_rows_per_s {rate['insert']:.0f} rows/s "
            f"target >={TARGET_ROWS_PER_S}"
        )
    if small_rate is not None:
        print(
            f"RESULT log_write.upsert_rows_per_s_short_traj {small_rate:.0f} rows/s "
            f"target >={TARGET_ROWS_PER_S}"
        )
    print(f"RESULT log_write.plain_executemany_rows_per_s {rate['plain']:.0f} rows/s")
    print(f"RESULT log_write.harness_over_plain {ratio:.2f} ratio")
    print(f"RESULT log_write.cpu_us_per_row {cpu_us['harness']:.1f} us")
    print(f"RESULT log_write.db_size_mb {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
