"""export --format otlp | inspect: runs and forks as traces other tools read.

Sources: a fork's branches (`branches` table, one trajectory per question and branch) or a
run's predictions (`predictions` table: `infer`, `eval`, training steps; one trajectory per
question). Every string goes through every redaction pass (app/secrets.py `scrub_json`)
before it is mapped, so the files hold the same placeholders as the JSONL export.

OTLP (`otlp.json`): one OTLP/JSON `ExportTraceServiceRequest` (the body an OTLP/HTTP
collector, Phoenix or Langfuse's OTLP endpoint accepts; opentelemetry-proto
docs/specification.md, "JSON Protobuf Encoding"): `resourceSpans[].scopeSpans[].spans[]`,
ids as lower-case hex (not the base64 of the plain protobuf JSON mapping), `kind` and
`status.code` as integers (enum names are not allowed there), times as
decimal strings of Unix nanoseconds, attributes as `{key, value: {stringValue | intValue |
doubleValue | boolValue}}` (`intValue` a decimal string, as the protobuf JSON mapping writes
int64). Attribute names follow the OpenTelemetry GenAI semantic conventions
(open-telemetry/semantic-conventions v1.56, docs/gen-ai/gen-ai-spans.md and
gen-ai-agent-spans.md); message attributes are JSON strings in the shape of its
gen-ai-input-messages.json / gen-ai-output-messages.json schemas (`{role, parts: [{type:
"text", content} | {type: "tool_call", id, name, arguments} | {type: "tool_call_response",
id, response}]}`, output messages with `finish_reason`).

One trajectory is one trace (trace id: the first 32 hex digits of sha256 over run, question
and branch, so an export is reproducible). Its steps map to spans as follows:

| trajectory (steps_json)      | span                                                       |
| ---------------------------- | ---------------------------------------------------------- |
| the trajectory as a whole    | root `invoke_agent skill-trainer` (kind INTERNAL): model, conversation id, temperature, seed, summed token usage, the opening messages as `gen_ai.input.messages`, the final reply as `gen_ai.output.messages`; the verdict as `skill_trainer.*` attributes (question, task type, branch, answer, prediction, correct, stop reason, versions, cost) |
| `model` step (turn t)        | child `chat <model>` (kind CLIENT): `gen_ai.input.messages` the whole conversation sent at that turn, `gen_ai.output.messages` the reply (text and `tool_call` parts, finish reason `tool_call` or `stop`) |
| `tool` step                  | child `execute_tool <name>` (kind INTERNAL): `gen_ai.tool.name`, `gen_ai.tool.call.id` (the i-th call of its turn's model step), `gen_ai.tool.call.arguments` (JSON), `gen_ai.tool.call.result`; status ERROR and `error.type` `tool_error` when the tool refused the call |
| `error` step                 | child `chat <model>` with status ERROR, `error.type` `provider_error` and the (redacted) message |
| `extract` step               | child `chat <model>` with `skill_trainer.call.role` `extract` (the answer-extraction fallback call) and its reply |

Each child carries `skill_trainer.step.index` (its place in steps_json) and
`skill_trainer.step.turn`. Per-step times and per-step token counts are not recorded by the
harness: children are laid out one after another in equal slices of the trajectory's latency
(the order is exact, the durations are not), and token usage is given once, on the root.

Inspect (`inspect-<run>.json`, one per run): an Inspect AI eval log in its JSON form
(`inspect_ai.log.read_eval_log` reads it; checked in tests/app/data/test_export_otel.py): one
sample per question and branch (`epoch` = branch index + 1), `input` the question, `target`
the reference answer, `messages` the conversation (system, user, assistant with
`tool_calls`, tool with `tool_call_id` and `function`), `output` the final reply with usage,
and a `skill_trainer` score `C`/`I` with the prediction as its answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loguru import logger

from app.errors import UserError
from app.harness.data.fork import held_out_question_ids
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.workspace.atomic import check_no_links, write_json_atomic, write_text_atomic
from app.harness.workspace.clock import now_iso
from app.harness.workspace.ids import check_run_id
from app.secrets import scrub_json
from core.evolution.edits import strip_momentum
from core.scorecard import pass_at_1_and_n
from core.types import Question

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

FORMATS = ("otlp", "inspect")
OTLP_FILE = "otlp.json"
SCOPE = "skill-trainer"
AGENT_NAME = "skill-trainer"
SPAN_KIND_INTERNAL = 1  # opentelemetry.proto.trace.v1.Span.SpanKind
SPAN_KIND_CLIENT = 3
STATUS_OK = 1  # opentelemetry.proto.trace.v1.Status.StatusCode
STATUS_ERROR = 2
INSPECT_SCORER = "skill_trainer"
# litellm's model prefix -> the GenAI conventions' `gen_ai.provider.name` well-known value
PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "vertex_ai": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "groq": "groq",
    "mistral": "mistral_ai",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "cohere": "cohere",
    "perplexity": "perplexity",
    "sim": "skill_trainer.sim",
}


@dataclass(frozen=True)
class Trajectory:
    """One answered question (a fork branch or a run's prediction), already redacted."""

    run_id: str
    question_id: str
    branch_index: int
    task_type: str
    conversation_id: str
    model: str
    temperature: float | None
    seed: int | None
    opening: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    final_text: str
    prediction: str
    answer: str
    correct: bool
    stop_reason: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    created_at: str
    skills_version: str
    prompts_version: str
    # the scores an ingested trace was recorded with (core.traces.Feedback.as_json shapes)
    feedback: tuple[dict[str, Any], ...] = ()


def export_traces(
    session: Session,
    run_ids: Sequence[str],
    out_dir: Path,
    fmt: str,
    *,
    include_test: bool = False,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write the runs `run_ids` as `fmt` ("otlp" or "inspect") into `out_dir`; returns the
    manifest of each file written, by file name."""
    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    for rid in run_ids:
        check_run_id(rid, "run id")
    names = [OTLP_FILE] if fmt == "otlp" else [f"inspect-{rid}.json" for rid in run_ids]
    _check_target(session.paths.root, Path(out_dir), names, overwrite)
    test_ids = set() if include_test else held_out_question_ids(session.benchmark)
    by_run = {rid: list(load_trajectories(session, rid, test_ids)) for rid in run_ids}
    documents: dict[str, dict[str, Any]] = {}
    if fmt == "otlp":
        documents[OTLP_FILE] = otlp_document([t for ts in by_run.values() for t in ts])
    else:
        for rid, trajectories in by_run.items():
            documents[f"inspect-{rid}.json"] = inspect_log(rid, trajectories, session)
    texts = {name: json.dumps(doc, ensure_ascii=False) + "\n" for name, doc in documents.items()}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifests = {}
    for name, text in texts.items():
        write_text_atomic(out_dir / name, text)
        manifest = {
            "file": name,
            "format": fmt,
            "count": sum(len(ts) for ts in by_run.values())
            if fmt == "otlp"
            else len(by_run[name.removeprefix("inspect-").removesuffix(".json")]),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "run_ids": list(run_ids),
            "test_pool_included": include_test,
            "simulated_model": session.config.uses_sim,
            "created_at": now_iso(),
        }
        write_json_atomic(out_dir / f"{name}.manifest.json", manifest)
        manifests[name] = manifest
    return manifests


def _check_target(workspace: Path, out_dir: Path, names: list[str], overwrite: bool) -> None:
    root = workspace if out_dir.is_relative_to(workspace) else out_dir
    files = [f for n in names for f in (n, f"{n}.manifest.json")]
    for name in files:
        check_no_links(root, out_dir / name)
    previous = [name for name in files if os.path.lexists(out_dir / name)]
    if previous and not overwrite:
        raise UserError(
            f"{out_dir}: holds a previous export ({', '.join(previous[:3])}); add --overwrite "
            "(overwrite=True) to replace it, or choose another --out"
        )
    if previous:
        logger.warning("replacing the previous export in {} ({} files)", out_dir, len(previous))


# --- reading the log -----------------------------------------------------------------------


def load_trajectories(session: Session, run_id: str, skip: set[str]) -> Iterator[Trajectory]:
    """A fork's branches, else a run's predictions; questions in `skip` (the test pool) and
    questions no longer in the benchmark are left out."""
    log = session.log
    branches = log.branches(run_id) or log.predictions_as_branches(run_id)
    rows = [b.as_dict() for b in branches]  # the trajectory builders read a row by column
    if not rows:
        raise UserError(
            f"{session.paths.db}: run {run_id!r} has no branches or predictions to export "
            "(a fork's rollout id such as fork-1, or a run id such as infer-1)"
        )
    model = _run_model(session, run_id)
    run = log.run(run_id)
    served = run is not None and run.kind == "serve"
    ingested = run is not None and run.kind == "ingest"
    prompts_cache: dict[tuple[str, str], AgentPrompts] = {}
    for row in rows:
        question = session.questions_by_id.get(row["question_id"])
        if question is None and served:
            question = served_question(row)
        if question is None or row["question_id"] in skip:
            continue
        if ingested:
            yield _ingested_trajectory(session, row, question)
            continue
        yield _trajectory(row, question, model, _opening(prompts_cache, session, row, question))


def _ingested_trajectory(session: Session, row: dict[str, Any], question: Question) -> Trajectory:
    """An ingest run's trace as it was recorded: its own model, its own opening messages
    (the system and user messages before its first model turn; not the workspace's prompts,
    which never saw it) and the feedback it came with (docs/ingest.md#to-a-benchmark)."""
    recorded = session.log.recorded_model(row["question_id"])
    try:
        events = json.loads(row["steps_json"] or "[]")
    except ValueError:
        events = []
    events = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
    first_turn = next(
        (i for i, e in enumerate(events) if e.get("type") not in ("system", "user")), len(events)
    )
    opening = [
        {"role": e["type"], "content": str(e.get("text") or "")} for e in events[:first_turn]
    ]
    feedback = next((e.get("feedback") for e in events if e.get("type") == "feedback"), None)
    rest = [e for e in events[first_turn:] if e.get("type") != "feedback"]
    model = str(recorded[0] or "") if recorded else ""
    trajectory = _trajectory({**row, "steps_json": json.dumps(rest)}, question, model, opening)
    scores = tuple(f for f in feedback or [] if isinstance(f, dict) and f.get("score") is not None)
    return replace(trajectory, feedback=scores)


def served_question(row: dict[str, Any]) -> Question | None:
    """A serve run's request as the question it answered: a client's task is no benchmark
    question, so it is read from the `request` step the server logs first
    (app/harness/serving/agent.py; the task as sent, up to its logged length; the context
    is not logged, only its size)."""
    try:
        steps = json.loads(row["steps_json"] or "[]")
    except ValueError:
        return None
    first = steps[0] if isinstance(steps, list) and steps else None
    if not isinstance(first, dict) or first.get("type") != "request":
        return None
    task, task_type = first.get("task"), first.get("task_type")
    if not isinstance(task, str) or not isinstance(task_type, str):
        return None
    return Question(question_id=row["question_id"], task_type=task_type, question=task, answer="")


def _run_model(session: Session, run_id: str) -> str:
    run = session.log.run(run_id)
    try:
        model = json.loads(run.config_json or "{}").get("agent_model") if run else None
    except (ValueError, AttributeError):
        model = None
    return model if isinstance(model, str) and model else session.config.agent_model


def _opening(
    cache: dict[tuple[str, str], AgentPrompts],
    session: Session,
    row: dict[str, Any],
    question: Question,
) -> list[dict[str, Any]]:
    """The messages the run opened with, from its skills and prompts versions (skills without
    their momentum block, as every export writes them)."""
    key = (row["skills_version"], row["prompts_version"])
    if key not in cache:
        root = session.paths.root
        loaded = AgentPrompts.load(
            root / "skills" / key[0], root / "prompts" / key[1], session.config.skill_mode
        )
        skills = {
            n: strip_momentum(t) if n.endswith(".md") else t for n, t in loaded.skills.items()
        }
        cache[key] = replace(loaded, skills=skills)
    return cache[key].opening_messages(question)


def _trajectory(
    row: dict[str, Any], question: Question, model: str, opening: list[dict[str, Any]]
) -> Trajectory:
    try:
        steps = json.loads(row["steps_json"] or "[]")
    except ValueError:  # a damaged row: exported without its steps rather than not at all
        steps = []
    steps = [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
    final = row.get("final_text")
    if final is None:  # predictions keep no final text: the last model reply is it
        final = next((s.get("text", "") for s in reversed(steps) if s.get("type") == "model"), "")
    clean = scrub_json(
        {
            "opening": opening,
            "steps": steps,
            "final": final or "",
            "prediction": row.get("prediction") or "",
            "answer": row.get("answer") or question.answer,
        }
    )
    branch = int(row.get("branch_index") or 0)
    return Trajectory(
        run_id=row["run_id"],
        question_id=row["question_id"],
        branch_index=branch,
        task_type=row.get("task_type") or question.task_type,
        conversation_id=row.get("session_id") or f"{row['run_id']}/{row['question_id']}/{branch}",
        model=model,
        temperature=row.get("temperature"),
        seed=row.get("seed"),
        opening=clean["opening"],
        steps=clean["steps"],
        final_text=clean["final"],
        prediction=clean["prediction"],
        answer=clean["answer"],
        correct=bool(row.get("correct")),
        stop_reason=row.get("stop_reason") or "",
        tokens_in=int(row.get("tokens_in") or 0),
        tokens_out=int(row.get("tokens_out") or 0),
        cost_usd=float(row.get("cost_usd") or 0.0),
        latency_s=float(row.get("latency_s") or 0.0),
        created_at=row.get("created_at") or now_iso(),
        skills_version=row["skills_version"] or "",
        prompts_version=row["prompts_version"] or "",
    )


# --- OTLP ----------------------------------------------------------------------------------


def otlp_document(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """An OTLP/JSON ExportTraceServiceRequest holding one trace per trajectory."""
    spans = [span for t in trajectories for span in trajectory_spans(t)]
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        _attr("service.name", "skill-trainer"),
                        _attr("telemetry.sdk.name", "skill-trainer"),
                    ]
                },
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}],
            }
        ]
    }


def trajectory_spans(t: Trajectory) -> list[dict[str, Any]]:
    """The root `invoke_agent` span and one child per step (the table in the module doc)."""
    trace_id = _hex(f"{t.run_id}\x00{t.question_id}\x00{t.branch_index}", 32)
    root_id = _hex(f"{trace_id}/root", 16)
    end = _unix_nanos(t.created_at)
    start = end - int(t.latency_s * 1e9)
    children = _step_spans(t, trace_id, root_id)
    slice_ns = (end - start) // max(1, len(children))
    for i, child in enumerate(children):
        child["startTimeUnixNano"] = str(start + i * slice_ns)
        child["endTimeUnixNano"] = str(start + (i + 1) * slice_ns)
    provider = provider_name(t.model)
    attributes = [
        _attr("gen_ai.operation.name", "invoke_agent"),
        _attr("gen_ai.provider.name", provider),
        _attr("gen_ai.agent.name", AGENT_NAME),
        _attr("gen_ai.request.model", t.model),
        _attr("gen_ai.conversation.id", t.conversation_id),
        _attr("gen_ai.usage.input_tokens", t.tokens_in),
        _attr("gen_ai.usage.output_tokens", t.tokens_out),
        _attr("gen_ai.input.messages", _json(otel_messages(t.opening))),
        _attr(
            "gen_ai.output.messages",
            _json([_output_message(t.final_text, [], "stop" if t.final_text else "error")]),
        ),
        _attr("skill_trainer.run_id", t.run_id),
        _attr("skill_trainer.question_id", t.question_id),
        _attr("skill_trainer.task_type", t.task_type),
        _attr("skill_trainer.branch_index", t.branch_index),
        _attr("skill_trainer.answer", t.answer),
        _attr("skill_trainer.prediction", t.prediction),
        _attr("skill_trainer.correct", t.correct),
        _attr("skill_trainer.stop_reason", t.stop_reason),
        _attr("skill_trainer.skills_version", t.skills_version),
        _attr("skill_trainer.prompts_version", t.prompts_version),
        _attr("skill_trainer.cost_usd", t.cost_usd),
    ]
    if t.feedback:  # read back by ingest (app/harness/ingest/spans.py)
        attributes.append(_attr("skill_trainer.feedback", _json(list(t.feedback))))
    if t.temperature is not None:
        attributes.append(_attr("gen_ai.request.temperature", float(t.temperature)))
    if t.seed is not None:
        attributes.append(_attr("gen_ai.request.seed", int(t.seed)))
    failed = t.stop_reason == "error"
    root = {
        "traceId": trace_id,
        "spanId": root_id,
        "name": f"invoke_agent {AGENT_NAME}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attributes + ([_attr("error.type", "agent_error")] if failed else []),
        "status": {"code": STATUS_ERROR if failed else STATUS_OK},
    }
    return [root, *children]


def _step_spans(t: Trajectory, trace_id: str, parent: str) -> list[dict[str, Any]]:
    history = [dict(m) for m in t.opening]
    calls_by_turn: dict[int, list[dict[str, Any]]] = {}
    used: dict[int, int] = {}
    spans: list[dict[str, Any]] = []
    provider = provider_name(t.model)
    for index, step in enumerate(t.steps):
        kind = step.get("type")
        turn = step.get("turn")
        base = {
            "traceId": trace_id,
            "spanId": _hex(f"{trace_id}/{index}", 16),
            "parentSpanId": parent,
        }
        common = [_attr("skill_trainer.step.index", index)]
        if isinstance(turn, int):
            common.append(_attr("skill_trainer.step.turn", turn))
        chat = [
            _attr("gen_ai.operation.name", "chat"),
            _attr("gen_ai.provider.name", provider),
            _attr("gen_ai.request.model", t.model),
            _attr("gen_ai.conversation.id", t.conversation_id),
        ]
        if kind == "model":
            calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)]
            calls_by_turn[turn if isinstance(turn, int) else -1] = calls
            text = str(step.get("text") or "")
            out = _output_message(text, calls, "tool_call" if calls else "stop")
            spans.append(
                base
                | {
                    "name": f"chat {t.model}",
                    "kind": SPAN_KIND_CLIENT,
                    "attributes": chat
                    + common
                    + [
                        _attr("gen_ai.input.messages", _json(otel_messages(history))),
                        _attr("gen_ai.output.messages", _json([out])),
                    ],
                    "status": {"code": STATUS_OK},
                }
            )
            history.append(_chat_assistant(text, calls))
        elif kind == "tool":
            key = turn if isinstance(turn, int) else -1
            i = used.get(key, 0)
            used[key] = i + 1
            turn_calls = calls_by_turn.get(key, [])
            call_id = str(turn_calls[i].get("id") or "") if i < len(turn_calls) else ""
            name = str(step.get("name") or "")
            output = str(step.get("output") or "")
            error = step.get("status") == "error"
            attributes = [
                _attr("gen_ai.operation.name", "execute_tool"),
                _attr("gen_ai.tool.name", name),
                _attr("gen_ai.tool.type", "function"),
                _attr("gen_ai.tool.call.arguments", _json(step.get("arguments"))),
                _attr("gen_ai.tool.call.result", output),
                *common,
            ]
            if call_id:
                attributes.insert(3, _attr("gen_ai.tool.call.id", call_id))
            if error:
                attributes.append(_attr("error.type", "tool_error"))
            spans.append(
                base
                | {
                    "name": f"execute_tool {name}",
                    "kind": SPAN_KIND_INTERNAL,
                    "attributes": attributes,
                    "status": {"code": STATUS_ERROR, "message": output}
                    if error
                    else {"code": STATUS_OK},
                }
            )
            history.append({"role": "tool", "tool_call_id": call_id, "content": output})
        elif kind == "error":
            message = str(step.get("error") or "")
            spans.append(
                base
                | {
                    "name": f"chat {t.model}",
                    "kind": SPAN_KIND_CLIENT,
                    "attributes": chat + common + [_attr("error.type", "provider_error")],
                    "status": {"code": STATUS_ERROR, "message": message},
                }
            )
        elif kind == "extract":
            text = str(step.get("text") or "")
            spans.append(
                base
                | {
                    "name": f"chat {t.model}",
                    "kind": SPAN_KIND_CLIENT,
                    "attributes": chat
                    + common
                    + [
                        _attr("skill_trainer.call.role", "extract"),
                        _attr("gen_ai.output.messages", _json([_output_message(text, [], "stop")])),
                    ],
                    "status": {"code": STATUS_OK},
                }
            )
        # `verdict` steps are the root span's skill_trainer.* attributes
    return spans


def otel_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-completions messages as GenAI input messages (`{role, parts}`)."""
    out = []
    for m in messages:
        role = m.get("role", "user")
        if role == "tool":
            parts = [
                {
                    "type": "tool_call_response",
                    "id": m.get("tool_call_id") or None,
                    "response": m.get("content") or "",
                }
            ]
        else:
            parts = [{"type": "text", "content": m["content"]}] if m.get("content") else []
            for c in m.get("tool_calls") or []:
                fn = c.get("function", c)
                parts.append(
                    {
                        "type": "tool_call",
                        "id": c.get("id") or None,
                        "name": fn.get("name", ""),
                        "arguments": _arguments(fn.get("arguments")),
                    }
                )
        out.append({"role": role, "parts": parts})
    return out


def _output_message(text: str, calls: list[dict[str, Any]], finish: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [
        {
            "type": "tool_call",
            "id": c.get("id") or None,
            "name": c.get("name", ""),
            "arguments": c.get("arguments"),
        }
        for c in calls
    ]
    return {"role": "assistant", "parts": parts, "finish_reason": finish}


def _chat_assistant(text: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {"id": c.get("id"), "name": c.get("name", ""), "arguments": c.get("arguments")}
            for c in calls
        ],
    }


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def provider_name(model: str) -> str:
    """`gen_ai.provider.name` for a litellm model name: its prefix's well-known value, the
    prefix itself when the conventions name none, and `openai` for an unprefixed name (litellm
    sends those to OpenAI)."""
    if "/" not in model:
        return "openai"
    prefix = model.split("/", 1)[0]
    return PROVIDERS.get(prefix, prefix)


def _attr(key: str, value: str | int | float | bool) -> dict[str, Any]:
    """An OTLP KeyValue (bool before int: a bool is an int in Python)."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _hex(seed: str, digits: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]


def _unix_nanos(iso: str) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1e9)
    except ValueError:
        return int(datetime.fromisoformat(now_iso()).timestamp() * 1e9)


# --- Inspect -------------------------------------------------------------------------------


def inspect_log(
    run_id: str, trajectories: Sequence[Trajectory], session: Session
) -> dict[str, Any]:
    """An Inspect AI eval log (its JSON form, log format version 2) of one run."""
    model = trajectories[0].model if trajectories else session.config.agent_model
    samples = [_inspect_sample(t) for t in trajectories]
    by_question: dict[str, list[bool]] = {}
    for t in trajectories:
        by_question.setdefault(t.question_id, []).append(bool(t.correct))
    started = min((t.created_at for t in trajectories), default=now_iso())
    completed = max((t.created_at for t in trajectories), default=started)
    usage = {
        "input_tokens": sum(t.tokens_in for t in trajectories),
        "output_tokens": sum(t.tokens_out for t in trajectories),
    }
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": _hex(f"eval/{run_id}", 22),
            "run_id": run_id,
            "created": started,
            "task": f"skill-trainer/{run_id}",
            "task_id": run_id,
            "task_version": 0,
            "dataset": {
                "name": session.benchmark.name,
                "samples": len({t.question_id for t in trajectories}),
            },
            "model": model,
            "config": {"epochs": 1 + max((t.branch_index for t in trajectories), default=0)},
            "metadata": {"simulated_model": session.config.uses_sim},
        },
        "results": {
            "total_samples": len(samples),
            "completed_samples": len(samples),
            "scores": [
                {
                    "name": INSPECT_SCORER,
                    "scorer": INSPECT_SCORER,
                    "metrics": {
                        "accuracy": {
                            "name": "accuracy",
                            # Inspect's own reading of epochs (mean per sample, then over
                            # samples): the pass@1 `fork` and `rank` print
                            "value": pass_at_1_and_n(by_question)[0],
                        }
                    },
                }
            ],
        },
        "stats": {
            "started_at": started,
            "completed_at": completed,
            "model_usage": {model: usage},
        },
        "samples": samples,
    }


def _inspect_sample(t: Trajectory) -> dict[str, Any]:
    user = next((m.get("content", "") for m in t.opening if m.get("role") == "user"), "")
    messages = [_inspect_message(m) for m in t.opening]
    calls_by_turn: dict[int, list[dict[str, Any]]] = {}
    used: dict[int, int] = {}
    for step in t.steps:
        raw_turn = step.get("turn")
        turn = raw_turn if isinstance(raw_turn, int) else -1
        if step.get("type") == "model":
            calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)]
            calls_by_turn[turn] = calls
            messages.append(
                {
                    "role": "assistant",
                    "content": str(step.get("text") or ""),
                    "tool_calls": [_inspect_call(c) for c in calls] or None,
                    "model": t.model,
                }
            )
        elif step.get("type") == "tool":
            i = used.get(turn, 0)
            used[turn] = i + 1
            calls = calls_by_turn.get(turn, [])
            error = step.get("status") == "error"
            messages.append(
                {
                    "role": "tool",
                    "content": str(step.get("output") or ""),
                    "tool_call_id": str(calls[i].get("id")) if i < len(calls) else None,
                    "function": str(step.get("name") or ""),
                    "error": {"type": "unknown", "message": str(step.get("output") or "")}
                    if error
                    else None,
                }
            )
    return {
        "id": t.question_id,
        "epoch": t.branch_index + 1,
        "input": user,
        "target": t.answer,
        "messages": messages,
        "output": {
            "model": t.model,
            "choices": [
                {
                    "message": {"role": "assistant", "content": t.final_text, "model": t.model},
                    "stop_reason": "stop" if t.stop_reason == "final" else "unknown",
                }
            ],
            "usage": {
                "input_tokens": t.tokens_in,
                "output_tokens": t.tokens_out,
                "total_tokens": t.tokens_in + t.tokens_out,
            },
            "time": t.latency_s,
        },
        "scores": _inspect_feedback(t)
        or {
            INSPECT_SCORER: {
                "value": "C" if t.correct else "I",
                "answer": t.prediction,
                "explanation": f"stop reason {t.stop_reason or 'n/a'}",
            }
        },
        "metadata": {
            "task_type": t.task_type,
            "branch_index": t.branch_index,
            "temperature": t.temperature,
            "cost_usd": t.cost_usd,
            "skills_version": t.skills_version,
            "prompts_version": t.prompts_version,
            "conversation_id": t.conversation_id,
        },
        "model_usage": {
            t.model: {
                "input_tokens": t.tokens_in,
                "output_tokens": t.tokens_out,
                "total_tokens": t.tokens_in + t.tokens_out,
            }
        },
        "total_time": t.latency_s,
    }


def _inspect_feedback(t: Trajectory) -> dict[str, Any]:
    """An ingested trace's recorded scores as Inspect scores, by name."""
    return {
        str(f.get("name") or f"feedback-{i}"): {
            "value": f["score"],
            "explanation": str(f.get("text") or ""),
        }
        for i, f in enumerate(t.feedback, start=1)
    }


def _inspect_message(m: dict[str, Any]) -> dict[str, Any]:
    role = m.get("role", "user")
    content = m.get("content") or ""
    if role == "tool":
        return {
            "role": "tool",
            "content": content,
            "tool_call_id": m.get("tool_call_id"),
            "function": m.get("name"),
        }
    return {"role": role, "content": content}


def _inspect_call(c: dict[str, Any]) -> dict[str, Any]:
    arguments = _arguments(c.get("arguments"))
    return {
        "id": str(c.get("id") or ""),
        "function": str(c.get("name") or ""),
        "arguments": arguments if isinstance(arguments, dict) else {"value": arguments},
        "type": "function",
    }
