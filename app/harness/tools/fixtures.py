"""Stateful fixtures (docs/tools.md#fixtures): a content-addressed initial folder copied fresh
for every rollout, sealed files hashed before and after, and an oracle on the final state.

Copies: `copy` (shutil, the default), `reflink` (`cp --reflink=auto`: copy-on-write where the
filesystem can, a plain copy where it cannot) and `hardlink` (os.link). A hard link shares the
bytes with the master copy, so a tool that writes a file in place (open "r+", or "w" on the
same inode) would change the master and every later rollout: read-only modes do not help,
since the tool runs as the owner and may chmod. `hardlink` is therefore measured by
bench/fixture_reset.py but refused as a reset method for rollouts.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from app.errors import UserError
from app.harness.tools.sandbox import Outcome, SandboxPool
from app.harness.tools.spec import Fixture, inside, with_python


class ResetMethod(StrEnum):
    COPY = "copy"
    REFLINK = "reflink"
    HARDLINK = "hardlink"  # measured only: shares bytes with the master (see above)


SAFE_METHODS = (ResetMethod.COPY, ResetMethod.REFLINK)


def files_of(folder: Path) -> list[Path]:
    """Regular files below `folder`, sorted; a symbolic link is refused (it could point out)."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise UserError(f"{path}: fixtures may not hold symbolic links")
        if path.is_file():
            found.append(path)
    return found


def file_hashes(folder: Path, patterns: list[str] | None = None) -> dict[str, str]:
    """relative path -> sha256, for every file (or those matching one of `patterns`)."""
    out = {}
    for path in files_of(folder):
        rel = path.relative_to(folder).as_posix()
        if patterns is None or any(fnmatch.fnmatchcase(rel, p) for p in patterns):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def content_hash(folder: Path) -> str:
    """The fixture's address: a hash of every file's path and bytes."""
    digest = hashlib.sha256()
    for rel, sha in sorted(file_hashes(folder).items()):
        digest.update(f"{rel}\0{sha}\n".encode())
    return digest.hexdigest()


def materialize(source: Path, cache: Path) -> tuple[str, Path]:
    """The master copy of `source` at cache/<hash> (made once), and its hash."""
    address = content_hash(source)
    master = cache / address
    if not master.is_dir():
        building = cache / f".{address}.{os.getpid()}"
        shutil.rmtree(building, ignore_errors=True)
        shutil.copytree(source, building, symlinks=True)
        os.replace(building, master)
    return address, master


def reset(master: Path, dest: Path, method: ResetMethod = ResetMethod.COPY) -> float:
    """Make `dest` a fresh copy of `master`; the milliseconds it took."""
    started = time.perf_counter()
    if dest.exists():
        shutil.rmtree(dest)
    if method == ResetMethod.COPY:
        shutil.copytree(master, dest, symlinks=True)
    elif method == ResetMethod.REFLINK:
        subprocess.run(
            ["cp", "-a", "--reflink=auto", str(master), str(dest)],
            check=True,
            capture_output=True,
        )
    else:
        shutil.copytree(master, dest, symlinks=True, copy_function=os.link)
    return (time.perf_counter() - started) * 1000


def tampered(before: dict[str, str], workdir: Path, patterns: list[str]) -> list[str]:
    """Sealed files changed, removed or added since the start."""
    after = file_hashes(workdir, patterns)
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@dataclass(frozen=True)
class OracleResult:
    passed: bool
    reason: str


async def oracle(
    fixture: Fixture, bench_root: Path, workdir: Path, pool: SandboxPool
) -> OracleResult:
    """Judge the final state: the oracle command's exit code, or the checker function."""
    limits = pool.with_limits(timeout_s=fixture.timeout_s, cpu_s=int(fixture.timeout_s) + 1)
    if fixture.oracle:
        run = await pool.run_command(with_python(fixture.oracle), workdir, limits=limits)
        if run.outcome == Outcome.OK:
            return OracleResult(True, "oracle exit 0")
        tail = (run.stdout + run.stderr).strip().splitlines()[-1:] or [""]
        return OracleResult(False, f"oracle: {run.reason} {tail[0][:200]}".strip())
    from app.harness.tools.python_tools import child_payload

    assert fixture.oracle_function is not None
    run = await pool.run_python(
        "call",
        fixture.oracle_function,
        workdir,
        path=[str(inside(bench_root, fixture.path))],
        limits=limits,
        stdin=json.dumps({"workdir": str(workdir)}).encode(),
    )
    payload = child_payload(run)
    if payload is None or not payload.get("ok"):
        reason = (payload or {}).get("error") or run.reason or "no result"
        return OracleResult(False, f"oracle function failed: {reason}")
    value = payload.get("value")
    return OracleResult(bool(value), f"oracle function returned {str(value)[:80]}")


async def validate(name: str, fixture: Fixture, bench_root: Path, pool: SandboxPool) -> list[str]:
    """Problems of one fixture: its oracle must reject the untouched initial state and accept
    the reference solution, when one is given."""
    problems = []
    for label, folder, want in (
        ("initial state", fixture.dir, False),
        ("reference", fixture.reference, True),
    ):
        if folder is None:
            continue
        work = pool.workdir(f"validate-{name}-{label.replace(' ', '-')}")
        reset(inside(bench_root, folder), work)
        result = await oracle(fixture, bench_root, work, pool)
        if result.passed != want:
            verb = "accepts" if result.passed else "rejects"
            problems.append(f"fixtures.{name}: the oracle {verb} the {label} ({result.reason})")
        shutil.rmtree(work, ignore_errors=True)
    return problems
