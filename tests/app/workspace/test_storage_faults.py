"""Storage faults: ENOSPC / EACCES injected into the writers, in process
(docs/architecture.md#the-workspace-on-disk).

Each fault is a one-shot `OSError` raised by a patched `os.replace` / `os.rename` / `os.fsync`
(or by the file object a writer writes through) when it touches a matching path. The CLI must
fail with exit code 1 (init: 1 or 2) and one `error:` line, never a traceback; the workspace
must stay consistent (the manifest points at complete versions, no half-written vN, no temp
files; `.staging` leftovers only, which `clean_staging` removes); and a training run resumed
once the fault is gone must end in exactly the state of an uninterrupted run.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from app.cli import main
from app.harness.workspace import workspace
from app.harness.workspace.atomic import write_json_atomic, write_text_atomic
from app.harness.workspace.workspace import (
    META_FILE,
    VERSION_RE,
    advance_version,
    clean_staging,
    content_sha256,
    list_versions,
    read_version_files,
)
from tests.support.snapshot import diff_states, workspace_state

TRAIN = ["--set", "epochs=1", "--set", 'task_types=["ledger", "units"]', "--no-progress"]
INIT = ["--seed", "sim-starter", "--questions", "sim-basic"]
STRERROR = {errno.ENOSPC: os.strerror(errno.ENOSPC), errno.EACCES: os.strerror(errno.EACCES)}


# -- fault injection --------------------------------------------------------------------------
def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class Faults:
    """One-shot OSErrors on the n-th matching call of an `os` function."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.mp = monkeypatch
        self.active = True
        self.fired: list[str] = []
        self.seen: dict[str, int] = {}

    def _arm(
        self,
        func: str,
        path_of: Callable[..., str],
        match: Callable[[str], bool],
        nth: int,
        err: int,
    ) -> None:
        real = getattr(os, func)
        key = f"{func}#{len(self.seen)}"
        self.seen[key] = 0

        def wrapper(*args, **kwargs):
            path = path_of(*args)
            if self.active and match(path):
                self.seen[key] += 1
                if self.seen[key] == nth:
                    self.fired.append(f"{func} {path}")
                    raise OSError(err, STRERROR[err], path.partition(" -> ")[2] or path)
            return real(*args, **kwargs)

        self.mp.setattr(os, func, wrapper)

    def replace(self, match: Callable[[str], bool], nth: int = 1, err: int = errno.ENOSPC) -> None:
        """`match` sees the destination, or `src -> dst` when it is a `_Phase`."""

        def path_of(src, dst, *a):
            return (
                f"{os.fspath(src)} -> {os.fspath(dst)}"
                if isinstance(match, _Phase)
                else os.fspath(dst)
            )

        self._arm("replace", path_of, match, nth, err)

    def rename(self, match: Callable[[str], bool], nth: int = 1, err: int = errno.EACCES) -> None:
        self._arm("rename", lambda src, dst, *a: os.fspath(dst), match, nth, err)

    def fsync(self, match: Callable[[str], bool], nth: int = 1, err: int = errno.ENOSPC) -> None:
        self._arm("fsync", _fd_path, match, nth, err)

    def off(self) -> None:
        self.active = False


class _Phase:
    """Matches the replace that installs a checkpoint of a given phase (and step)."""

    def __init__(self, phase: str, step: int | None = None) -> None:
        self.phase, self.step = phase, step

    def __call__(self, path: str) -> bool:
        src, _, dst = path.partition(" -> ")
        if not dst.endswith("/checkpoint.json"):
            return False
        progress = json.loads(Path(src).read_text(encoding="utf-8"))["progress"]
        return progress["phase"] == self.phase and (
            self.step is None or progress["step_completed"] == self.step
        )


class _FailingWriter:
    """A text file that writes half of what it is given, then reports the disk full."""

    def __init__(self, f) -> None:
        self.f = f

    def write(self, text: str) -> int:
        self.f.write(text[: len(text) // 2])
        self.f.flush()
        raise OSError(errno.ENOSPC, STRERROR[errno.ENOSPC], self.f.name)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.f.close()


# -- consistency ------------------------------------------------------------------------------
def assert_consistent(ws: Path) -> None:
    """The manifest names complete versions; every version is complete; no temp files."""
    ws = Path(ws)
    for path in ws.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))  # every JSON file parses
    temps = [p for p in ws.rglob("*") if p.name.endswith(".tmp") or ".init-" in p.name]
    assert temps == [], f"temp files left behind: {temps}"
    assert not (ws / "train.lock").exists(), "train.lock left behind"
    for kind in ("skills", "prompts"):
        for entry in (ws / kind).iterdir():
            assert entry.is_dir() and VERSION_RE.match(entry.name), f"stray {entry}"
            meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
            files = read_version_files(entry)
            assert sorted(files) == meta["files"], f"{entry}: files differ from _meta.json"
            assert content_sha256(files) == meta["sha256"], f"{entry}: half-written version"
    manifest = json.loads((ws / "manifest.json").read_text(encoding="utf-8"))
    pointers = [manifest["current"]] + ([manifest["best"]] if manifest.get("best") else [])
    for ptr in pointers:
        for kind in ("skills", "prompts"):
            assert (ws / ptr[kind] / META_FILE).is_file(), f"manifest points at {ptr[kind]}"
    ckpt_path = ws / "checkpoint.json"
    if ckpt_path.exists():
        ckpt = json.loads(ckpt_path.read_text(encoding="utf-8"))
        for kind in ("skills", "prompts"):
            assert (ws / ckpt["manifest"]["current"][kind] / META_FILE).is_file()
            assert ckpt["versions_max"][kind] <= len(list_versions(ws, kind))
    conn = sqlite3.connect(ws / "harness.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    clean_staging(ws)
    staging = ws / ".staging"
    assert not staging.exists() or not any(staging.iterdir())


def one_error_line(err: str, code: int) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert STRERROR[code] in lines[0], lines[0]
    return lines[0]


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def seed_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("faults-seed") / "ws"
    assert main(["init", str(ws), *INIT]) == 0
    return ws


@pytest.fixture(scope="module")
def reference(tmp_path_factory, seed_ws) -> dict:
    ws = tmp_path_factory.mktemp("faults-ref") / "ws"
    shutil.copytree(seed_ws, ws)
    assert main(["train", "-w", str(ws), *TRAIN]) == 0
    return workspace_state(ws)


@pytest.fixture
def ws(seed_ws, tmp_path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(seed_ws, target)
    return target


@pytest.fixture
def faults(monkeypatch) -> Faults:
    return Faults(monkeypatch)


# -- unit level: the two writers ---------------------------------------------------------------
@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_write_text_atomic_fault_keeps_the_old_file_and_leaves_no_temp(
    where, tmp_path, faults, monkeypatch
):
    target = tmp_path / "data.json"
    write_json_atomic(target, {"old": True})
    before = target.read_bytes()
    code = errno.EACCES if where == "replace" else errno.ENOSPC
    if where == "write":
        real_fdopen = os.fdopen
        monkeypatch.setattr(os, "fdopen", lambda *a, **k: _FailingWriter(real_fdopen(*a, **k)))
    elif where == "fsync":
        faults.fsync(lambda p: p.endswith(".tmp"))
    else:
        faults.replace(lambda p: p == str(target), err=code)
    with pytest.raises(OSError) as info:
        write_text_atomic(target, json.dumps({"new": True, "pad": "x" * 100_000}))
    assert info.value.errno == code
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.json"]


@pytest.mark.parametrize("where", ["stage-write", "stage-fsync", "meta", "rename"])
def test_advance_version_fault_leaves_no_version_and_clean_staging_recovers(
    where, ws, faults, monkeypatch
):
    before = list_versions(ws, "skills")
    files = {f"s{i}.md": f"# skill {i}\n" + "rule\n" * 5000 for i in range(3)}
    code = errno.EACCES if where == "rename" else errno.ENOSPC
    if where == "stage-write":
        real_open = builtins.open
        calls = []

        def failing_open(path, mode="r", *a, **k):
            f = real_open(path, mode, *a, **k)
            calls.append(path)
            return _FailingWriter(f) if "w" in mode and len(calls) == 2 else f

        monkeypatch.setattr(workspace, "open", failing_open, raising=False)
    elif where == "stage-fsync":
        faults.fsync(lambda p: "/.staging/" in p, nth=3)
    elif where == "meta":
        faults.replace(lambda p: p.endswith("/" + META_FILE))
    else:
        faults.rename(lambda p: Path(p).parent.name == "skills", err=code)
    with pytest.raises(OSError) as info:
        advance_version(ws, "skills", files, source="test", parent=before[-1], description="faulty")
    assert info.value.errno == code
    assert list_versions(ws, "skills") == before
    faults.off()
    monkeypatch.undo()
    assert_consistent(ws)  # includes clean_staging
    version = advance_version(
        ws, "skills", files, source="test", parent=before[-1], description="after the fault"
    )
    assert read_version_files(ws / "skills" / version) == files
    assert version == f"v{len(before) + 1}"


# -- train: the fault ends the run cleanly; resume reaches the reference state -------------------
def _in(part: str) -> Callable[[str], bool]:
    return lambda p: part in p


TRAIN_FAULTS = {
    # (a) advance_version: the rename of a staged folder into place, a staged file's fsync
    "version-rename-EACCES": (
        "rename",
        lambda p: Path(p).parent.name in ("skills", "prompts"),
        1,
        errno.EACCES,
    ),
    "version-stage-ENOSPC": ("fsync", _in("/.staging/"), 2, errno.ENOSPC),
    # (b) a manifest write (1: best at setup, 2: the next one)
    "manifest-1-ENOSPC": ("replace", lambda p: p.endswith("/manifest.json"), 1, errno.ENOSPC),
    "manifest-2-EACCES": ("replace", lambda p: p.endswith("/manifest.json"), 2, errno.EACCES),
    # (c) checkpoint writes: epoch start, after the first step, epoch done, finished
    "checkpoint-epoch-start-ENOSPC": ("replace", _Phase("in_epoch", -1), 1, errno.ENOSPC),
    "checkpoint-step-0-EACCES": ("replace", _Phase("in_epoch", 0), 1, errno.EACCES),
    "checkpoint-epoch-done-ENOSPC": ("replace", _Phase("epoch_done"), 1, errno.ENOSPC),
    "checkpoint-finished-ENOSPC": ("replace", _Phase("finished"), 1, errno.ENOSPC),
    "checkpoint-3rd-fsync-ENOSPC": ("fsync", _in("/.checkpoint.json."), 3, errno.ENOSPC),
    # a step report and the final test report
    "step-report-ENOSPC": ("replace", _in("/reports/steps/"), 2, errno.ENOSPC),
    "final-report-EACCES": ("replace", _in("final_test_eval.json"), 1, errno.EACCES),
}
SLOW_FAULTS = {
    "version-stage-ENOSPC",
    "manifest-2-EACCES",
    "checkpoint-3rd-fsync-ENOSPC",
    "final-report-EACCES",
}


def _params():
    for name in TRAIN_FAULTS:
        marks = [pytest.mark.slow] if name in SLOW_FAULTS else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", _params())
def test_train_fault_fails_cleanly_then_resume_matches_reference(
    name, ws, faults, reference, capsys
):
    func, match, nth, code = TRAIN_FAULTS[name]
    getattr(faults, func)(match, nth=nth, err=code)
    capsys.readouterr()
    rc = main(["train", "-w", str(ws), *TRAIN])
    err = capsys.readouterr().err
    assert faults.fired, f"{name}: the fault was never reached"
    assert rc == 1, err
    line = one_error_line(err, code)
    assert "--resume" in line
    assert_consistent(ws)
    faults.off()
    rc = main(["train", "-w", str(ws), *TRAIN, "--resume"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert diff_states(reference, workspace_state(ws)) == []
    assert_consistent(ws)


def test_train_fault_at_the_first_checkpoint_then_rerun_matches_reference(
    ws, faults, reference, capsys
):
    faults.replace(_Phase("setup"), nth=1, err=errno.ENOSPC)
    rc = main(["train", "-w", str(ws), *TRAIN])
    err = capsys.readouterr().err
    assert rc == 1 and faults.fired, err
    one_error_line(err, errno.ENOSPC)
    assert_consistent(ws)
    faults.off()
    resume = main(["train", "-w", str(ws), *TRAIN, "--resume"])
    if resume != 0:  # no checkpoint was ever written: the message says to drop --resume
        assert resume == 2
        assert main(["train", "-w", str(ws), *TRAIN]) == 0
    assert diff_states(reference, workspace_state(ws)) == []


# -- init: all or nothing ------------------------------------------------------------------------
INIT_FAULTS = {
    "stage-fsync-ENOSPC": ("fsync", _in("/.staging/"), 2, errno.ENOSPC),
    "version-rename-EACCES": (
        "rename",
        lambda p: Path(p).parent.name == "prompts",
        1,
        errno.EACCES,
    ),
    "manifest-ENOSPC": ("replace", lambda p: p.endswith("/manifest.json"), 1, errno.ENOSPC),
    "final-rename-EACCES": ("rename", lambda p: Path(p).name == "ws", 1, errno.EACCES),
}


@pytest.mark.parametrize("name", list(INIT_FAULTS))
def test_init_fault_leaves_nothing_and_a_retry_works(name, tmp_path, faults, capsys):
    func, match, nth, code = INIT_FAULTS[name]
    parent = tmp_path / "parent"
    parent.mkdir()
    target = parent / "ws"
    getattr(faults, func)(match, nth=nth, err=code)
    capsys.readouterr()
    rc = main(["init", str(target), *INIT])
    err = capsys.readouterr().err
    assert faults.fired, f"{name}: the fault was never reached"
    assert rc in (1, 2), err
    one_error_line(err, code)
    assert list(parent.iterdir()) == [], "init left something behind"
    faults.off()
    assert main(["init", str(target), *INIT]) == 0
    assert_consistent(target)
    assert list_versions(target, "skills") == ["v1"]
