"""How relevant a gate family is to an edit, from texts alone: the order of a relevance ladder.

A gate test spends its first families where the edit can change an answer: questions that
share rare words with the text the edit added (TF-IDF cosine over word tokens, the family's
question texts against the added text). Questions an edit cannot touch tie, and ties cost the
test nothing but length; putting them last lets a real rule cross the level before the
futility checks (core/evolution/gate.py `GateParams.no_signal_after`) or n_max cut it off.

Why the null stays intact. The gate's guarantee (core/evolution/gate.py) needs the families'
order to be fixed before any of their outcomes is seen: then, under the null, each family's
paired outcome is a win or a loss with equal probability whatever came before, and the
e-process is a supermartingale in any such order. The score here reads only the edit's added
text and the questions' texts, both fixed when the gate spec is built, never a prediction, a
correctness or a baseline outcome; so the order is one more outcome-free permutation, like the
seeded shuffle it refines (ties keep the shuffle's order). Relevance may be correlated with
how often a family is discordant (a relevant question is likelier to change), but not with
the sign of a discordant outcome under the null, which is all the bound needs
(`gate.validity.relevance_ladder` in bench/gate_validity.py checks this through the real ladder
and gate). Only stage 1 is reordered: stage 2, which a provisional accept leaves to its
probation, keeps its shuffled order.

Which skill a question uses and its task type are constant within one ladder (a ladder is one
task type's families, and a task type has one skill file), so within a ladder the text score
is the whole signal.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

# Words: lower-case letters and digits, joined across -'./ inside a word ("px-1234",
# "2024-01-31", "12.5"); punctuation around a word is not part of it.
_WORD = re.compile(r"[a-z0-9]+(?:[-'./][a-z0-9]+)*")

Family = tuple[
    str, tuple[str, ...]
]  # (family id, unit ids), as app/harness/training/gate_ladder.py


def words(text: str) -> list[str]:
    """The normalised word tokens of a text (lower case, punctuation dropped)."""
    return _WORD.findall(text.lower())


def added_text(original: str, evolved: str) -> str:
    """The lines `evolved` inserts or rewrites relative to `original` (what the edit added):
    a moved or deleted line adds nothing the agent had not already been shown."""
    old, new = original.splitlines(), evolved.splitlines()
    added: list[str] = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            added.extend(new[j1:j2])
    return "\n".join(added)


def relevance_scores(documents: Mapping[str, str], query: str) -> dict[str, float]:
    """TF-IDF cosine of each document (key -> text) with the query; IDF over the documents,
    log((1 + N) / (1 + df)), so a word every document holds (the task type's template words)
    weighs nothing. A word only the query holds has no weight either (df 0 gives it the
    largest IDF, but no document shares it)."""
    tfs = {key: Counter(words(text)) for key, text in documents.items()}
    n = len(tfs)
    df: Counter[str] = Counter()
    for tf in tfs.values():
        df.update(tf.keys())
    idf = {w: math.log((1 + n) / (1 + k)) for w, k in df.items()}
    q = _unit_vector(Counter(words(query)), idf)
    scores = {}
    for key, tf in tfs.items():
        d = _unit_vector(tf, idf)
        scores[key] = sum(weight * d.get(w, 0.0) for w, weight in q.items())
    return scores


def _unit_vector(tf: Counter[str], idf: Mapping[str, float]) -> dict[str, float]:
    vec = {w: c * idf.get(w, 0.0) for w, c in tf.items()}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {w: v / norm for w, v in vec.items() if v} if norm > 0 else {}


def by_relevance(families: Sequence[Family], scores: Mapping[str, float]) -> tuple[Family, ...]:
    """Families most relevant first; a stable sort, so ties (and families without a score,
    taken as 0) keep the order they came in (the seeded shuffle's). Scores are compared to 9
    decimals, so two equally relevant families never split on floating-point rounding."""
    return tuple(sorted(families, key=lambda fam: -round(scores.get(fam[0], 0.0), 9)))
