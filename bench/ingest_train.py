"""From traces to a trained skill, per format: does a benchmark ingested from traces train?
(docs/ingest.md, "From traces to a trained skill")

A benchmark, not a test: it prints figures. For each of the eight formats `ingest` reads (OTLP
GenAI, OTLP with the deprecated names, OpenInference on OTLP, Phoenix's span export, Langfuse,
LangSmith, Inspect AI, chat-json) it writes an export of traces whose tasks are REAL questions
of the simulated world `sim/basic` (the ones of store/questions/sim-large, the demo's benchmark:
their text, so the simulated agent recognises each case, app/providers/sim/world.py
`case_for_text`), one task type per format, with the reference carried the way that format
carries feedback:

  otlp, otlp-deprecated, openinference, phoenix, chat-json   span and chat formats record no
      feedback: the recorded final answer is right and the user says so (`--reference final`)
  langfuse    the final answer with an explicit NUMERIC score of 1.0 or 0.9 ("good score")
  langsmith   every third run's output is wrong and its feedback holds the `correction` (the
              edited output wins); the others have a score of 1
  inspect     every third sample's output is wrong (score "I"); the `target` is the truth

A case whose world gives it a context (a file the agent must read) is recorded with a
`read_context` tool step and its result (an execute_tool span, a TOOL span or observation, a
tool run, a tool message, OpenLLMetry's indexed `tool_calls` and tool role), so the ingested
question carries that context.

Then, like a user: `main.py ingest -w WS --file X --to-benchmark NAME --store DIR`, `init -w WS
--store DIR --seed sim-starter --questions NAME`, `train -w WS --config app/demo.toml --set
sim_units_per_type=216` (the world sim-large was generated from: with the default 72 the world
knows few or none of these questions and `train` refuses to start, app/providers/factory.py
`check_sim_worlds`). Every role is the simulated world's own model, which learns for real
through its hidden rules; no answer key reaches it.

    RESULT ingest_train.<format>.test_before / test_after   the baseline run's and the final
        test run's accuracy on the test pool's questions (the workspace's own runs)
    RESULT ingest_train.<format>.references_right           share of the benchmark's references
        equal to the world's answer for the same question text
    RESULT ingest_train.formats_above_baseline              formats whose test_after > test_before
    RESULT ingest_train.families_in_two_pools               families found in two pools, read
        from the workspace: diagnosis and validation from gate_pools.json (the training's record),
        test from the final test run's questions, each question's family from the workspace's
        questions.jsonl

    PYTHONPATH=. .venv/bin/python bench/ingest_train.py [--tiny]

`--tiny`: three of the formats (otlp, langfuse, inspect: a span export, a JSON document with
feedback, an eval log), one epoch each; chat-json goes all the way in
tests/app/ingest/test_ingest_train.py. It shows the bench runs; its figures measure nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: this checkout's app/ and core/
sys.path.insert(0, str(ROOT / "bench"))  # bench/ingest.py's OTLP writers

from ingest import _otlp_line, _span  # noqa: E402  (bench/ingest.py)

WORLD_QUESTIONS = ROOT / "store" / "questions" / "sim-large"
WORLD_SETTINGS = ("--set", "sim_units_per_type=216")  # the world sim-large was generated from
CONFIG = ROOT / "app" / "demo.toml"
SEED = "sim-starter"
TARGET_FORMATS = 8
POOLS = ("diagnosis", "validation", "test")


@dataclass(frozen=True)
class Case:
    """One question of the world, as a trace will record it."""

    index: int
    question: str
    answer: str
    task_type: str
    unit_id: str
    context: str

    @property
    def wrong_output(self) -> bool:
        """Every third recorded output is wrong (where the format's feedback corrects it)."""
        return self.index % 3 == 0


def load_cases(task_type: str) -> list[Case]:
    rows = [json.loads(line) for line in (WORLD_QUESTIONS / "questions.jsonl").open()]
    return [
        Case(i, r["question"], r["answer"], r["task_type"], r["unit_id"], r.get("context", ""))
        for i, r in enumerate(r for r in rows if r["task_type"] == task_type)
    ]


def wrong(answer: str) -> str:
    """A plausible wrong answer of the same shape."""
    if answer.isdigit():
        return str(int(answer) + 17)
    if answer in ("A", "B", "C", "D"):
        return "ABCD"[("ABCD".index(answer) + 1) % 4]
    return answer + "X"


CONTEXT_ARGS = {"section": "full"}


# -- the exports, one writer per format ---------------------------------------------------------
def otlp_genai(path: Path, cases: list[Case]) -> None:
    """GenAI spans: a chat span (the tool call), the tool span, a chat span (the answer), the
    root agent span last; `gen_ai.conversation.id` is the case's unit."""
    lines = []
    for c in cases:
        trace, root, t0 = f"{c.index + 1:032x}", f"{c.index + 1:014x}01", 1_700_000_000 * 10**9
        user = {"role": "user", "parts": [{"type": "text", "content": c.question}]}
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "agent-model",
            "gen_ai.conversation.id": c.unit_id,
        }
        history: list[dict[str, Any]] = [user]
        spans = []
        if c.context:
            call: dict[str, Any] = {"type": "tool_call", "id": f"call_{c.index}"}
            call |= {"name": "read_context", "arguments": CONTEXT_ARGS}
            spans.append(
                _span(
                    trace,
                    f"{c.index + 1:014x}02",
                    root,
                    "chat",
                    t0 + 1,
                    {
                        **chat,
                        "gen_ai.input.messages": json.dumps(history),
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "parts": [call]}]
                        ),
                    },
                )
            )
            spans.append(
                _span(
                    trace,
                    f"{c.index + 1:014x}03",
                    root,
                    "execute_tool read_context",
                    t0 + 2,
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "read_context",
                        "gen_ai.tool.call.id": f"call_{c.index}",
                        "gen_ai.tool.call.arguments": json.dumps(CONTEXT_ARGS),
                        "gen_ai.tool.call.result": c.context,
                    },
                )
            )
            history += [
                {"role": "assistant", "parts": [call]},
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "tool_call_response",
                            "id": f"call_{c.index}",
                            "response": c.context,
                        }
                    ],
                },
            ]
        answer = {"role": "assistant", "parts": [{"type": "text", "content": c.answer}]}
        spans.append(
            _span(
                trace,
                f"{c.index + 1:014x}04",
                root,
                "chat",
                t0 + 3,
                {
                    **chat,
                    "gen_ai.input.messages": json.dumps(history),
                    "gen_ai.output.messages": json.dumps([answer]),
                },
            )
        )
        spans.append(
            _span(trace, root, "", "invoke_agent", t0, {"gen_ai.operation.name": "invoke_agent"})
        )
        lines.append(_otlp_line(spans))
    path.write_text("\n".join(lines) + "\n")


def otlp_deprecated(path: Path, cases: list[Case]) -> None:
    """One span a trace with OpenLLMetry's indexed `gen_ai.prompt.<i>` / `gen_ai.completion.<i>`
    (the file read as an assistant tool call and a tool message; no conversation id: families
    come from the task template)."""
    lines = []
    for c in cases:
        attrs = {"gen_ai.system": "openai", "gen_ai.prompt.0.role": "user"}
        attrs["gen_ai.prompt.0.content"] = c.question
        if c.context:
            call = "gen_ai.prompt.1.tool_calls.0"
            attrs |= {"gen_ai.prompt.1.role": "assistant", f"{call}.id": f"call_{c.index}"}
            attrs |= {f"{call}.name": "read_context", f"{call}.arguments": json.dumps(CONTEXT_ARGS)}
            attrs |= {"gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.content": c.context}
            attrs["gen_ai.prompt.2.tool_call_id"] = f"call_{c.index}"
        attrs |= {"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": c.answer}
        span_id = f"{c.index + 1:016x}"
        lines.append(_otlp_line([_span(f"{c.index + 1:032x}", span_id, "", "chat", 1, attrs)]))
    path.write_text("\n".join(lines) + "\n")


def openinference(path: Path, cases: list[Case]) -> None:
    """OpenInference spans on OTLP: an AGENT root with `session.id`, a TOOL span for the file a
    case's agent read, then the LLM span that answered."""
    lines = []
    for c in cases:
        trace, root = f"{c.index + 1:032x}", f"{c.index + 1:014x}01"
        spans = []
        if c.context:
            tool = {
                "openinference.span.kind": "TOOL",
                "tool.name": "read_context",
                "input.value": json.dumps(CONTEXT_ARGS),
                "output.value": c.context,
            }
            spans.append(_span(trace, f"{c.index + 1:014x}02", root, "read_context", 2, tool))
        llm = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "agent-model",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": c.question,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": c.answer,
        }
        spans.append(_span(trace, f"{c.index + 1:014x}03", root, "llm", 3, llm))
        agent = {
            "openinference.span.kind": "AGENT",
            "input.value": c.question,
            "output.value": c.answer,
            "session.id": c.unit_id,
        }
        spans.append(_span(trace, root, "", "agent", 1, agent))
        lines.append(_otlp_line(spans))
    path.write_text("\n".join(lines) + "\n")


def phoenix(path: Path, cases: list[Case]) -> None:
    """Phoenix's span export (one `{"data": [...]}` page, compact as its REST API returns it):
    a CHAIN root with `input.value`, `output.value` and `session.id`, a TOOL child for the file
    a case's agent read, its LLM child with the messages."""
    spans: list[dict[str, Any]] = []
    for c in cases:
        tid = f"px{c.index}"
        spans.append(
            {
                "name": "agent",
                "context": {"trace_id": tid, "span_id": "s1"},
                "parent_id": None,
                "span_kind": "CHAIN",
                "status_code": "OK",
                "start_time": "2025-01-01T10:00:00+00:00",
                "end_time": "2025-01-01T10:00:02+00:00",
                "attributes": {
                    "openinference.span.kind": "CHAIN",
                    "input.value": c.question,
                    "output.value": c.answer,
                    "session.id": c.unit_id,
                },
            }
        )
        if c.context:
            spans.append(
                {
                    "name": "read_context",
                    "context": {"trace_id": tid, "span_id": "s3"},
                    "parent_id": "s1",
                    "span_kind": "TOOL",
                    "status_code": "OK",
                    "start_time": "2025-01-01T10:00:00.2+00:00",
                    "end_time": "2025-01-01T10:00:00.3+00:00",
                    "attributes": {
                        "openinference": {"span": {"kind": "TOOL"}},
                        "tool": {"name": "read_context"},
                        "input": {"value": json.dumps(CONTEXT_ARGS)},
                        "output": {"value": c.context},
                    },
                }
            )
        spans.append(
            {
                "name": "llm",
                "context": {"trace_id": tid, "span_id": "s2"},
                "parent_id": "s1",
                "span_kind": "LLM",
                "status_code": "OK",
                "start_time": "2025-01-01T10:00:00.5+00:00",
                "end_time": "2025-01-01T10:00:01+00:00",
                "attributes": {
                    "openinference": {"span": {"kind": "LLM"}},
                    "llm": {
                        "model_name": "agent-model",
                        "input_messages": [{"message": {"role": "user", "content": c.question}}],
                        "output_messages": [
                            {"message": {"role": "assistant", "content": c.answer}}
                        ],
                    },
                },
            }
        )
    path.write_text(json.dumps({"data": spans, "next_cursor": None}))


def langfuse(path: Path, cases: list[Case]) -> None:
    """Langfuse traces with their observations (a TOOL one for the file a case's agent read, the
    GENERATION that answered) and an explicit NUMERIC score (1.0 or 0.9)."""
    traces = [
        {
            "id": f"lf{c.index}",
            "input": c.question,
            "output": c.answer,
            "sessionId": c.unit_id,
            "observations": [
                *(
                    [
                        {
                            "id": f"t{c.index}",
                            "type": "TOOL",
                            "name": "read_context",
                            "startTime": "2025-01-01T00:00:00Z",
                            "input": CONTEXT_ARGS,
                            "output": c.context,
                        }
                    ]
                    if c.context
                    else []
                ),
                {
                    "id": f"o{c.index}",
                    "type": "GENERATION",
                    "model": "agent-model",
                    "startTime": "2025-01-01T00:00:01Z",
                    "input": [{"role": "user", "content": c.question}],
                    "output": c.answer,
                    "usage": {"input": 40, "output": 3},
                },
            ],
            "scores": [
                {
                    "name": "user-rating",
                    "value": 1.0 if c.index % 2 else 0.9,
                    "dataType": "NUMERIC",
                }
            ],
        }
        for c in cases
    ]
    path.write_text(json.dumps({"data": traces, "meta": {"page": 1, "totalItems": len(traces)}}))


def langsmith(path: Path, cases: list[Case]) -> None:
    """LangSmith runs (the root chain, a tool run for a case with a context) and one feedback
    record each: a `correction` where the output was wrong, else a score of 1."""
    rows: list[dict[str, Any]] = []
    for c in cases:
        rid = f"run-{c.index}"
        output = wrong(c.answer) if c.wrong_output else c.answer
        if c.context:
            rows.append(
                {
                    "id": f"{rid}-tool",
                    "name": "read_context",
                    "run_type": "tool",
                    "trace_id": rid,
                    "parent_run_id": rid,
                    "inputs": {"input": json.dumps(CONTEXT_ARGS)},
                    "outputs": {"output": c.context},
                    "error": None,
                    "extra": {},
                    "dotted_order": f"20250301T100000000000Z{rid}.20250301T100000500000Z{rid}-tool",
                    "start_time": "2025-03-01T10:00:00.500000",
                }
            )
        rows.append(
            {
                "id": rid,
                "name": "agent",
                "run_type": "chain",
                "trace_id": rid,
                "parent_run_id": None,
                "inputs": {"input": c.question},
                "outputs": {"output": output},
                "error": None,
                "extra": {"metadata": {"thread_id": c.unit_id}},
                "dotted_order": f"20250301T100000000000Z{rid}",
                "start_time": "2025-03-01T10:00:00",
            }
        )
        feedback: dict[str, Any] = {"id": f"fb-{c.index}", "run_id": rid, "key": "correctness"}
        if c.wrong_output:
            feedback |= {"score": 0, "correction": {"output": c.answer}}
        else:
            feedback |= {"score": 1}
        rows.append(feedback)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def inspect(path: Path, cases: list[Case]) -> None:
    """An Inspect AI eval log: each sample's `target` is the truth; every third output wrong."""
    samples = []
    for c in cases:
        output = wrong(c.answer) if c.wrong_output else c.answer
        messages: list[dict[str, Any]] = [{"role": "user", "content": c.question}]
        if c.context:
            messages += [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": f"call_{c.index}",
                            "function": "read_context",
                            "arguments": CONTEXT_ARGS,
                        }
                    ],
                },
                {
                    "role": "tool",
                    "content": c.context,
                    "tool_call_id": f"call_{c.index}",
                    "function": "read_context",
                },
            ]
        messages.append({"role": "assistant", "content": output})
        samples.append(
            {
                "id": c.index + 1,
                "epoch": 1,
                "input": c.question,
                "target": c.answer,
                "messages": messages,
                "output": {"model": "agent-model", "choices": []},
                "scores": {"match": {"value": "I" if c.wrong_output else "C"}},
            }
        )
    path.write_text(
        json.dumps(
            {
                "version": 2,
                "status": "success",
                "eval": {"model": "agent-model", "task": "cases"},
                "samples": samples,
            }
        )
    )


def chat_json(path: Path, cases: list[Case]) -> None:
    """One OpenAI-style conversation a line, `conversation_id` the case's unit."""
    rows = []
    for c in cases:
        messages: list[dict[str, Any]] = [{"role": "user", "content": c.question}]
        if c.context:
            messages += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{c.index}",
                            "type": "function",
                            "function": {
                                "name": "read_context",
                                "arguments": json.dumps(CONTEXT_ARGS),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_{c.index}", "content": c.context},
            ]
        messages.append({"role": "assistant", "content": c.answer})
        rows.append({"id": f"c{c.index}", "conversation_id": c.unit_id, "messages": messages})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@dataclass(frozen=True)
class Format:
    name: str
    task_type: str
    suffix: str
    write: Callable[[Path, list[Case]], None]
    reference: str  # `--reference`: feedback, or final where the format records none


FORMATS = (
    Format("otlp", "ledger", "jsonl", otlp_genai, "final"),
    Format("otlp-deprecated", "units", "jsonl", otlp_deprecated, "final"),
    Format("openinference", "dates", "jsonl", openinference, "final"),
    Format("phoenix", "routing", "json", phoenix, "final"),
    Format("langfuse", "tagging", "json", langfuse, "feedback"),
    Format("langsmith", "pricing", "jsonl", langsmith, "feedback"),
    Format("inspect", "ledger", "json", inspect, "feedback"),
    Format("chat-json", "units", "jsonl", chat_json, "final"),
)


# -- the runs -----------------------------------------------------------------------------------
def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed (exit {done.returncode}): {done.stderr.strip()[-600:]}")
    return done.stdout


@dataclass(frozen=True)
class Straddling:
    families: int  # the workspace's families (from the traces' sessions or task templates)
    world_units: int  # the world's cases (a case in two parts is one unit of sim-large)


@dataclass(frozen=True)
class Outcome:
    test_before: float
    test_after: float
    references_right: float
    straddling: Straddling
    test_questions: int


def run_format(fmt: Format, folder: Path, epochs: int | None) -> Outcome:
    cases = load_cases(fmt.task_type)
    export = folder / f"{fmt.name}.{fmt.suffix}"
    fmt.write(export, cases)
    store, ws, name = folder / "store", folder / f"ws-{fmt.name}", f"traces-{fmt.name}"
    summary = cli(
        "ingest",
        "-w",
        str(ws),
        "--file",
        str(export),
        "--to-benchmark",
        name,
        "--store",
        str(store),
        "--reference",
        fmt.reference,
        "--task-type",
        fmt.task_type,
        "--no-progress",
    )
    print("  " + summary.strip().splitlines()[0])
    cli("init", "-w", str(ws), "--store", str(store), "--seed", SEED, "--questions", name)
    sets = [*WORLD_SETTINGS, *(("--set", f"epochs={epochs}") if epochs else ())]
    out = cli("train", "-w", str(ws), "--config", str(CONFIG), *sets, "--no-progress")
    print("  " + next((ln for ln in out.splitlines() if ln.startswith("test accuracy")), "?"))
    truth = {c.question: c.answer for c in cases}
    before, after, n = test_accuracy(ws)
    return Outcome(
        before,
        after,
        references_right(store / "questions" / name / "questions.jsonl", truth),
        pools_in_use(ws, {c.question: c.unit_id for c in cases}),
        n,
    )


def references_right(questions: Path, truth: dict[str, str]) -> float:
    rows = [json.loads(line) for line in questions.open()]
    right = sum(truth.get(r["question"]) == r.get("answer") for r in rows)
    return right / len(truth)  # a trace that gave no question counts as a wrong reference


def _train_db(ws: Path) -> tuple[sqlite3.Connection, str]:
    db = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    row = db.execute("SELECT run_id FROM _runs WHERE kind = 'train' ORDER BY seq DESC").fetchone()
    if row is None:
        raise SystemExit(f"{ws}: no training recorded")
    return db, str(row[0])


def test_accuracy(ws: Path) -> tuple[float, float, int]:
    """(baseline, final) accuracy over the final test run's questions, and how many."""
    db, train_id = _train_db(ws)
    try:
        after = dict(
            db.execute(
                "SELECT question_id, correct FROM predictions WHERE run_id = ?",
                (f"{train_id}-final-test",),
            )
        )
        before = dict(
            db.execute("SELECT question_id, correct FROM predictions WHERE run_id = 'baseline'")
        )
    finally:
        db.close()
    if not after:
        raise SystemExit(f"{ws}: no final test run")
    n = len(after)
    return sum(bool(before.get(q)) for q in after) / n, sum(bool(v) for v in after.values()) / n, n


def pools_in_use(ws: Path, world_unit: dict[str, str]) -> Straddling:
    """Families, and world units, found in more than one pool, as the workspace recorded its
    pools: diagnosis and validation in gate_pools.json (task type -> pool -> family -> units),
    test as the final test run's questions."""
    rows = [json.loads(line) for line in (ws / "questions" / "questions.jsonl").open()]
    family = {q["question_id"]: q.get("family") or q["question_id"] for q in rows}
    questions_of_unit: dict[str, list[str]] = defaultdict(list)
    for q in rows:
        questions_of_unit[q.get("unit_id") or q["question_id"]].append(q["question_id"])
    pool_of: dict[str, set[str]] = defaultdict(set)  # question id -> pools
    recorded = json.loads((ws / "gate_pools.json").read_text())["families"]
    for by_pool in recorded.values():
        for pool, families in by_pool.items():
            for units in families.values():
                for unit in units:
                    for qid in questions_of_unit[unit]:
                        pool_of[qid].add(pool)
    db, train_id = _train_db(ws)
    try:
        test_ids = [
            r[0]
            for r in db.execute(
                "SELECT question_id FROM predictions WHERE run_id = ?", (f"{train_id}-final-test",)
            )
        ]
    finally:
        db.close()
    for qid in test_ids:
        pool_of[qid].add("test")
    by_family: dict[str, set[str]] = defaultdict(set)
    by_unit: dict[str, set[str]] = defaultdict(set)
    text = {q["question_id"]: q["question"] for q in rows}
    for qid, pools in pool_of.items():
        by_family[family[qid]] |= pools
        by_unit[world_unit.get(text[qid], qid)] |= pools
    per_pool = {p: sum(p in seen for seen in by_family.values()) for p in POOLS}
    print(
        "  families per pool: "
        + ", ".join(f"{p} {n}" for p, n in per_pool.items())
        + f" ({len(pool_of)} of the {len(rows)} questions found in a pool)"
    )
    return Straddling(
        sum(len(p) > 1 for p in by_family.values()), sum(len(p) > 1 for p in by_unit.values())
    )


TINY_FORMATS = ("otlp", "langfuse", "inspect")


def result_lines(outcomes: dict[str, Outcome]) -> Iterable[str]:
    for name, o in outcomes.items():
        yield f"RESULT ingest_train.{name}.test_before {o.test_before:.3f} share"
        yield f"RESULT ingest_train.{name}.test_after {o.test_after:.3f} share"
        yield f"RESULT ingest_train.{name}.references_right {o.references_right:.3f} share"
        # the world's own grouping, for the formats whose traces hold no session id
        yield f"RESULT ingest_train.{name}.world_units_in_two_pools {o.straddling.world_units} units"
    above = sum(o.test_after > o.test_before for o in outcomes.values())
    shared = sum(o.straddling.families for o in outcomes.values())
    yield f"RESULT ingest_train.formats_above_baseline {above} formats target >= {TARGET_FORMATS}"
    yield f"RESULT ingest_train.families_in_two_pools {shared} families target <= 0"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tiny", action="store_true", help="three formats, one epoch each")
    args = ap.parse_args()
    outcomes: dict[str, Outcome] = {}
    formats = [f for f in FORMATS if f.name in TINY_FORMATS] if args.tiny else FORMATS
    with tempfile.TemporaryDirectory(prefix="bench-ingest-train-") as tmp:
        for fmt in formats:
            print(f"{fmt.name} ({fmt.task_type}, --reference {fmt.reference}):")
            outcomes[fmt.name] = run_format(fmt, Path(tmp), 1 if args.tiny else None)
    for line in result_lines(outcomes):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
