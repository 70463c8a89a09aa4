"""`ingest`: an export file -> redacted, normalised traces in the harness log (and their
trajectories, which `tui` opens), and optionally a store benchmark (docs/ingest.md).

One file is one transaction: a bad record anywhere stops the file with its file:line, and
nothing of that file is stored, while everything ingested before stays as it was. Re-ingesting
adds nothing: a trace's id is the hash of its (redacted) content.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import stat
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.ingest.benchmark import (
    BenchmarkPlan,
    BenchmarkSummary,
    check_target,
    write_benchmark,
)
from app.harness.ingest.parse import Detected, traces
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog, RunStatus
from app.harness.workspace.harness_log.ingest import IngestedTraceRecord
from app.harness.workspace.harness_log.predictions import PredictionRecord
from app.progress import NO_BARS, Bars
from app.secrets import scrub_deep
from core.redact import MIN_SECRET_LEN
from core.traces import (
    ReferenceMode,
    StepKind,
    Trace,
    canonical_json,
    content_id,
    family_key,
    iso_from_ns,
    redact_trace,
    sampled,
    with_derived_feedback,
)

BATCH = 500
GC_THRESHOLD = 100_000  # allocations between young-generation collections while reading
MEMO_CHARS = 4_000_000  # text the per-file memo of redacted strings keeps
TASK_TYPE = "ingested"


@dataclass(frozen=True)
class IngestOptions:
    file: Path
    source: str = "auto"
    sample: float = 1.0
    seed: int = 0
    to_benchmark: str | None = None
    store: Path | None = None
    reference: ReferenceMode = ReferenceMode.FEEDBACK
    task_type: str = TASK_TYPE
    # the workspace's current (skills, prompts) versions: the ingest run records them, so
    # `diagnose` reads the ingested trajectories against the text the agent now has
    versions: tuple[str, str] = ("", "")
    # the traces' SPDX licence (docs/curation.md#licences): kept with the run, written into a
    # --to-benchmark benchmark.toml; None: none declared
    license: str | None = None


@dataclass(frozen=True)
class IngestSummary:
    file: str
    detected: str
    traces: int  # read from the file (after sampling)
    new: int  # stored now (0 on a re-ingest)
    already: int  # already in the log
    failed: int  # error traces: kept for triage, never memories or SFT data
    families: int
    sampled_out: int
    spans: int  # records read: spans, runs, observations' traces, samples, conversations
    by_source: dict[str, int] = field(default_factory=dict)
    run_id: str = ""  # the run whose predictions are the traces' trajectories ("" = not stored)
    benchmark: BenchmarkSummary | None = None

    def text(self) -> str:
        stored = f"{self.new} new, {self.already} already ingested" if self.run_id else "not stored"
        lines = [
            f"{self.file}: detected {self.detected}",
            f"{self.traces} traces ({stored}, {self.failed} failed: kept for triage), "
            f"{self.families} families"
            + (f", {self.sampled_out} sampled out" if self.sampled_out else ""),
        ]
        if self.run_id:
            lines.append(f"trajectories: run {self.run_id} (tui -> Runs)")
        if self.benchmark is not None:
            lines.append(self.benchmark.text())
        return "\n".join(lines)


def file_digests(path: Path) -> tuple[str, int]:
    """The file's SHA-256 (its run id) and CRC-32 (what the bytes parsed are checked against:
    a change while the file is read is an accident to catch, not an attack, and a CRC-32 on
    the parsing path costs a tenth of a second SHA-256)."""
    h, crc = hashlib.sha256(), 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
                crc = zlib.crc32(chunk, crc)
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    return h.hexdigest(), crc


@dataclass
class Crc32:
    """A running CRC-32 with the `update` that app/harness/ingest/records.py feeds."""

    value: int = 0

    def update(self, data: bytes, /) -> None:
        self.value = zlib.crc32(data, self.value)


def _regular_file(path: Path) -> None:
    """A regular file, or one line saying what the path is instead (a FIFO is read once, and
    its bytes could not be hashed and then read again)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    if stat.S_ISREG(mode):
        return
    what = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO (named pipe)",
        stat.S_ISSOCK: "a socket",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
    }
    kind = next((name for test, name in what.items() if test(mode)), "not a regular file")
    raise UserError(f"{path}: {kind}, not a regular file; write the export to a file first")


def ingest_file(
    log: HarnessLog | None, options: IngestOptions, bars: Bars = NO_BARS
) -> IngestSummary:
    """Stream the file into `log` (None: only the benchmark is written)."""
    path = options.file
    _regular_file(path)
    if not 0.0 < options.sample <= 1.0:
        raise UserError(f"--sample {options.sample}: a rate in (0, 1]")
    if options.to_benchmark is not None:
        check_target(options.to_benchmark, options.store)  # refused before anything is read
    digest, crc = file_digests(path)
    run_id = f"ingest-{digest[:12]}" if log is not None else ""
    if log is not None and options.to_benchmark is None:
        done = _done_before(log, run_id, options)
        if done is not None:
            return done  # the same bytes, read the same way: nothing to add, nothing to read
    detected = Detected()
    plan = BenchmarkPlan(options.reference, options.task_type) if options.to_benchmark else None
    counts: Counter[str] = Counter()
    families: set[str] = set()
    with bars.live(), _fewer_collections():
        task = bars.task(f"ingest {path.name}", max(path.stat().st_size, 1))
        parsed = Crc32()
        stream = _redacted(traces(path, options.source, detected, task.advance, parsed))
        bench = None
        if log is None:
            for item in stream:
                _count(item, options, counts, families, plan)
            _same_bytes(path, crc, parsed)
            bench = _benchmark(plan, options)
        else:
            with log.transaction():
                _ensure_run(log, run_id, path, options)
                batch: list[Clean] = []
                for item in stream:
                    if not _count(item, options, counts, families, plan):
                        continue
                    batch.append(item)
                    if len(batch) >= BATCH:
                        counts["new"] += _store(log, batch, run_id, options)
                        batch = []
                counts["new"] += _store(log, batch, run_id, options)
                _same_bytes(path, crc, parsed)  # inside: a changed file stores nothing
                summary = _summary(path, detected, counts, families, run_id, None)
                log.finish_run(run_id, RunStatus.DONE, {**_recorded(summary), **_how(options)})
                # inside the transaction: a benchmark that cannot be written stores nothing
                bench = _benchmark(plan, options)
        task.done()
    summary = _summary(path, detected, counts, families, run_id, bench)
    if log is None:
        return replace(summary, new=0, already=0)
    return summary


def _same_bytes(path: Path, crc: int, parsed: Crc32) -> None:
    """The bytes parsed are the bytes hashed before reading: a file cut, grown or replaced
    while it was read would otherwise be stored under the digest of bytes never read (and a
    re-ingest of the whole file would find that run done and add nothing)."""
    if parsed.value != crc:
        raise UserError(
            f"{path}: the file changed while it was read (cut, grown or replaced); nothing of "
            "it is stored: ingest it again once it is complete"
        )


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Reading a file allocates millions of short-lived dicts, lists and strings, freed by
    their reference counts as soon as a trace is stored (they hold no cycles). At the default
    threshold (700 allocations) the cyclic collector would scan the young ones thousands of
    times for nothing; objects from before the file (the imported modules) are set aside so
    the rarer full collections do not walk them either. Restored afterwards."""
    threshold = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0  # a caller that froze objects itself keeps them so
    if freeze:
        gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if freeze:
            gc.unfreeze()


def _summary(
    path: Path,
    detected: Detected,
    counts: Counter[str],
    families: set[str],
    run_id: str,
    bench: BenchmarkSummary | None,
) -> IngestSummary:
    kept = counts["kept"]
    return IngestSummary(
        file=str(path),
        detected=detected.text(),
        traces=kept,
        new=counts["new"],
        already=kept - counts["new"],
        failed=counts["failed"],
        families=len(families),
        sampled_out=counts["sampled_out"],
        spans=detected.spans,
        by_source={
            k.removeprefix("source:"): v for k, v in counts.items() if k.startswith("source:")
        },
        run_id=run_id,
        benchmark=bench,
    )


RECORDED = ("detected", "traces", "failed", "families", "sampled_out", "spans", "by_source")


def _recorded(summary: IngestSummary) -> dict[str, Any]:
    return {"file": summary.file, **{k: getattr(summary, k) for k in RECORDED}}


def _how(options: IngestOptions) -> dict[str, Any]:
    return {
        "source": options.source,
        "sample": options.sample,
        "seed": options.seed,
        "license": options.license,  # a re-ingest declaring another licence records it
    }


def _done_before(log: HarnessLog, run_id: str, options: IngestOptions) -> IngestSummary | None:
    """The summary of an earlier ingest of the same bytes with the same options, if any."""
    row = log.run(run_id)
    if row is None or row.status != RunStatus.DONE:
        return None
    try:
        recorded = json.loads(row.summary_json or "{}")
    except ValueError:
        return None
    if not isinstance(recorded, dict) or any(
        recorded.get(k) != v for k, v in _how(options).items()
    ):
        return None
    if any(k not in recorded for k in RECORDED):
        return None
    fields = {k: recorded[k] for k in RECORDED}
    return IngestSummary(
        file=str(options.file), new=0, already=int(fields["traces"]), run_id=run_id, **fields
    )


@dataclass(frozen=True)
class Clean:
    """A trace after redaction, with its id and the canonical JSON the id hashes."""

    trace: Trace
    tid: str
    json: str
    line: int
    family: str


def _benchmark(plan: BenchmarkPlan | None, options: IngestOptions) -> BenchmarkSummary | None:
    if plan is None or options.to_benchmark is None:
        return None
    return write_benchmark(plan, options.to_benchmark, options.store, options.license)


@dataclass
class ScrubMemo:
    """`scrub_deep` of each distinct string once per file: an agent's system prompt, its tool
    descriptions and the pages its tools return come back in trace after trace, and every
    redaction pass costs a scan of the text. Bounded by the text it keeps (the environment's
    secrets do not change while one file is read)."""

    budget_chars: int = MEMO_CHARS
    kept: dict[str, str] = field(default_factory=dict)
    chars: int = 0
    hits: int = 0

    def __call__(self, text: str) -> str:
        if len(text) < MIN_SECRET_LEN:  # no pass finds anything this short
            return text
        done = self.kept.get(text)
        if done is not None:
            self.hits += 1
            return done
        done = scrub_deep(text)
        if self.chars + len(text) <= self.budget_chars:
            self.kept[text] = done
            self.chars += len(text)
        return done


def _redacted(stream: Iterator[tuple[Trace, int]]) -> Iterator[Clean]:
    """Redaction before anything is stored or hashed: the id never depends on a secret."""
    seen: set[str] = set()
    memo = ScrubMemo()
    for trace, line in stream:
        clean = redact_trace(with_derived_feedback(trace), memo, MIN_SECRET_LEN)
        canonical = canonical_json(clean)
        tid = content_id(clean, canonical)
        if tid in seen:
            continue  # the same trace twice in one file
        seen.add(tid)
        yield Clean(clean, tid, canonical, line, family_key(clean))


def _count(
    item: Clean,
    options: IngestOptions,
    counts: Counter[str],
    families: set[str],
    plan: BenchmarkPlan | None,
) -> bool:
    trace, family = item.trace, item.family
    if not sampled(family, options.sample, options.seed):
        counts["sampled_out"] += 1
        return False
    counts["kept"] += 1
    counts[f"source:{trace.source.value}"] += 1
    counts["failed"] += trace.failed
    families.add(family)
    if plan is not None:
        plan.add(trace, item.tid, family)
    return True


def _ensure_run(log: HarnessLog, run_id: str, path: Path, options: IngestOptions) -> None:
    """The run whose predictions hold the trajectories: registered once per file content
    (registering again would clear its rows)."""
    if log.run(run_id) is not None:
        return
    log.register_run(
        run_id,
        kind="ingest",
        skills_version=options.versions[0],
        prompts_version=options.versions[1],
        questions_ref=f"ingest:{path.name}",
        config={"file": str(path), "source": options.source, "sample": options.sample},
        provenance={"ingested_from": path.name},
    )


def _store(log: HarnessLog, batch: list[Clean], run_id: str, options: IngestOptions) -> int:
    path = options.file
    if not batch:
        return 0
    known = log.known_trace_ids([c.tid for c in batch])
    fresh = [c for c in batch if c.tid not in known]
    at = now_iso()
    log.add_ingested_traces([_trace_row(c, run_id, path, at) for c in fresh])
    log.add_predictions([_prediction_row(c, run_id, at, options) for c in fresh])
    return len(fresh)


def _trace_row(clean: Clean, run_id: str, path: Path, at: str) -> IngestedTraceRecord:
    trace, tid, line = clean.trace, clean.tid, clean.line
    return IngestedTraceRecord(
        trace_id=tid,
        source=trace.source.value,
        native_id=trace.native_id,
        session_id=trace.session_id,
        family=clean.family,
        task=trace.task[:2000],
        final_answer=trace.final_answer[:2000],
        model=trace.model,
        tokens_in=trace.tokens_in,
        tokens_out=trace.tokens_out,
        cost_usd=trace.cost_usd,
        latency_s=trace.latency_s,
        failed=int(trace.failed),
        n_steps=len(trace.steps),
        trace_json=clean.json,
        file=path.name,
        line=line,
        ingest_run=run_id,
        ingested_at=at,
    )


def _prediction_row(clean: Clean, run_id: str, at: str, options: IngestOptions) -> PredictionRecord:
    """The trace as a trajectory the TUI's trajectory screen shows (its event types). Its
    question id and task type are the ones `--to-benchmark` gives its question, so a workspace
    initialised from that benchmark knows the question; a failed trace, or one scored below
    the mark, is a wrong answer (what `diagnose` looks at)."""
    trace, tid = clean.trace, clean.tid
    scores = [f.score for f in trace.feedback if f.score is not None]
    correct = 0 if trace.failed else (None if not scores else int(min(scores) >= 0.5))
    return PredictionRecord.build(
        run_id=run_id,
        question_id=tid,
        unit_id=tid,
        task_type=options.task_type,
        prediction=trace.final_answer[:2000],
        answer="",
        correct=correct,
        stop_reason="error" if trace.failed else "final",
        steps=trajectory_events(trace),
        tokens=(trace.tokens_in, trace.tokens_out),
        cost_usd=trace.cost_usd,
        latency_s=trace.latency_s,
        versions=options.versions,
        created_at=_recorded_end(trace) or at,
    )


def _recorded_end(trace: Trace) -> str:
    """When the recorded run ended (its start plus its latency): a prediction's `created_at`
    is when its answer was made, which for a trace is the recording's time, not the ingest's
    (`export --format otlp|inspect` of the run writes its spans at that time)."""
    if not trace.started_at:
        return ""
    try:
        start = datetime.fromisoformat(trace.started_at).timestamp()
    except (ValueError, OverflowError, OSError):
        return ""
    return iso_from_ns(round((start + trace.latency_s) * 1e6) * 1000)


def trajectory_events(trace: Trace) -> list[dict[str, Any]]:
    """Steps in the agent loop's event shapes: model turns (text + tool calls), tool results,
    and the other messages under their role."""
    events: list[dict[str, Any]] = []
    turn = 0
    for s in trace.steps:
        if s.kind == StepKind.TOOL_CALL:
            if not events or events[-1].get("type") != "model":
                events.append({"turn": turn, "type": "model", "text": "", "tool_calls": []})
            events[-1]["tool_calls"].append(
                {"id": s.tool_call_id, "name": s.tool_name, "arguments": s.arguments}
            )
        elif s.kind == StepKind.OBSERVATION:
            events.append(
                {
                    "turn": turn,
                    "type": "tool",
                    "name": s.tool_name,
                    "arguments": "",
                    "status": "error" if s.is_error else "ok",
                    "output": s.text,
                }
            )
        elif s.role.value == "assistant":
            turn += 1
            events.append({"turn": turn, "type": "model", "text": s.text, "tool_calls": []})
        else:
            events.append({"turn": turn, "type": s.role.value, "text": s.text})
    if trace.feedback:
        events.append({"type": "feedback", "feedback": [f.as_json() for f in trace.feedback]})
    return events
