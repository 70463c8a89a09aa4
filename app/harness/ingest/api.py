"""The harness side of `api.ingest`: argument checks, the writer lock, the log."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from app.errors import UserError
from app.harness.ingest.detect import SOURCE_CHOICES
from app.harness.ingest.service import IngestOptions, IngestSummary, ingest_file
from app.harness.workspace.benchmark_format import TASK_TYPE_RE
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.spdx import checked_expression
from app.harness.workspace.workspace import resolve_paths
from app.harness.workspace.writer_lock import WriterLock
from app.progress import NO_BARS, Bars
from core.traces import ReferenceMode


def run_ingest(
    root: Path,
    file: Path,
    *,
    source: str = "auto",
    sample: float = 1.0,
    seed: int = 0,
    to_benchmark: str | None = None,
    store: Path | None = None,
    reference: str = "feedback",
    task_type: str = "ingested",
    licence: str | None = None,
    bars: Bars = NO_BARS,
) -> IngestSummary:
    if source not in SOURCE_CHOICES:
        raise UserError(f"--source {source!r}: one of {', '.join(SOURCE_CHOICES)}")
    if reference not in {m.value for m in ReferenceMode}:
        raise UserError(f"--reference {reference!r}: feedback or final")
    if not isinstance(sample, int | float) or not 0.0 < float(sample) <= 1.0:
        raise UserError(f"--sample {sample!r}: a rate in (0, 1]")
    if not TASK_TYPE_RE.fullmatch(task_type):
        raise UserError(f"--task-type {task_type!r}: 1-64 letters, digits, '_', '-' or '.'")
    checked_expression(licence, "--license")
    options = IngestOptions(
        file=file,
        source=source,
        sample=float(sample),
        seed=int(seed),
        to_benchmark=to_benchmark,
        store=store,
        reference=ReferenceMode(reference),
        task_type=task_type,
        license=licence,
    )
    if to_benchmark is not None and store is None:
        raise UserError("--to-benchmark needs --store DIR (where the benchmark is written)")
    if not (root / "manifest.json").is_file():
        if to_benchmark is None:
            raise UserError(
                f"{root}: not a workspace (no manifest.json); `init` it first, or pass "
                "--to-benchmark NAME --store DIR to write a benchmark to initialise one from"
            )
        return ingest_file(None, options, bars)
    with WriterLock(root, "ingest"), HarnessLog(root / "harness.db") as log:
        paths = resolve_paths(root)
        versions = (paths.skills_version, paths.prompts_version)
        return ingest_file(log, replace(options, versions=versions), bars)
