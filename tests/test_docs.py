"""docs/architecture.md stays true to the tree: its links resolve, every reference to one of
its sections names a heading that exists, and its layout map (the one map of which folder holds
what) names every room of the layering test's table and no room that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layering import HARNESS_ROOMS, MAY_IMPORT

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SCANNED = ("app", "core", "tests", "bench", "docs", "README.md", "CONTRIBUTING.md", "CHANGELOG.md")
SECTION_REF = re.compile(r"architecture\.md#([a-z0-9-]+)")
LOCAL_LINK = re.compile(r"\]\((?!https?://|#)([^)#\s]+)(?:#[^)\s]*)?\)")
# a line of the layout map: a path, spaces, what it holds
MAP_LINE = re.compile(r"(\S+/|\S+\.py)\s{2,}\S")
# layers of the layering table that are no folder of app/ of their own
NOT_FOLDERS = {"core", "support"}


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


def layout_map() -> list[str]:
    """The paths of the code block under the architecture page's `## Layout` heading."""
    text = ARCHITECTURE.read_text(encoding="utf-8").split("\n## Layout\n", 1)[1]
    block = re.search(r"```text\n(.*?)```", text.split("\n## ", 1)[0], flags=re.DOTALL)
    assert block, "docs/architecture.md's Layout section holds the map as a text block"
    lines = block.group(1).splitlines()
    bad = [line for line in lines if not MAP_LINE.match(line)]
    assert not bad, f"map lines that are not `path  what it holds`: {bad}"
    return [line.split()[0] for line in lines]


def rooms_in_the_layering_table() -> set[str]:
    """Every room as a folder: `app/harness/<room>/` for the harness rooms, `app/<room>/` for
    the top-level ones (the layers of MAY_IMPORT that are folders of app/)."""
    harness = {f"app/harness/{room.split('.', 1)[1]}/" for room in HARNESS_ROOMS}
    top = {f"app/{layer}/" for layer in MAY_IMPORT if "." not in layer} - {
        f"app/{layer}/" for layer in NOT_FOLDERS
    }
    return harness | top


def test_the_layout_map_names_every_room_and_no_other() -> None:
    paths = layout_map()
    rooms = rooms_in_the_layering_table()
    named = {p for p in paths if re.fullmatch(r"app/(harness/)?\w+/", p)}
    assert rooms - named == set(), "rooms of tests/test_layering.py missing from the map"
    assert named - rooms == set(), "the map names rooms tests/test_layering.py does not have"
    missing = [p for p in paths if not (ROOT / p).exists() and p != "workspaces/"]
    assert missing == [], f"the map names what the tree lacks: {missing}"
    assert len(paths) == len(set(paths)), "a path on two lines of the map"


def test_the_layout_map_is_only_on_the_architecture_page() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    elsewhere = [
        str(page.relative_to(ROOT))
        for page in pages
        if page != ARCHITECTURE
        and re.search(r"^app/harness/\S*\s{2,}", page.read_text(encoding="utf-8"), re.M)
    ]
    assert elsewhere == [], "a layout map outside docs/architecture.md"


def test_the_room_table_reads_as_folders() -> None:
    rooms = rooms_in_the_layering_table()
    assert {"app/harness/ingest/", "app/harness/serving/", "app/providers/", "app/tui/"} <= rooms
    assert all((ROOT / room).is_dir() for room in rooms), "a room of the table is no folder"
