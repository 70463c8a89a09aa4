"""`export` of an ingest run: the traces it holds as training data, by their feedback
(core/trace_training.py), into the same files as a fork's export (app/harness/data/export.py
and export_formats.py), in the same staged, all-or-nothing way.

- a good trace (edited, scored good, accepted): `sft.jsonl`, `sft_openai_chat.jsonl` (its
  lineage in the sidecar), `sft_trl.jsonl`: the conversation up to its final reply, the edit in
  place of the reply it replaced; and a `kto.jsonl` positive;
- a bad trace (scored below the bad mark, abandoned): a `kto.jsonl` negative;
- an edit also gives a preference pair (`dpo_trl.jsonl`, `dpo_openai.jsonl`: the edit chosen,
  the reply it replaced rejected) and a `kto.jsonl` negative of that reply;
- an error trace, or one without a verdict, nowhere (counted in the curation manifest).
`rewards.jsonl` and `stepwise.jsonl` stay empty: no checker ranked these replies, and a trace's
verdict is about its whole reply, not its turns.

Tool schemas are not recorded in traces: each tool a trace called appears in its `tools` column
with an open object schema. Licence: the run's `license` (config key) when ingest recorded one,
else none, which is restricted (needs `allow_restricted`: the user's own traces).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.errors import UserError
from app.harness.data.export_formats import CurationOptions
from app.harness.data.fork import held_out_question_ids
from app.harness.data.licences import ingest_run_licence, sources_licence
from app.harness.data.lineage import SIDECAR_SUFFIX, lineage_key
from app.harness.data.trace_lineage import trace_components, trace_source
from app.harness.workspace.harness_log.ingest import IngestedTraceRecord
from app.secrets import scrub_json
from core import lineage
from core.trace_training import TraceUse, TraceVerdict, chat_messages, split_prompt, tool_names
from core.trace_training import verdict as trace_verdict
from core.traces import Trace, trace_from_json

if TYPE_CHECKING:
    from app.harness.rollouts.session import Session

INGEST_KIND = "ingest"


def is_ingest_run(session: Session, run_id: str) -> bool:
    run = session.log.run(run_id)
    return run is not None and run.kind == INGEST_KIND


def ingested_lines(
    session: Session, run_ids: Sequence[str], include_test: bool, curation: CurationOptions
) -> tuple[dict[str, list[str]], dict[str, Any], int]:
    """Every file's lines, the curation manifest and how many test-pool traces were left out;
    export.py writes them as it writes a fork's."""
    others = [rid for rid in run_ids if not is_ingest_run(session, rid)]
    if others:
        raise UserError(
            f"{session.paths.db}: {others[0]!r} is no ingest run; export ingest runs and "
            "ranked forks separately (their files would mix two kinds of verdict)"
        )
    if curation.mix is not None:
        raise UserError(
            "--mix: an ingest run's traces have no trajectory classes (no `rank`); they are "
            "exported by their feedback, every good one (docs/ingest.md#as-training-data)"
        )
    licence = sources_licence(
        [ingest_run_licence(session, rid) for rid in run_ids],
        curation.allow_copyleft,
        curation.allow_restricted,
    )
    skip = set() if include_test else held_out_question_ids(session.benchmark)
    lines, counts = _lines(session, run_ids, skip)
    return lines, _curation_manifest(lines, counts, licence), counts["test_pool_skipped"]


def _lines(
    session: Session, run_ids: Sequence[str], skip: set[str]
) -> tuple[dict[str, list[str]], Counter[str]]:
    names = (
        "sft.jsonl",
        "sft_openai_chat.jsonl",
        "sft_trl.jsonl",
        "kto.jsonl",
        "dpo_trl.jsonl",
        "dpo_openai.jsonl",
        "rewards.jsonl",
        "stepwise.jsonl",
    )
    lines: dict[str, list[str]] = {n: [] for n in names}
    lines[f"sft_openai_chat.jsonl{SIDECAR_SUFFIX}"] = []
    counts: Counter[str] = Counter()
    key = lineage_key()
    for rid in run_ids:
        for row in session.log.ingested_traces(rid):
            if row.trace_id in skip:
                counts["test_pool_skipped"] += 1
                continue
            trace = trace_from_json(json.loads(row.trace_json))
            v = trace_verdict(trace)
            counts[f"{v.use.value}: {v.why}"] += 1
            counts[v.use.value] += 1
            if v.use in (TraceUse.GOOD, TraceUse.BAD):
                _records(lines, trace, v, row, key)
    return lines, counts


def _records(
    lines: dict[str, list[str]],
    trace: Trace,
    v: TraceVerdict,
    row: IngestedTraceRecord,
    key: bytes | None,
) -> None:
    def seal(record: dict[str, Any]) -> dict[str, Any]:
        return _seal(record, row, trace, key)

    if v.use is TraceUse.BAD:
        bad = chat_messages(trace, final=trace.final_answer, json_arguments=False)
        _kto(lines, bad, False, seal)
        return
    openai_msgs = chat_messages(trace, final=v.target, json_arguments=True)
    trl_msgs = chat_messages(trace, final=v.target, json_arguments=False)
    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in tool_names(trace)
    ]
    lines["sft.jsonl"].append(_dump(scrub_json({"messages": openai_msgs})))
    openai = scrub_json({"messages": openai_msgs, "tools": tools})
    lines["sft_openai_chat.jsonl"].append(_dump(openai))
    sidecar = {"line": len(lines["sft_openai_chat.jsonl"]), "lineage": seal(openai)}
    lines[f"sft_openai_chat.jsonl{SIDECAR_SUFFIX}"].append(_dump(sidecar))
    trl = scrub_json({"messages": trl_msgs, "tools": json.dumps(tools, ensure_ascii=False)})
    lines["sft_trl.jsonl"].append(_dump({**trl, "lineage": seal(trl)}))
    _kto(lines, trl_msgs, True, seal)
    if v.replaced:
        _pair(lines, trace, v, (trl_msgs[:-1], openai_msgs[:-1]), seal)


def _kto(
    lines: dict[str, list[str]], messages: list[dict[str, Any]], label: bool, seal: Any
) -> None:
    prompt, completion = split_prompt(messages)
    kto = scrub_json({"prompt": prompt, "completion": completion, "label": label})
    lines["kto.jsonl"].append(_dump({**kto, "lineage": seal(kto)}))


def _pair(
    lines: dict[str, list[str]],
    trace: Trace,
    v: TraceVerdict,
    prompts: tuple[list[dict[str, Any]], list[dict[str, Any]]],  # (TRL's, OpenAI's)
    seal: Any,
) -> None:
    """The edit chosen over the reply it replaced, after the same conversation."""
    trl_prompt, openai_prompt = prompts
    chosen = [{"role": "assistant", "content": v.target}]
    rejected = [{"role": "assistant", "content": v.replaced}]
    lines["dpo_trl.jsonl"].append(
        _dump(scrub_json({"prompt": trl_prompt, "chosen": chosen, "rejected": rejected}))
    )
    lines["dpo_openai.jsonl"].append(
        _dump(
            scrub_json(
                {
                    "input": {"messages": openai_prompt, "tools": [], "parallel_tool_calls": True},
                    "preferred_output": chosen,
                    "non_preferred_output": rejected,
                }
            )
        )
    )
    replaced = chat_messages(trace, final=v.replaced, json_arguments=False)
    _kto(lines, replaced, False, seal)


def _seal(
    record: dict[str, Any], row: IngestedTraceRecord, trace: Trace, key: bytes | None
) -> dict[str, Any]:
    source = trace_source(row)
    hashes = {**trace_components(row, trace), "source": lineage.digest(source)}
    return {**lineage.build(hashes, record, key), "source": source}


def _curation_manifest(
    lines: Mapping[str, list[str]], counts: Counter[str], licence: dict[str, Any]
) -> dict[str, Any]:
    key = lineage_key()
    labels = [json.loads(line)["label"] for line in lines["kto.jsonl"]]
    return {
        "classes_available": {u.value: counts[u.value] for u in TraceUse},
        "ingested_verdicts": {k: v for k, v in sorted(counts.items()) if ": " in k},
        "mix": {"requested": None, "by": "count", "seed": None, "total": None},
        "sft_records": len(lines["sft_trl.jsonl"]),
        "preference": {
            "records": len(labels),
            "negative_token_share": None,
            "negative_records": labels.count(False),
        },
        "tokens": "not estimated for ingested traces",
        "licence": licence,
        "lineage": {
            "id": "hmac-sha256" if key else "sha256",
            "key": "environment variable SKILL_TRAINER_LINEAGE_KEY (never stored)" if key else None,
        },
    }


def _dump(obj: dict[str, Any]) -> str:
    """A record already redacted where it was built, so its lineage covers the bytes written."""
    return json.dumps(obj, ensure_ascii=False)
