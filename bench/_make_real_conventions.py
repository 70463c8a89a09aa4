"""Generate `store/questions/real-conventions`: short questions whose right answer follows a
house convention that a model cannot guess but follows once a skill states it.

    .venv/bin/python bench/_make_real_conventions.py          # rewrites the benchmark
    .venv/bin/python bench/_make_real_conventions.py --check  # exit 1 if the files differ

Seeded (SEED below): the same script writes the same bytes. Each task type has one convention,
visible from any (question, wrong answer, expected answer) triple, so an evolver shown failures
can state it:

- `dates`: a date is written YYYYMMDD, digits only ("5 March 2021" -> "20210305");
- `lengths`: a length is given in millimetres, the number only ("1.2 m" -> "1200");
- `prices`: a price is rounded UP to the next whole euro, the number only ("7.13" -> "8");
- `usernames`: an account name is `<team>-<surname><first initial>`, lower case
  ("Maria Lopez, Sales" -> "sales-lopezm");
- `lists`: items are listed in reverse alphabetical order, comma-separated
  ("pear, apple, fig" -> "pear, fig, apple").

Every question is its own family (one observation each for the gate), 32 per task type, so
the gate's pools hold 24 families per type (validate-benchmark's pools_too_small needs 5-7).
Checkers are exact (dates, usernames), numeric (lengths, prices) and a case-insensitive regex
that allows any spacing around the commas (lists).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "store" / "questions" / "real-conventions"
SEED = 28
PER_TYPE = 32

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
EVENTS = (
    "The parcel was shipped",
    "The contract was signed",
    "The invoice was issued",
    "The meeting took place",
    "The order was placed",
    "The account was opened",
    "The ticket was closed",
    "The warranty started",
)
THINGS = ("shelf", "desk", "cable", "plank", "pipe", "rope", "board", "rail", "curtain", "hose")
ITEMS = ("lunch", "taxi ride", "book", "train ticket", "coffee order", "repair", "hotel night")
FIRST = [
    "Maria",
    "Ahmed",
    "Chen",
    "Olga",
    "Pierre",
    "Sara",
    "Tomas",
    "Nina",
    "Ivan",
    "Lucia",
    "Omar",
    "Hana",
    "Felix",
    "Rosa",
    "Paul",
    "Mei",
]
LAST = [
    "Lopez",
    "Novak",
    "Berg",
    "Costa",
    "Dubois",
    "Sato",
    "Kowalski",
    "Okafor",
    "Rossi",
    "Weber",
    "Silva",
    "Lund",
    "Moreau",
    "Haddad",
]
TEAMS = ("sales", "finance", "support", "legal", "research", "design")
WORDS = [
    "apple",
    "pear",
    "fig",
    "plum",
    "kiwi",
    "lime",
    "mango",
    "grape",
    "lemon",
    "peach",
    "melon",
    "cherry",
    "olive",
    "date",
    "quince",
    "guava",
    "papaya",
    "banana",
]


def dates(rng: random.Random) -> tuple[str, str, str, dict[str, object]]:
    year, month, day = rng.randint(2015, 2025), rng.randint(1, 12), rng.randint(1, 28)
    event = rng.choice(EVENTS)
    written = (
        f"{day} {MONTHS[month - 1]} {year}"
        if rng.random() < 0.5
        else f"{MONTHS[month - 1]} {day}, {year}"
    )
    what = event.split()[1]
    return (
        f"{event} on {written}. What is the {what} date?",
        f"{year}{month:02d}{day:02d}",
        "exact",
        {},
    )


def lengths(rng: random.Random) -> tuple[str, str, str, dict[str, object]]:
    thing = rng.choice(THINGS)
    if rng.random() < 0.5:
        mm = rng.randint(3, 40) * 100 + rng.choice((0, 50))
        shown = f"{mm / 1000:g} metres"
    else:
        mm = rng.randint(12, 95) * 10
        shown = f"{mm // 10} centimetres"
    return (
        f"The {thing} is {shown} long. How long is the {thing}?",
        str(mm),
        "numeric",
        {"abs_tol": 0.5},
    )


def prices(rng: random.Random) -> tuple[str, str, str, dict[str, object]]:
    cents = rng.randint(150, 9900)
    while cents % 100 == 0:
        cents += rng.randint(1, 99)
    item = rng.choice(ITEMS)
    return (
        f"A {item} costs {cents / 100:.2f} euros. What price do we record?",
        str(math.ceil(cents / 100)),
        "numeric",
        {"abs_tol": 0.001},
    )


def usernames(rng: random.Random) -> tuple[str, str, str, dict[str, object]]:
    first, last, team = rng.choice(FIRST), rng.choice(LAST), rng.choice(TEAMS)
    question = f"{first} {last} joins the {team} team. What is the new account name?"
    return question, f"{team}-{last.lower()}{first[0].lower()}", "exact", {}


def lists(rng: random.Random) -> tuple[str, str, str, dict[str, object]]:
    n = rng.randint(3, 5)
    picked = rng.sample(WORDS, n)
    ordered = sorted(picked, reverse=True)
    while picked == ordered:
        rng.shuffle(picked)
    answer = ", ".join(ordered)
    pattern = "(?i)" + r"\s*,\s*".join(ordered) + r"\.?"
    return f"List these fruits: {', '.join(picked)}.", answer, "regex", {"pattern": pattern}


GENERATORS: dict[str, Callable[[random.Random], tuple[str, str, str, dict[str, object]]]] = {
    "dates": dates,
    "lengths": lengths,
    "prices": prices,
    "usernames": usernames,
    "lists": lists,
}

DESCRIPTION = (
    f"{PER_TYPE * len(GENERATORS)} short questions in {len(GENERATORS)} task types, each with "
    "one house convention a model cannot guess but follows when a skill states it: dates as "
    "YYYYMMDD, lengths in millimetres, prices rounded up to the whole euro, account names "
    "team-surnameinitial, lists in reverse alphabetical order. Every question is its own "
    f"family ({PER_TYPE} per task type). Generated by bench/_make_real_conventions.py "
    f"(seed {SEED}); used by bench/real_learning.py (bench/REAL_MODEL.md)."
)


def rows() -> list[dict[str, object]]:
    rng = random.Random(SEED)
    out: list[dict[str, object]] = []
    for task_type, make in GENERATORS.items():
        seen: set[str] = set()
        while len(seen) < PER_TYPE:
            question, answer, checker, args = make(rng)
            if question in seen:
                continue
            seen.add(question)
            qid = f"{task_type}-{len(seen):03d}"
            row: dict[str, object] = {
                "question_id": qid,
                "task_type": task_type,
                "question": question,
                "answer": answer,
                "family": qid,
                "checker": checker,
            }
            if args:
                row["checker_args"] = args
            out.append(row)
    return out


def benchmark_toml() -> str:
    types = ", ".join(f'"{t}"' for t in GENERATORS)
    return (
        "# Written by bench/_make_real_conventions.py: edit that script and rerun it.\n"
        "format_version = 1\n"
        'name = "real-conventions"\n'
        f"description = {json.dumps(DESCRIPTION)}\n"
        f"seed = {SEED}\n"
        'license = "MIT"  # written for this repository (LICENSE)\n'
        f"task_types = [{types}]\n"
        "# A small model may forget the `ANSWER:` line: then its last line is the answer.\n"
        'answer_fallbacks = ["last_line"]\n'
        "\n[split]\ndiagnosis = 0.5\nvalidation = 0.25\ntest = 0.25\n"
    )


def files() -> dict[Path, str]:
    jsonl = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows())
    return {OUT / "benchmark.toml": benchmark_toml(), OUT / "questions.jsonl": jsonl}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the files")
    args = parser.parse_args()
    wanted = files()
    if args.check:
        stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
        for p in stale:
            print(f"{p.relative_to(ROOT)}: differs from bench/_make_real_conventions.py's output")
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path, text in wanted.items():
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
