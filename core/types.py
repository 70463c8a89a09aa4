"""The data model shared by every layer (docs/architecture.md#the-data-model). Pure values, no
I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class StopReason(StrEnum):
    """How an agent's answer to one question ended (stored in predictions.stop_reason)."""

    FINAL = "final"  # it gave an answer
    MAX_STEPS = "max_steps"  # it ran out of turns
    ERROR = "error"  # a provider error ended it
    REFUSED = "refused"  # it stopped without an answer that could be extracted


CHECKERS = ("exact", "numeric", "choice", "regex")


@dataclass(frozen=True)
class Question:
    question_id: str
    task_type: str
    question: str
    answer: str
    unit_id: str = ""
    family: str = ""
    context: str = ""
    checker: str = "exact"
    checker_args: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    # Declared tools (None: the benchmark's default tools) and fixture (docs/tools.md)
    tools: tuple[str, ...] | None = None
    fixture: str = ""

    def __post_init__(self) -> None:
        if not self.unit_id:
            object.__setattr__(self, "unit_id", self.question_id)
        if not self.family:
            object.__setattr__(self, "family", self.unit_id)


@dataclass(frozen=True)
class QuestionUnit:
    """One or two questions judged together: a pair is right only when both are."""

    unit_id: str
    task_type: str
    questions: tuple[Question, ...]

    @property
    def question_ids(self) -> tuple[str, ...]:
        return tuple(q.question_id for q in self.questions)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] | str  # str when the model's arguments did not parse


@dataclass(frozen=True)
class Usage:
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass(frozen=True)
class LLMResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    cost_usd: float = 0.0
    model: str = ""
    latency_s: float = 0.0
    cache_hit: bool = False
    # How the call went (not part of the answer; a cache hit has none of these):
    attempts: int = 1
    retries: int = 0
    timeouts: int = 0
    # Why the provider holds this reply to be no real answer ("empty", "truncated", "filtered",
    # "malformed"), or "". It is handed to the caller like any reply but never cached: the
    # cache key does not say how the call went, so a cached failure would be replayed forever.
    defect: str = ""


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the agent (OpenAI function schema subset)."""

    name: str
    description: str
    parameters: dict[str, Any]

    def as_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class Prediction:
    run_id: str
    question_id: str
    unit_id: str
    task_type: str
    prediction: str
    answer: str
    correct: bool
    stop_reason: str
    steps: tuple[dict[str, Any], ...]
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    skills_version: str = ""
    prompts_version: str = ""
    answer_source: str = ""  # "answer_line", or the fallback that found it (see checkers)
    # the checker's score in [0, 1] (0/1 for the built-in checkers), None without a verdict;
    # how checking went (core.checkers.CheckStatus) and why, when it did not go well
    score: float | None = None
    check_status: str = "ok"
    check_reason: str = ""


@dataclass(frozen=True)
class InferenceResult:
    run_id: str
    total: int
    correct: int
    accuracy: float
    per_task_type: dict[str, dict[str, float]]
    stop_reason_counts: dict[str, int]
    # question_id -> correct; a question whose checker gave no verdict is left out
    correctness: dict[str, bool] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)  # question_id -> score, likewise
    check_counts: dict[str, int] = field(default_factory=dict)  # check status -> questions
    # why checking failed or gave no verdict: reason (cut to 80 chars) -> questions
    check_reasons: dict[str, int] = field(default_factory=dict)
