"""The records of an export file, streamed in bounded memory, each with the line it starts on.

Three layouts: JSON Lines (one record a line: the OTel collector's file exporter, LangSmith and
chat-json dumps), one JSON document (streamed item by item with ijson when it is an object
holding a list of records, or a top-level list), and Inspect AI's `.eval` (a zip of JSON).
A record is one JSON object; how it is read is never guessed from the file name alone.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import ijson

from app.errors import UserError

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSONL record (an OTLP batch can be large)
MAX_RECORD_BYTES = MAX_LINE_BYTES  # a document that is one record, read whole
MAX_ZIP_MEMBER_BYTES = 256 * 1024 * 1024
MAX_ZIP_MEMBERS = 200_000
PEEK_BYTES = 1 << 16
IJSON_BUF = 1 << 16
# The list inside a top-level object that holds the records, by format.
RECORD_LISTS = ("resourceSpans", "samples", "data", "spans", "runs", "traces", "items")


@dataclass(frozen=True)
class Record:
    line: int  # where it starts (JSON Lines), or the line reached when it ended (a document)
    value: Any
    exact_line: bool = True


class _CountingReader:
    """A binary file that counts the lines and bytes handed to the parser (for progress and
    for the line an error is near)."""

    def __init__(self, f: IO[bytes], on_bytes: Callable[[int], None]) -> None:
        self._f, self._on_bytes = f, on_bytes
        self.lines = 1

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.lines += data.count(b"\n")
        self._on_bytes(len(data))
        return data


def layout(path: Path) -> str:
    """ "zip", "jsonl" or "document": from the first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(PEEK_BYTES)
            if head.startswith(b"PK\x03\x04"):
                return "zip"
            f.seek(0)
            first = _first_line(f)
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    if not head.strip():
        raise UserError(f"{path}:1: empty file")
    stripped = first.strip()
    if stripped[:1] not in (b"{", b"["):
        raise UserError(f"{path}:1: not JSON (a JSON document, JSON Lines or an Inspect .eval zip)")
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return "document"  # the first line alone is not a value: a multi-line document
    return "jsonl"


def _first_line(f: IO[bytes]) -> bytes:
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line or line.strip():
            return line


def jsonl_records(path: Path, on_bytes: Callable[[int], None]) -> Iterator[Record]:
    with open(path, "rb") as f:
        lineno = 0
        while True:
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            lineno += 1
            on_bytes(len(line))
            if len(line) > MAX_LINE_BYTES:
                raise UserError(
                    f"{path}:{lineno}: line longer than {MAX_LINE_BYTES // (1 << 20)} MiB "
                    "(one record per line)"
                )
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except UnicodeDecodeError as e:
                raise UserError(f"{path}:{lineno}: not valid UTF-8 ({e.reason})") from None
            except json.JSONDecodeError as e:
                what = "truncated record" if e.pos >= len(line.rstrip()) else "invalid JSON"
                raise UserError(f"{path}:{lineno}: {what}: {e.msg} (column {e.colno})") from None
            except RecursionError:
                raise UserError(f"{path}:{lineno}: JSON nested too deeply") from None
            yield Record(lineno, value)


def document_records(path: Path, on_bytes: Callable[[int], None]) -> Iterator[Record]:
    """The records of one JSON document: the items of its record list, streamed."""
    prefix = _record_prefix(path)
    with open(path, "rb") as raw:
        reader = _CountingReader(raw, on_bytes)
        try:
            if prefix is None:  # one object that is itself the record (a Langfuse trace...)
                size = path.stat().st_size
                if size > MAX_RECORD_BYTES:
                    raise UserError(
                        f"{path}:1: one JSON object of {size >> 20} MiB is one record, read "
                        f"whole (max {MAX_RECORD_BYTES >> 20} MiB); export JSON Lines or a list"
                    )
                for value in ijson.items(reader, "", use_float=True, buf_size=IJSON_BUF):
                    yield Record(1, value)
                return
            for value in ijson.items(reader, prefix, use_float=True, buf_size=IJSON_BUF):
                yield Record(reader.lines, value, exact_line=False)
        except ijson.IncompleteJSONError as e:
            raise UserError(f"{path}:{reader.lines}: {_ijson_reason(e)}") from None
        except ijson.JSONError as e:
            raise UserError(f"{path}:{reader.lines}: invalid JSON ({_ijson_reason(e)})") from None
        except UnicodeDecodeError as e:
            raise UserError(f"{path}:{reader.lines}: not valid UTF-8 ({e.reason})") from None


def _ijson_reason(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    if "premature EOF" in text or "Incomplete" in type(e).__name__:
        return "truncated document (it ends inside a value)"
    return text[:200]


def _record_prefix(path: Path) -> str | None:
    """The ijson prefix of the records: `item` for a top-level list, `<key>.item` for the
    first record list of a top-level object, None when the object is one record."""
    with open(path, "rb") as f:
        try:
            for prefix, event, value in ijson.parse(f, buf_size=IJSON_BUF):
                if prefix == "" and event == "start_array":
                    return "item"
                if prefix == "" and event == "map_key" and value in RECORD_LISTS:
                    return _list_prefix(path, str(value))
                if prefix == "" and event == "end_map":
                    return None
        except ijson.JSONError as e:
            raise UserError(f"{path}: invalid JSON ({_ijson_reason(e)})") from None
    return None


def _list_prefix(path: Path, key: str) -> str | None:
    """`key.item` when `key` holds a list of objects (Langfuse's `observations` list inside
    one trace object is not a record list: only the top-level keys are looked at)."""
    with open(path, "rb") as f:
        for prefix, event, _ in ijson.parse(f, buf_size=IJSON_BUF):
            if prefix == key:
                return f"{key}.item" if event == "start_array" else None
    return None


def zip_records(path: Path, on_bytes: Callable[[int], None]) -> Iterator[Record]:
    """Inspect AI's `.eval`: `header.json` plus `samples/<id>_epoch_<n>.json` members.

    Each member is read whole, so each is bounded; members are read one at a time."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise UserError(f"{path}:1: not a readable zip ({e})") from None
    with archive:
        _zstd_support(archive, path)
        names = archive.namelist()
        if len(names) > MAX_ZIP_MEMBERS:
            raise UserError(f"{path}:1: {len(names)} zip members (max {MAX_ZIP_MEMBERS})")
        header = _zip_json(archive, path, "header.json") if "header.json" in names else {}
        model = str(((header or {}).get("eval") or {}).get("model") or "")
        samples = sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))
        if not samples:
            raise UserError(f"{path}:1: an Inspect .eval zip without samples/ (nothing to ingest)")
        for index, name in enumerate(samples, start=1):
            value = _zip_json(archive, path, name)
            on_bytes(archive.getinfo(name).compress_size)
            if isinstance(value, dict) and model and "_eval_model" not in value:
                value["_eval_model"] = model
            yield Record(index, value, exact_line=False)


ZIP_ZSTD = 93  # the compression recent Inspect AI versions write


def _zstd_support(archive: zipfile.ZipFile, path: Path) -> None:
    """Python 3.11's zipfile cannot read zstd members; `zipfile-zstd` (installed with
    inspect-ai) teaches it, and without it the user gets the one command that converts."""
    if all(i.compress_type != ZIP_ZSTD for i in archive.infolist()):
        return
    try:
        import zipfile_zstd  # noqa: F401  (registers the zstd method with zipfile)
    except ImportError:
        raise UserError(
            f"{path}:1: a zstd-compressed Inspect .eval; convert it first with "
            "`inspect log convert FILE --to json`, or `pip install zipfile-zstd`"
        ) from None


def _zip_json(archive: zipfile.ZipFile, path: Path, name: str) -> Any:
    info = archive.getinfo(name)
    if info.file_size > MAX_ZIP_MEMBER_BYTES:
        raise UserError(f"{path}!{name}:1: member larger than {MAX_ZIP_MEMBER_BYTES >> 20} MiB")
    try:
        with archive.open(name) as member:
            return json.loads(member.read(MAX_ZIP_MEMBER_BYTES + 1))
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise UserError(f"{path}!{name}:1: damaged zip member ({e})") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}!{name}:{e.lineno}: invalid JSON: {e.msg}") from None
    except (UnicodeDecodeError, RecursionError):
        raise UserError(f"{path}!{name}:1: not readable JSON") from None


def records(path: Path, on_bytes: Callable[[int], None] = lambda n: None) -> Iterator[Record]:
    kind = layout(path)
    if kind == "zip":
        return zip_records(path, on_bytes)
    if kind == "jsonl":
        return jsonl_records(path, on_bytes)
    return document_records(path, on_bytes)
