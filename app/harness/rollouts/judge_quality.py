"""`judge-quality`: the rubric judge graded on labelled cases, and the record training reads.

The cases file is JSONL, one case a line (docs/checkers.md#judge-quality):

    {"case_id": "c1", "question_id": "ledger-u000a", "answer": "4137", "band": [0.8, 1.0],
     "kind": "reference"}
    {"question": "Reply to ...", "rubric": "Polite; ...", "answer": "", "band": [0, 0.1],
     "kind": "control"}

`question_id` takes the question text and rubric from the workspace's benchmark; otherwise
`question` and `rubric` are given. Each case is judged as training judges it
(app/harness/rollouts/rubric.py: `judge_model`, `rubric_samples`, `rubric_temperature`,
cached), once as written and once padded with neutral filler (the verbosity probe,
core/judge_quality.py). The result is appended to `analyses/judge_quality.json` keyed by judge
model and rubric; `train` on a benchmark with rubric questions warns when no passing check is
recorded for its judge model and every rubric it uses (`missing_check_warning`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio

from app.errors import UserError
from app.harness.rollouts.rubric import RubricSettings, rubric_check
from app.harness.rollouts.telemetry import calls_logged_as
from app.harness.workspace.atomic import read_json, write_json_atomic
from app.harness.workspace.clock import now_iso
from app.sanitize import visible
from core.checkers import RUBRIC
from core.concurrency import fan_out
from core.judge_quality import (
    VERBOSE_PAD,
    CaseKind,
    CaseScore,
    JudgeCase,
    JudgeQuality,
    rubric_key,
)
from core.protocols import LLMProvider
from core.types import Question

RECORD_FILE = "judge_quality.json"
RECORD_VERSION = 1
MAX_FILE_BYTES = 20_000_000
MAX_CASES = 5000
MAX_FIELD_CHARS = 20_000
FIELDS = {"case_id", "question_id", "question", "rubric", "answer", "band", "kind"}


def load_cases(path: Path, questions: Mapping[str, Question]) -> list[JudgeCase]:
    """Every case of `path`, checked first: a bad line is one `path:line: reason` error."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UserError(f"{path}: larger than {MAX_FILE_BYTES // 1_000_000} MB")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    cases: list[JudgeCase] = []
    seen: set[str] = set()
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        case = _case(where, line, n, questions)
        if case.case_id in seen:
            raise UserError(f"{where}: case_id {visible(case.case_id)!r} repeats")
        seen.add(case.case_id)
        cases.append(case)
        if len(cases) > MAX_CASES:
            raise UserError(f"{where}: more than {MAX_CASES} cases")
    if not cases:
        raise UserError(f"{path}: no cases")
    return cases


def _case(where: str, line: str, n: int, questions: Mapping[str, Question]) -> JudgeCase:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}: not JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise UserError(f"{where}: a case is a JSON object")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise UserError(f"{where}: unknown field {visible(unknown[0])!r}")
    text = {k: obj.get(k) for k in ("case_id", "question_id", "question", "rubric", "answer")}
    for key, value in text.items():
        if value is not None and (not isinstance(value, str) or len(value) > MAX_FIELD_CHARS):
            raise UserError(f"{where}: {key} must be a string of at most {MAX_FIELD_CHARS} chars")
    if text["answer"] is None:
        raise UserError(f"{where}: answer is missing")
    question, rubric = text["question"], text["rubric"]
    if text["question_id"] is not None:
        q = questions.get(text["question_id"])
        if q is None:
            qid = visible(text["question_id"])
            raise UserError(f"{where}: question_id {qid!r} is not in the benchmark")
        question = question or q.question
        rubric = rubric or str(q.checker_args.get("rubric", "") or "")
    if not question or not rubric:
        raise UserError(f"{where}: give question_id of a rubric question, or question and rubric")
    band = obj.get("band")
    if (
        not isinstance(band, list)
        or len(band) != 2
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in band)
        or not all(math.isfinite(x) for x in band)
        or not 0 <= band[0] <= band[1] <= 1
    ):
        raise UserError(f"{where}: band must be [low, high] with 0 <= low <= high <= 1")
    kind = obj.get("kind", CaseKind.REFERENCE)
    if kind not in tuple(CaseKind):
        raise UserError(f"{where}: kind must be one of {', '.join(CaseKind)}")
    return JudgeCase(
        case_id=text["case_id"] or f"line{n}",
        question=question,
        rubric=rubric,
        answer=text["answer"],
        low=float(band[0]),
        high=float(band[1]),
        kind=CaseKind(kind),
    )


async def judge_cases(
    judge: LLMProvider,
    settings: RubricSettings,
    cases: Sequence[JudgeCase],
    run_id: str,
    concurrency: int = 16,
) -> dict[str, CaseScore]:
    """Each case judged as written and padded, with training's rubric checker."""
    out: dict[str, CaseScore] = {}

    async def one(case: JudgeCase) -> None:
        q = Question(
            question_id=case.case_id,
            task_type="judge-quality",
            question=case.question,
            answer="",
            checker=RUBRIC,
            checker_args={"rubric": case.rubric},
        )
        plain = await rubric_check(judge, settings, q, case.answer)
        padded = await rubric_check(judge, settings, q, case.answer + VERBOSE_PAD)
        out[case.case_id] = CaseScore(
            case.case_id, plain.score, padded.score, plain.invalid_replies
        )

    with calls_logged_as(run_id):
        await fan_out(one, cases, limiter=anyio.CapacityLimiter(concurrency))
    return out


def quality_summary(q: JudgeQuality) -> dict[str, Any]:
    return {
        "cases": q.cases,
        "judged": q.judged,
        "agreement": q.agreement,
        "pass_line": q.pass_line,
        "passed": q.passed,
        "leniency": q.leniency,
        "verbosity_bias": q.verbosity_bias,
        "invalid_cases": q.invalid_cases,
        "invalid_replies": q.invalid_replies,
        "by_kind": q.by_kind,
        "band_misses": [{**asdict(m), "distance": m.distance} for m in q.misses],
    }


def record_check(
    analyses: Path,
    judge_model: str,
    cases: Sequence[JudgeCase],
    quality: JudgeQuality,
    cases_file: Path,
    run_id: str,
) -> dict[str, Any]:
    """Append this check to `analyses/judge_quality.json` (atomic); returns the entry."""
    path = analyses / RECORD_FILE
    data = read_json(path) if path.exists() else {}
    checks = list(data.get("checks", [])) if isinstance(data, dict) else []
    entry = {
        "at": now_iso(),
        "run_id": run_id,
        "judge_model": judge_model,
        "rubrics": sorted({rubric_key(c.rubric) for c in cases}),
        "cases_file_sha256": hashlib.sha256(cases_file.read_bytes()).hexdigest(),
        **quality_summary(quality),
    }
    write_json_atomic(path, {"version": RECORD_VERSION, "checks": [*checks, entry]})
    return entry


def missing_check_warning(
    analyses: Path, judge_model: str, questions: Sequence[Question]
) -> str | None:
    """The warning `train` logs when the benchmark's rubrics lack a passing judge-quality check
    for this judge model, or None (no rubric questions, or every rubric checked and passed)."""
    rubrics = {
        rubric_key(str(q.checker_args.get("rubric", ""))) for q in questions if q.checker == RUBRIC
    }
    if not rubrics:
        return None
    path = analyses / RECORD_FILE
    checks: list[dict[str, Any]] = []
    if path.exists():
        try:
            data = read_json(path)
            checks = [c for c in data.get("checks", []) if isinstance(c, dict)]
        except (OSError, ValueError, AttributeError):
            checks = []
    latest: dict[str, dict[str, Any]] = {}  # rubric -> the last check of this judge covering it
    for c in checks:
        if c.get("judge_model") == judge_model:
            for r in c.get("rubrics", []):
                latest[r] = c
    unchecked = sorted(rubrics - set(latest))
    failed = sorted(r for r in rubrics & set(latest) if not latest[r].get("passed"))
    if not unchecked and not failed:
        return None
    parts = []
    if unchecked:
        parts.append(f"{len(unchecked)} of its {len(rubrics)} rubric(s) have no check")
    if failed:
        worst = min(float(latest[r].get("agreement", 0.0)) for r in failed)
        line = float(latest[failed[0]].get("pass_line", 0.0))
        parts.append(
            f"the last check of {len(failed)} rubric(s) failed (agreement {worst:.3f} < {line:.2f})"
        )
    return (
        f"judge_model {judge_model} scores this benchmark's rubric questions, but "
        + "; ".join(parts)
        + ": run `judge-quality -w WS --cases FILE` before trusting judged results"
    )
