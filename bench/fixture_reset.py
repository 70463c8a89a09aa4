"""How fast is a fixture reset? (docs/tools.md#fixtures)

A benchmark, not a test: it prints figures. Builds a fixture of --files files totalling --mb
MB (sizes spread around the mean, in nested folders), materializes its content-addressed master
copy, then times `app.harness.tools.fixtures.reset` into a fresh folder with each method,
--reps times (methods interleaved, the old copy removed untimed between runs):

  copy      shutil.copytree: the default for rollouts
  reflink   `cp -a --reflink=auto`: copy-on-write where the filesystem can (btrfs, xfs), a
            plain copy where it cannot (ext4)
  hardlink  os.link per file: measured only; a hard link shares bytes with the master, so a
            tool writing in place would corrupt it (never used for rollouts)

`fixture.reset_ms_p50` is the median of the method rollouts use (copy).

    .venv/bin/python bench/fixture_reset.py [--files 1000] [--mb 20] [--reps 15] [--tiny]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: make `app` importable from anywhere

from app.harness.tools.fixtures import ResetMethod, materialize, reset  # noqa: E402

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
    ap.add_argument("--tiny", action="store_true", help="a 50-file, 1 MB fixture, 3 reps")
    args = ap.parse_args()
    if args.tiny:
        args.files, args.mb, args.reps = 50, 1.0, 3
    with tempfile.TemporaryDirectory(prefix="fixture-reset-") as tmp:
        source = Path(tmp) / "source"
        build(source, args.files, int(args.mb * (1 << 20)))
        address, master = materialize(source, Path(tmp) / "cache")
        times: dict[ResetMethod, list[float]] = {m: [] for m in ResetMethod}
        dest = Path(tmp) / "work"
        for _ in range(args.reps):
            for method in ResetMethod:
                times[method].append(reset(master, dest, method))
                shutil.rmtree(dest)
        print(f"fixture {address[:12]}: {args.files} files, {args.mb:g} MB, {args.reps} reps")
        for method, ms in times.items():
            print(
                f"  {method.value:<9} p50 {statistics.median(ms):7.1f} ms   "
                f"min {min(ms):7.1f}   max {max(ms):7.1f}"
            )
    p50 = statistics.median(times[ResetMethod.COPY])
    print(f"RESULT fixture.reset_ms_p50 {p50:.1f} ms target <= {TARGET_MS:g}")
    print(
        f"RESULT fixture.reset_reflink_ms_p50 {statistics.median(times[ResetMethod.REFLINK]):.1f} ms"
    )
    print(
        f"RESULT fixture.reset_hardlink_ms_p50 {statistics.median(times[ResetMethod.HARDLINK]):.1f} ms"
    )


if __name__ == "__main__":
    main()
