"""`sim/oracle`: a simulated model for ANY benchmark, to try a run offline before paying.

It knows the benchmark's answer key (the questions are handed to it at start) and answers a
question right with a fixed probability (`sim_oracle_accuracy`), seeded per (question, sample):
the same whatever skills or prompts it is sent, so it checks plumbing, reply formats, checkers
and cost accounting, never learning (no edit can ever help, so the gate accepts none but by the
chance its false-accept bound allows). A wrong answer is wrong in a way the question's checker
sees (another number, another letter, another string, text the pattern does not match); for a
checker the oracle cannot evaluate (a custom `module:function` or a rubric) it is a short
off-topic reply. A question whose `metadata.oracle_tool_calls` lists declared-tool calls (a
fixture's benchmark, where the final state decides) gets those calls made first, in one reply,
when it is answered right, and none when wrong. Its evolver proposes generic, well-formed edits; its judge grades against the
answer key with a settable noise (`sim_judge_noise`). Replies use the formats of the built-in
simulated model (app/providers/sim/provider.py): `ANSWER:` lines, tool calls, JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.providers.sim import agent
from app.providers.sim.notices import ORACLE_MODEL
from app.providers.sim.provider import SIM_PRICE_IN_PER_MTOK, SIM_PRICE_OUT_PER_MTOK
from app.providers.sim.rng import draw, pick
from app.providers.sim.world import normalise
from core.checkers import check, extract_answer, normalise_answer
from core.evolution.diagnose import CATEGORIES
from core.protocols import Message
from core.types import LLMResponse, Question, ToolCall, ToolSpec, Usage

DEFAULT_ACCURACY = 0.6
# a question's metadata key listing the declared-tool calls a right answer makes (their order
# matters: a fixture's oracle judges the state they leave), as [{"name", "arguments"}]
REFERENCE_CALLS = "oracle_tool_calls"
# checkers core/checkers.py `check` evaluates; for any other the oracle cannot build a wrong
# answer the checker is sure to see, so it replies off-topic
BUILT_IN_CHECKERS = ("exact", "numeric", "choice", "regex")
OFF_TOPIC = "The weather was pleasant all week."
GENERIC_RULES = (
    "- Restate what the question asks for before answering.",
    "- Check the answer against every figure given in the question.",
    "- Reply with the answer alone on the ANSWER: line, in the form the question uses.",
    "- When the question gives a context, read all of it before answering.",
)
# Rules a learning stand-in can be taught (`sim_oracle_rules` > 0, used by `estimate`'s dry
# run, app/estimate.py): each question needs one of the first `sim_oracle_rules`; once that
# rule is in the text the agent is sent, it answers at LEARNED_ACCURACY.
LEARNABLE_RULES = tuple(
    f"- Rule {k}: cases of kind {k} follow the special handling described for kind {k}."
    for k in range(1, 9)
)
# ...and a contradicting line (what a harmful edit adds) confuses it, as the world's decoys do
DECOY_RULES = tuple(
    f"- Rule {k}: cases of kind {k} never need any special handling." for k in range(1, 9)
)
# ...and, as in the built-in world (app/providers/sim/world.py: a fifth of its cases need a
# SYSTEM_RULES line), the failures of a SYSTEM_NEED_SHARE of questions are diagnosed as the
# system prompt's (`interface`, target `system`) until the system prompt holds SYSTEM_RULE,
# which its evolver proposes. The line changes no answer (accuracy is the skill rules'): what
# it stands for is a learning run's prompt evolution and paired prompt test, whose calls
# `estimate` must count (without it, the dry run never evolved a prompt)
SYSTEM_NEED_SHARE = 0.2
SYSTEM_RULE = "- Give the answer exactly in the form the question asks for, and nothing else."
LEARNED_ACCURACY = 0.9
CONFUSED_ACCURACY = 0.05
SCORE_CORRECT, SCORE_WRONG = 9, 2


@dataclass(frozen=True)
class OracleSettings:
    accuracy: float = DEFAULT_ACCURACY  # chance a question is answered right
    judge_noise: float = 0.0  # share of judge grades and diagnoses drawn at random
    seed: int = 7  # sim_world_seed: another seed, other right/wrong draws
    # 0: it never learns (what a user tries offline); n > 0: each question needs one of n
    # LEARNABLE_RULES, as the built-in world's need theirs (estimate's learning stand-in)
    rules: int = 0
    # with rules > 0, the evolver's shares of harmful (a decoy rule) and useless (a generic
    # line) proposals, as the built-in evolver's (`sim_harmful_share`, `sim_useless_share`)
    harmful_share: float = 0.0
    useless_share: float = 0.0


def is_oracle(model: str) -> bool:
    return model == ORACLE_MODEL


class OracleProvider:
    """The LLMProvider of `sim/oracle` over one benchmark's questions."""

    def __init__(self, questions: Sequence[Question], settings: OracleSettings) -> None:
        self.model = ORACLE_MODEL
        self.settings = settings
        self._by_text: dict[str, Question] = {}
        for q in questions:  # the first question with a text wins; duplicates share its key
            self._by_text.setdefault(_key(q.question), q)

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int = 0,
        role: str = "agent",
        response_format: dict[str, Any] | None = None,
    ) -> LLMResponse:
        last_user = next(
            (m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), ""
        )
        if "## Task: " in last_user:
            return _response(messages, self._task_reply(last_user), ())
        if "## Judge: " in last_user:
            return _response(messages, self._judge_reply(last_user), ())
        if role == "extract":  # never needed: every final reply has an ANSWER: line
            return _response(messages, "ANSWER: none", ())
        return self._agent_turn(messages, tools, seed)

    # -- agent ---------------------------------------------------------------------------------

    def _agent_turn(
        self, messages: list[Message], tools: list[ToolSpec] | None, seed: int
    ) -> LLMResponse:
        view = agent.read_view(messages, tools)
        question = self._by_text.get(_key(view.question))
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        call = _tool_call(view, question, turn)
        if call is not None:
            return _response(messages, "", (call,))
        if question is None:
            return _response(
                messages, "This question is not in the benchmark.\nANSWER: unknown", ()
            )
        right = draw(self.settings.seed, "oracle", question.question_id, seed)
        p = self.settings.accuracy
        if self.settings.rules > 0:
            k = pick(self.settings.rules, "oracle-rule", question.question_id)
            if normalise(DECOY_RULES[k]) in view.instruction_text:
                p = CONFUSED_ACCURACY
            elif normalise(LEARNABLE_RULES[k]) in view.instruction_text:
                p = max(p, LEARNED_ACCURACY)
        if right < p:
            planned = _reference_calls(view, question, turn)
            if planned:  # the calls first; the answer once their results are in
                return _response(messages, "", planned)
        answer = question.answer if right < p else wrong_answer(question)
        text = f"Simulated oracle reply for {question.question_id}.\nANSWER: {answer}"
        return _response(messages, text, ())

    # -- judge ---------------------------------------------------------------------------------

    def _judge_reply(self, prompt: str) -> str:
        question = self._by_text.get(_key(agent.tag(prompt, "question") or ""))
        noise = self.settings.judge_noise
        key = prompt
        if "## Judge: pairwise" in prompt:
            a = _graded(question, agent.tag(prompt, "answer_a") or "")
            b = _graded(question, agent.tag(prompt, "answer_b") or "")
            if draw(self.settings.seed, "oracle-judge-noise", key) < noise:
                preferred = ("A", "B", "tie")[pick(3, self.settings.seed, "oracle-pick", key)]
            else:
                preferred = "tie" if a == b else ("A" if a else "B")
            return json.dumps({"preferred": preferred, "reasoning": "graded on the answer key"})
        ok = _graded(question, agent.tag(prompt, "answer") or "")
        if draw(self.settings.seed, "oracle-judge-noise", key) < noise:
            score = pick(11, self.settings.seed, "oracle-score", key)
        else:
            score = SCORE_CORRECT if ok else SCORE_WRONG
        return json.dumps({"score": score, "reasoning": "graded on the answer key"})

    # -- evolver and diagnoses -----------------------------------------------------------------

    def _task_reply(self, prompt: str) -> str:
        found = re.search(r"## Task: ([\w-]+)", prompt)
        task = found.group(1) if found else ""
        if task == "diagnose-failure":
            return self._diagnosis(prompt)
        if task == "evolve-skill":
            return _edits(prompt, "skill_file", "Rules", _budget(prompt), self._lines(prompt))
        if task in ("evolve-system-prompt", "evolve-tool-prompt"):
            section = "Instructions" if task == "evolve-system-prompt" else "Usage"
            lines: tuple[str, ...] = GENERIC_RULES
            if task == "evolve-system-prompt" and self.settings.rules > 0:
                lines = (SYSTEM_RULE,)  # the learning stand-in's system prompt line
            return _edits(prompt, "prompt_file", section, 1, lines)
        if task == "momentum":
            return json.dumps({"guidance": "- Keep the answer format of the ANSWER: line."})
        if task == "evolve-description":
            name = re.search(r'<skill name="([^"]+)"', prompt)
            what = name.group(1) if name else "these"
            return json.dumps(
                {"description": f"Use for {what} questions.", "rationale": "generic (sim/oracle)"}
            )
        return "I do not recognise this task."

    def _lines(self, prompt: str) -> tuple[str, ...]:
        """What the evolver may propose: generic lines; for a learning stand-in its rules, or
        (at the set shares) one decoy or one generic line only."""
        n = self.settings.rules
        if n == 0:
            return GENERIC_RULES
        u = draw(self.settings.seed, "oracle-evolve", prompt)
        if u < self.settings.harmful_share:
            return (DECOY_RULES[pick(n, self.settings.seed, "oracle-decoy", prompt)],)
        if u < self.settings.harmful_share + self.settings.useless_share:
            return GENERIC_RULES
        return LEARNABLE_RULES[:n]

    def _needs_system_rule(self, question: Question) -> bool:
        return (
            self.settings.rules > 0
            and draw(self.settings.seed, "oracle-system", question.question_id) < SYSTEM_NEED_SHARE
        )

    def _lacks_system_rule(self, question: Question, instruction_text: str) -> bool:
        return self._needs_system_rule(question) and normalise(SYSTEM_RULE) not in instruction_text

    def _diagnosis(self, prompt: str) -> str:
        stop = re.search(r'stop_reason="(\w+)"', prompt)
        question = self._by_text.get(_key(agent.tag(prompt, "question") or ""))
        system = normalise(agent.tag(prompt, "system_prompt") or "")
        if stop and stop.group(1) in ("error", "max_steps"):
            verdict = {"category": "runtime_fault", "target": "skill"}
        elif question is not None and self._lacks_system_rule(question, system):
            verdict = {"category": "interface", "target": "system"}
        else:
            verdict = {"category": "skill_gap", "target": "skill"}
        if draw(self.settings.seed, "oracle-diagnosis-noise", prompt) < self.settings.judge_noise:
            category = CATEGORIES[pick(len(CATEGORIES), self.settings.seed, "oracle-cat", prompt)]
            verdict = {
                "category": category,
                "target": "system" if category == "interface" else "skill",
            }
        return json.dumps({**verdict, "rationale": "A generic diagnosis (sim/oracle)."})


def wrong_answer(question: Question) -> str:
    """An answer the question's checker rejects, or a short off-topic reply when the oracle
    cannot run the checker (a custom or rubric one)."""
    if question.checker not in BUILT_IN_CHECKERS:
        return OFF_TOPIC
    for candidate in _wrong_candidates(question):
        if candidate and not check(question, candidate):
            return candidate
    return OFF_TOPIC


def _wrong_candidates(question: Question) -> list[str]:
    answer = question.answer.strip()
    if question.checker == "numeric":
        try:
            value = float(answer.replace(",", ""))
        except ValueError:
            return ["-1", "0"]
        shifts = (max(1.0, abs(value)), 1.0, 1e6)
        return [_number(value + s) for s in shifts]
    if question.checker == "choice":
        return [c for c in "ABCDE" if c != answer.upper()[:1]]
    if question.checker == "regex":
        return ["~no match~", "0", "x", f"{answer} (not this)"]
    return [f"not {answer}", "unknown"]


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _graded(question: Question | None, reply: str) -> bool:
    # a rubric prompt holds the answer the harness extracted, without its ANSWER: marker
    # (app/harness/rollouts/rubric.py `rubric_prompt`): then the text is the answer
    found = extract_answer(reply)
    if found is None:
        found = reply.strip()
    if question is None or not found:
        return False
    if question.checker in BUILT_IN_CHECKERS:
        return check(question, found)
    return normalise_answer(found) == normalise_answer(question.answer)


def _tool_call(view: agent.AgentView, question: Question | None, turn: int) -> ToolCall | None:
    """read_skill first where it is offered (by name in progressive mode), then read_context
    for a question with a context, as a careful agent would."""
    if "read_skill" in view.tools and "read_skill" not in view.called:
        if view.catalog:
            names = [n for n, _ in view.catalog]
            task_type = question.task_type if question else ""
            name = task_type if task_type in names else names[0]
            return ToolCall(id=f"call_{turn}_skill", name="read_skill", arguments={"name": name})
        if not view.catalog:
            task_type = question.task_type if question else "unknown"
            args = {"task_type": task_type}
            return ToolCall(id=f"call_{turn}_skill", name="read_skill", arguments=args)
    if (
        question is not None
        and question.context
        and not view.inline_context
        and "read_context" in view.tools
        and "read_context" not in view.called
    ):
        args = {"section": "full"}
        return ToolCall(id=f"call_{turn}_context", name="read_context", arguments=args)
    return None


def _reference_calls(view: agent.AgentView, question: Question, turn: int) -> tuple[ToolCall, ...]:
    """A question's `metadata.oracle_tool_calls` ([{"name", "arguments"}], what a right answer
    does with the declared tools: bench/public/bfcl_multi_turn.py writes them), all in one
    reply, once, and only when every one of them is offered; () otherwise."""
    planned = question.metadata.get(REFERENCE_CALLS) if question.metadata else None
    if not isinstance(planned, list) or not planned:
        return ()
    calls = []
    for i, c in enumerate(planned):
        name = c.get("name") if isinstance(c, dict) else None
        args = c.get("arguments") if isinstance(c, dict) else None
        if not isinstance(name, str) or name not in view.tools or not isinstance(args, dict):
            return ()
        if name in view.called:  # made already: now the answer
            return ()
        calls.append(ToolCall(id=f"call_{turn}_ref_{i}", name=name, arguments=args))
    return tuple(calls)


def _edits(prompt: str, file_tag: str, section: str, budget: int, lines: tuple[str, ...]) -> str:
    """Rules from `lines` the file does not hold yet and that were not rejected before."""
    text = normalise_answer(agent.tag(prompt, file_tag) or "")
    rejected = normalise_answer(agent.tag(prompt, "rejected_edits") or "")
    fresh = [
        line
        for line in lines
        if normalise_answer(line[2:]) not in text and normalise_answer(line[2:]) not in rejected
    ]
    start = pick(len(fresh), "oracle-edit", prompt) if fresh else 0
    chosen = (fresh[start:] + fresh[:start])[: max(0, budget)]
    edits = [
        {"op": "add", "section": section, "content": line, "priority": 1, "rationale": "generic"}
        for line in chosen
    ]
    return json.dumps({"edits": edits, "suggestions": []})


def _budget(prompt: str) -> int:
    found = re.search(r"at most (\d+) edits", prompt)
    return int(found.group(1)) if found else 1


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _response(messages: list[Message], text: str, calls: Sequence[ToolCall]) -> LLMResponse:
    """Tokens and notional prices as the built-in simulated model counts them."""
    chars_in = sum(len(m.get("content") or "") for m in messages)
    tokens_in, tokens_out = chars_in // 4 + 1, len(text) // 4 + 1
    cost = (tokens_in * SIM_PRICE_IN_PER_MTOK + tokens_out * SIM_PRICE_OUT_PER_MTOK) / 1e6
    return LLMResponse(
        text=text,
        tool_calls=tuple(calls),
        usage=Usage(tokens_in, tokens_out),
        cost_usd=cost,
        model=ORACLE_MODEL,
    )
