"""Curated, multi-turn export files: whole trajectories (tool calls and observations
included), by trajectory class (core/curation.py, stored by `rank`), in a chosen class mix,
each record with its lineage (app/harness/data/lineage.py). Written beside the files of
app/harness/data/export.py, in the same staged, all-or-nothing way.

Files (field by field in docs/curation.md#exported-files):
- `sft_openai_chat.jsonl`: OpenAI's chat fine-tuning line, {"messages", "tools"}; assistant
  turns carry `tool_calls` (arguments as a JSON string) and each call's result is a `tool`
  message. OpenAI refuses unknown keys, so each line's lineage is in
  `sft_openai_chat.jsonl.lineage.jsonl` ({"line", "lineage"}).
- `sft_trl.jsonl`: TRL's conversational language-modelling type with a `tools` column (a
  JSON string of the schemas, which TRL's SFTTrainer parses) and a `lineage` column; tool
  call arguments are objects, as chat templates read them.
- `kto.jsonl`: TRL's unpaired preference type, conversational: {"prompt", "completion",
  "label", "lineage"}; label true for pristine and recovery branches, false for negatives.
- `stepwise.jsonl`: TRL's stepwise supervision type (standard format): {"prompt",
  "completions", "labels", "lineage"}, one completion per agent turn, labels false from a
  negative's divergence turn on.

SFT files hold pristine and recovery branches only (verbose ones when a mix names them);
hard negatives go only into the preference files. With a mix (`--mix
pristine=0.65,recovery=0.25 --by tokens`) the SFT classes are down-sampled by seed so that
their token (or record) shares match the requested ones, normalised over the classes named;
the negatives' share of the preference data is reported beside it.

Tokens are estimated as characters / 4 of the record's text (no tokenizer is assumed).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from app.errors import UserError
from app.harness.data.admission import NO_ADMISSION_RULES, Admissions, branch_key
from app.harness.data.curation import steps_of, stored_classes
from app.harness.data.licences import export_licences
from app.harness.data.lineage import (
    SIDECAR_SUFFIX,
    LineageSources,
    lineage_key,
    offered_tools,
    source_of,
)
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.secrets import scrub_json
from core import curation, lineage
from core.curation import MixItem, MixShortfall, TrajectoryClass
from core.evolution.edits import strip_momentum
from core.types import Question

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

CURATED_LAYOUTS = {
    "sft_openai_chat.jsonl": "openai-chat-fine-tuning-with-tools",
    "sft_trl.jsonl": "trl-conversational-language-modeling-with-tools",
    "kto.jsonl": "trl-conversational-unpaired-preference",
    "stepwise.jsonl": "trl-standard-stepwise-supervision",
}
SIDECARS = ("sft_openai_chat.jsonl",)
CURATION_MANIFEST = "curation.manifest.json"
CHARS_PER_TOKEN = 4
MIXABLE = (TrajectoryClass.PRISTINE, TrajectoryClass.RECOVERY, TrajectoryClass.VERBOSE)


@dataclass(frozen=True)
class CurationOptions:
    mix: Mapping[str, float] | None = None  # None: every pristine and recovery branch
    by_tokens: bool = True
    seed: int = 0
    total: int | None = None
    allow_copyleft: bool = False  # strong-copyleft sources (app/harness/data/licences.py)
    allow_restricted: bool = False  # unlicensed or proprietary sources: the user's own data


def curated_file_names() -> list[str]:
    return [
        *CURATED_LAYOUTS,
        *(f"{n}{SIDECAR_SUFFIX}" for n in SIDECARS),
        CURATION_MANIFEST,
    ]


def parse_mix_option(text: str) -> dict[str, float]:
    try:
        shares = curation.parse_mix(text)
    except ValueError as e:
        raise UserError(f"--mix {text!r}: {e}") from None
    if TrajectoryClass.NEGATIVE.value in shares:
        raise UserError(
            f"--mix {text!r}: negatives go only into preference data (kto.jsonl, "
            "stepwise.jsonl), never SFT; their share there is reported in "
            f"{CURATION_MANIFEST}"
        )
    return shares


# -- messages from a branch's steps --------------------------------------------------------------
def trajectory_messages(
    steps: Sequence[Mapping[str, Any]], *, json_arguments: bool
) -> list[dict[str, Any]]:
    """The agent's side of a branch as chat messages: each model turn as an assistant message
    (with its tool calls), each tool result as a `tool` message answering its call."""
    out: list[dict[str, Any]] = []
    pending: dict[int, list[str]] = {}  # turn -> call ids, in call order
    for s in steps:
        kind, turn = s.get("type"), s.get("turn")
        if kind == "model":
            calls = [c for c in (s.get("tool_calls") or []) if isinstance(c, dict)]
            message: dict[str, Any] = {"role": "assistant", "content": str(s.get("text") or "")}
            if calls:
                ids = [str(c.get("id") or f"call_{turn}_{i}") for i, c in enumerate(calls)]
                pending[turn if isinstance(turn, int) else -1] = ids
                message["tool_calls"] = [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": str(c.get("name")),
                            "arguments": _arguments(c.get("arguments"), json_arguments),
                        },
                    }
                    for cid, c in zip(ids, calls, strict=True)
                ]
            out.append(message)
        elif kind == "tool":
            ids = pending.get(turn if isinstance(turn, int) else -1) or ["call_unmatched"]
            cid = ids.pop(0) if len(ids) > 1 else ids[0]
            out.append({"role": "tool", "tool_call_id": cid, "content": str(s.get("output") or "")})
    return out


def _arguments(arguments: Any, as_json: bool) -> Any:
    if as_json:
        return arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True)
    if isinstance(arguments, dict):
        return arguments
    return {"_raw": str(arguments)}  # arguments that were not an object, kept visible


def turn_texts(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """One text per agent turn for stepwise supervision: what the model wrote and called, and
    what each call returned."""
    texts: dict[int, list[str]] = {}
    for s in steps:
        turn = s.get("turn")
        if not isinstance(turn, int):
            continue
        part = texts.setdefault(turn, [])
        if s.get("type") == "model":
            if s.get("text"):
                part.append(str(s["text"]))
            for c in s.get("tool_calls") or []:
                args = json.dumps(c.get("arguments"), sort_keys=True, default=str)
                part.append(f"<tool_call>{c.get('name')}({args})</tool_call>")
        elif s.get("type") == "tool":
            part.append(f"<tool_result name={s.get('name')}>{s.get('output')}</tool_result>")
        elif s.get("type") == "error":
            part.append(f"<error>{s.get('error')}</error>")
    return ["\n".join(texts[t]) for t in sorted(texts)]


def prompt_text(prompt: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(f"{m.get('role')}: {m.get('content')}" for m in prompt)


def estimate_tokens(obj: Any) -> int:
    text = json.dumps(obj, ensure_ascii=False)
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


# -- the files -----------------------------------------------------------------------------------
@dataclass
class _Candidate:
    key: str
    cls: TrajectoryClass
    branch: dict[str, Any]
    question: Question
    prompt: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    detail: dict[str, Any]
    tokens: int


def curated_lines(
    session: Session,
    rollout_ids: Sequence[str],
    test_ids: set[str],
    options: CurationOptions,
    admitted: Admissions = NO_ADMISSION_RULES,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Every curated file's lines and the curation manifest; a mix that cannot be filled is
    refused (UserError naming the shortfall) before anything is written."""
    licence = export_licences(
        session, options.allow_copyleft, options.allow_restricted, rollout_ids
    )
    sources = LineageSources(session)
    # a branch only a rubric judge passed, unaudited, is taught as good nowhere
    # (app/harness/data/admission.py); as a negative it stays
    candidates = [
        c
        for c in _candidates(session, sources, rollout_ids, test_ids)
        if c.cls is TrajectoryClass.NEGATIVE or admitted.allows(c.key)
    ]
    sft_pool = [c for c in candidates if c.cls in MIXABLE]
    requested: Mapping[str, float] = options.mix or {"pristine": 1.0, "recovery": 1.0}
    mix_report: dict[str, Any]
    if options.mix is None:
        chosen_keys = {c.key for c in sft_pool if c.cls in curation.SFT_CLASSES}
        mix_report = {"requested": None}
    else:
        items = [MixItem(c.key, c.cls.value, c.tokens) for c in sft_pool]
        try:
            result = curation.mix(
                items,
                requested,
                by_tokens=options.by_tokens,
                seed=options.seed,
                total=options.total,
            )
        except MixShortfall as e:
            raise UserError(f"--mix: {e}") from None
        chosen_keys = {it.key for it in result.chosen}
        mix_report = {
            "given": dict(options.mix),  # as typed; `requested` is normalised to sum 1
            "requested": {k: round(v, 6) for k, v in result.requested.items()},
            "realised": {k: round(v, 6) for k, v in result.realised.items()},
            "max_error_pp": round(result.max_error_pp, 4),
            "available": result.available,
            "used": result.used,
            "binding_class": result.binding,
        }
    key = lineage_key()
    lines: dict[str, list[str]] = {name: [] for name in CURATED_LAYOUTS}
    sidecar: list[str] = []
    pref_tokens = {"positive": 0, "negative": 0}
    for c in candidates:
        steps = steps_of(c.branch)

        def seal(record: dict[str, Any], c: _Candidate = c) -> dict[str, Any]:
            return _seal(record, sources.components(c.branch, c.question), c.branch, key)

        if c.key in chosen_keys:
            openai = scrub_json(
                {
                    "messages": c.prompt + trajectory_messages(steps, json_arguments=True),
                    "tools": c.tools,
                }
            )
            lines["sft_openai_chat.jsonl"].append(_dump(openai))
            sidecar.append(
                _dump({"line": len(lines["sft_openai_chat.jsonl"]), "lineage": seal(openai)})
            )
            trl = scrub_json(
                {
                    "messages": c.prompt + trajectory_messages(steps, json_arguments=False),
                    # a JSON string, which TRL's SFTTrainer parses: as a column of objects,
                    # Arrow would give every tool schema every other schema's keys (as nulls)
                    "tools": json.dumps(c.tools, ensure_ascii=False),
                }
            )
            lines["sft_trl.jsonl"].append(_dump({**trl, "lineage": seal(trl)}))
        if c.cls is TrajectoryClass.VERBOSE:
            continue  # neither a clean positive nor a negative: SFT only, when mixed
        label = c.cls is not TrajectoryClass.NEGATIVE
        kto = scrub_json(
            {
                "prompt": c.prompt,
                "completion": trajectory_messages(steps, json_arguments=False),
                "label": label,
            }
        )
        lines["kto.jsonl"].append(_dump({**kto, "lineage": seal(kto)}))
        pref_tokens["positive" if label else "negative"] += c.tokens
        completions = turn_texts(steps)
        stepwise = scrub_json(
            {
                "prompt": prompt_text(c.prompt),
                "completions": completions,
                "labels": curation.step_labels(
                    len(completions), None if label else c.detail.get("divergence_turn")
                ),
            }
        )
        lines["stepwise.jsonl"].append(_dump({**stepwise, "lineage": seal(stepwise)}))
    lines[f"sft_openai_chat.jsonl{SIDECAR_SUFFIX}"] = sidecar
    counts = {cls.value: sum(1 for c in candidates if c.cls is cls) for cls in TrajectoryClass}
    pref_total = sum(pref_tokens.values())
    manifest = {
        "classes_available": counts,
        "mix": {
            **mix_report,
            "by": "tokens" if options.by_tokens else "count",
            "seed": options.seed,
            "total": options.total,
        },
        "sft_records": len(lines["sft_trl.jsonl"]),
        "preference": {
            "records": len(lines["kto.jsonl"]),
            "negative_token_share": round(pref_tokens["negative"] / pref_total, 6)
            if pref_total
            else None,
        },
        "tokens": f"estimated: characters / {CHARS_PER_TOKEN}",
        "licence": licence,
        "lineage": {
            "id": "hmac-sha256" if key else "sha256",
            "key": "environment variable SKILL_TRAINER_LINEAGE_KEY (never stored)" if key else None,
        },
    }
    return lines, manifest


def _seal(
    record: dict[str, Any], components: dict[str, str], branch: Mapping[str, Any], key: bytes | None
) -> dict[str, Any]:
    """The record's lineage: its components, its source branch (hashed too) and its id."""
    source = source_of(branch)
    hashes = {**components, "source": lineage.digest(source)}
    return {**lineage.build(hashes, record, key), "source": source}


def _candidates(
    session: Session, sources: LineageSources, rollout_ids: Sequence[str], test_ids: set[str]
) -> list[_Candidate]:
    out: list[_Candidate] = []
    stripped: dict[int, AgentPrompts] = {}
    for rid in rollout_ids:
        classes = stored_classes(session.log, rid)
        for b in (branch.as_dict() for branch in session.log.branches(rid)):
            question = session.questions_by_id.get(b["question_id"])
            detail = classes.get((b["question_id"], b["branch_index"]))
            if question is None or detail is None or b["question_id"] in test_ids:
                continue
            # the fork's own skill mode (a tool-mode fork offered read_skill), and the skills
            # as export-skills writes them (no momentum block), like export.py's prompts
            ran = sources.prompts_of(b)
            if id(ran) not in stripped:
                skills = {
                    n: strip_momentum(t) if n.endswith(".md") else t for n, t in ran.skills.items()
                }
                stripped[id(ran)] = replace(ran, skills=skills)
            prompt = stripped[id(ran)].opening_messages(question)
            # declared tools too: a row's tool calls name only tools of its `tools` column
            tools = [t.as_openai() for t in offered_tools(session, ran, question)]
            record = {"messages": prompt + trajectory_messages(steps_of(b), json_arguments=True)}
            out.append(
                _Candidate(
                    branch_key(rid, b["question_id"], b["branch_index"]),
                    TrajectoryClass(detail["class"]),
                    b,
                    question,
                    prompt,
                    tools,
                    detail,
                    estimate_tokens(record),
                )
            )
    return out


def _dump(obj: dict[str, Any]) -> str:
    """A record already redacted where it was built (`scrub_json`, app/secrets.py), so its
    lineage hash covers exactly the bytes written."""
    return json.dumps(obj, ensure_ascii=False)
