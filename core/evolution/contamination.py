"""Does a change's added text memorise a held-out question? Checked before any gate runs.

Validation and test questions are what the gate, best and the final figure are measured on;
text that writes one of them down (or its answer) into a skill, a description or a prompt would
raise those figures without teaching anything. Two signs, on the text a change ADDS
(core/evolution/relevance.py `added_text`), normalised to word tokens:

- **answer next to the question**: the reference answer of a held-out question, with a
  distinctive word of that same question as its nearest non-stop word on either side ("the
  total is 1234": "total"). A bare answer is not enough: "4" or "urgent" occurs in honest
  rules; and an answer of at most `SHORT` characters must touch the word itself ("refund 4"
  trips, "the total is 4 or more" does not), since a short token is common in honest text. Not checked: answers made only of stop
  words, and answers of `choice` questions (the question lists its
  options, so writing one is not writing the question down). A question's distinctive words
  are its non-stop words held by at most `TEMPLATE_SHARE` of the held-out questions (template
  words such as "case" are in nearly all of them and name no question), numbers excepted: a
  figure or a client number recurs across questions by chance, so a training question's
  "306, 308" would otherwise pass for a held-out answer 308 next to that question's 306.
- **a shared 7-gram**: seven consecutive words of a held-out question. An n-gram that also
  occurs in a diagnosis-pool question is template text the evolver is shown anyway, not a
  held-out question's own words, so it does not count.

`HeldOutIndex.build` does the tokenising once per run; `check` is then linear in the added
text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from core.evolution.relevance import words
from core.types import Question

NGRAM = 7
TEMPLATE_SHARE = 0.2
_NUMBER = re.compile(r"[0-9.]+")
SHORT = 2  # an answer of at most this many characters must touch its question's word
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
    ]
)


class ContaminationKind(StrEnum):
    ANSWER = "answer"  # a held-out answer next to a word of its question
    NGRAM = "ngram"  # seven consecutive words of a held-out question


@dataclass(frozen=True)
class Contamination:
    """The first sign found: which held-out question, and the words that show it."""

    kind: ContaminationKind
    question_id: str
    evidence: str

    def describe(self) -> str:
        what = (
            "the reference answer of held-out question"
            if self.kind == ContaminationKind.ANSWER
            else "a 7-gram of held-out question"
        )
        return f"added text holds {what} {self.question_id}: {self.evidence!r}"


@dataclass(frozen=True)
class _Answer:
    tokens: tuple[str, ...]  # content tokens of the answer
    question_id: str
    cues: frozenset[str]  # the question's distinctive words


@dataclass
class HeldOutIndex:
    """Held-out n-grams and answers, tokenised once (see the module docstring)."""

    ngrams: dict[tuple[str, ...], str] = field(default_factory=dict)  # -> question id
    answers: dict[str, list[_Answer]] = field(default_factory=dict)  # first token -> answers

    @classmethod
    def build(cls, held_out: Sequence[Question], seen: Iterable[Question] = ()) -> HeldOutIndex:
        seen_grams = {g for q in seen for g in _ngrams(words(q.question))}
        index = cls()
        content = {q.question_id: _content(words(q.question)) for q in held_out}
        share: Counter[str] = Counter(w for toks in content.values() for w in set(toks))
        common = {w for w, k in share.items() if k > TEMPLATE_SHARE * len(held_out)}
        for q in held_out:
            for gram in _ngrams(words(q.question)):
                if gram not in seen_grams:
                    index.ngrams.setdefault(gram, q.question_id)
            answer = tuple(words(q.answer))
            if q.checker == "choice" or not _content(list(answer)):
                continue
            cues = frozenset(w for w in content[q.question_id] if not _NUMBER.fullmatch(w))
            cues = cues - common - set(answer)
            entry = _Answer(answer, q.question_id, cues)
            index.answers.setdefault(answer[0], []).append(entry)
        return index

    def check(self, added: str) -> Contamination | None:
        """The first sign of a held-out question in `added`, or None."""
        tokens = words(added)
        for gram in _ngrams(tokens):
            qid = self.ngrams.get(gram)
            if qid is not None:
                return Contamination(ContaminationKind.NGRAM, qid, " ".join(gram))
        return self._answer_sign(tokens)

    def _answer_sign(self, tokens: list[str]) -> Contamination | None:
        for i, token in enumerate(tokens):
            for a in self.answers.get(token, ()):
                end = i + len(a.tokens)
                if tuple(tokens[i:end]) != a.tokens:
                    continue
                if _neighbours(tokens, i, end, skip_stop=len("".join(a.tokens)) > SHORT) & a.cues:
                    shown = " ".join(tokens[max(0, i - 2) : end + 2])
                    return Contamination(ContaminationKind.ANSWER, a.question_id, shown)
        return None


def _neighbours(tokens: list[str], start: int, end: int, *, skip_stop: bool) -> set[str]:
    """The words just before and just after tokens[start:end]; with `skip_stop`, the nearest
    non-stop words ("total is 1234" -> "total")."""
    found = set()
    for j, step in ((start - 1, -1), (end, 1)):
        while skip_stop and 0 <= j < len(tokens) and tokens[j] in STOP_WORDS:
            j += step
        if 0 <= j < len(tokens):
            found.add(tokens[j])
    return found


def _content(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in STOP_WORDS]


def _ngrams(tokens: list[str]) -> Iterable[tuple[str, ...]]:
    return (tuple(tokens[i : i + NGRAM]) for i in range(len(tokens) - NGRAM + 1))
