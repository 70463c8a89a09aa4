"""`ingest`: an observability export read into a workspace's log (app/harness/ingest/service.py;
docs/ingest.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app import paths
from app.api._common import _workspace
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.progress import Bars

if TYPE_CHECKING:
    from app.harness.ingest.service import IngestSummary


def ingest(
    workspace: str | Path,
    file: str | Path,
    *,
    source: str = "auto",
    sample: float = 1.0,
    seed: int = 0,
    to_benchmark: str | None = None,
    store: str | Path | None = None,
    reference: str = "feedback",
    task_type: str = "ingested",
    progress: bool | None = False,
    license: str | None = None,
) -> IngestSummary:
    """Ingest an observability export into the workspace's log (an `IngestSummary`;
    app/harness/ingest/service.py). A folder that is not a workspace yet takes only
    `to_benchmark` (the benchmark a workspace is then initialised from). `license`: the
    traces' SPDX expression (docs/curation.md#licences)."""
    from app.harness.ingest.api import run_ingest

    _expect("file", file, _is_path(file), "an export file's path")
    _expect("store", store, _is_path(store, none=True), "a store folder's path or None")
    return run_ingest(
        _workspace(workspace),
        paths.absolute(file),
        source=source,
        sample=sample,
        seed=seed,
        to_benchmark=to_benchmark,
        store=None if store is None else paths.absolute(store),
        reference=reference,
        task_type=task_type,
        licence=license,
        bars=Bars(enabled=progress),
    )
