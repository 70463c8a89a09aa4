"""docs/architecture.md stays true to the tree: its links resolve, and every reference to one of
its sections names a heading that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SCANNED = ("app", "core", "tests", "bench", "docs", "README.md", "CONTRIBUTING.md", "CHANGELOG.md")
SECTION_REF = re.compile(r"architecture\.md#([a-z0-9-]+)")
LOCAL_LINK = re.compile(r"\]\((?!https?://|#)([^)#\s]+)(?:#[^)\s]*)?\)")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {
        github_anchor(line.lstrip("#"))
        for line in markdown.splitlines()
        if re.match(r"#{1,6} ", line)
    }


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in path.rglob("*") if p.suffix in (".py", ".md") and p.is_file()]
    return sorted(files)


def test_every_section_reference_names_a_heading() -> None:
    known = anchors(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = sorted(
        f"{path.relative_to(ROOT)}: #{anchor}"
        for path in scanned_files()
        for anchor in SECTION_REF.findall(path.read_text(encoding="utf-8"))
        if anchor not in known
    )
    assert not missing, f"no such section in docs/architecture.md: {missing}"


def test_links_in_the_architecture_page_resolve() -> None:
    links = LOCAL_LINK.findall(ARCHITECTURE.read_text(encoding="utf-8"))
    assert links, "the page links into the tree"
    broken = sorted(link for link in links if not (ARCHITECTURE.parent / link).exists())
    assert not broken, f"links to nothing: {broken}"


def test_github_anchor_drops_punctuation() -> None:
    assert github_anchor(" The gate: what it guarantees") == "the-gate-what-it-guarantees"
    assert github_anchor("Agent Skills: import → train → export") == (
        "agent-skills-import--train--export"
    )
