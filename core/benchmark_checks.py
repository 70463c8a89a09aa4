"""Can a benchmark tell right from wrong? Pure defect checks on its questions (docs/benchmarks.md).

Each check takes questions (and, for the pool checks, where the harness put them) and returns
typed findings; the harness attaches file:line (app/harness/rollouts/benchmark_validation.py).

- per question, the checker must accept the reference answer and reject an empty answer, every
  choice joined (choice checkers) and every number of the question (numeric checkers); a regex
  checker's pattern must not match the empty string; a reference answer written in its own
  question is suspect;
- across questions: the same question in two families, a family in two pools;
- per task type: too few gate families for any edit ever to be accepted. A test at level α
  that looks at k families can only accept on some pattern of their outcomes; when the
  candidate is no better, each family is a fair coin in the worst case, so even the best
  pattern (all k won) has probability 2^-k, and no level-α test accepts at all unless
  2^-k <= α (`min_families_for_accept`). The default gate (core/evolution/gate.py) reaches
  that bound for single-question families and needs more for larger ones, whose evidence it
  holds to Ville's level 1/α (`gate_min_families`).

Custom ("module:function") and rubric checkers cannot be run here: their questions are
reported as not checked, never as failing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from core.checkers import check, normalise_answer
from core.evolution.gate import GateAction, GateParams, SequentialGate
from core.stats import CALIBRATION_MAX_HORIZON, final_look_levels, mixture_e
from core.types import CHECKERS, Question

RUBRIC_CHECKER = "rubric"
# `package.module:function`: a custom checker (run by the harness, never here)
CUSTOM_CHECKER_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
# numbers as a question writes them: not glued to a word ("u000", "v2" are names, not numbers)
_NUMBER_RE = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w])")
_LETTER_RE = re.compile(r"(?<![A-Za-z])([A-J])(?![A-Za-z])")
# the ways a lazy agent might hand in every option at once
_JOINERS = (" ", ", ", "", "/", " or ")


class CheckerKind(StrEnum):
    BUILTIN = "builtin"  # exact, numeric, choice, regex (core/checkers.py)
    RUBRIC = "rubric"  # judged by a model against a rubric
    CUSTOM = "custom"  # "module:function"
    UNKNOWN = "unknown"


def checker_kind(checker: str) -> CheckerKind:
    if checker in CHECKERS:
        return CheckerKind.BUILTIN
    if checker == RUBRIC_CHECKER:
        return CheckerKind.RUBRIC
    if CUSTOM_CHECKER_RE.fullmatch(checker):
        return CheckerKind.CUSTOM
    return CheckerKind.UNKNOWN


class Severity(StrEnum):
    ERROR = "error"  # the benchmark cannot tell right from wrong here: fix it
    WARNING = "warning"  # suspect, or a limit of the checker or of the pools
    NOT_CHECKED = "not_checked"  # a checker that cannot run offline (custom, rubric)


class Defect(StrEnum):
    REFERENCE_REJECTED = "reference_rejected"
    EMPTY_ACCEPTED = "empty_accepted"
    JOINED_CHOICES_ACCEPTED = "joined_choices_accepted"
    QUESTION_NUMBER_ACCEPTED = "question_number_accepted"
    REGEX_MATCHES_EMPTY = "regex_matches_empty"
    INVALID_REGEX = "invalid_regex"
    ANSWER_IN_QUESTION = "answer_in_question"
    DUPLICATE_ACROSS_FAMILIES = "duplicate_across_families"
    FAMILY_SPANS_POOLS = "family_spans_pools"
    POOLS_TOO_SMALL = "pools_too_small"
    NO_REALISTIC_EDIT = "no_realistic_edit"
    NOT_TRAINABLE = "not_trainable"
    NOTHING_TRAINABLE = "nothing_trainable"
    SHARED_SKILL_FILE = "shared_skill_file"
    CHECKER_UNLOADABLE = "checker_unloadable"
    CHECKER_ERROR = "checker_error"
    NOT_CHECKED = "not_checked"
    SKILLS_NOT_CHECKED = "skills_not_checked"
    UNKNOWN_FIELD = "unknown_field"


SEVERITY: dict[Defect, Severity] = {
    Defect.REFERENCE_REJECTED: Severity.ERROR,
    Defect.EMPTY_ACCEPTED: Severity.ERROR,
    Defect.REGEX_MATCHES_EMPTY: Severity.ERROR,
    Defect.INVALID_REGEX: Severity.ERROR,
    Defect.DUPLICATE_ACROSS_FAMILIES: Severity.ERROR,
    Defect.FAMILY_SPANS_POOLS: Severity.ERROR,
    # what `train` refuses (exit 2) before its first model call
    Defect.NOTHING_TRAINABLE: Severity.ERROR,
    Defect.SHARED_SKILL_FILE: Severity.ERROR,
    # a custom checker that does not import, or raises, hangs or crashes on a probe
    Defect.CHECKER_UNLOADABLE: Severity.ERROR,
    Defect.CHECKER_ERROR: Severity.ERROR,
    # the built-in choice checker reads the first letter of a reply, so "A, B, C, D" is right
    # on every question whose answer is A: a limit of the checker, not of the row
    Defect.JOINED_CHOICES_ACCEPTED: Severity.WARNING,
    # legitimate when the answer is one of the given figures ("the largest of 3, 9, 4")
    Defect.QUESTION_NUMBER_ACCEPTED: Severity.WARNING,
    Defect.ANSWER_IN_QUESTION: Severity.WARNING,
    Defect.POOLS_TOO_SMALL: Severity.WARNING,
    Defect.NO_REALISTIC_EDIT: Severity.WARNING,
    # train leaves the task type out and trains the others
    Defect.NOT_TRAINABLE: Severity.WARNING,
    Defect.UNKNOWN_FIELD: Severity.WARNING,
    Defect.NOT_CHECKED: Severity.NOT_CHECKED,
    Defect.SKILLS_NOT_CHECKED: Severity.NOT_CHECKED,
}


@dataclass(frozen=True)
class Finding:
    defect: Defect
    message: str
    question_id: str = ""  # "" for a finding about a task type or the whole benchmark
    task_type: str = ""

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.defect]


def _finding(defect: Defect, q: Question, message: str) -> Finding:
    return Finding(defect, message, q.question_id, q.task_type)


# -- one question -------------------------------------------------------------------------------
def check_question(q: Question) -> list[Finding]:
    """The checker's answers on probes whose verdict is known: the reference, and wrong ones."""
    kind = checker_kind(q.checker)
    if kind in (CheckerKind.RUBRIC, CheckerKind.CUSTOM):
        return [_finding(Defect.NOT_CHECKED, q, f"checker '{q.checker}' is not run offline")]
    if q.checker == "regex":
        pattern_findings = _check_pattern(q)
        if pattern_findings:
            return pattern_findings  # a broken pattern makes every probe below meaningless
    found: list[Finding] = []
    if not check(q, q.answer):
        found.append(
            _finding(
                Defect.REFERENCE_REJECTED,
                q,
                f"checker '{q.checker}' rejects the reference answer {_show(q.answer)}",
            )
        )
    for empty in ("", " "):
        if check(q, empty):
            found.append(
                _finding(Defect.EMPTY_ACCEPTED, q, f"checker '{q.checker}' accepts an empty answer")
            )
            break
    if q.checker == "choice":
        found += _check_joined_choices(q)
    if q.checker == "numeric":
        found += _check_question_numbers(q)
    else:
        found += _check_answer_in_question(q)
    return found


def _check_pattern(q: Question) -> list[Finding]:
    pattern = q.checker_args.get("pattern") or re.escape(q.answer)
    if not isinstance(pattern, str):
        return [_finding(Defect.INVALID_REGEX, q, "checker_args.pattern is not a string")]
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        return [
            _finding(Defect.INVALID_REGEX, q, f"pattern {_show(pattern)} does not compile: {e}")
        ]
    if compiled.fullmatch(""):
        return [
            _finding(
                Defect.REGEX_MATCHES_EMPTY,
                q,
                f"pattern {_show(pattern)} matches the empty string (and so almost anything "
                "an agent writes around it)",
            )
        ]
    return []


def choice_letters(q: Question) -> tuple[str, ...]:
    """The options of a choice question: `checker_args.options`, else the lone capital letters
    A-J its text names (up to the last one), else A-D; the answer's letter is always one."""
    options = q.checker_args.get("options")
    if isinstance(options, list) and options and all(isinstance(o, str) for o in options):
        letters = [o.strip().upper() for o in options]
    else:
        named = _LETTER_RE.findall(q.question)
        last = max(named, default="D")
        letters = [chr(c) for c in range(ord("A"), ord(last) + 1)]
    answer = q.answer.strip().upper()
    if answer and answer not in letters:
        letters.append(answer)
    return tuple(dict.fromkeys(letters))


def _check_joined_choices(q: Question) -> list[Finding]:
    letters = choice_letters(q)
    if len(letters) < 2:
        return []
    for joiner in _JOINERS:
        joined = joiner.join(letters)
        if check(q, joined):
            return [
                _finding(
                    Defect.JOINED_CHOICES_ACCEPTED,
                    q,
                    f"checker 'choice' accepts every option at once ({_show(joined)})",
                )
            ]
    return []


def question_numbers(text: str) -> list[str]:
    return list(dict.fromkeys(n.replace(",", "") for n in _NUMBER_RE.findall(text)))


def _check_question_numbers(q: Question) -> list[Finding]:
    accepted = [n for n in question_numbers(q.question) if check(q, n)]
    if not accepted:
        return []
    shown = ", ".join(accepted[:5])
    return [
        _finding(
            Defect.QUESTION_NUMBER_ACCEPTED,
            q,
            f"checker 'numeric' accepts a number copied from the question ({shown})",
        )
    ]


def _check_answer_in_question(q: Question) -> list[Finding]:
    """A reference answer written in its own question (choice letters aside: the options are
    always written there)."""
    if q.checker == "choice":
        return []
    answer = normalise_answer(q.answer)
    if len(answer) < 2:  # a one-character answer is in most texts by chance
        return []
    text = normalise_answer(q.question)
    if re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text) is None:
        return []
    return [
        _finding(
            Defect.ANSWER_IN_QUESTION,
            q,
            f"the reference answer {_show(q.answer)} is written in the question",
        )
    ]


def _show(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


# -- across questions ---------------------------------------------------------------------------
def check_duplicates(questions: Sequence[Question]) -> list[Finding]:
    """The same question (case, spacing and closing punctuation aside) in two families, of any task
    types: a duplicate the split and the gate would treat as independent, so it may sit in
    the training pool and in the test."""
    first: dict[str, Question] = {}
    found: list[Finding] = []
    for q in questions:
        key = _question_key(q.question)
        seen = first.setdefault(key, q)
        if seen is not q and seen.family != q.family:
            found.append(
                _finding(
                    Defect.DUPLICATE_ACROSS_FAMILIES,
                    q,
                    f"same question as '{seen.question_id}' but family '{q.family}' "
                    f"(it is in '{seen.family}'): give both one family",
                )
            )
    return found


def _question_key(text: str) -> str:
    """A question, case, spacing and closing punctuation aside ("What is 8 * 6 ?" is
    "whatis8*6"); operators stay ("8 + 6" is another question)."""
    return re.sub(r"\s+", "", normalise_answer(text)).rstrip("?.!")


def check_family_pools(
    questions: Sequence[Question], pool_of_question: Mapping[str, str]
) -> list[Finding]:
    """A family whose questions landed in two pools: its near-duplicates would reach validation
    or test. The harness's split keeps a family whole (app/harness/rollouts/pools.py unions
    family and unit ids first, across task types too), so on its pools this guards the split."""
    pools: dict[str, set[str]] = defaultdict(set)
    last: dict[str, Question] = {}
    for q in questions:
        pool = pool_of_question.get(q.question_id)
        if pool is not None:
            pools[q.family].add(pool)
            last[q.family] = q
    return [
        _finding(
            Defect.FAMILY_SPANS_POOLS,
            last[family],
            f"family '{family}' spans pools {', '.join(sorted(names))}: a family must stay in "
            "one pool (use one task type per family, or separate family names)",
        )
        for family, names in sorted(pools.items())
        if len(names) > 1
    ]


# -- gate power ---------------------------------------------------------------------------------
def min_families_for_accept(alpha: float) -> int:
    """The fewest families a level-α test must see before it can accept anything: the smallest
    k with 2^-k <= α (α = 0.05: 5)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    k = 0
    while 2.0**-k > alpha:
        k += 1
    return k


def gate_min_families(params: GateParams, singletons: bool, limit: int = 1000) -> int | None:
    """The fewest families, all won, at which the e-process gate with `params` accepts (None:
    not within `limit`, or a bet whose best case is not the mixture's). With the defaults:
    5 for single-question families (the 2^-k bound, reached), 7 for larger ones."""
    if params.lambda_strategy != "mixture":
        return None
    for k in range(1, min(limit, params.n_max) + 1):
        if mixture_e(k, 0) >= params.accept_level(k, singletons=singletons):
            return k
    return None


def gate_families_at_effect(
    params: GateParams,
    wins: int,
    losses: int,
    families: int,
    singletons: bool,
    limit: int = 1000,
) -> int | None:
    """The fewest families at which the e-process gate with `params` accepts a candidate whose
    families go as observed: of `families`, `wins` won and `losses` lost (the rest tied),
    scaled to k families and rounded to whole ones. None when the observed effect is not
    positive (no number of such families accepts), the bet is not the mixture, or not within
    `limit`. With every family won it is `gate_min_families`; a weaker effect needs more.
    Exact for single-question families (the gate counts their W and L); families of several
    units move by their mean d, which `families_at_mean_effect` takes."""
    if params.lambda_strategy != "mixture" or families <= 0 or wins <= losses:
        return None
    for k in range(1, min(limit, params.n_max) + 1):
        won, lost = round(k * wins / families), round(k * losses / families)
        level = params.accept_level(k, singletons=singletons)
        if mixture_e(won, lost) >= level:
            return k
        # a ladder of k families seen whole: the gate's final look (core/evolution/gate.py)
        looks = SequentialGate(params, horizon=k, singletons=singletons).final_look
        if looks and won >= final_look_levels(level, params.alpha, k)[won + lost]:
            return k
    return None


def families_at_mean_effect(params: GateParams, d: float, limit: int = 1000) -> int | None:
    """The fewest families at which the e-process gate with `params` accepts when every family
    moves by d, the mean unit difference its "mean" evidence bets on (`family_mean`), for
    families of several units or scored ones (held to Ville's level). Run through the real
    `SequentialGate`; None when d is not positive or no accept comes within `n_max`. A one-rule
    edit on families of 3 (d = 1/3) needs 18, as `families_for_one_rule_edit` says."""
    if d <= 0:
        return None
    horizon = min(limit, params.n_max)
    gate = SequentialGate(params, horizon=horizon, singletons=False)
    for n in range(horizon):
        if gate.observe_family(f"f{n}", [(f"f{n}u", 0.0, min(1.0, d))]) is not None:
            break
    decision = gate.finish(exhausted=False)
    return decision.n_used if decision.action is GateAction.ACCEPT else None


def all_won_chance(params: GateParams, families: int, singletons: bool) -> float:
    """The probability that the e-process gate with `params` accepts a ladder of `families`,
    every one won, averaged over its coin (`GateParams.final_look_coin`): 1 for a sure
    accept, the final look's γ for one on the coin, 0 for none. Run through the real gate
    with the coin at 0, where it accepts whenever the chance is positive, and records it."""
    if families < 1:
        return 0.0
    gate = SequentialGate(params, horizon=families, singletons=singletons, coin=0.0)
    for n in range(families):
        if gate.observe_family(f"f{n}", [(f"f{n}", False, True)]) is not None:
            break
    decision = gate.finish(exhausted=False)
    return decision.chance if decision.action is GateAction.ACCEPT else 0.0


@dataclass(frozen=True)
class GateFamilies:
    """One task type's families that a gate test can look at (diagnosis and validation pools).

    `draws` > 1: each family is a pass/fail question of a benchmark whose units are independent
    and a ladder may hold that many answers of it (`[gate] draws`), each its own observation.
    `n_max_counts_questions` (`[gate] draws_for = "changed"`): a test's `n_max` counts questions
    and its draws ride along, up to the exact level's longest horizon
    (app/harness/training/gate_ladder.py `GatePools.fitted`); otherwise `n_max` counts every
    observation."""

    task_type: str
    families: int
    singletons: bool  # every such family is a single question unit
    draws: int = 1
    n_max_counts_questions: bool = True

    def observations(self, n_max: int, shown: int = 0) -> int:
        """The most observations one test's ladder can hold, `shown` families given to the
        evolver left out (with their draws)."""
        questions = max(0, self.families - shown)
        if self.draws == 1:
            return min(questions, n_max)
        if self.n_max_counts_questions:
            return min(min(questions, n_max) * self.draws, CALIBRATION_MAX_HORIZON)
        return min(questions * self.draws, n_max)


def check_gate_power(
    per_type: Iterable[GateFamilies], params: GateParams | None = None
) -> list[Finding]:
    """Task types whose gate pools are too small for any edit ever to be accepted. The count
    (observations: families, or answers with `[gate] draws`) is an upper bound: a ladder also
    leaves out every family the evolver was shown."""
    params = params or GateParams()
    bound = min_families_for_accept(params.alpha)
    found: list[Finding] = []
    for t in per_type:
        k = t.observations(params.n_max)
        gate_needs = gate_min_families(params, t.singletons)
        held = f"{k} families in the gate's pools"
        if t.draws > 1:
            held = f"{k} answers in the gate's pools ({t.families} questions, {t.draws} draws)"
        chance = all_won_chance(params, k, t.singletons)
        if k < bound and 0.0 < chance < 1.0:
            message = (
                f"task type '{t.task_type}': {held}, and no test at level α = "
                f"{params.alpha:g} can surely accept with fewer than {bound} (2^-{k} = "
                f"{2.0**-k:.3g} > α): an edit that wins all {k} is accepted only on the "
                f"gate's coin, with probability {chance:.2f}; add families"
            )
        elif k < bound:
            message = (
                f"task type '{t.task_type}': {held}, and no test at "
                f"level α = {params.alpha:g} can accept with fewer than {bound} "
                f"(2^-{k} = {2.0**-k:.3g} > α): no edit of it can ever be accepted; add families"
            )
        elif gate_needs is not None and k < gate_needs:
            message = (
                f"task type '{t.task_type}': {held}, and the gate "
                f"needs {gate_needs} won in a row to accept (families of several questions "
                f"are held to level 1/α = {params.e_confirm:g}): no edit of it can ever be "
                "accepted; add families"
            )
        else:
            continue
        found.append(Finding(Defect.POOLS_TOO_SMALL, message, "", t.task_type))
    return found


def families_for_one_rule_edit(
    sizes: Sequence[int], params: GateParams, singletons: bool = True
) -> int | None:
    """The fewest families, every one won by a one-rule edit, at which the e-process gate
    with `params` accepts (None: not within `n_max`). A rule fixes one unit of a family of k:
    d = 1/k (`family_mean`). The families are taken smallest first (the largest d: the best
    case for the edit) and, past `sizes`, more of the largest size; each candidate horizon h
    is run as the gate runs a test over a ladder of h families (`SequentialGate`).
    `singletons=False`: the units' outcomes are scores, so even single units are held to
    Ville's level (core/evolution/acceptance.py `LadderSetup.singletons`)."""
    if not sizes:
        return None
    singletons = singletons and max(sizes) == 1
    ordered = sorted(sizes)
    for horizon in range(1, params.n_max + 1):
        # beyond single units the accept level does not depend on the horizon: one run
        if not singletons and horizon < params.n_max:
            continue
        gate = SequentialGate(params, horizon=horizon, singletons=singletons)
        for n in range(horizon):
            k = ordered[n] if n < len(ordered) else ordered[-1]
            units = [(f"f{n}u{j}", False, j == 0) for j in range(k)]
            if gate.observe_family(f"f{n}", units) is not None:
                break
        decision = gate.finish(exhausted=False)
        if decision.action is GateAction.ACCEPT:
            return decision.n_used
    return None


def check_edit_power(
    per_type: Iterable[GateFamilies],
    sizes: Mapping[str, Sequence[int]],
    params: GateParams | None = None,
) -> list[Finding]:
    """Task types where even the best realistic edit cannot be confirmed: the gate needs more
    families won by a one-rule edit than a test on them can see. A test never sees the
    families the evolver was shown, and it is shown at least one failure of the task type
    before its first edit, so at most `families` - 1 are left (with their draws, when a ladder
    holds several answers of a question: `GateFamilies.observations`). `sizes`: the units of each
    family in the gate's pools, per task type. Task types whose pools are too small for any
    edit (`check_gate_power`) are not named again."""
    params = params or GateParams()
    per_type = list(per_type)
    too_small = {f.task_type for f in check_gate_power(per_type, params)}
    found: list[Finding] = []
    for t in per_type:
        own = sorted(sizes.get(t.task_type, ()))
        if t.task_type in too_small or not own:
            continue
        needed = families_for_one_rule_edit(own, params, t.singletons)
        available = t.observations(params.n_max, shown=1)
        if needed is not None and needed <= available:
            continue
        lo, hi = own[0], own[-1]
        shape = f"{lo} units" if lo == hi else f"{lo}-{hi} units"
        need = f"{needed}" if needed is not None else f"more than {params.n_max}"
        message = (
            f"task type '{t.task_type}': no realistic edit can be confirmed: a one-rule edit "
            f"fixes one unit of a family (of {shape} here: d = 1/size), and the gate needs "
            f"{need} such families, every one won, while a test sees at most {available} "
            f"({t.families} in the gate's pools{_draws_note(t)}, less the one the evolver is "
            "shown first); add families, or make them smaller"
        )
        found.append(Finding(Defect.NO_REALISTIC_EDIT, message, "", t.task_type))
    return found


def _draws_note(t: GateFamilies) -> str:
    return f", {t.draws} answers of each" if t.draws > 1 else ""


def check_questions(questions: Sequence[Question]) -> list[Finding]:
    """Every per-question check and the duplicate check, in benchmark order."""
    found = [f for q in questions for f in check_question(q)]
    return found + check_duplicates(questions)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
