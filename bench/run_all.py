"""Run every benchmark under bench/ and write bench/RESULTS.md (`make bench`).

Each `bench/*.py` (except this file and names starting with `_`) runs as its own child process
with a timeout, from the project root, with this interpreter. Its output is kept verbatim.
Benchmarks report figures as machine-readable lines:

    RESULT <name> <value> <unit> [target <op><value>]      op: >=, <=, >, <, ==

and the table is built from those lines only; a benchmark that prints none gets one row,
"see output". RESULTS.md holds the table (benchmark, figure, target, met?, machine, date), the
machine and commit, and each benchmark's raw output in a details section.

    .venv/bin/python bench/run_all.py [--only log_write demo_cost] [--skip tui_load]
                                      [--timeout 600] [--output bench/RESULTS.md]
                                      [--keep-others]

`--keep-others` re-runs some benchmarks and keeps the others' rows and output, with their
own dates, from the existing file. `--tiny` runs each benchmark with its own `--tiny` (one
small job end to end, figures that measure nothing; tests/bench/test_bench_tiny.py) and so
needs an `--output` other than bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULT = re.compile(
    r"^RESULT\s+(\S+)\s+(\S+)\s+(\S+)"
    r"(?:\s+target\s+(>=|<=|==|>|<)\s*([-+0-9.eE]+))?\s*$"
)
OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
}


@dataclass
class Figure:
    name: str
    value: str
    unit: str
    op: str | None = None
    target: str | None = None

    @property
    def target_text(self) -> str:
        return f"{self.op} {self.target}" if self.op else "—"

    @property
    def met(self) -> str:
        if not self.op:
            return "—"
        try:
            return "yes" if OPS[self.op](float(self.value), float(self.target)) else "**no**"
        except ValueError:
            return "?"


@dataclass
class Outcome:
    name: str
    status: str  # ok | exit N | timeout | error
    seconds: float
    output: str
    date: str
    figures: list[Figure] = field(default_factory=list)


# Not benchmarks of this machine's harness: the real-model smoke run builds llama-cpp-python
# (~30 min) and has its own target (`make real-model`); llama_server.py is its server launcher.
NOT_IN_RUN_ALL = {"real_model", "llama_server", "real_learning", "real_agent", "real_public"}


# Benches whose full configuration needs more than `make bench`'s --timeout 1200: each gets at
# least this many seconds (not with --tiny). acceptance_large.py trains 100 workspaces on
# 216-unit worlds (5 seeds x 5 settings x 4 strategies): one noisy0.3 eprocess training took
# 18 CPU-s, so the whole about 9-10 min on 2 free cores; the floor leaves room for a busy machine.
# skillopt_compare.py (5 worlds at 72 and 216 units, 40 tasks) took 32 min on a loaded machine.
# external_agents.py trains four agents at 216 units; its command agent, a process per rollout
# (about 15,000), took 39 min on a loaded machine. gepa_compare.py (5 worlds at 216 and 72
# units, GEPA three ways and the budget sweep) took 12 min at load 5-8. acceptance.py (6 rules x
# 5 worlds x 6 settings at 72 units, 210 trainings) takes about 11 min on 2 free cores and ran
# past 20 min beside the test suite.
TIMEOUT_FLOOR_S = {
    "acceptance": 2400.0,
    "gepa_compare": 2400.0,
    "acceptance_large": 2700.0,
    "skillopt_compare": 3600.0,
    "external_agents": 3600.0,
}


def timeout_for(name: str, timeout: float, tiny: bool) -> float:
    """The seconds `name` gets: `timeout`, raised to its floor for a full run."""
    return timeout if tiny else max(timeout, TIMEOUT_FLOOR_S.get(name, 0.0))


def discover() -> list[str]:
    me = Path(__file__).name
    return sorted(
        p.stem
        for p in BENCH.glob("*.py")
        if p.name != me and not p.name.startswith("_") and p.stem not in NOT_IN_RUN_ALL
    )


def parse(output: str) -> list[Figure]:
    figures = []
    for line in output.splitlines():
        if m := RESULT.match(line.strip()):
            figures.append(Figure(*m.groups()))
    return figures


def without_machine_paths(text: str) -> str:
    """A bench's output with this checkout's path made relative (`store/...`), temporary
    folders named `<tmp>`, the Python installation `<python>` (a traceback's frames in the
    standard library) and the home folder `~`: the table is committed, a machine's paths are
    not."""
    text = text.replace(f"{ROOT}{os.sep}", "").replace(str(ROOT), ".")
    tmp = re.escape(tempfile.gettempdir() + os.sep)
    text = re.sub(tmp + r"[^\s/:'\"]+", "<tmp>", text)
    for prefix in sorted({sys.base_prefix, sys.prefix}, key=len, reverse=True):
        text = text.replace(prefix + os.sep, "<python>" + os.sep)
    home = os.path.expanduser("~")
    return text.replace(home + os.sep, "~" + os.sep) if len(home) > 1 else text


def run_one(name: str, timeout: float, tiny: bool = False) -> Outcome:
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / f"{name}.py"), *(["--tiny"] if tiny else [])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",  # one undecodable byte in a child's output must not lose the table
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )  # its own group: a timeout ends helpers too
    try:
        output, _ = proc.communicate(timeout=timeout)
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it ended just now: nothing to end
            os.killpg(proc.pid, signal.SIGKILL)  # the group this script created, by its id
        output, _ = proc.communicate()
        status = f"timeout after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    return Outcome(name, status, seconds, output or "", date, parse(output or ""))


def machine() -> dict[str, str]:
    ram = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GB"
    except OSError:
        pass
    try:
        load = "{:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg())
    except OSError:
        load = "?"
    commit = _git("rev-parse", "--short", "HEAD") or exported_commit()
    dirty = _git("status", "--porcelain")
    return {
        "nproc": str(os.cpu_count()),
        "ram": ram,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "load": load,
        "commit": commit + (" (dirty tree)" if dirty else ""),
    }


def exported_commit() -> str:
    """The commit of a copy made with `git archive` (no repository to ask), as the
    BENCH_COMMIT variable names it: `BENCH_COMMIT=$(git rev-parse --short HEAD)`. "?" when it
    is unset or not a commit hash."""
    named = os.environ.get("BENCH_COMMIT", "").strip().lower()
    return named + " (BENCH_COMMIT)" if re.fullmatch(r"[0-9a-f]{7,40}", named) else "?"


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


@dataclass
class Kept:
    """A benchmark not run this time whose rows and raw output come from the previous file."""

    rows: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


def read_kept(path: Path, names: list[str]) -> dict[str, Kept]:
    """The table rows and raw-output sections of `names` in an earlier RESULTS.md."""
    if not path.exists():
        return {}
    kept: dict[str, Kept] = {}
    current: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = line.split(" | ")
        if current is None and line.startswith("| ") and cells[0][2:] in names:
            kept.setdefault(cells[0][2:], Kept()).rows.append(line)
        elif m := re.match(r"<details><summary>([^:]+):", line):
            current = m.group(1) if m.group(1) in names else None
        if current is not None:
            kept.setdefault(current, Kept()).details.append(line)
            if line == "</details>":
                kept[current].details.append("")
                current = None
    return kept


def render(
    outcomes: list[Outcome],
    info: dict[str, str],
    skipped: list[str],
    kept: dict[str, Kept] | None = None,
) -> str:
    kept = kept or {}
    short = f"{info['nproc']} CPU, {info['ram']}, Python {info['python']}"
    lines = [
        "# Benchmark results",
        "",
        "Written by `bench/run_all.py` (`make bench`); do not edit by hand. Figures are medians of "
        "repeated runs on a shared machine, where single runs differ by 20-30 %: compare ratios "
        "and orders of magnitude, not the last digit.",
        "",
        f"- machine: {info['nproc']} CPUs, {info['ram']} RAM, Python {info['python']}, "
        f"{info['platform']}",
        f"- load average at start (1 / 5 / 15 min): {info['load']}",
        f"- commit: {info['commit']}",
        f"- run: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (
            f"; kept from the previous run (dates in their rows): {', '.join(sorted(kept))}"
            if kept
            else ""
        )
        + (
            f"; not run this time: {', '.join(n for n in skipped if n not in kept)}"
            if [n for n in skipped if n not in kept]
            else ""
        ),
        "",
        "| benchmark | figure | value | target | met? | machine | date |",
        "|---|---|---|---|---|---|---|",
    ]
    by_name = {o.name: o for o in outcomes}
    for name in sorted({*by_name, *kept}):
        if name in kept:
            lines += kept[name].rows
            continue
        o = by_name[name]
        if o.status != "ok":
            lines.append(
                f"| {o.name} | (run {cell(o.status)}) | see output | — | **no** | "
                f"{short} | {o.date} |"
            )
        for f in o.figures:
            lines.append(
                f"| {o.name} | {cell(f.name)} | {cell(f.value)} {cell(f.unit)} | "
                f"{cell(f.target_text)} | {f.met} | {short} | {o.date} |"
            )
        if o.status == "ok" and not o.figures:
            lines.append(f"| {o.name} | see output | — | — | — | {short} | {o.date} |")
    lines += ["", "## Raw output", ""]
    for name in sorted({*by_name, *kept}):
        if name in kept:
            lines += kept[name].details
            continue
        o = by_name[name]
        lines += [
            f"<details><summary>{o.name}: {o.status}, {o.seconds:.0f} s</summary>",
            "",
            "```text",
            without_machine_paths(o.output.rstrip()).replace("```", "'''"),
            "```",
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks")
    parser.add_argument(
        "--skip", nargs="+", default=[], metavar="NAME", help="do not run these benchmarks"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds per benchmark (at least TIMEOUT_FLOOR_S for the slow ones)",
    )
    parser.add_argument("--output", type=Path, default=None, help="default bench/RESULTS.md")
    parser.add_argument(
        "--keep-others",
        action="store_true",
        help="keep the rows and output of benchmarks not run this time from the "
        "existing output file (with --only or --skip)",
    )
    parser.add_argument(
        "--tiny", action="store_true", help="each benchmark's --tiny run (needs --output)"
    )
    args = parser.parse_args()
    if args.tiny and args.output is None:
        parser.error("--tiny figures measure nothing: give --output (not bench/RESULTS.md)")
    args.output = args.output or BENCH / "RESULTS.md"

    available = discover()
    unknown = [n for n in (args.only or []) + args.skip if n not in available]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; have {available}")
    chosen = [n for n in available if (not args.only or n in args.only) and n not in args.skip]
    skipped = [n for n in available if n not in chosen]
    info = machine()
    print(
        f"machine: {info['nproc']} CPUs, {info['ram']}, Python {info['python']}, load "
        f"{info['load']}; running {', '.join(chosen)}",
        flush=True,
    )
    outcomes = []
    for name in chosen:
        print(f"== {name} ...", flush=True)
        o = run_one(name, timeout_for(name, args.timeout, args.tiny), args.tiny)
        outcomes.append(o)
        print(f"   {o.status} in {o.seconds:.0f} s", flush=True)
        for f in o.figures:
            print(
                f"   {f.name} = {f.value} {f.unit}  target {f.target_text}  met {f.met}", flush=True
            )
    kept = read_kept(args.output, skipped) if args.keep_others else {}
    args.output.write_text(render(outcomes, info, skipped, kept), encoding="utf-8")
    print(f"wrote {args.output}")
    return 0 if all(o.status == "ok" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
