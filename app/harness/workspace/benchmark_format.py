"""The benchmark format, version 1 (docs/benchmarks.md): one `questions.jsonl` row and
`benchmark.toml`, as pydantic models, and how a row becomes a `core.types.Question`.

A row's `rubric` and `pass_threshold`, and the benchmark's `[checker]` defaults, become
`Question.checker` and `Question.checker_args` (keys "rubric", "pass_threshold", "timeout_s"),
so the data model keeps one place for everything a checker reads.

Unknown keys are ignored when loading (a workspace frozen with extra keys keeps loading) and
reported by `validate-benchmark` and `init` as warnings (`unknown_row_keys`,
`unknown_toml_keys`).
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import UserError
from core.benchmark_checks import RUBRIC_CHECKER, CheckerKind, checker_kind
from core.types import CHECKERS, Question

FORMAT_VERSION = 1  # the newest `format_version` this code reads
TASK_TYPE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
KNOWN_CHECKERS = f"{', '.join(CHECKERS)}, {RUBRIC_CHECKER} or 'module:function'"
DEFAULT_PASS_THRESHOLD = 0.5
DEFAULT_TIMEOUT_S = 10.0
_STRICT = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


class QuestionRow(BaseModel):
    """One line of questions.jsonl (docs/benchmarks.md lists each field's meaning)."""

    model_config = _STRICT

    question_id: str
    task_type: str
    question: str
    answer: str  # may be "" only when the checker is "rubric"
    unit_id: str = ""  # default: question_id (a unit of one)
    family: str = ""  # default: unit_id (a family of one)
    context: str = ""
    checker: str | None = None  # default: benchmark.toml [checker] default, else "exact"
    checker_args: dict[str, Any] = Field(default_factory=dict)
    rubric: str | None = None  # checker "rubric" only
    pass_threshold: float | None = Field(default=None, ge=0.0, le=1.0)  # rubric/custom only
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: list[str] | None = None  # declared tools it may call (None: the default ones)
    fixture: str = ""  # a [fixtures.<name>] of benchmark.toml (docs/tools.md)


ROW_FIELDS = frozenset(QuestionRow.model_fields)


class CheckerDefaults(BaseModel):
    """benchmark.toml `[checker]`: what a row that says nothing gets."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    default: str = "exact"
    rubric: str | None = None
    pass_threshold: float = Field(default=DEFAULT_PASS_THRESHOLD, ge=0.0, le=1.0)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0.0, le=3600.0)


class BenchmarkToml(BaseModel):
    """benchmark.toml. `split` and `answer_fallbacks` are checked by the store
    (app/harness/workspace/store.py), whose messages predate this model."""

    model_config = _STRICT

    format_version: int = Field(default=1, ge=1)
    name: str | None = None
    description: str = ""
    seed: int = Field(default=0, strict=False)
    task_types: list[str] = Field(default_factory=list)
    split: Any = None
    answer_fallbacks: Any = None
    checker: CheckerDefaults = Field(default_factory=CheckerDefaults)
    license: str | None = None  # SPDX expression (app/harness/data/licences.py reads it)
    # What a family's units are to each other (docs/benchmarks.md): "near-duplicates" (the
    # default) makes a family one observation for the gate; "independent" declares them
    # separate draws, so the gate counts each unit (core/evolution/gate.py says what it costs
    # when the declaration is wrong).
    family_units: Literal["near-duplicates", "independent"] = "near-duplicates"
    # declared tools, tool faults and stateful fixtures: parsed by app/harness/tools/spec.py
    tools: Any = None
    faults: Any = None
    fixtures: Any = None


TOML_KEYS = frozenset(BenchmarkToml.model_fields)

_TYPE_WORDS = {
    "missing": "required",
    "string_type": "must be a string",
    "dict_type": "must be an object",
    "list_type": "must be a list",
    "float_type": "must be a number",
    "int_type": "must be an integer",
    "finite_number": "must be a finite number",
    "extra_forbidden": "unknown key",
    "model_type": "must be a table",
}


def explain(error: ValidationError) -> tuple[str, str]:
    """(dotted field, what is wrong) of the first error pydantic found."""
    first = error.errors(include_url=False)[0]
    loc = ".".join(str(part) for part in first["loc"]) or "row"
    return loc, _TYPE_WORDS.get(first["type"], first["msg"])


def parse_meta(meta: dict[str, Any], where: str) -> BenchmarkToml:
    try:
        parsed = BenchmarkToml.model_validate(meta)
    except ValidationError as e:
        field, what = explain(e)
        raise UserError(f"{where}: key '{field}': {what}") from None
    if parsed.format_version > FORMAT_VERSION:
        raise UserError(
            f"{where}: key 'format_version': {parsed.format_version} is newer than this "
            f"skill-trainer reads ({FORMAT_VERSION}); upgrade skill-trainer"
        )
    _check_checker_name(parsed.checker.default, where, "key 'checker.default'")
    return parsed


def row_to_question(obj: dict[str, Any], defaults: CheckerDefaults, where: str) -> Question:
    """A parsed JSON object of questions.jsonl as a Question; a broken row is one UserError
    `file:line: field 'name': what is wrong`."""
    try:
        row = QuestionRow.model_validate(obj)
    except ValidationError as e:
        field, what = explain(e)
        raise UserError(f"{where}: field '{field}': {what}") from None
    for key in ("question_id", "task_type", "question"):
        if not getattr(row, key).strip():
            raise UserError(f"{where}: field '{key}': must be a non-empty string")
    if not TASK_TYPE_RE.fullmatch(row.task_type):
        raise UserError(
            f"{where}: field 'task_type': {row.task_type[:80]!r} must be 1-64 letters, digits, "
            "'_', '-' or '.', starting with a letter or digit (it names files)"
        )
    checker = row.checker if row.checker is not None else defaults.default
    kind = _check_checker_name(checker, where, "field 'checker'")
    if kind is not CheckerKind.RUBRIC and not row.answer.strip():
        raise UserError(
            f"{where}: field 'answer': must be a non-empty string (only checker "
            f"'{RUBRIC_CHECKER}' may leave it empty)"
        )
    return Question(
        question_id=row.question_id,
        task_type=row.task_type,
        question=row.question,
        answer=row.answer,
        unit_id=row.unit_id,
        family=row.family,
        context=row.context,
        checker=checker,
        checker_args=_checker_args(row, checker, kind, defaults, where),
        metadata=row.metadata,
        tools=tuple(row.tools) if row.tools is not None else None,
        fixture=row.fixture,
    )


def _check_checker_name(checker: str, where: str, label: str) -> CheckerKind:
    kind = checker_kind(checker)
    if kind is CheckerKind.UNKNOWN:
        raise UserError(
            f"{where}: {label}: unknown checker {checker[:80]!r} (known: {KNOWN_CHECKERS})"
        )
    return kind


def _checker_args(
    row: QuestionRow, checker: str, kind: CheckerKind, defaults: CheckerDefaults, where: str
) -> dict[str, Any]:
    args = dict(row.checker_args)
    if row.rubric is not None and kind is not CheckerKind.RUBRIC:
        raise UserError(f"{where}: field 'rubric': only checker '{RUBRIC_CHECKER}' reads a rubric")
    if row.pass_threshold is not None and kind is CheckerKind.BUILTIN:
        raise UserError(
            f"{where}: field 'pass_threshold': checker '{checker}' passes or fails; only "
            f"'{RUBRIC_CHECKER}' and 'module:function' checkers score"
        )
    if kind is CheckerKind.BUILTIN:
        _check_builtin_args(checker, args, where)
        return args
    # a row's own field wins over the same key in its checker_args, which wins over the
    # benchmark's [checker] default; a row that sets one value twice, differently, is refused
    for key, field in (("pass_threshold", row.pass_threshold), ("rubric", row.rubric)):
        if field is not None and key in args and args[key] != field:
            raise UserError(
                f"{where}: field 'checker_args.{key}': set it once (the row's '{key}' or "
                "checker_args, not both)"
            )
    threshold = (
        row.pass_threshold
        if row.pass_threshold is not None
        else args.get("pass_threshold", defaults.pass_threshold)
    )
    timeout = args.get("timeout_s", defaults.timeout_s)
    for key, value in (("pass_threshold", threshold), ("timeout_s", timeout)):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or not _in_range(key, value):
            raise UserError(f"{where}: field 'checker_args.{key}': {_RANGE_WORDS[key]}")
    args["pass_threshold"], args["timeout_s"] = float(threshold), float(timeout)
    if kind is CheckerKind.RUBRIC:
        rubric = row.rubric if row.rubric is not None else args.get("rubric", defaults.rubric)
        if not isinstance(rubric, str) or not rubric.strip():
            raise UserError(
                f"{where}: field 'rubric': checker '{RUBRIC_CHECKER}' needs a rubric "
                "(in the row, its checker_args, or benchmark.toml [checker] rubric)"
            )
        args["rubric"] = rubric
    return args


_RANGE_WORDS = {
    "pass_threshold": "must be a number from 0 to 1",
    "timeout_s": "must be a number of seconds > 0 and <= 3600",
}


def _in_range(key: str, value: float) -> bool:
    if key == "pass_threshold":
        return 0.0 <= value <= 1.0
    return 0.0 < value <= 3600.0


def _check_builtin_args(checker: str, args: dict[str, Any], where: str) -> None:
    """The built-in checkers' arguments (core/checkers.py), so a typo fails at init, not as
    a crash or a silently wrong verdict in the middle of a run."""
    if checker == "numeric":
        for key in ("abs_tol", "rel_tol"):
            value = args.get(key, 0)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or value < 0:
                raise UserError(f"{where}: field 'checker_args.{key}': must be a number >= 0")
    if checker == "regex" and "pattern" in args:
        pattern = args["pattern"]
        if not isinstance(pattern, str):
            raise UserError(f"{where}: field 'checker_args.pattern': must be a string")
        try:
            re.compile(pattern)
        except re.error as e:
            raise UserError(
                f"{where}: field 'checker_args.pattern': not a regular expression ({e})"
            ) from None
    if checker == "choice" and "options" in args:
        options = args["options"]
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise UserError(f"{where}: field 'checker_args.options': must be a list of strings")


MAX_KEYS_SHOWN = 5


def unknown_row_keys(obj: dict[str, Any]) -> list[str]:
    """A row's keys the format does not know, as shown in a warning (a hostile file may hold
    thousands of long keys: a few, each cut short, then how many more), each followed by the
    field it is close to: `familly` is ignored, so the row's family silently becomes its unit."""
    return [
        f"{shown} (did you mean '{meant}'?)" if (meant := _field_meant(key)) else shown
        for key, shown in _shown_pairs(set(obj) - ROW_FIELDS)
    ]


def _field_meant(key: str | None) -> str | None:
    if key is None or len(key) > 40:
        return None
    close = difflib.get_close_matches(key, sorted(ROW_FIELDS), n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_toml_keys(meta: dict[str, Any]) -> list[str]:
    return _shown(set(meta) - TOML_KEYS)


def _shown(keys: set[str]) -> list[str]:
    return [shown for _, shown in _shown_pairs(keys)]


def _shown_pairs(keys: set[str]) -> list[tuple[str | None, str]]:
    """(key, as shown) for the first few keys, then (None, "and N more")."""
    ordered = sorted(keys)
    shown: list[tuple[str | None, str]] = [
        (k, repr(k if len(k) <= 40 else k[:40] + "…")) for k in ordered[:MAX_KEYS_SHOWN]
    ]
    if len(ordered) > MAX_KEYS_SHOWN:
        shown.append((None, f"and {len(ordered) - MAX_KEYS_SHOWN} more"))
    return shown
