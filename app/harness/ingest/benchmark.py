"""Traces -> a store benchmark (`ingest --to-benchmark NAME`), in the store's format
(app/harness/workspace/store.py): `questions/NAME/benchmark.toml` and `questions.jsonl`.

The question is the user's task, the recorded tool observations are its context, the
reference comes from feedback (an edited output, an explicitly good score), a recorded target,
or the final answer when the user says so (`--reference final`). A trace without a reference
becomes a judged question when the store knows a rubric checker, else it is dropped, and the
summary says why. Error traces never become questions (they stay in the log for triage).
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.harness.tools import replay
from app.harness.tools.spec import BUILT_IN, NAME
from app.harness.workspace.atomic import check_no_links
from app.harness.workspace.store import check_store_name, load_benchmark
from core import checkers
from core.traces import (
    ReferenceMode,
    Step,
    StepKind,
    Trace,
    observation_context,
    reference_answer,
)
from core.types import CHECKERS

MAX_QUESTION_CHARS = 20_000
MAX_RECORDED_CHARS = 64_000_000  # observations kept for replay tools while a file streams
REPLAY_FILE = "replay.jsonl"
REPLAY_NAME = re.compile(NAME)
BUILT_IN_TOOLS = BUILT_IN
DEFAULT_RUBRIC = (
    "The answer does what the user asked, is correct and complete for the task as stated, "
    "uses the recorded tool results where they matter, and invents nothing."
)


def rubric_available() -> bool:
    """Whether the store accepts `checker = "rubric"` (judged questions): a tree with the
    rubric checker names it in CHECKERS or answers through `core.checkers.is_known_checker`."""
    known = getattr(checkers, "is_known_checker", None)
    return "rubric" in CHECKERS or (callable(known) and bool(known("rubric")))


@dataclass
class BenchmarkPlan:
    """Questions collected while the file streams (small: a question, not its trace)."""

    reference: ReferenceMode
    task_type: str
    questions: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    with_reference: int = 0
    judged: int = 0
    families: set[str] = field(default_factory=set)
    recorded: list[dict[str, Any]] = field(default_factory=list)  # replay.jsonl rows
    recorded_chars: int = 0
    dropped_calls: int = 0

    def add(self, trace: Trace, tid: str, family: str) -> None:
        before = len(self.questions)
        self._add(trace, tid, family)
        if len(self.questions) > before:
            self._record(trace, self.questions[-1])

    def _record(self, trace: Trace, row: dict[str, Any]) -> None:
        """The trace's tool calls with their observations, for the replay tools; the question
        is offered the tools its trace called (the recorded context stays: a model that calls
        no tool still sees what they returned)."""
        names: set[str] = set()
        for call, observation in tool_exchanges(trace):
            if not REPLAY_NAME.fullmatch(call.tool_name) or call.tool_name in BUILT_IN_TOOLS:
                continue
            text = observation.text[: replay.MAX_OBSERVATION_CHARS]
            if self.recorded_chars + len(text) > MAX_RECORDED_CHARS:
                self.dropped_calls += 1  # memory bound: the context still holds it
                continue
            self.recorded_chars += len(text)
            names.add(call.tool_name)
            self.recorded.append(
                {
                    "question_id": row["question_id"],
                    "tool": call.tool_name,
                    "arguments": _arguments(call.arguments),
                    "observation": text,
                    "error": observation.is_error,
                }
            )
        if names:
            row["tools"] = sorted(names)

    def _add(self, trace: Trace, tid: str, family: str) -> None:
        task = trace.task.strip()
        if not task:
            self.dropped["no user task"] += 1
            return
        answer, why = reference_answer(trace, self.reference)
        row: dict[str, Any] = {
            "question_id": tid,
            "task_type": self.task_type,
            "question": task[:MAX_QUESTION_CHARS],
            "family": family,
            "metadata": {
                "source": trace.source.value,
                "native_id": trace.native_id,
                "reference_from": why,
            },
        }
        context = observation_context(trace)
        if context:
            row["context"] = context
        if answer:
            row["answer"] = answer[:MAX_QUESTION_CHARS]
            row.update(target_checker(trace, why))
            self.with_reference += 1
        elif trace.failed:
            self.dropped[why] += 1
            return
        elif rubric_available():
            row["answer"] = trace.final_answer.strip()[:MAX_QUESTION_CHARS] or "(none recorded)"
            row["checker"] = "rubric"
            row["checker_args"] = {"rubric": DEFAULT_RUBRIC}
            self.judged += 1
        else:
            self.dropped[f"{why}; this store has no rubric checker for judged questions"] += 1
            return
        self.families.add(family)
        self.questions.append(row)


# Inspect AI scorers whose verdict is "the answer contains the target" (case-insensitive by
# default: inspect_ai.scorer.includes): an `exact` checker would fail the answers they passed.
INCLUDES_SCORERS = frozenset({"includes"})


def target_checker(trace: Trace, why: str) -> dict[str, Any]:
    """The checker that scores a recorded target as the recording's scorer did: `includes`
    becomes a regex that finds any of the targets (one a line) anywhere in the answer;
    anything else keeps the store's default (`exact` after normalisation)."""
    if why != "recorded target" or not any(f.name in INCLUDES_SCORERS for f in trace.feedback):
        return {}
    targets = [t.strip() for t in trace.target.splitlines() if t.strip()]
    alternatives = "|".join(re.escape(t) for t in targets)
    return {"checker": "regex", "checker_args": {"pattern": f"(?is).*(?:{alternatives}).*"}}


@dataclass(frozen=True)
class BenchmarkSummary:
    name: str
    path: str
    traces: int
    with_reference: int
    judged: int
    dropped: dict[str, int]
    families: int

    def text(self) -> str:
        n_dropped = sum(self.dropped.values())
        why = "; ".join(f"{n} {reason}" for reason, n in sorted(self.dropped.items())) or "none"
        return (
            f"{self.traces} traces -> {self.with_reference} with reference, {self.judged} judged, "
            f"{n_dropped} dropped ({why}), {self.families} families\n"
            f"benchmark {self.name}: {self.path}"
        )


def check_target(name: str, store: Path | None) -> Path:
    """The benchmark folder to write: a valid name, a store given, nothing there yet."""
    if store is None:
        raise UserError("--to-benchmark needs --store DIR (where the benchmark is written)")
    check_store_name(name, "--to-benchmark", "benchmark")
    folder = check_no_links(store, store / "questions" / name)
    if folder.exists():
        raise UserError(f"{folder}: benchmark '{name}' already exists (choose another name)")
    return folder


def write_benchmark(
    plan: BenchmarkPlan, name: str, store: Path | None, licence: str | None = None
) -> BenchmarkSummary:
    folder = check_target(name, store)
    traces = plan.with_reference + plan.judged + sum(plan.dropped.values())
    if not plan.questions:
        why = "; ".join(f"{n} {r}" for r, n in sorted(plan.dropped.items())) or "no traces"
        raise UserError(
            f"--to-benchmark {name}: no trace gives a question ({why}); "
            "`--reference final` takes each final answer as the reference"
        )
    staging = folder.parent / f".staging-{name}-{uuid.uuid4().hex[:8]}"
    try:
        staging.mkdir(parents=True)
        lines = [json.dumps(q, ensure_ascii=False, sort_keys=True) for q in plan.questions]
        (staging / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        toml = [
            f"name = {json.dumps(name)}",
            f'description = "ingested traces ({len(plan.questions)} questions)"',
            "seed = 0",
            *([f"license = {json.dumps(licence)}"] if licence is not None else []),
            f"task_types = [{json.dumps(plan.task_type)}]",
            "",
            "[split]",
            "diagnosis = 0.5",
            "validation = 0.25",
            "test = 0.25",
        ]
        if plan.recorded:
            rows = [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in plan.recorded]
            (staging / REPLAY_FILE).write_text("\n".join(rows) + "\n", encoding="utf-8")
            for tool in sorted({r["tool"] for r in plan.recorded}):
                toml += [
                    "",
                    "[[tools]]",
                    f"name = {json.dumps(tool)}",
                    'kind = "replay"',
                    f"recordings = {json.dumps(REPLAY_FILE)}",
                ]
        (staging / "benchmark.toml").write_text("\n".join(toml) + "\n", encoding="utf-8")
        load_benchmark(staging)  # the store's own checks, before it becomes visible
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BenchmarkSummary(
        name=name,
        path=str(folder),
        traces=traces,
        with_reference=plan.with_reference,
        judged=plan.judged,
        dropped=dict(plan.dropped),
        families=len(plan.families),
    )


def tool_exchanges(trace: Trace) -> list[tuple[Step, Step]]:
    """Each tool call with its observation: by call id, else the next observation of the same
    tool (or of no named tool) after it."""
    pairs: list[tuple[Step, Step]] = []
    open_calls: list[Step] = []
    for step in trace.steps:
        if step.kind == StepKind.TOOL_CALL:
            open_calls.append(step)
        elif step.kind == StepKind.OBSERVATION:
            match = next(
                (
                    c
                    for c in open_calls
                    if (step.tool_call_id and c.tool_call_id == step.tool_call_id)
                    or (
                        not step.tool_call_id
                        and (not step.tool_name or c.tool_name == step.tool_name)
                    )
                ),
                None,
            )
            if match is not None:
                open_calls.remove(match)
                pairs.append((match, step))
    return pairs


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text
