"""The records of an export file, streamed in bounded memory, each with the line it starts on.

Three layouts: JSON Lines (one record a line: the OTel collector's file exporter, LangSmith and
chat-json dumps), one JSON document (streamed item by item with ijson when it is an object
holding a list of records, or a top-level list), and Inspect AI's `.eval` (a zip of JSON).
A record is one JSON object; how it is read is never guessed from the file name alone.
"""

from __future__ import annotations

import copy
import json
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import ijson

from app.errors import UserError
from app.harness.ingest.depth import MAX_DEPTH, DepthGuard, TooDeep

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


class Digest(Protocol):
    """What `records` feeds the bytes it reads to (a `hashlib` object, or the CRC-32 that
    app/harness/ingest/service.py checks)."""

    def update(self, data: bytes, /) -> None: ...


class _DocumentReader:
    """A binary file that counts the lines and bytes handed to the parser (for progress and
    for the line an error is near), bounds how deep they nest (app/harness/ingest/depth.py)
    and how many bytes one record spans, and hashes them."""

    def __init__(
        self,
        f: IO[bytes],
        path: Path,
        on_bytes: Callable[[int], None] = lambda n: None,
        digest: Digest | None = None,
    ) -> None:
        self._f, self._path, self._on_bytes, self._digest = f, path, on_bytes, digest
        self._guard = DepthGuard(MAX_DEPTH)
        self.lines = 1
        self.since_record = 0  # bytes read since the last record was handed on

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        try:
            self._guard.feed(data)
        except TooDeep as e:
            line = self.lines + data.count(b"\n", 0, e.offset)
            raise UserError(f"{self._path}:{line}: {e}") from None
        self.lines += data.count(b"\n")
        self.since_record += len(data)
        if self.since_record > MAX_RECORD_BYTES + IJSON_BUF:
            raise UserError(
                f"{self._path}:{self.lines}: one record larger than {MAX_RECORD_BYTES >> 20} MiB "
                "(each record is read whole); export smaller batches or JSON Lines"
            )
        if self._digest is not None:
            self._digest.update(data)
        self._on_bytes(len(data))
        return data

    def drain(self) -> None:
        """Reads what the parser left (trailing whitespace), so the digest covers the file."""
        while self.read(IJSON_BUF):
            self.since_record = 0


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
        first_value = json.loads(stripped)
    except (ValueError, RecursionError):
        # the first line alone is not a value: a multi-line document (or one nested too
        # deeply, which the document reader refuses with its line)
        return "document"
    # a list on one line is a whole document (Python's `json.dump` writes no newline), not
    # a JSON Lines record: its items are the records
    return "document" if isinstance(first_value, list) else "jsonl"


def _first_line(f: IO[bytes]) -> bytes:
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line or line.strip():
            return line


def jsonl_records(
    path: Path, on_bytes: Callable[[int], None], digest: Digest | None = None
) -> Iterator[Record]:
    with open(path, "rb") as f:
        lineno = 0
        while True:
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            lineno += 1
            on_bytes(len(line))
            if digest is not None:
                digest.update(line)
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


def document_records(
    path: Path, on_bytes: Callable[[int], None], digest: Digest | None = None
) -> Iterator[Record]:
    """The records of one JSON document: the items of its record list, streamed."""
    prefix = _record_prefix(path)
    with open(path, "rb") as raw:
        reader = _DocumentReader(raw, path, on_bytes, digest)
        try:
            if prefix is None:  # one object that is itself the record (a Langfuse trace...)
                size = path.stat().st_size
                if size > MAX_RECORD_BYTES:
                    raise UserError(
                        f"{path}:1: one JSON object of {size >> 20} MiB is one record, read "
                        f"whole (max {MAX_RECORD_BYTES >> 20} MiB); export JSON Lines or a list"
                    )
                for value in ijson.items(reader, "", use_float=True, buf_size=IJSON_BUF):
                    reader.since_record = 0
                    yield Record(1, value)
            else:
                for value in ijson.items(reader, prefix, use_float=True, buf_size=IJSON_BUF):
                    reader.since_record = 0
                    yield Record(reader.lines, value, exact_line=False)
            reader.drain()
        except ijson.IncompleteJSONError as e:
            raise UserError(f"{path}:{reader.lines}: {_ijson_reason(e)}") from None
        except ijson.JSONError as e:
            raise UserError(f"{path}:{reader.lines}: {_ijson_reason(e)}") from None
        except UnicodeDecodeError as e:
            raise UserError(f"{path}:{reader.lines}: not valid UTF-8 ({e.reason})") from None


def _ijson_reason(e: Exception) -> str:
    """yajl's message in words: it raises IncompleteJSONError for any lexical error, so the
    type alone does not say the document was cut short."""
    arg = e.args[0] if e.args else ""
    text = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    first = text.splitlines()[0].strip() if text.strip() else type(e).__name__
    if "premature EOF" in first:
        return "truncated document (it ends inside a value)"
    if "invalid bytes in UTF8" in first:
        return "not valid UTF-8"
    if "invalid char in json text" in first:
        return "invalid JSON (a character JSON does not allow; NaN and Infinity are not JSON)"
    return f"invalid JSON ({first[:200]})"


def _record_prefix(path: Path) -> str | None:
    """The ijson prefix of the records: `item` for a top-level list, `<key>.item` for the
    first record list of a top-level object, None when the object is one record."""
    with open(path, "rb") as f:
        try:
            for prefix, event, value in ijson.parse(_DocumentReader(f, path), buf_size=IJSON_BUF):
                if prefix == "" and event == "start_array":
                    return "item"
                if prefix == "" and event == "map_key" and value in RECORD_LISTS:
                    return _list_prefix(path, str(value))
                if prefix == "" and event == "end_map":
                    return None
        except ijson.JSONError as e:
            raise UserError(f"{path}: {_ijson_reason(e)}") from None
    return None


def _list_prefix(path: Path, key: str) -> str | None:
    """`key.item` when `key` holds a list of objects (Langfuse's `observations` list inside
    one trace object is not a record list: only the top-level keys are looked at)."""
    with open(path, "rb") as f:
        for prefix, event, _ in ijson.parse(_DocumentReader(f, path), buf_size=IJSON_BUF):
            if prefix == key:
                return f"{key}.item" if event == "start_array" else None
    return None


def zip_records(
    path: Path, on_bytes: Callable[[int], None], digest: Digest | None = None
) -> Iterator[Record]:
    """Inspect AI's `.eval`: `header.json` plus `samples/<id>_epoch_<n>.json` members.

    Each member is read whole, so each is bounded; members are read one at a time. The
    archive is read through one open file, whose bytes are hashed once the members are read."""
    try:
        handle = open(path, "rb")  # noqa: SIM115  (closed with the archive below)
    except OSError as e:
        raise UserError(f"{path}:1: cannot read ({e.strerror})") from None
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError) as e:
        handle.close()
        raise UserError(f"{path}:1: not a readable zip ({e})") from None
    with handle, archive:
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
        if digest is not None:
            handle.seek(0)
            while chunk := handle.read(1 << 20):
                digest.update(chunk)


ZIP_ZSTD = 93  # the compression recent Inspect AI versions write
INFLATE_CHUNK = 1 << 16  # bytes inflated per step: what a member may hold is checked between steps


def _zstd_support(archive: zipfile.ZipFile, path: Path) -> None:
    """Python 3.11's zipfile cannot read zstd members; they are inflated here with
    `zstandard` (installed with inspect-ai), and without it the user gets the one command
    that converts."""
    if all(i.compress_type != ZIP_ZSTD for i in archive.infolist()):
        return
    try:
        import zstandard  # noqa: F401
    except ImportError:
        raise UserError(
            f"{path}:1: a zstd-compressed Inspect .eval; convert it first with "
            "`inspect log convert FILE --to json`, or `pip install zstandard`"
        ) from None


def _zip_json(archive: zipfile.ZipFile, path: Path, name: str) -> Any:
    info = archive.getinfo(name)
    if info.file_size > MAX_ZIP_MEMBER_BYTES:
        raise UserError(f"{path}!{name}:1: member larger than {MAX_ZIP_MEMBER_BYTES >> 20} MiB")
    try:
        data = _inflate(archive, info, path)
        return json.loads(data)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        if isinstance(e, json.JSONDecodeError):
            raise UserError(f"{path}!{name}:{e.lineno}: invalid JSON: {e.msg}") from None
        if isinstance(e, UnicodeDecodeError):
            raise UserError(f"{path}!{name}:1: not valid UTF-8 ({e.reason})") from None
        raise UserError(f"{path}!{name}:1: damaged zip member ({e})") from None
    except RecursionError:
        raise UserError(f"{path}!{name}:1: JSON nested too deeply") from None


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    """A member's bytes, never inflating more than the member bound whatever its size field
    says (a 100 KB zstd member can hold gigabytes). zipfile's own zstd support (and its
    bzip2 and lzma) inflates each compressed block whole, so zstd is inflated here from the
    member's raw bytes, `INFLATE_CHUNK` at a time."""
    name = info.filename
    if info.compress_type == ZIP_ZSTD:
        import zstandard

        raw = copy.copy(info)  # the compressed bytes as they are stored
        raw.compress_type, raw.file_size = zipfile.ZIP_STORED, info.compress_size
        del raw.CRC  # the CRC is of the inflated bytes: checked below
        with archive.open(raw) as stored:
            reader = zstandard.ZstdDecompressor().stream_reader(stored, read_across_frames=True)
            data = _bounded(reader, path, name)
        if zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"bad CRC-32 for {name}")
        return data
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise zipfile.BadZipFile(f"compression method {info.compress_type} is not read")
    with archive.open(info) as member:  # deflate inflates at most what is asked
        return _bounded(member, path, name)


def _bounded(stream: IO[bytes], path: Path, name: str) -> bytes:
    parts: list[bytes] = []
    size = 0
    while chunk := stream.read(INFLATE_CHUNK):
        size += len(chunk)
        if size > MAX_ZIP_MEMBER_BYTES:
            raise UserError(
                f"{path}!{name}:1: member inflates past {MAX_ZIP_MEMBER_BYTES >> 20} MiB "
                "(more than its size field says, or too large to read)"
            )
        parts.append(chunk)
    return b"".join(parts)


def records(
    path: Path, on_bytes: Callable[[int], None] = lambda n: None, digest: Digest | None = None
) -> Iterator[Record]:
    """The file's records; `digest` is fed every byte read, so the caller can check that
    what was parsed is the file it hashed before (a file cut or replaced while it is read)."""
    kind = layout(path)
    if kind == "zip":
        return zip_records(path, on_bytes, digest)
    if kind == "jsonl":
        return jsonl_records(path, on_bytes, digest)
    return document_records(path, on_bytes, digest)
