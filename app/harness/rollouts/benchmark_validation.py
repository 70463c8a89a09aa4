"""`validate-benchmark` and `init`'s benchmark warnings: the pure checks of
core/benchmark_checks.py run on a store benchmark, with the real pool split
(app/harness/rollouts/pools.py) and each finding placed at its file:line.

`gate_families` and `power_findings` are the reusable part: how many families each task type
gives the gate, and whether that can ever be enough for an accept, or for a one-rule edit.
The checks `train` runs before its first model call (trainability, skill files, custom
checkers) are in app/harness/rollouts/benchmark_train_checks.py.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from app.harness.rollouts.benchmark_train_checks import (
    custom_checker_findings,
    skill_file_findings,
    trainability_findings,
)
from app.harness.rollouts.pools import POOL_NAMES, split_pools
from app.harness.rollouts.question_units import build_units, is_scored
from app.harness.workspace.benchmark_format import (
    FORMAT_VERSION,
    unknown_row_keys,
    unknown_toml_keys,
)
from app.harness.workspace.config import GateConfig, RunConfig
from app.harness.workspace.store import Benchmark, load_benchmark, read_toml
from core.benchmark_checks import (
    CheckerKind,
    Defect,
    Finding,
    GateFamilies,
    Severity,
    check_edit_power,
    check_family_pools,
    check_gate_power,
    check_questions,
    checker_kind,
    min_families_for_accept,
)
from core.evolution.gate import GateParams
from core.types import Question

GATE_POOLS = ("diagnosis", "validation")  # the test pool never feeds the gate


@dataclass(frozen=True)
class PlacedFinding:
    """A finding with the file (and line, when it is about one row) it points at."""

    defect: Defect
    severity: Severity
    message: str
    file: str
    line: int | None
    question_id: str
    task_type: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(frozen=True)
class ValidationReport:
    benchmark: str
    path: str
    format_version: int
    questions: int
    task_types: tuple[str, ...]
    gate_families: tuple[GateFamilies, ...]
    alpha: float  # the gate's level (default config)
    min_families_for_accept: int  # no level-alpha test accepts with fewer families
    findings: tuple[PlacedFinding, ...]
    errors: int
    warnings: int
    not_checked: int

    def of(self, severity: Severity) -> list[PlacedFinding]:
        return [f for f in self.findings if f.severity is severity]


def pool_of_question(benchmark: Benchmark) -> dict[str, str]:
    """Pool name per question id, exactly as training splits the benchmark."""
    pools = split_pools(benchmark.questions, benchmark.split, benchmark.seed)
    return {q.question_id: name for name in POOL_NAMES for q in getattr(pools, name)}


def gate_families(benchmark: Benchmark, gate: GateConfig | None = None) -> list[GateFamilies]:
    """Per task type, the families in the gate's pools (diagnosis and validation), whether
    each is a single unit, and how many answers of each a ladder holds under `gate`'s `draws`
    (only pass/fail questions of a benchmark whose units are independent are drawn again:
    app/harness/training/runner.py). An upper bound on a ladder: it also drops the families
    shown to the evolver (app/harness/training/gate_ladder.py)."""
    gate = gate or GateConfig()
    pool_of = pool_of_question(benchmark)
    in_gate = [q for q in benchmark.questions if pool_of[q.question_id] in GATE_POOLS]
    units_of: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    family_of = _observation_of(in_gate, benchmark.independent_units)
    scored: set[str] = set()
    for unit in build_units(in_gate):
        units_of[unit.task_type][family_of[unit.unit_id]].add(unit.unit_id)
        if is_scored(unit):
            scored.add(unit.task_type)
    return [
        GateFamilies(
            task_type=t,
            families=len(units_of[t]),
            # scores leave the ±1/0 lattice: the gate holds them to Ville's level
            # (core/evolution/acceptance.py `LadderSetup.singletons`)
            singletons=(single := _single(t, units_of, scored)),
            draws=gate.draws if single and benchmark.independent_units else 1,
            n_max_counts_questions=gate.draws_for == "changed",
        )
        for t in benchmark.task_types
    ]


def _single(t: str, units_of: dict[str, dict[str, set[str]]], scored: set[str]) -> bool:
    """Whether every gate family of task type `t` is one pass/fail unit."""
    return t not in scored and all(len(u) == 1 for u in units_of[t].values())


def gate_family_sizes(benchmark: Benchmark) -> dict[str, list[int]]:
    """Per task type, the units of each family in the gate's pools."""
    pool_of = pool_of_question(benchmark)
    in_gate = [q for q in benchmark.questions if pool_of[q.question_id] in GATE_POOLS]
    family_of = _observation_of(in_gate, benchmark.independent_units)
    units: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for unit in build_units(in_gate):
        units[unit.task_type][family_of[unit.unit_id]] += 1
    return {t: sorted(per.values()) for t, per in units.items()}


def _observation_of(questions: list[Question], independent_units: bool) -> dict[str, str]:
    """unit id -> what the gate counts as one observation: the unit's family, or the unit
    itself when the benchmark declares a family's units independent (`family_units`)."""
    return {q.unit_id: q.unit_id if independent_units else q.family for q in questions}


def power_findings(
    benchmark: Benchmark, params: GateParams | None = None, gate: GateConfig | None = None
) -> list[Finding]:
    """Task types whose gate pools are too small for any edit ever to be accepted, or for a
    realistic (one-rule) edit to be confirmed (core/benchmark_checks.py `check_edit_power`).
    `params`: the gate's thresholds (default: `gate`'s); `gate`: the `[gate]` section, whose
    `draws` let a ladder hold more answers than questions."""
    gate = gate or GateConfig()
    params = params or gate
    families = gate_families(benchmark, gate)
    return check_gate_power(families, params) + check_edit_power(
        families, gate_family_sizes(benchmark), params
    )


def validate_benchmark_dir(
    path: Path,
    params: GateParams | None = None,
    *,
    config: RunConfig | None = None,
    skills: Collection[str] | None = None,
    skills_source: str = "",
) -> ValidationReport:
    """Load (format errors raise UserError with file:line) and run every check, those `train`
    runs before its first model call included (app/harness/rollouts/benchmark_train_checks.py)
    with `config` (default settings when None). `skills`: the skill files of the seed or
    workspace named by `skills_source` (None: the mapping is reported as not checked)."""
    config = config or RunConfig()
    params = params or config.gate
    benchmark = load_benchmark(path)
    jsonl, toml = path / "questions.jsonl", path / "benchmark.toml"
    lines, unknown = _row_lines(jsonl)
    meta = read_toml(toml)
    families = gate_families(benchmark)
    checker_of = {q.question_id: q.checker for q in benchmark.questions}
    found = [f for f in check_questions(benchmark.questions) if not _run_here(f, checker_of)]
    found += custom_checker_findings(benchmark.questions, config.checker_timeout_s)
    found += check_family_pools(benchmark.questions, pool_of_question(benchmark))
    found += trainability_findings(benchmark, config)
    found += skill_file_findings(benchmark, config, skills, skills_source)
    found += power_findings(benchmark, params, config.gate)
    placed = [_place(f, jsonl, lines, benchmark.questions) for f in found]
    placed += [
        PlacedFinding(
            Defect.UNKNOWN_FIELD,
            Severity.WARNING,
            f"unknown field(s) {', '.join(keys)} ignored (extra data goes in 'metadata')",
            str(jsonl),
            line,
            qid,
            "",
        )
        for line, qid, keys in unknown
    ]
    extra = unknown_toml_keys(meta)
    if extra:
        placed.append(
            PlacedFinding(
                Defect.UNKNOWN_FIELD,
                Severity.WARNING,
                f"unknown key(s) {', '.join(extra)} ignored",
                str(toml),
                None,
                "",
                "",
            )
        )
    placed.sort(key=lambda f: (f.file, f.line if f.line is not None else 0))
    return ValidationReport(
        benchmark=benchmark.name,
        path=str(path),
        format_version=int(meta.get("format_version", FORMAT_VERSION)),
        questions=len(benchmark.questions),
        task_types=benchmark.task_types,
        gate_families=tuple(families),
        alpha=params.alpha,
        min_families_for_accept=min_families_for_accept(params.alpha),
        findings=tuple(placed),
        errors=sum(f.severity is Severity.ERROR for f in placed),
        warnings=sum(f.severity is Severity.WARNING for f in placed),
        not_checked=sum(f.severity is Severity.NOT_CHECKED for f in placed),
    )


def _run_here(f: Finding, checker_of: dict[str, str]) -> bool:
    """A pure check's "not checked" for a custom checker, which this module does run."""
    if f.defect is not Defect.NOT_CHECKED:
        return False
    return checker_kind(checker_of.get(f.question_id, "")) is CheckerKind.CUSTOM


def _row_lines(jsonl: Path) -> tuple[dict[str, int], list[tuple[int, str, list[str]]]]:
    """Line of each question id, and the rows with keys the format does not know (the file
    has already loaded, so every non-blank line is a JSON object with a question_id)."""
    lines: dict[str, int] = {}
    unknown: list[tuple[int, str, list[str]]] = []
    for lineno, line in enumerate(jsonl.read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        obj = json.loads(line)
        lines[obj["question_id"]] = lineno
        keys = unknown_row_keys(obj)
        if keys:
            unknown.append((lineno, obj["question_id"], keys))
    return lines, unknown


def _place(
    f: Finding, jsonl: Path, lines: dict[str, int], questions: Sequence[Question]
) -> PlacedFinding:
    line = lines.get(f.question_id)
    if line is None and f.task_type:  # a task type's finding: its first question
        first = next(q.question_id for q in questions if q.task_type == f.task_type)
        line = lines[first]
    return PlacedFinding(
        f.defect, f.severity, f.message, str(jsonl), line, f.question_id, f.task_type
    )


NOT_RUN_RUBRIC = "rubric checker: scored by the judge model, not called here"
NOT_RUN_CUSTOM = "custom checker: the time budget of its probes ran out"
MAX_LINES_PER_DEFECT = 10  # a defect of every choice question would bury the rest


def finding_lines(report: ValidationReport) -> list[str]:
    """One line per finding (`file:line: severity: defect: message`), at most
    MAX_LINES_PER_DEFECT per defect and severity, then how many more; questions whose checker
    is not run offline are counted on one line per task type."""
    lines: list[str] = []
    shown: dict[tuple[Severity, Defect], int] = defaultdict(int)
    not_checked: dict[tuple[str, str], int] = defaultdict(int)
    for f in report.findings:
        if f.defect is Defect.NOT_CHECKED:
            why = NOT_RUN_CUSTOM if "budget" in f.message else NOT_RUN_RUBRIC
            not_checked[(f.task_type, why)] += 1
            continue
        if f.severity is Severity.NOT_CHECKED:
            lines.append(f"{f.where}: {f.severity}: {f.defect}: {f.message}")
            continue
        shown[(f.severity, f.defect)] += 1
        if shown[(f.severity, f.defect)] <= MAX_LINES_PER_DEFECT:
            qid = f" ({f.question_id})" if f.question_id else ""
            lines.append(f"{f.where}: {f.severity}: {f.defect}{qid}: {f.message}")
    for (severity, defect), n in shown.items():
        if n > MAX_LINES_PER_DEFECT:
            lines.append(
                f"... {n - MAX_LINES_PER_DEFECT} more {severity}s of {defect} (--json lists all)"
            )
    for (task_type, why), n in sorted(not_checked.items()):
        lines.append(f"task type '{task_type}': {n} question(s) not checked ({why})")
    return lines


# what `init` prints line by line; the other warnings are counted in its summary (an unknown
# row field is often a misspelt one, `familly`, which silently changes the family grouping)
INIT_SHOWN = frozenset(
    {
        Defect.POOLS_TOO_SMALL,
        Defect.NO_REALISTIC_EDIT,
        Defect.NOT_TRAINABLE,
        Defect.UNKNOWN_FIELD,
    }
)


def init_lines(report: ValidationReport) -> list[str]:
    """`init`'s short form: the summary with counts per defect, then each error, each task
    type whose pools are too small and each unknown field (validate-benchmark prints
    everything)."""
    counts: dict[str, int] = defaultdict(int)
    for f in report.findings:
        counts[f.defect] += 1
    by_defect = ", ".join(f"{d} x{n}" for d, n in sorted(counts.items()))
    head = (
        f"{summary_line(report)} [{by_defect}]; `validate-benchmark {report.benchmark}` lists them"
    )
    picked = [f for f in report.findings if f.severity is Severity.ERROR or f.defect in INIT_SHOWN]
    return [head, *finding_lines(replace(report, findings=tuple(picked)))]


def summary_line(report: ValidationReport) -> str:
    return (
        f"benchmark {report.benchmark} ({report.path}, format_version "
        f"{report.format_version}): {report.questions} questions, "
        f"{len(report.task_types)} task types; {report.errors} error(s), "
        f"{report.warnings} warning(s), {report.not_checked} not checked"
    )
