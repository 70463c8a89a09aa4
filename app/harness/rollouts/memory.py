"""Rollout memories: verified winners, retrieved by BM25, injected as a block.

- Storage: `memories` in the workspace's harness log plus an FTS5 index `memories_fts`
  (app/harness/workspace/harness_log/schema.py, migration 4). Only branches whose objective score is 1 are stored;
  the others are counted, never stored (`store_winners`).
- Retrieval: SQLite FTS5 `bm25()` over the task text, the words of the new task OR-ed
  (each quoted, so no FTS syntax from question text is ever interpreted; tokens with digits
  left out). No vector service.
  A question never retrieves its own memory. `memory_dedupe` keeps one memory per normalised
  tool sequence; `memory_retire_after_versions` drops memories stored that many skills versions
  ago (`Retrieval`; both off by default).
- Injection: `format_block` renders memories as a `<memories>` block put before the system
  prompt; `with_memories` wraps AgentPrompts so infer/eval/train use it when `memory_k` > 0
  (app/harness/rollouts/session.py). Stored text is a model's reply and a question's wording, so
  every field is escaped (`fence`) when the block is rendered: no stored `</memories>`, in any
  case or spelling, can close the block or open another tag. Rendering, not storing, escapes,
  so rows stored before this rule are neutralised too.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.workspace.clock import now_iso
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.memories import MemoryRecord, RecalledMemory
from core.scorecard import normalise_tool_sequence
from core.types import Question

MAX_QUERY_TERMS = 64
TASK_MAX_CHARS = 600
_WORD = re.compile(r"\w+", re.UNICODE)


def key_steps(tool_calls_json: str | None) -> str:
    try:
        calls = json.loads(tool_calls_json or "[]")
    except ValueError:
        calls = []
    names = [str(c.get("name", "?"))[:40] for c in calls if isinstance(c, dict)]
    return " -> ".join([*names, "answer"]) if names else "answer directly"


def one_line(text: str, limit: int = TASK_MAX_CHARS) -> str:
    return " ".join((text or "").split())[:limit]


def store_winners(
    log: HarnessLog,
    rollout_id: str,
    winners: list[dict[str, Any]],
    objective: dict[tuple[str, int], int],
) -> dict[str, int]:
    """Store the given branches whose objective score is 1; count the rest. `winners` is one
    branch row per question (the ranker's best), each with `question_id`, `branch_index`,
    `task_type`, `question`, `prediction`, `tool_calls_json`."""
    dropped = 0
    rows = []
    for b in winners:
        if objective.get((b["question_id"], b["branch_index"])) != 1:
            dropped += 1
            continue
        rows.append(
            MemoryRecord(
                run_id=rollout_id,
                question_id=b["question_id"],
                branch_index=b["branch_index"],
                task_type=b["task_type"],
                task=one_line(b["question"]),
                key_steps=key_steps(b.get("tool_calls_json")),
                final_answer=one_line(b.get("prediction") or "", 200),
                created_at=now_iso(),
                skills_version=b.get("skills_version") or None,
            )
        )
    stored = log.add_memories(rows)
    return {"stored": stored, "dropped_unverified": dropped, "already_stored": len(rows) - stored}


def teacher_examples(log: HarnessLog, question_ids: list[str]) -> dict[str, tuple[str, str]]:
    """Question id -> (model, verified answer) of the memories `distill` stored from a
    teacher's run (app/distill.py) for these questions; {} in any other workspace."""
    if not question_ids:
        return {}
    out = {}
    for r in log.teacher_answers(question_ids):
        try:
            model = str(json.loads(r.config_json or "{}").get("agent_model") or "the teacher")
        except ValueError:
            model = "the teacher"
        out[r.question_id] = (model, r.final_answer or "")
    return out


def fts_query(text: str) -> str:
    """The task's words OR-ed, each quoted. Tokens with digits (figures, ids) are left out:
    they say which case it is, not what kind of case, and would drown the words that do."""
    terms: list[str] = []
    for word in _WORD.findall((text or "").lower()):
        if len(word) > 1 and not any(ch.isdigit() for ch in word) and word not in terms:
            terms.append(word)
    return " OR ".join(f'"{t}"' for t in terms[:MAX_QUERY_TERMS])


@dataclass(frozen=True)
class Retrieval:
    """How memories are picked: `dedupe` keeps the best-ranked memory of each normalised tool
    sequence (k copies of one procedure teach no more than one); `retire_after` > 0 drops
    memories stored `retire_after` or more skills versions before `skills_version` (a memory of
    how old skills failed or passed says less as the skills move on; rows without a version
    are kept); `run_id` keeps only that rollout's memories."""

    dedupe: bool = False
    retire_after: int = 0
    skills_version: str = ""
    run_id: str | None = None


# with dedupe or retirement, this many candidates per memory wanted are read before filtering
_CANDIDATES_PER_MEMORY = 4


def retrieve(
    log: HarnessLog,
    task: str,
    k: int,
    exclude_question: str | None = None,
    how: Retrieval = Retrieval(),  # noqa: B008 - frozen, never mutated
) -> list[RecalledMemory]:
    """The k best memories for `task` (BM25), picked as `how` says."""
    if k <= 0:
        return []
    query = fts_query(task)
    if not query:
        return []
    filtering = how.dedupe or how.retire_after > 0
    limit = k * _CANDIDATES_PER_MEMORY if filtering else k
    rows = log.recall(query, exclude_question or "", how.run_id, limit)
    if how.retire_after > 0:
        rows = [r for r in rows if not _retired(r.skills_version, how)]
    if how.dedupe:
        seen: set[str] = set()
        kept = []
        for r in rows:
            key = normalised_steps(r.key_steps)
            if key not in seen:
                seen.add(key)
                kept.append(r)
        rows = kept
    return rows[:k]


def normalised_steps(key_steps: str) -> str:
    """A memory's key steps as core/scorecard.py normalises tool sequences."""
    names = [s for s in (key_steps or "").split(" -> ") if s not in ("answer", "answer directly")]
    return normalise_tool_sequence(names)


def _version_number(version: str | None) -> int | None:
    match = re.fullmatch(r"v(\d+)", version or "")
    return int(match.group(1)) if match else None


def _retired(version: str | None, how: Retrieval) -> bool:
    stored, current = _version_number(version), _version_number(how.skills_version)
    if stored is None or current is None:
        return False
    return current - stored >= how.retire_after


def count(log: HarnessLog) -> int:
    return log.memory_count()


def fence(text: str) -> str:
    """Stored text made inert inside the block: `&`, `<`, `>` as HTML entities, so no stored
    string can form a tag (`</memories>`, `</MEMORIES >`, `<memories`...) or end the block.
    Escaping every angle bracket, not just the block's own tag, leaves nothing to miss among
    case variants and partial tags; `html.unescape` gives the stored text back unchanged."""
    return html.escape(text, quote=False)


def format_block(memories: Sequence[RecalledMemory]) -> str:
    """The block the agent sees (app/providers/sim/agent.py reads its `Task:` lines)."""
    if not memories:
        return ""
    lines = ["<memories>", "Verified experience from earlier runs (each answer was checked):"]
    for m in memories:
        lines += [
            "",
            f"Task: {fence(one_line(m.task))}",
            f"Key steps: {fence(one_line(m.key_steps))}",
            f"Verified answer: {fence(one_line(m.final_answer, 200))}",
        ]
    lines.append("</memories>")
    return "\n".join(lines)


@dataclass(frozen=True)
class MemoryPrompts(AgentPrompts):
    """AgentPrompts with a memory block put before the system prompt."""

    memory_block: Callable[[Question], str] | None = field(default=None, compare=False)

    def opening_messages(self, question: Question) -> list[dict[str, Any]]:
        messages = super().opening_messages(question)
        block = self.memory_block(question) if self.memory_block else ""
        if block:
            messages[0] = {"role": "system", "content": f"{block}\n\n{messages[0]['content']}"}
        return messages


def with_memories(
    prompts: AgentPrompts,
    log: HarnessLog,
    k: int,
    run_id: str | None = None,
    *,
    dedupe: bool = False,
    retire_after: int = 0,
) -> AgentPrompts:
    if k <= 0:
        return prompts
    how = Retrieval(dedupe, retire_after, prompts.skills_version, run_id)

    def block(question: Question) -> str:
        return format_block(retrieve(log, question.question, k, question.question_id, how))

    values = {f: getattr(prompts, f) for f in AgentPrompts.__dataclass_fields__}
    return MemoryPrompts(**values, memory_block=block)
