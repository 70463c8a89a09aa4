"""bench/real_public.py: a seeded BFCL subset, trained against the stand-in server (its --tiny
pipeline, in-process here so the workspace can be read back), prints the RESULT lines its
contract names, and its McNemar p is the one of the log's paired test outcomes."""

from __future__ import annotations

import importlib.util
import re
import sqlite3
from pathlib import Path

import pytest
from scipy.stats import binomtest

from core.stats import mcnemar_exact
from tests.support.bench import load_bench

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None,
    reason="bench/real_public.py needs `bfcl_eval` (the `public` extra): "
    "pip install --no-deps bfcl-eval==2026.3.23",
)

RESULT = load_bench("run_all", "bench_run_all_real_public").RESULT
CONTRACT = {  # name -> unit: bench/REAL_MODEL.md and the Makefile quote these
    "real_public.test_before": "accuracy",
    "real_public.test_after": "accuracy",
    "real_public.mcnemar_p": "p",
    "real_public.wall_s": "s",
}


def _rows(n_types: int = 2) -> list[dict]:
    rows = []
    for t in range(n_types):
        for i in range(10):
            family = f"t{t}-f{i}"
            for copy in range(1 + (i == 3)):  # family 3 of each type holds two questions
                rows.append(
                    {
                        "task_type": f"type{t}",
                        "family": family,
                        "question": "x" * (50 if i != 7 else 500),  # family 7 is too long
                        "question_id": f"{family}-{copy}",
                    }
                )
    return rows


def test_the_subset_is_seeded_whole_families_within_the_length_bound() -> None:
    rp = load_bench("real_public", "bench_real_public_select")
    rows = _rows()
    picked = rp.select(rows, 4, seed=1, max_chars=100)
    assert picked == rp.select(rows, 4, seed=1, max_chars=100)
    assert {r["family"] for r in picked} != {
        r["family"] for r in rp.select(rows, 4, seed=2, max_chars=100)
    }
    for t in ("type0", "type1"):
        families = {r["family"] for r in picked if r["task_type"] == t}
        assert len(families) == 4
        assert f"{t[0]}{t[-1]}-f7" not in families  # the long family is never drawn
    by_family: dict[str, int] = {}
    for r in picked:
        by_family[r["family"]] = by_family.get(r["family"], 0) + 1
    whole = {r["family"]: 0 for r in rows}
    for r in rows:
        whole[r["family"]] += 1
    assert all(n == whole[f] for f, n in by_family.items())  # a family is kept whole
    assert all(len(r["question"]) <= 100 for r in picked)
    assert [r for r in rows if r in picked] == picked  # file order


def _correct(db: sqlite3.Connection, run_id: str) -> dict[str, int]:
    sql = "SELECT question_id, correct FROM predictions WHERE run_id = ?"
    return {q: int(c or 0) for q, c in db.execute(sql, (run_id,))}


def test_tiny_run_prints_the_contract_and_its_mcnemar_p_is_the_logs(tmp_path: Path) -> None:
    rp = load_bench("real_public", "bench_real_public_tiny")
    lines = rp.tiny_run(tmp_path)

    malformed = [line for line in lines if not RESULT.match(line)]
    assert lines and not malformed, malformed
    figures = {}
    for line in lines:
        _, name, value, unit, *_ = line.split()
        figures[name] = (value, unit)
    for name, unit in CONTRACT.items():
        assert name in figures, f"no {name} in {lines}"
        assert figures[name][1] == unit
        float(figures[name][0])  # a number
    assert figures["real_public.train_exit_code"][0] == "0"

    # the paired outcomes, read back from the workspace's log
    db = sqlite3.connect(tmp_path / "workspace" / "harness.db")
    try:
        (train_id,) = db.execute(
            "SELECT run_id FROM _runs WHERE kind = 'train' ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        before = _correct(db, "baseline")
        after = _correct(db, f"{train_id}-final-test")
    finally:
        db.close()
    paired = sorted(q for q in after if q in before)
    wins = sum(1 for q in paired if after[q] and not before[q])
    losses = sum(1 for q in paired if before[q] and not after[q])
    assert wins > 0  # the stand-in learns its rule, so the test has discordant pairs
    p = mcnemar_exact(wins, losses)
    assert p == pytest.approx(binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-12)
    assert figures["real_public.mcnemar_p"][0] == f"{p:.3f}"
    assert figures["real_public.mcnemar_wins"][0] == str(wins)
    assert figures["real_public.mcnemar_losses"][0] == str(losses)
    n = len(paired)
    assert figures["real_public.test_units_paired"][0] == str(n)
    assert figures["real_public.test_before"][0] == f"{sum(before[q] for q in paired) / n:.3f}"
    assert figures["real_public.test_after"][0] == f"{sum(after[q] for q in paired) / n:.3f}"

    # the subset and its pools
    questions = int(figures["real_public.questions"][0])
    assert questions == len(rp.CATEGORIES) * rp.TINY_PER_CATEGORY
    pools = {p: int(figures[f"real_public.pool.{p}"][0]) for p in ("diagnosis", "validation")}
    pools["test"] = int(figures["real_public.pool.test"][0])
    assert sum(pools.values()) == questions and pools["test"] == n
    accepted = sum(
        int(v) for name, (v, _) in figures.items() if name.startswith("real_public.accepted_")
    )
    assert int(figures["real_public.accepted"][0]) == accepted > 0
    notice = (tmp_path / "store" / "questions" / "bfcl" / "NOTICE.md").read_text()
    assert re.search(r"Subset \(bench/real_public\.py\)", notice)
