"""Lineage components of an ingested trace exported as training data
(app/harness/data/export_ingest.py), and their check against the stored trace (`export verify
-w`, app/harness/data/lineage.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from app.harness.workspace.harness_log.ingest import IngestedTraceRecord
from core import lineage
from core.trace_training import tool_names
from core.traces import Trace, trace_from_json

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session


def trace_components(row: IngestedTraceRecord, trace: Trace) -> dict[str, str]:
    """A trace's lineage components: it was not made by this workspace's skills or prompts
    but recorded by another agent, so those name the recording; the model is the recorded one,
    the tool manifest the tools it called, the benchmark its ingest run and file, the verifiers
    its feedback, and `trace` the stored trace itself."""
    recorded = {"recorded_by": trace.source.value, "trace_id": row.trace_id}
    return {
        "skills": lineage.digest(recorded),
        "prompts": lineage.digest(recorded),
        "tool_manifest": lineage.digest(tool_names(trace)),
        "benchmark": lineage.digest({"ingest_run": row.ingest_run, "file": row.file}),
        "verifiers": lineage.digest([f.as_json() for f in trace.feedback]),
        "model": lineage.digest(trace.model),
        "trace": lineage.digest(row.trace_json),
    }


def check_trace_components(
    found: Mapping[str, Any], src: Mapping[str, Any], session: Session
) -> str | None:
    """None when a record's trace components still match the workspace's stored trace."""
    trace_id, ingest_run = src.get("trace_id"), src.get("ingest_run")
    stored = (
        session.log.ingested_trace(str(trace_id), str(ingest_run))
        if trace_id is not None and ingest_run is not None  # NULL matches no stored trace
        else None
    )
    if stored is None:
        return f"source trace {dict(src)} is no longer in the workspace"
    now = trace_components(stored, trace_from_json(json.loads(stored.trace_json)))
    for name, digest in now.items():
        if found["hashes"].get(name) != digest:
            return f"{name} hash differs from the workspace's"
    return None


def trace_source(row: IngestedTraceRecord) -> dict[str, Any]:
    return {"ingest_run": row.ingest_run, "trace_id": row.trace_id}
