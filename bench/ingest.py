"""How fast, and in how much memory, does `ingest` read an export? (docs/ingest.md)

A benchmark, not a test: it prints figures. It generates exports (nothing is downloaded):

  formats      one small export of each format (OTLP GenAI, OTLP with deprecated names,
               OpenInference on OTLP, Phoenix span export, Langfuse, LangSmith, Inspect AI,
               chat-json), each ingested by `main.py ingest` into a fresh workspace; every
               file must give exactly the traces it was generated with
  throughput   an OTLP JSON Lines export (the OTel collector's file exporter layout: one
               ExportTraceServiceRequest a line) of about --mb MB, four spans per trace (agent,
               chat, execute_tool, chat), ingested by one `main.py ingest` child process:
               spans per second of the whole command (start-up included), the same per CPU
               second of the child, and the child's own peak RSS (os.wait4's ru_maxrss)
  ratio        the throughput export's ingest CPU over a plain `json.loads` of its lines,
               the median of 3 ingests into fresh workspaces (`ingest.ratio_to_json_loads`);
               `--ratio-only --ratio-mb N` measures only that, on an N MB export
  document     the same spans as one JSON document (`{"resourceSpans": [...]}`), which is
               streamed item by item with ijson: the same figures as `ingest.document.*`
  round trip   a real run on the simulated model (`infer` and a 4-branch `fork` of sim-basic,
               the demo's benchmark) written by `export --format otlp`, then read back by
               `ingest` into another workspace: the share of trajectories whose stored trace
               holds every step (app/harness/ingest/roundtrip.py), `ingest.roundtrip_steps_equal`;
               the same runs as Inspect eval logs: `ingest.inspect_roundtrip_steps_equal`

    .venv/bin/python bench/ingest.py [--mb 100] [--tiny] [--ratio-only [--ratio-mb 20]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere
TARGET_SPANS_PER_S = 20_000
TARGET_PEAK_RSS_MB = 300
TARGET_RATIO = 12  # ingest CPU / json.loads CPU on the 100 MB JSON Lines export
TRACES_PER_LINE = 25
FILLER = "The customer asked about the invoice period and the ledger balance; " * 3


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(
    trace: str, span: str, parent: str, name: str, t0: int, attrs: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "startTimeUnixNano": str(t0),
        "endTimeUnixNano": str(t0 + 1_000_000),
        "attributes": [_attr(k, v) for k, v in attrs.items()],
        "status": {},
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def genai_trace(i: int) -> list[dict[str, Any]]:
    """Four spans: the model calls a tool, then answers; the root (agent) span comes last, as
    exporters send a span when it ends."""
    trace, root, t0 = f"{i:032x}", f"{i:08x}00000001", 1_700_000_000_000_000_000 + i * 10_000_000
    user = {
        "role": "user",
        "parts": [{"type": "text", "content": f"Total of invoice {i}? {FILLER}"}],
    }
    call = {"type": "tool_call", "id": f"call_{i}", "name": "ledger", "arguments": {"invoice": i}}
    result = f'{{"invoice": {i}, "total": "{i % 997}.00 EUR"}}'
    answer = {
        "role": "assistant",
        "parts": [{"type": "text", "content": f"The total is {i % 997}.00 EUR."}],
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": f"conv-{i // 3}",
    }
    return [
        _span(
            trace,
            f"{i:08x}00000002",
            root,
            "chat gpt-4o",
            t0 + 1,
            {
                **chat,
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 12,
            },
        ),
        _span(
            trace,
            f"{i:08x}00000003",
            root,
            "execute_tool ledger",
            t0 + 2,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "ledger",
                "gen_ai.tool.call.id": f"call_{i}",
                "gen_ai.tool.call.arguments": json.dumps({"invoice": i}),
                "gen_ai.tool.call.result": result,
            },
        ),
        _span(
            trace,
            f"{i:08x}00000004",
            root,
            "chat gpt-4o",
            t0 + 3,
            {
                **chat,
                "gen_ai.input.messages": json.dumps(
                    [
                        user,
                        {"role": "assistant", "parts": [call]},
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "id": f"call_{i}",
                                    "response": result,
                                }
                            ],
                        },
                    ]
                ),
                "gen_ai.output.messages": json.dumps([answer]),
                "gen_ai.usage.input_tokens": 160,
                "gen_ai.usage.output_tokens": 9,
            },
        ),
        _span(trace, root, "", "invoke_agent", t0, {"gen_ai.operation.name": "invoke_agent"}),
    ]


def _otlp_line(spans: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": []},
                    "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
                }
            ]
        }
    )


def write_otlp(path: Path, mb: float) -> tuple[int, int]:
    """(traces, spans) written: lines of TRACES_PER_LINE traces until the file reaches `mb`."""
    limit, size, i = int(mb * 1024 * 1024), 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < limit:
            spans = [s for k in range(TRACES_PER_LINE) for s in genai_trace(i + k)]
            line = _otlp_line(spans) + "\n"
            f.write(line)
            size += len(line)
            i += TRACES_PER_LINE
    return i, i * 4


def _one_span_per_trace(
    path: Path, n: int, name: str, attributes: Callable[[int], dict[str, Any]]
) -> None:
    """An OTLP JSON Lines file of n traces, each one root span with these attributes."""
    path.write_text(
        "".join(
            _otlp_line([_span(f"{i:032x}", f"{i:016x}", "", name, 1, attributes(i))]) + "\n"
            for i in range(n)
        )
    )


def small_exports(folder: Path, n: int) -> dict[str, tuple[Path, int]]:
    """One export per format with `n` traces each (the fixture shapes of tests/app/data/traces)."""
    out: dict[str, tuple[Path, int]] = {}
    otlp = folder / "otlp.jsonl"
    otlp.write_text("".join(_otlp_line(genai_trace(10**6 + i)) + "\n" for i in range(n)))
    out["otlp"] = (otlp, n)
    deprecated = folder / "otlp_deprecated.jsonl"
    _one_span_per_trace(
        deprecated,
        n,
        "chat",
        lambda i: {
            "gen_ai.system": "openai",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": f"Question {i}?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": f"Answer {i}",
        },
    )
    out["otlp-deprecated"] = (deprecated, n)
    oi = folder / "openinference.jsonl"
    _one_span_per_trace(
        oi,
        n,
        "llm",
        lambda i: {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": f"Question {i}?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": f"Answer {i}",
        },
    )
    out["openinference"] = (oi, n)
    phoenix = folder / "phoenix.jsonl"
    phoenix.write_text(
        "".join(
            json.dumps(
                {
                    "name": "llm",
                    "context": {"trace_id": f"t{i}", "span_id": "s1"},
                    "parent_id": None,
                    "span_kind": "LLM",
                    "status_code": "OK",
                    "start_time": "2025-01-01T00:00:00+00:00",
                    "end_time": "2025-01-01T00:00:01+00:00",
                    "attributes": {
                        "openinference": {"span": {"kind": "LLM"}},
                        "llm": {
                            "input_messages": [
                                {"message": {"role": "user", "content": f"Question {i}?"}}
                            ],
                            "output_messages": [
                                {"message": {"role": "assistant", "content": f"Answer {i}"}}
                            ],
                        },
                    },
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    out["phoenix"] = (phoenix, n)
    langfuse = folder / "langfuse.json"
    langfuse.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "id": f"lf{i}",
                        "input": f"Question {i}?",
                        "output": f"Answer {i}",
                        "sessionId": f"s{i}",
                        "observations": [
                            {
                                "id": f"o{i}",
                                "type": "GENERATION",
                                "model": "m",
                                "startTime": "2025-01-01T00:00:00Z",
                                "input": [{"role": "user", "content": f"Question {i}?"}],
                                "output": f"Answer {i}",
                                "usage": {"input": 3, "output": 2},
                            }
                        ],
                        "scores": [{"name": "ok", "value": 1, "dataType": "NUMERIC"}],
                    }
                    for i in range(n)
                ],
                "meta": {"page": 1},
            }
        )
    )
    out["langfuse"] = (langfuse, n)
    smith = folder / "langsmith.jsonl"
    smith.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"r{i}",
                    "trace_id": f"r{i}",
                    "parent_run_id": None,
                    "run_type": "chain",
                    "name": "agent",
                    "inputs": {"input": f"Question {i}?"},
                    "outputs": {"output": f"Answer {i}"},
                    "error": None,
                }
            )
            + "\n"
            + json.dumps({"id": f"f{i}", "run_id": f"r{i}", "key": "ok", "score": 1})
            + "\n"
            for i in range(n)
        )
    )
    out["langsmith"] = (smith, n)
    inspect = folder / "inspect.json"
    inspect.write_text(
        json.dumps(
            {
                "version": 2,
                "status": "success",
                "eval": {"model": "m", "task": "t"},
                "samples": [
                    {
                        "id": i,
                        "epoch": 1,
                        "input": f"Question {i}?",
                        "target": f"Answer {i}",
                        "messages": [
                            {"role": "user", "content": f"Question {i}?"},
                            {"role": "assistant", "content": f"Answer {i}"},
                        ],
                        "output": {"model": "m", "choices": []},
                        "scores": {"match": {"value": "C"}},
                    }
                    for i in range(n)
                ],
            }
        )
    )
    out["inspect"] = (inspect, n)
    chat = folder / "chat.jsonl"
    chat.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{i}",
                    "messages": [
                        {"role": "user", "content": f"Question {i}?"},
                        {"role": "assistant", "content": f"Answer {i}"},
                    ],
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    out["chat-json"] = (chat, n)
    return out


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )


@dataclass(frozen=True)
class Measured:
    result: dict[str, Any]
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


def _ingest(ws: Path, path: Path) -> Measured:
    """One `main.py ingest` child, measured alone: os.wait4 gives that child's own rusage."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(ROOT / "main.py"), "ingest", "-w", str(ws), "--file", str(path)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [*cmd, "--json", "--no-progress"], stdout=out, stderr=err, env=env, cwd=ROOT
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            tail = err.read().decode(errors="replace").strip()[-400:]
            raise SystemExit(f"ingest {path.name} failed (exit {child.returncode}): {tail}")
        result: dict[str, Any] = json.loads(out.read())
    return Measured(result, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def write_otlp_document(path: Path, mb: float) -> tuple[int, int]:
    """The same spans as one `{"resourceSpans": [...]}` document (streamed by ijson)."""
    limit, size, i = int(mb * 1024 * 1024), 0, 0
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"resourceSpans": [\n')
        while size < limit:
            spans = [s for k in range(TRACES_PER_LINE) for s in genai_trace(i + k)]
            item = _otlp_line(spans)[len('{"resourceSpans": [') : -2]  # one ResourceSpans
            text = ("," if i else "") + item + "\n"
            f.write(text)
            size += len(text)
            i += TRACES_PER_LINE
        f.write("]}\n")
    return i, i * 4


def _throughput(ws: Path, export: Path, traces: int, spans: int, label: str) -> Measured:
    size_mb = export.stat().st_size / 2**20
    print(f"  {label}: {size_mb:.1f} MB, {traces} traces, {spans} spans")
    run = _ingest(ws, export)
    print(
        f"  ingested {run.result['traces']} traces ({run.result['new']} new) in {run.wall_s:.2f} s"
    )
    if run.result["traces"] != traces:
        print(f"  WRONG: {run.result['traces']} traces read, {traces} written")
    name = "ingest" if label == "jsonl" else f"ingest.{label}"
    print(
        f"RESULT {name}.spans_per_s {spans / run.wall_s:.0f} spans/s target >= {TARGET_SPANS_PER_S}"
    )
    # the same work per CPU second of the child: a shared machine slows the wall clock, not
    # the work
    print(f"RESULT {name}.spans_per_cpu_s {spans / max(run.cpu_s, 1e-9):.0f} spans/s")
    print(f"RESULT {name}.export_mb {size_mb:.1f} MB")
    print(f"RESULT {name}.peak_rss_mb {run.peak_rss_mb:.0f} MB target <= {TARGET_PEAK_RSS_MB}")
    return run


def json_loads_cpu_s(path: Path) -> float:
    """CPU seconds of a plain `json.loads` of every line: the floor any reader of the file pays."""
    start = time.process_time()
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
    return time.process_time() - start


def ratio_to_json_loads(
    folder: Path, export: Path, repeats: int, first: Measured | None = None
) -> None:
    """Ingest's CPU time over a plain `json.loads` of the same JSON Lines file, the median of
    `repeats` runs (each ingest into a fresh workspace, so none is a re-ingest; `first` is a
    run already measured): the cost of everything ingest does beyond decoding, which the
    bounds and checks on hostile input must not make grow. CPU time, as the machine is
    shared. The target is for the 100 MB export (start-up weighs more in a smaller one)."""
    runs = [first.cpu_s] if first is not None else []
    for k in range(repeats - len(runs)):
        ws = folder / f"ws-ratio-{k}"
        init = _cli("init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic")
        if init.returncode != 0:
            raise SystemExit(f"init failed: {init.stderr.strip()[-400:]}")
        runs.append(_ingest(ws, export).cpu_s)
    loads = statistics.median(json_loads_cpu_s(export) for _ in range(repeats))
    ratios = [cpu / max(loads, 1e-9) for cpu in runs]
    ratio = statistics.median(ratios)
    mb = export.stat().st_size / 2**20
    print(f"  ratio to json.loads: {', '.join(f'{r:.2f}' for r in ratios)} ({mb:.0f} MB)")
    target = f" target <= {TARGET_RATIO}" if mb >= 99 else ""
    print(f"RESULT ingest.ratio_to_json_loads {ratio:.2f} x{target}")


def roundtrip(folder: Path, tiny: bool) -> None:
    """export --format otlp of a sim run, then ingest: every step kept?"""
    from app.harness.data.export_otel import load_trajectories
    from app.harness.data.fork import held_out_question_ids
    from app.harness.ingest import roundtrip as rt
    from app.harness.rollouts.session import Session
    from app.harness.workspace.config import load_config
    from core.traces import trace_from_json

    src, dst, out = folder / "rt-src", folder / "rt-dst", folder / "rt-out"
    limit = ["--task-types", "ledger"] if tiny else []
    for argv in (
        ["init", "-w", str(src), "--seed", "sim-starter", "--questions", "sim-basic"],
        ["init", "-w", str(dst), "--seed", "sim-starter", "--questions", "sim-basic"],
        ["infer", "-w", str(src), "--no-progress", *limit],
        ["fork", "-w", str(src), "--branches", "4", "--no-progress", *limit],
        ["export", "-w", str(src), "--format", "otlp", "--out", str(out), "infer-1", "fork-1"],
    ):
        done = _cli(*argv)
        if done.returncode != 0:
            raise SystemExit(f"{argv[0]} failed: {done.stderr.strip()[-400:]}")
    run = _ingest(dst, out / "otlp.json")
    with Session(src, load_config(None)) as s:
        skip = held_out_question_ids(s.benchmark)
        written = [t for r in ("infer-1", "fork-1") for t in load_trajectories(s, r, skip)]
    with Session(dst, load_config(None)) as s:
        rows = s.log.query("SELECT trace_json FROM ingested_traces")
        read = [trace_from_json(json.loads(row["trace_json"])) for row in rows]
    result = rt.compare(written, read)
    steps = sum(len(rt.expected(t)) for t in written)
    print(
        f"  round trip: {result.total} trajectories ({steps} steps) written, "
        f"{run.result['traces']} traces read, {result.equal} equal, {result.missing} missing"
    )
    if result.first_difference:
        print(f"  first difference: {result.first_difference}")
    print(f"RESULT ingest.roundtrip_steps_equal {result.share:.3f} share target >= 1.000")
    inspect_roundtrip(src, folder / "rt-inspect", written)


def inspect_roundtrip(src: Path, out: Path, written: list[Any]) -> None:
    """The same runs as Inspect eval logs, read back by the ingest parser (a sample is
    `question#epoch`; the Inspect export has no place for provider errors or the extract call,
    which a sim run does not make)."""
    from dataclasses import replace

    from app.harness.ingest import parse
    from app.harness.ingest import roundtrip as rt

    done = _cli(
        "export", "-w", str(src), "--format", "inspect", "--out", str(out), "infer-1", "fork-1"
    )
    if done.returncode != 0:
        raise SystemExit(f"export --format inspect failed: {done.stderr.strip()[-400:]}")
    read = [
        replace(trace, session_id=f"{run}:{trace.native_id}")
        for run in ("infer-1", "fork-1")
        for trace, _ in parse.traces(out / f"inspect-{run}.json")
    ]
    keyed = [
        replace(t, conversation_id=f"{t.run_id}:{t.question_id}#{t.branch_index + 1}")
        for t in written
    ]
    result = rt.compare(keyed, read)
    if result.first_difference:
        print(f"  inspect: first difference: {result.first_difference}")
    print(f"RESULT ingest.inspect_roundtrip_steps_equal {result.share:.3f} share target >= 1.000")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=100.0, help="size of the throughput export")
    ap.add_argument("--tiny", action="store_true", help="a 2 MB export and 3 traces per format")
    ap.add_argument(
        "--ratio-only", action="store_true", help="only ingest.ratio_to_json_loads, on --ratio-mb"
    )
    ap.add_argument("--ratio-mb", type=float, default=20.0, help="the --ratio-only export's size")
    args = ap.parse_args()
    mb, per_format = (2.0, 3) if args.tiny else (args.mb, 50)
    repeats = 1 if args.tiny else 3
    if args.ratio_only:
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            export = Path(tmp) / "otlp_ratio.jsonl"
            write_otlp(export, args.ratio_mb)
            ratio_to_json_loads(Path(tmp), export, repeats)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        folder = Path(tmp)
        ws, ws2 = folder / "ws", folder / "ws2"
        for root in (ws, ws2):
            init = _cli(
                "init", "-w", str(root), "--seed", "sim-starter", "--questions", "sim-basic"
            )
            if init.returncode != 0:
                raise SystemExit(f"init failed: {init.stderr.strip()[-400:]}")
        formats_ok = 0
        exports = small_exports(folder, per_format)
        for name, (path, expected) in exports.items():
            got = _ingest(ws, path).result["traces"]
            ok = got == expected
            formats_ok += ok
            print(f"  {name:<16} {got:>4} traces (expected {expected}) {'ok' if ok else 'WRONG'}")
        print(f"RESULT ingest.formats_read {formats_ok / len(exports):.3f} share target >= 1.0")

        export = folder / "otlp_big.jsonl"
        traces, spans = write_otlp(export, mb)
        first = _throughput(ws, export, traces, spans, "jsonl")
        again = _ingest(ws, export)
        print(f"  re-ingest: {again.result['new']} new in {again.wall_s:.2f} s")
        print(f"RESULT ingest.reingest_new {again.result['new']} traces target == 0")
        ratio_to_json_loads(folder, export, repeats, first)
        export.unlink()
        document = folder / "otlp_big.json"
        traces, spans = write_otlp_document(document, mb)
        _throughput(ws2, document, traces, spans, "document")
        document.unlink()
        # last: it loads the harness into this process, whose memory a child forked after
        # it would report as its own peak RSS
        roundtrip(folder, args.tiny)
    return 0


if __name__ == "__main__":
    sys.exit(main())
