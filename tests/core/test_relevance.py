"""The relevance ladder's pure parts (core/evolution/relevance.py)."""

from __future__ import annotations

from core.evolution.relevance import added_text, by_relevance, relevance_scores, words


def test_words_normalise_case_and_punctuation() -> None:
    assert words("In LEDGER cases marked VOID, total PX-1234 on 2024-01-31.") == [
        "in",
        "ledger",
        "cases",
        "marked",
        "void",
        "total",
        "px-1234",
        "on",
        "2024-01-31",
    ]


def test_added_text_is_the_inserted_and_rewritten_lines_only() -> None:
    original = "# Skill\n- keep this\n- old rule\n- moved\n"
    evolved = "# Skill\n- keep this\n- new rule about VOID\n- moved\n- extra line\n"
    assert added_text(original, evolved).splitlines() == ["- new rule about VOID", "- extra line"]
    assert added_text(original, original) == ""


def test_scores_rank_questions_sharing_rare_words_first() -> None:
    docs = {
        "f-void": "[ledger] Case 1. For client 101 one entry is marked VOID. What is the total?",
        "f-refund": "[ledger] Case 2. For client 102 one entry is marked REFUND. What is the total?",
        "f-void2": "[ledger] Case 3. For client 103 one entry is marked VOID. What is the total?",
    }
    scores = relevance_scores(docs, "In ledger cases marked VOID, leave that entry out.")
    assert scores["f-void"] > 0 and scores["f-void2"] > 0
    assert scores["f-refund"] == 0.0  # it shares only words every question holds
    assert round(scores["f-void"], 9) == round(scores["f-void2"], 9)


def test_by_relevance_is_stable_so_ties_keep_the_shuffled_order() -> None:
    fams = [("a", ("a1",)), ("b", ("b1",)), ("c", ("c1",)), ("d", ("d1",))]
    scores = {"b": 0.1, "d": 0.5, "a": 0.1 + 1e-15}
    assert [f for f, _ in by_relevance(fams, scores)] == ["d", "a", "b", "c"]
    assert by_relevance(fams, {}) == tuple(fams)
