"""The simulated judge (for app/harness/data/judge.py): grades answers against the world's hidden
answer key.

It reads the prompts of `prompts/judge_scalar.md` and `prompts/judge_pairwise.md`. Two knobs
make it imperfect in the ways real judges are:
- `noise`: this share of samples is drawn at random (a uniform 0-10 score, or a random
  preference), seeded by the request, so repeated samples disagree;
- `position_bias`: this share of pairwise samples prefers whatever is shown first, whatever
  it says. Asking in both orders (app/harness/data/judge.py) cancels it.
"""

from __future__ import annotations

import json

from app.providers.sim.agent import tag
from app.providers.sim.rng import draw, pick
from app.providers.sim.world import World, normalise
from core.checkers import extract_answer

SCORE_CORRECT = 9
SCORE_WRONG = 2


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
