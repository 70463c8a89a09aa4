"""Comments, docstrings and docs cite this repository's code and docs, never a tracker's issue
numbers: a reader of a clone has the code and docs, not the tracker (CONTRIBUTING.md).
CHANGELOG.md is the one place that records where a change came from."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("app", "core", "tests", "bench", "docs", "prompts", "examples")
TOP_FILES = ("README.md", "CONTRIBUTING.md", "main.py", "Makefile", "pyproject.toml")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".tcss", ".cfg"}
# a number after "issue" (a space or "#" between them allowed), a bracketed "issue", or "Issue"
# and a digit; the pattern is spelled so that this file does not match itself
ISSUE_CITATION = re.compile(r"issue ?#?[0-9]+|[(]issue|Issue [0-9]")


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES if (ROOT / name).is_file()]
    for folder in SCANNED:
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES)
    return files


def test_no_comment_or_doc_cites_an_issue_number() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in scanned_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ISSUE_CITATION.search(line)
    ]
    assert len(scanned_files()) > 100, "the scan found too few files to mean anything"
    assert found == [], "\n".join(found)
