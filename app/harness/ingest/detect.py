"""Which format a record is, and the file-level rule that one file holds one format."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """What one record is (a file may hold LangSmith runs and their feedback together)."""

    OTLP = "otlp"  # an ExportTraceServiceRequest: resourceSpans
    PHOENIX = "phoenix"  # one span of Phoenix's export: context.trace_id/span_id, attributes
    LANGFUSE = "langfuse"  # a trace with its observations
    LANGFUSE_PAGE = "langfuse-page"  # {data: [traces], meta}
    LANGSMITH_RUN = "langsmith"
    LANGSMITH_FEEDBACK = "langsmith-feedback"
    INSPECT_LOG = "inspect-log"  # a whole eval log ({eval, samples}) as one record
    INSPECT_SAMPLE = "inspect"
    CHAT = "chat-json"


# The --source choices and the record kinds each accepts.
SOURCES: dict[str, frozenset[Kind]] = {
    "otlp": frozenset({Kind.OTLP}),
    "openinference": frozenset({Kind.OTLP, Kind.PHOENIX}),
    "phoenix": frozenset({Kind.PHOENIX}),
    "langfuse": frozenset({Kind.LANGFUSE, Kind.LANGFUSE_PAGE}),
    "langsmith": frozenset({Kind.LANGSMITH_RUN, Kind.LANGSMITH_FEEDBACK}),
    "inspect": frozenset({Kind.INSPECT_LOG, Kind.INSPECT_SAMPLE}),
    "chat-json": frozenset({Kind.CHAT}),
}
SOURCE_CHOICES = ("auto", *SOURCES)

# Record kinds that belong to one format (the file-level family).
FAMILY = {
    Kind.OTLP: "OTLP JSON",
    Kind.PHOENIX: "Phoenix span export",
    Kind.LANGFUSE: "Langfuse trace export",
    Kind.LANGFUSE_PAGE: "Langfuse trace export",
    Kind.LANGSMITH_RUN: "LangSmith runs",
    Kind.LANGSMITH_FEEDBACK: "LangSmith runs",
    Kind.INSPECT_LOG: "Inspect AI eval log",
    Kind.INSPECT_SAMPLE: "Inspect AI eval log",
    Kind.CHAT: "chat-json",
}


def classify(value: Any) -> Kind | None:
    if not isinstance(value, dict):
        return None
    if "resourceSpans" in value:
        return Kind.OTLP
    context = value.get("context")
    if isinstance(context, dict) and "span_id" in context and "trace_id" in context:
        return Kind.PHOENIX
    if "run_type" in value and ("inputs" in value or "outputs" in value):
        return Kind.LANGSMITH_RUN
    if (
        "run_id" in value
        and "key" in value
        and ("score" in value or "value" in value or "correction" in value)
    ):
        return Kind.LANGSMITH_FEEDBACK
    if "observations" in value and "id" in value:
        return Kind.LANGFUSE
    if isinstance(value.get("data"), list) and isinstance(value.get("meta"), dict):
        return Kind.LANGFUSE_PAGE
    if "eval" in value and "samples" in value:
        return Kind.INSPECT_LOG
    if "messages" in value and "epoch" in value and ("target" in value or "input" in value):
        return Kind.INSPECT_SAMPLE
    if isinstance(value.get("messages"), list):
        return Kind.CHAT
    return None


def describe_unknown(value: Any) -> str:
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not an object"
    keys = ", ".join(sorted(str(k) for k in value)[:8])
    return f"an object with keys [{keys}]"
