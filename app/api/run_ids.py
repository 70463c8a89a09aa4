"""Run ids of eval, infer, fork and check runs: the next free one of a prefix, and a given one
claimed without replacing a training run's rows (or another run's unless asked to)."""

from __future__ import annotations

import re
from typing import Any

from loguru import logger

from app.errors import UserError
from app.harness.rollouts.session import Session
from app.harness.workspace.harness_log import LogReader
from app.harness.workspace.ids import check_run_id


def next_run_id(session: Session, prefix: str) -> str:
    taken = {r.run_id for r in LogReader(session.log).runs()}
    n = sum(1 for r in taken if r.startswith(prefix)) + 1
    while f"{prefix}{n}" in taken:  # an id given with --run-id may sit in the sequence
        n += 1
    return f"{prefix}{n}"


def claim_run_id(session: Session, run_id: str, overwrite: bool) -> dict[str, Any] | None:
    """Refuse a run id that would replace another run's rows, unless `overwrite` is given
    for an infer/eval run; returns what is being overwritten, for the new run's provenance."""
    _check_run_id(run_id)
    old = LogReader(session.log).run(run_id)
    if old is None:
        return None
    if not overwrite:
        raise UserError(
            f"--run-id (run_id) {run_id}: a {old.kind} run of that id already exists "
            f"(started {old.started_at}, {old.status}); pick another id, or "
            "add --overwrite-run (overwrite_run=True) to replace it"
        )
    logger.warning("replacing run {} ({} run started {})", run_id, old.kind, old.started_at)
    return {
        "run_id": old.run_id,
        "kind": old.kind,
        "status": old.status,
        "started_at": old.started_at,
        "finished_at": old.finished_at,
    }


TRAINING_RUN_RE = re.compile(r"(baseline|train\d+)(-.*)?")


def _check_run_id(run_id: str) -> None:
    check_run_id(run_id, "--run-id (run_id)")
    if TRAINING_RUN_RE.fullmatch(run_id):
        raise UserError(
            f"--run-id (run_id) {run_id}: ids like 'baseline' and 'trainN...' belong to "
            "training and are never replaced; pick another id"
        )
