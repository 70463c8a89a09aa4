"""The simulated judge (for app/harness/data/judge.py): grades answers against the world's hidden
answer key.

It reads the prompts of `prompts/judge_scalar.md` and `prompts/judge_pairwise.md`. Two knobs
make it imperfect in the ways real judges are:
- `noise`: this share of samples is drawn at random (a uniform 0-10 score, or a random
  preference), seeded by the request, so repeated samples disagree;
- `position_bias`: this share of pairwise samples prefers whatever is shown first, whatever
  it says. Asking in both orders (app/harness/data/judge.py) cancels it.

Rubric prompts (`prompts/judge_rubric.md`, app/harness/rollouts/rubric.py) of the judged
world's benchmark (`sim-judged`, app/providers/sim/generate.py) are graded against the same
hidden answer key, read through the case's own checker: 10 when the answer meets it, else 0;
`noise` draws that share of samples uniformly from 0-10, and `invalid_share` makes that share
of replies unreadable (no JSON), so the harness's handling of invalid replies is exercised.

`noise` also applies to the judge role's failure diagnoses (`prompts/diagnose_failure.md`,
answered in app/providers/sim/evolver.py): that share of them names a category and target
drawn at random, seeded by the request.
"""

from __future__ import annotations

import json

from app.providers.sim.agent import tag
from app.providers.sim.rng import draw, pick
from app.providers.sim.world import World, normalise
from core.checkers import check, extract_answer
from core.evolution.diagnose import CATEGORIES
from core.types import Question

DIAGNOSIS_TASK = "## Task: diagnose-failure"
NOISY_TARGETS = ("skill", "system", "tool:read_context")

SCORE_CORRECT = 9
SCORE_WRONG = 2
RUBRIC_JUDGE = "## Judge: rubric"
RUBRIC_PASS, RUBRIC_FAIL = 10, 0


def _correct(world: World, question: str, answer_text: str) -> bool | None:
    case = world.case_for_text(question)
    if case is None:
        return None
    found = extract_answer(answer_text)
    return found is not None and normalise(found) == normalise(case.answer)


def judge_reply(
    world: World, prompt: str, request_key: str, noise: float, position_bias: float
) -> str:
    question = tag(prompt, "question") or ""
    if "## Judge: pairwise" in prompt:
        a = _correct(world, question, tag(prompt, "answer_a") or "")
        b = _correct(world, question, tag(prompt, "answer_b") or "")
        if draw(world.seed, "judge-bias", request_key) < position_bias:
            preferred, why = "A", "the first answer reads better"
        elif draw(world.seed, "judge-noise", request_key) < noise:
            preferred = ("A", "B", "tie")[pick(3, world.seed, "judge-pick", request_key)]
            why = "hard to tell"
        elif a == b:
            preferred, why = "tie", "both answers are equally right" if a else "neither is right"
        else:
            preferred = "A" if a else "B"
            why = f"answer {preferred} follows the case's rule"
        return json.dumps({"preferred": preferred, "reasoning": why})
    ok = _correct(world, question, tag(prompt, "answer") or "")
    if draw(world.seed, "judge-noise", request_key) < noise:
        score, why = pick(11, world.seed, "judge-score", request_key), "uncertain"
    else:
        score = SCORE_CORRECT if ok else SCORE_WRONG
        why = "the answer follows the case's rule" if ok else "the answer misses the case's rule"
    return json.dumps({"score": score, "reasoning": why})


def noisy_diagnosis(world: World, reply: str, request_key: str, noise: float) -> str:
    """`reply`, or for a `noise` share of requests a diagnosis drawn at random."""
    if noise <= 0 or draw(world.seed, "diagnosis-noise", request_key) >= noise:
        return reply
    category = CATEGORIES[pick(len(CATEGORIES), world.seed, "diagnosis-category", request_key)]
    target = (
        "skill"
        if category == "skill_gap"
        else NOISY_TARGETS[pick(len(NOISY_TARGETS), world.seed, "diagnosis-target", request_key)]
    )
    if category == "interface" and target == "skill":
        target = "system"
    return json.dumps({"category": category, "target": target, "rationale": "hard to tell"})


def rubric_reply(
    world: World, prompt: str, request_key: str, noise: float, invalid_share: float
) -> str:
    """A rubric grade (prompts/judge_rubric.md) against the world's hidden answer key."""
    if draw(world.seed, "rubric-invalid", request_key) < invalid_share:
        return "The answer seems reasonable overall, I would rate it fairly."
    if draw(world.seed, "rubric-noise", request_key) < noise:
        score, why = pick(11, world.seed, "rubric-score", request_key), "uncertain"
        return json.dumps({"score": score, "reasoning": why})
    case = world.case_for_text(tag(prompt, "question") or "")
    # the answer's first line: the simulated agent's answers are one line, and a fair judge
    # ignores filler after it (the verbosity probe of core/judge_quality.py)
    answer = (tag(prompt, "answer") or "").split("\n", 1)[0]
    ok = case is not None and check(
        Question(
            question_id=case.question_id,
            task_type=case.task_type,
            question=case.question,
            answer=case.answer,
            checker=case.checker,
            checker_args=case.checker_args,
        ),
        answer,
    )
    why = "meets the rubric" if ok else "misses the case's rule"
    return json.dumps({"score": RUBRIC_PASS if ok else RUBRIC_FAIL, "reasoning": why})
