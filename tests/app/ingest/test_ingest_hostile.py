"""Hostile and unusual export files: deep nesting, sizes that lie, records with no bound,
one-line documents, files cut while read (app/harness/ingest/records.py, depth.py). Every
file is generated here, small: the bounds are lowered so a test never allocates much."""

from __future__ import annotations

import json
import re
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from app.errors import UserError
from app.harness.ingest import records
from app.harness.ingest.parse import traces

DATA = Path(__file__).parents[1] / "data" / "traces"


def chat(i: int) -> dict:
    return {"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]}


def peak_mib(fn) -> float:
    """Peak traced Python memory while `fn` runs, in MiB."""
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak / 2**20


def refused(path: Path) -> str:
    with pytest.raises(UserError) as e:
        list(traces(path))
    assert "\n" not in str(e.value)
    return str(e.value)


@pytest.mark.parametrize("layout", ["pretty", "jsonl-first-line"])
def test_thirty_thousand_levels_are_refused_with_their_line_in_little_memory(
    tmp_path: Path, layout: str
) -> None:
    """ijson keeps a prefix per open level (memory grows with depth squared: 2.2 GB for
    this file before the guard)."""
    depth = 30_000
    deep = "[" * depth + "]" * depth
    path = tmp_path / "deep.json"
    if layout == "pretty":
        path.write_text('{\n  "resourceSpans": [\n    {"scopeSpans": ' + deep + "}\n  ]\n}\n")
        line = 3
    else:
        path.write_text('{"messages": ' + deep + "}\n" + json.dumps(chat(1)) + "\n")
        line = 1
    errors: list[str] = []
    peak = peak_mib(lambda: errors.append(refused(path)))
    assert re.fullmatch(
        rf".*deep\.json:{line}: JSON nested too deeply \(more than 512 .*", errors[0]
    )
    assert peak < 20, peak


def test_nesting_within_the_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    nested = json.loads("[" * 200 + "]" * 200)
    path.write_text(json.dumps([{"messages": [{"role": "user", "content": "q"}], "x": nested}]))
    assert len(list(traces(path))) == 1


def test_a_one_line_json_array_is_read_like_the_same_array_pretty_printed(tmp_path: Path) -> None:
    one_line, pretty = tmp_path / "one.json", tmp_path / "pretty.json"
    items = [chat(i) for i in range(3)]
    one_line.write_text(json.dumps(items))  # Python's default json.dump: no newline
    pretty.write_text(json.dumps(items, indent=2))
    got = [[t.native_id for t, _ in traces(p)] for p in (one_line, pretty)]
    assert got[0] == got[1] == ["c0", "c1", "c2"]


def test_one_record_of_a_document_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-line OTLP document whose one resourceSpans item holds everything: the record
    is read whole, so it is bounded like a JSON Lines line."""
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 200_000)
    monkeypatch.setattr(records, "MAX_LINE_BYTES", 200_000)  # so the line is not JSON Lines
    spans = [
        {"traceId": f"t{i}", "spanId": "s", "name": "chat", "attributes": []} for i in range(40_000)
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    assert path.stat().st_size > 1_000_000
    errors: list[str] = []
    peak = peak_mib(lambda: errors.append(refused(path)))
    assert re.fullmatch(r".*big\.json:1: one record larger than 0 MiB .*", errors[0])
    assert peak < 8, peak


def _zstd_eval(path: Path, payload: bytes, claimed_size: int) -> None:
    """An Inspect `.eval` whose one sample is zstd-compressed `payload` and whose size field
    (local header and central directory) says `claimed_size`."""
    zstandard = pytest.importorskip("zstandard")
    compressed = zstandard.ZstdCompressor().compress(payload)
    info = zipfile.ZipInfo("samples/1_epoch_1.json")
    with zipfile.ZipFile(path, "w") as z:  # stored, then relabelled zstd with a false size
        z.writestr(info, compressed)
    data = bytearray(path.read_bytes())
    for sig, method_at, size_at in ((b"PK\x03\x04", 8, 22), (b"PK\x01\x02", 10, 24)):
        at = data.index(sig)
        data[at + method_at : at + method_at + 2] = (records.ZIP_ZSTD).to_bytes(2, "little")
        data[at + size_at : at + size_at + 4] = claimed_size.to_bytes(4, "little")
    crc = zipfile.crc32(payload)  # type: ignore[attr-defined]
    for sig, crc_at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        at = data.index(sig)
        data[at + crc_at : at + crc_at + 4] = crc.to_bytes(4, "little")
    path.write_bytes(bytes(data))


def test_a_zstd_member_with_a_false_size_stops_at_the_bound_while_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "MAX_ZIP_MEMBER_BYTES", 1 << 20)
    path = tmp_path / "log.eval"
    _zstd_eval(path, b" " * (16 << 20), claimed_size=100)  # 16 MiB of spaces, a few KB zipped
    assert path.stat().st_size < 100_000
    errors: list[str] = []
    peak = peak_mib(lambda: errors.append(refused(path)))
    assert "log.eval!samples/1_epoch_1.json:1: member inflates past 1 MiB" in errors[0]
    assert peak < 8, peak


def test_a_zstd_member_is_read_and_its_crc_checked(tmp_path: Path) -> None:
    sample = {"id": 1, "epoch": 1, "input": "q", "target": "a", "messages": []}
    payload = json.dumps(sample).encode()
    path = tmp_path / "log.eval"
    _zstd_eval(path, payload, claimed_size=len(payload))
    ((trace, _),) = traces(path)
    assert trace.task == "q"
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02") + 16
    data[at] ^= 0xFF  # the central directory's CRC no longer matches the inflated bytes
    path.write_bytes(bytes(data))
    assert "damaged zip member (bad crc-32" in refused(path).lower()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'[{"messages": [], "x": NaN}]', "NaN and Infinity are not JSON"),
        (b'[{"messages": [], "x": "\xff\xfe"}]', "not valid UTF-8"),
        (b'[{"messages": []}', "truncated document"),
    ],
)
def test_a_document_says_what_is_wrong_with_it(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(content)
    message = refused(path)
    assert re.fullmatch(rf".*doc\.json:1: .*{reason}.*", message)
    if reason != "truncated document":
        assert "truncated" not in message


def test_a_file_cut_while_read_stores_nothing_and_the_whole_file_is_read_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run id is the file's digest: stored from a cut file, it made the restored file's
    re-ingest report 0 new."""
    from app import api
    from app.cli import main
    from app.harness.ingest import service

    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    path = tmp_path / "chat.jsonl"
    whole = "".join(
        json.dumps(
            {**chat(i), "messages": [*chat(i)["messages"], {"role": "assistant", "content": "a"}]}
        )
        + "\n"
        for i in range(3000)
    )
    path.write_text(whole)
    real = service.traces

    def cut_after_the_first(*args, **kwargs):  # the exporter truncates the file mid-read
        stream = real(*args, **kwargs)
        yield next(stream)
        path.write_text(whole[: whole.index("\n", len(whole) // 2) + 1])  # at a line's end
        yield from stream

    monkeypatch.setattr(service, "traces", cut_after_the_first)
    with pytest.raises(UserError, match=r"chat\.jsonl: the file changed while it was read"):
        api.ingest(ws, path)
    monkeypatch.setattr(service, "traces", real)
    path.write_text(whole)
    assert api.ingest(ws, path).new == 3000


def test_a_fifo_is_named_for_what_it_is(tmp_path: Path) -> None:
    import os

    from app.harness.ingest.service import IngestOptions, ingest_file

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match=r"pipe\.jsonl: a FIFO \(named pipe\), not a regular file"):
        ingest_file(None, IngestOptions(file=fifo))
    with pytest.raises(UserError, match=r"nothing\.jsonl: no such file"):
        ingest_file(None, IngestOptions(file=tmp_path / "nothing.jsonl"))
