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

import filecmp
import fnmatch
import hashlib
import json
import os
import shutil
import stat as stat_mod
import subprocess
import tempfile
import threading
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


# One master at a time: rollouts run concurrently (threads of one process, and other processes
# of the same workspace), and two builders of one master must never share a half-built folder.
_MATERIALIZE_LOCK = threading.Lock()


def materialize(source: Path, cache: Path) -> tuple[str, Path]:
    """The master copy of `source` at cache/<hash> (made once, checked on every use: a kept
    master whose files no longer hash to its name is made again), and its hash."""
    with _MATERIALIZE_LOCK:
        address = content_hash(source)
        master = cache / address
        if master.is_dir() and content_hash(master) != address:  # changed since: made again
            shutil.rmtree(master)
        if not master.is_dir():
            cache.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=f".{address}.", dir=cache))
            shutil.copytree(source, building, symlinks=True, dirs_exist_ok=True)
            try:
                os.replace(building, master)
            except OSError:  # another process made it first: theirs is as good as ours
                shutil.rmtree(building, ignore_errors=True)
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


# A copy's entries as lstat saw them: rel path -> (st_mode, inode, ctime ns, size). A file's
# ctime is set by the kernel on every change of its content, size, mode or links and cannot be
# set back from user space, so an unchanged tuple means an unchanged file, whatever a tool did
# to its mtime. Folders are compared by mode and inode only (their ctime moves whenever an
# entry inside changes, and the entries are compared themselves).
Stats = dict[str, tuple[int, int, int, int]]
CTIME_GUARD_S = 0.01  # file times are coarse (one clock tick, at most 10 ms): see `settle`


def snapshot(folder: Path) -> Stats:
    """Every entry below `folder` (plain strings and os.scandir: pathlib costs more than the
    system calls here, and this walk is most of a reset)."""
    out: Stats = {}
    stack = [(str(folder), "")]
    while stack:
        path, prefix = stack.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                rel = prefix + entry.name
                st = entry.stat(follow_symlinks=False)
                out[rel] = _stat_key(st)
                if stat_mod.S_ISDIR(st.st_mode):
                    stack.append((entry.path, rel + "/"))
    return out


def settle(stats: Stats) -> None:
    """Wait until the clock is past the newest ctime by a guard: a change made in the same
    coarse tick as the copy could otherwise leave the ctime as it was."""
    newest = max((v[2] for v in stats.values()), default=0) / 1e9
    wait = newest + CTIME_GUARD_S - time.time()
    if wait > 0:
        time.sleep(wait)


@dataclass(frozen=True)
class FreshCopy:
    """A copy's entries when it was fresh, and the files re-copied just before it was handed
    out (`suspect`): a tool could change one of those within the same clock tick, leaving its
    ctime as it was, so their content is compared at the next restore instead of waiting."""

    stats: Stats
    suspect: frozenset[str] = frozenset()


def fresh_copy(
    master: Path, dest: Path, method: ResetMethod = ResetMethod.COPY
) -> tuple[float, FreshCopy]:
    """A new copy (`reset`), its entries, and a wait for the clock (every file is new)."""
    started = time.perf_counter()
    reset(master, dest, method)
    stats = snapshot(dest)
    settle(stats)
    return (time.perf_counter() - started) * 1000, FreshCopy(stats)


def restore(master: Path, dest: Path, fresh: FreshCopy) -> tuple[float, FreshCopy, int]:
    """Turn a used copy back into a fresh one by replacing only what changed since `fresh`:
    (milliseconds, the new FreshCopy, entries re-copied)."""
    started = time.perf_counter()
    current = snapshot(dest)
    for rel in sorted(current, key=lambda r: r.count("/"), reverse=True):
        if not _unchanged(rel, fresh, current[rel], master, dest):
            path = dest / rel
            if stat_mod.S_ISDIR(current[rel][0]):
                shutil.rmtree(path)
            else:
                path.unlink()
    stats = dict(fresh.stats)
    copied: Stats = {}
    for rel in sorted(stats, key=lambda r: r.count("/")):
        path = dest / rel
        if path.exists() or path.is_symlink():
            continue
        if stat_mod.S_ISDIR(stats[rel][0]):
            shutil.copytree(master / rel, path, symlinks=True)
            copied.update({f"{rel}/{k}": v for k, v in snapshot(path).items()})
        else:
            shutil.copy2(master / rel, path, follow_symlinks=False)
        copied[rel] = _entry(path)
    stats.update(copied)
    suspect = frozenset(r for r, v in copied.items() if not stat_mod.S_ISDIR(v[0]))
    return (time.perf_counter() - started) * 1000, FreshCopy(stats, suspect), len(copied)


def _unchanged(
    rel: str, fresh: FreshCopy, have: tuple[int, int, int, int], master: Path, dest: Path
) -> bool:
    want = fresh.stats.get(rel)
    if want is None:
        return False
    if stat_mod.S_ISDIR(have[0]):
        return want[:2] == have[:2]
    if want != have:
        return False
    return rel not in fresh.suspect or filecmp.cmp(master / rel, dest / rel, shallow=False)


def _entry(path: Path) -> tuple[int, int, int, int]:
    return _stat_key(path.lstat())


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    if stat_mod.S_ISDIR(st.st_mode):
        return (st.st_mode, st.st_ino, 0, 0)
    return (st.st_mode, st.st_ino, st.st_ctime_ns, st.st_size)


def tampered(before: dict[str, str], workdir: Path, patterns: list[str]) -> list[str]:
    """Sealed files changed, removed or added since the start (a link or folder put where a
    sealed file was counts as a change; nothing the rollout left there is followed)."""
    after: dict[str, str] = {}
    for rel, key in snapshot(workdir).items():
        if not any(fnmatch.fnmatchcase(rel, p) for p in patterns):
            continue
        if stat_mod.S_ISREG(key[0]):
            after[rel] = hashlib.sha256((workdir / rel).read_bytes()).hexdigest()
        elif not stat_mod.S_ISDIR(key[0]):
            after[rel] = f"not a regular file (mode {key[0]:o})"
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
