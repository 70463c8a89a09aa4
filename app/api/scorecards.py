"""`scorecard`: how good a ranked fork's data is (docs/scorecard.md), from yield and verifier
flakiness to held-out accuracy with its memories and without."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.api._common import _budget_is_run_failed, _run_sync, _workspace
from app.api.run_ids import next_run_id
from app.api_args import ConfigSource, workspace_config
from app.api_args import expect as _expect
from app.harness.rollouts.session import Session
from app.harness.workspace.atomic import write_json_atomic
from app.harness.workspace.ids import check_run_id
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars


@dataclass(frozen=True)
class ScorecardFigure:
    name: str
    value: float | None
    unit: str
    basis: str


@dataclass(frozen=True)
class ScorecardResult:
    rollout_id: str
    figures: tuple[ScorecardFigure, ...]
    warnings: tuple[str, ...]
    heldout_mcnemar_p: float | None
    heldout_powered: bool | None
    loop_health: dict[str, Any]
    report_path: Path

    def figure(self, name: str) -> ScorecardFigure:
        return next(f for f in self.figures if f.name == name)


def scorecard(
    workspace: str | Path,
    rollout_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    reruns: int = 3,
    memory_k: int = 3,
    progress: bool | None = False,
) -> ScorecardResult:
    """Judge ranked fork `rollout_id`'s data (docs/scorecard.md): yield, verifier flakiness
    over `reruns` reruns, planted-canary leak rate, cost per clean trajectory, and held-out
    test accuracy with up to `memory_k` of its memories per question vs without (two eval
    runs of the test pool). The report goes to `analyses/scorecard_<rollout>.json`."""
    return _run_sync(
        scorecard_async,
        workspace,
        rollout_id,
        config,
        overrides=overrides,
        reruns=reruns,
        memory_k=memory_k,
        progress=progress,
    )


async def scorecard_async(
    workspace: str | Path,
    rollout_id: str,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    reruns: int = 3,
    memory_k: int = 3,
    progress: bool | None = False,
) -> ScorecardResult:
    from app.harness.data.scorecard import build_scorecard

    _expect("rollout_id", rollout_id, isinstance(rollout_id, str), "a fork's id, e.g. 'fork-1'")
    _expect("reruns", reruns, type(reruns) is int and reruns >= 2, "a whole number, at least 2")
    _expect("memory_k", memory_k, type(memory_k) is int and memory_k >= 0, "a whole number >= 0")
    check_run_id(rollout_id, "rollout")
    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with (
        WriterLock(root, "scorecard"),
        Session(root, run_config, Bars(enabled=progress)) as session,
    ):
        run_ids = (
            next_run_id(session, f"scorecard-{rollout_id}-mem-"),
            next_run_id(session, f"scorecard-{rollout_id}-nomem-"),
        )
        with session.bars.live(), _budget_is_run_failed():
            report = await build_scorecard(
                session, rollout_id, reruns=reruns, memory_k=memory_k, heldout_run_ids=run_ids
            )
        path = session.paths.analyses / f"scorecard_{rollout_id}.json"
        write_json_atomic(path, report)
    paired = report["heldout"]["paired"]
    return ScorecardResult(
        rollout_id=rollout_id,
        figures=tuple(ScorecardFigure(**f) for f in report["figures"]),
        warnings=tuple(report["warnings"]),
        heldout_mcnemar_p=None if paired is None else paired["mcnemar_p"],
        heldout_powered=None if paired is None else paired["powered"],
        loop_health=dict(report["loop_health"]),
        report_path=path,
    )
