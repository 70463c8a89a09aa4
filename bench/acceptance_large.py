"""bench/acceptance.py on worlds three times the built-in size (216 units per task type).

Why a second size: with the built-in 72 units per task type a gate test sees about 14-18
families (the rest are test, or the candidate's own case pack), so no valid test can confirm a
one-rule edit that fixes a fifth of them; with 216 units it sees about 45. Running both shows
how much of the gap between the e-process gate and accepting every edit is the pool's size.

It runs `bench/acceptance.py --units 216` (the same strategies, seeds and settings, noisy0.3
included: 100 trainings, 9-10 min on 2 free cores; bench/run_all.py allows it 2700 s) and renames
its RESULT lines `acceptance.<setting>.<strategy>.*` to `acceptance_units216.<...>`, so the
`acceptance.*` names in bench/RESULTS.md keep meaning the built-in world size.

    .venv/bin/python bench/acceptance_large.py [any bench/acceptance.py option but --units]

`--tiny` goes to bench/acceptance.py: one one-epoch training, on a world of this size.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

UNITS = 216
BENCH = Path(__file__).resolve().parent


def main() -> int:
    if "--units" in sys.argv[1:]:
        print(
            "acceptance_large.py sets --units itself; use bench/acceptance.py for other sizes",
            file=sys.stderr,
        )
        return 2
    cmd = [sys.executable, str(BENCH / "acceptance.py"), "--units", str(UNITS), *sys.argv[1:]]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=BENCH.parent) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("RESULT acceptance."):
                line = line.replace("RESULT acceptance.", f"RESULT acceptance_units{UNITS}.", 1)
            print(line, end="", flush=True)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
