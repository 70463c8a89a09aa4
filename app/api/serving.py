"""Serving a trained agent: `serve` (an OpenAI-compatible endpoint, docs/serving.md), the config it
serves with, and `savings` (a run's cost, latency and accuracy against a baseline)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from app.api._common import _run_sync, _workspace
from app.api_args import ConfigSource, workspace_config
from app.api_args import expect as _expect
from app.harness.workspace.config import RunConfig
from app.harness.workspace.ids import check_run_id, check_version

if TYPE_CHECKING:  # uvicorn and FastAPI load only when `serve` runs
    from app.harness.serving.savings import SavingsReport
    from app.harness.serving.server import ServeOutcome, ServeReady


def serve(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    version: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    name: str | None = None,
    on_ready: Callable[[ServeReady], None] | None = None,
    allow_origins: Sequence[str] = (),
) -> ServeOutcome:
    """Serve the workspace's agent at an OpenAI-compatible endpoint until SIGTERM/Ctrl-C
    (docs/serving.md); holds the writer lock while it runs."""
    return _run_sync(
        serve_async,
        workspace,
        config,
        overrides=overrides,
        version=version,
        host=host,
        port=port,
        token=token,
        name=name,
        on_ready=on_ready,
        allow_origins=allow_origins,
    )


async def serve_async(
    workspace: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    version: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    name: str | None = None,
    on_ready: Callable[[ServeReady], None] | None = None,
    stop: anyio.Event | None = None,
    allow_origins: Sequence[str] = (),
) -> ServeOutcome:
    root = _workspace(workspace)
    _expect("port", port, type(port) is int and 0 <= port < 65536, "a port number (0: any free)")
    if version is not None and version not in ("best", "current"):
        version = check_version(version, "--version (version)")
    from app.harness.serving.server import ServeSettings, serve_workspace

    settings = ServeSettings(
        host=host,
        port=port,
        token=token,
        version=version,
        name=name,
        allow_origins=tuple(allow_origins),
    )
    return await serve_workspace(
        root, serve_config(root, config, overrides), settings, on_ready, stop
    )


def serve_config(
    root: Path, config: ConfigSource, overrides: Mapping[str, Any] | None
) -> RunConfig:
    """The trained agent's own config (its training run's, from the checkpoint) unless a
    config is given; overrides on top either way (app/api_args.py `workspace_config`)."""
    return workspace_config(_workspace(root), config, overrides)


def savings(
    workspace: str | Path,
    *,
    run_id: str | None = None,
    baseline_model: str | None = None,
    baseline_run: str | None = None,
) -> SavingsReport:
    """Cost, latency p50/p95 and accuracy of a run (default: the latest serve, else eval, else
    infer run) against a baseline model's prices or another run, from the log (read-only)."""
    from app.harness.serving.savings import savings_report

    for label, value in (("run_id", run_id), ("baseline_run", baseline_run)):
        if value is not None:
            check_run_id(value, label)
    _expect(
        "baseline_model",
        baseline_model,
        baseline_model is None or isinstance(baseline_model, str),
        "a model name or None",
    )
    return savings_report(_workspace(workspace), run_id, baseline_model, baseline_run)
