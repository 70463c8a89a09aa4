"""How fast is a fixture reset? (docs/tools.md#fixtures)

A benchmark, not a test: it prints figures. Builds a fixture of --files files totalling --mb
MB (sizes spread around the mean, in nested folders), materializes its content-addressed master
copy, then times, --reps times each (interleaved):

  copy      shutil.copytree into an empty folder: a rollout's first copy
  reflink   `cp -a --reflink=auto`: copy-on-write where the filesystem can (btrfs, xfs), a
            plain copy where it cannot (ext4)
  hardlink  os.link per file: measured only; a hard link shares bytes with the master, so a
            tool writing in place would corrupt it (never used for rollouts)
  restore   `fixtures.restore` of a used copy after a "rollout" changed it (--touched files
            rewritten in place with their mtime forged back, one added, one removed): what
            every later rollout of the fixture pays (the runtime keeps used copies and undoes
            their changes, found by inode/ctime/size/mode, instead of copying again; files
            re-copied by the previous restore have their content compared too)

`fixture.reset_ms_p50` is the median of `restore` (a rollout's reset once a copy exists);
`fixture.copy_ms_p50` the first copy's. Each run checks the restored copy against the master.

    .venv/bin/python bench/fixture_reset.py [--files 1000] [--mb 20] [--reps 15] [--touched 5]
        [--tiny]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere

from app.harness.tools.fixtures import (  # noqa: E402
    ResetMethod,
    file_hashes,
    fresh_copy,
    materialize,
    reset,
    restore,
)

TARGET_MS = 50.0


def build(folder: Path, files: int, total_bytes: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    mean = total_bytes // files
    for i in range(files):
        sub = folder / f"pkg{i % 20}" / f"mod{i % 7}"
        sub.mkdir(parents=True, exist_ok=True)
        size = max(1, int(rng.uniform(0.5, 1.5) * mean))
        (sub / f"f{i}.txt").write_bytes(rng.randbytes(size))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--touched", type=int, default=5, help="files a rollout rewrites")
    ap.add_argument("--tiny", action="store_true", help="a 50-file, 1 MB fixture, 3 reps")
    args = ap.parse_args()
    if args.tiny:
        args.files, args.mb, args.reps = 50, 1.0, 3
    with tempfile.TemporaryDirectory(prefix="fixture-reset-") as tmp:
        source = Path(tmp) / "source"
        build(source, args.files, int(args.mb * (1 << 20)))
        address, master = materialize(source, Path(tmp) / "cache")
        times: dict[str, list[float]] = {m.value: [] for m in ResetMethod}
        times["restore"] = []
        dest = Path(tmp) / "work"
        for _ in range(args.reps):
            for method in ResetMethod:
                times[method.value].append(reset(master, dest, method))
                shutil.rmtree(dest)
        used = Path(tmp) / "used"
        _, fresh = fresh_copy(master, used)
        expected = file_hashes(master)
        files = sorted(p for p in used.rglob("*") if p.is_file())
        for rep in range(args.reps):
            play_a_rollout(files, args.touched, rep, used)
            ms, fresh, _ = restore(master, used, fresh)
            times["restore"].append(ms)
        if file_hashes(used) != expected:
            raise SystemExit("restore left the copy different from the master")
        print(f"fixture {address[:12]}: {args.files} files, {args.mb:g} MB, {args.reps} reps")
        for method, ms_list in times.items():
            print(
                f"  {method:<9} p50 {statistics.median(ms_list):7.1f} ms   "
                f"min {min(ms_list):7.1f}   max {max(ms_list):7.1f}"
            )
    p50 = {k: statistics.median(v) for k, v in times.items()}
    print(f"RESULT fixture.reset_ms_p50 {p50['restore']:.1f} ms target <= {TARGET_MS:g}")
    print(f"RESULT fixture.copy_ms_p50 {p50['copy']:.1f} ms")
    print(f"RESULT fixture.reset_reflink_ms_p50 {p50['reflink']:.1f} ms")
    print(f"RESULT fixture.reset_hardlink_ms_p50 {p50['hardlink']:.1f} ms")


def play_a_rollout(files: list[Path], touched: int, rep: int, folder: Path) -> None:
    """What a rollout might do: rewrite some files in place (mtime forged back, so only the
    ctime shows it), add one, remove one (it comes back at the restore)."""
    for path in files[rep % 7 :: max(1, len(files) // touched)][:touched]:
        mtime = path.stat().st_mtime_ns
        data = bytearray(path.read_bytes())
        data[0] ^= 0xFF
        path.write_bytes(bytes(data))
        os.utime(path, ns=(mtime, mtime))
    (folder / f"new-{rep}.txt").write_text("added by the rollout")
    files[(rep * 31) % len(files)].unlink()


if __name__ == "__main__":
    main()
