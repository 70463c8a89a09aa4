"""`export` of ingest runs: good traces (edited, scored good, accepted) as SFT data, bad ones
and replaced replies as preference negatives, error traces nowhere; lineage checked against
the stored traces, licence restricted unless --allow-restricted (docs/ingest.md#as-training-data)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main
from core.redact import placeholder

DATA = Path(__file__).parents[1] / "data" / "traces"
FILES = ("langsmith_runs.jsonl", "inspect_log.json", "openinference_otlp.jsonl")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    ws = tmp_path_factory.mktemp("export-ingest") / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws, [api.ingest(ws, DATA / name).run_id for name in FILES]


def _records(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def test_feedback_decides_what_each_trace_teaches(ingested, tmp_path: Path) -> None:
    ws, runs = ingested
    out = tmp_path / "out"
    result = api.export(ws, runs, out=out, allow_restricted=True)
    sft = _records(out, "sft_openai_chat.jsonl")
    # langsmith: its edit replaces the reply; inspect: the sample scored 1 (not the one scored 0)
    finals = sorted(r["messages"][-1]["content"] for r in sft)
    assert finals == ["51", "ANSWER: 42"]
    edited = next(r for r in sft if r["messages"][-1]["content"] == "51")
    assert [m["role"] for m in edited["messages"]] == ["user", "assistant", "tool", "assistant"]
    call = edited["messages"][1]["tool_calls"][0]
    assert edited["messages"][2]["tool_call_id"] == call["id"]
    assert json.loads(call["function"]["arguments"]) == {"expression": "17*3"}
    assert [t["function"]["name"] for t in edited["tools"]] == ["calculator"]
    trl = _records(out, "sft_trl.jsonl")
    assert len(trl) == 2 and all("lineage" in r for r in trl)
    pair = _records(out, "dpo_trl.jsonl")
    assert [(p["chosen"][0]["content"], p["rejected"][0]["content"]) for p in pair] == [
        ("51", "17 * 3 = 51")
    ]
    assert len(_records(out, "dpo_openai.jsonl")) == 1
    kto = _records(out, "kto.jsonl")
    negatives = sorted(r["completion"][-1]["content"] for r in kto if not r["label"])
    assert negatives == ["17 * 3 = 51", "Cusco"]  # the replaced reply, the sample scored 0
    assert sum(r["label"] for r in kto) == 2
    assert result.curation is not None
    assert result.curation.classes_available == {"good": 2, "bad": 1, "error": 1, "none": 0}
    assert _records(out, "rewards.jsonl") == [] and _records(out, "stepwise.jsonl") == []


def test_error_traces_are_in_no_file(ingested, tmp_path: Path) -> None:
    ws, runs = ingested
    out = tmp_path / "out"
    api.export(ws, runs, out=out, allow_restricted=True)
    for path in out.glob("*.jsonl"):
        assert "Weather in Paris" not in path.read_text(), path.name  # the failed trace


def test_lineage_is_checked_against_the_stored_traces(ingested, tmp_path: Path) -> None:
    ws, runs = ingested
    out = tmp_path / "out"
    api.export(ws, runs, out=out, allow_restricted=True)
    checked = api.export_verify(out, ws)
    assert (checked.records, checked.failures) == (8, 0)  # 2 + 2 SFT, 4 KTO lines
    path = out / "kto.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["completion"][-1]["content"] += " (tampered)"
    path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    again = api.export_verify(out, ws)
    assert again.failures == 1 and "kto.jsonl:1" in str(again.first_failure)


def test_unlicensed_traces_need_allow_restricted_and_nothing_is_written(
    ingested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws, runs = ingested
    out = tmp_path / "out"
    assert main(["export", "-w", str(ws), *runs, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "declares no licence" in err and "--allow-restricted" in err
    assert not out.exists()
    assert main(["export", "-w", str(ws), runs[0], "fork-9", "--out", str(out)]) == 2
    assert "'fork-9' is no ingest run" in capsys.readouterr().err
    mix = ["--mix", "pristine=1", "--allow-restricted"]
    assert main(["export", "-w", str(ws), runs[0], "--out", str(out), *mix]) == 2
    assert "no trajectory classes" in capsys.readouterr().err
    assert not out.exists()


def test_the_test_pool_of_a_traces_benchmark_is_left_out(tmp_path: Path) -> None:
    """In a workspace initialised from the traces' own benchmark, a trace is a question: the
    ones in its test pool stay out of the training files unless --include-test."""
    log = json.loads((DATA / "inspect_log.json").read_text())
    first = log["samples"][0]
    samples = []
    for i in range(30):  # 30 families: a task template blanks numbers, so vary the words
        word = "".join(chr(ord("a") + int(d)) for d in str(i))
        s = json.loads(json.dumps(first).replace("What is 6 * 7?", f"What is {word}?"))
        s["id"] = f"q{i}"
        samples.append(s)
    export = tmp_path / "many.json"
    export.write_text(json.dumps({**log, "samples": samples}))
    store, ws = tmp_path / "store", tmp_path / "ws"
    api.ingest(tmp_path / "x", export, to_benchmark="many", store=store)
    init = ["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "many"]
    assert main([*init, "--store", str(store)]) == 0
    run_id = api.ingest(ws, export).run_id
    kept = api.export(ws, run_id, out=tmp_path / "a", allow_restricted=True).files["sft.jsonl"]
    every = api.export(ws, run_id, out=tmp_path / "b", allow_restricted=True, include_test=True)
    assert kept.test_questions_skipped > 0
    assert kept.count + kept.test_questions_skipped == every.files["sft.jsonl"].count == 30


def test_every_record_is_redacted_again_on_the_way_out(tmp_path: Path) -> None:
    """Traces are redacted on the way in; a row stored before a pattern existed (planted here
    straight into the log) is redacted on the way out too, like a fork's export."""
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    run_id = api.ingest(ws, DATA / "langsmith_runs.jsonl").run_id
    secret = "sk-proj-Qw3rTy8uI0pAs5dF7gH9jK2lZx4cV6bN1mQ"
    with sqlite3.connect(ws / "harness.db") as conn:
        (stored,) = conn.execute("SELECT trace_json FROM ingested_traces").fetchone()
        conn.execute("UPDATE ingested_traces SET trace_json = ?", (stored.replace("51", secret),))
    out = tmp_path / "out"
    api.export(ws, run_id, out=out, allow_restricted=True)
    texts = {p.name: p.read_text() for p in out.glob("*.jsonl")}
    sft = _records(out, "sft.jsonl")
    assert sft[0]["messages"][-1]["content"] == placeholder(secret)  # the edit, redacted
    for name, text in texts.items():
        assert secret not in text, name
    assert api.export_verify(out, ws).failures == 0


def test_traces_ingested_with_a_licence_export_without_the_flag(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    runs = [api.ingest(ws, DATA / name, license="MIT").run_id for name in FILES]
    result = api.export(ws, runs, out=tmp_path / "out")
    assert result.curation is not None and result.curation.licence_tier == "permissive"
    restricted = api.ingest(ws, DATA / FILES[0], license="CC-BY-NC-4.0").run_id
    with pytest.raises(api.UserError, match="CC-BY-NC-4.0"):
        api.export(ws, [restricted], out=tmp_path / "again")
