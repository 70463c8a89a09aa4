"""`estimate`: model calls, tokens, cost and wall time of `train` before it runs (app/estimate.py
does the counting)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.api._common import _run_sync, _workspace
from app.api_args import ConfigSource, workspace_config
from app.harness.workspace.writer_lock import WriterLock

if TYPE_CHECKING:
    from app.estimate import Estimate


def estimate(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> Estimate:
    """`estimate`: model calls per role, tokens, cost and wall time of `train` with this config,
    before it runs (app/estimate.py says how); stored in analyses/estimate.json for `report`."""
    return _run_sync(estimate_async, workspace, config, overrides=overrides)


async def estimate_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> Estimate:
    """`estimate` for callers inside an event loop."""
    from app.estimate import estimate_async as run_estimate

    root = _workspace(workspace)
    run_config = workspace_config(root, config, overrides)
    with WriterLock(root, "estimate"):
        return await run_estimate(root, run_config)
