"""Subprocess target for the harness-log concurrency test: one writer, many batches.

    python log_writer.py DB TOTAL BATCH

Prints "ready" after opening the log, then inserts TOTAL prediction rows in batches of BATCH
(one transaction each) and prints "done N" with the final row count.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
for _name in ("pandas", "numpy"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from app.harness.workspace.harness_log import HarnessLog  # noqa: E402
from tests.support.log_rows import insert_rows  # noqa: E402


def main() -> None:
    db, total, batch = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    log = HarnessLog(db)
    log.register_run("writer-run", kind="infer")
    print("ready", flush=True)
    for start in range(0, total, batch):
        rows = [
            {
                "run_id": "writer-run",
                "question_id": f"q{i:06d}",
                "unit_id": f"q{i:06d}",
                "task_type": "ledger",
                "prediction": "42",
                "answer": "42",
                "correct": i % 2,
                "stop_reason": "final",
                "steps_json": "[]",
            }
            for i in range(start, min(start + batch, total))
        ]
        insert_rows(log, "predictions", rows)
    n = log.conn.execute("SELECT COUNT(*) FROM predictions").fetchone()[0]
    log.close()
    print(f"done {n}", flush=True)


if __name__ == "__main__":
    main()
