"""README.md, CONTRIBUTING.md and docs/*.md render as they read: parsed with a CommonMark parser
(markdown-it-py, with GitHub's tables and strikethrough), every code fence closes where its
author closed it, every line written as a heading renders as one, and every in-page link
(`#anchor`, `file.md#anchor`, a file of this repository) lands somewhere.

A fence that is never closed turns the rest of the page into one code block, and a fence
closed one block late swaps code and prose from there on; a source scan alone cannot see
either, so the checks compare the parser's tokens with the source lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md"]
    + list((ROOT / "docs").glob("*.md"))
)
# fences whose language starts lines with `#` (a comment, or a heading of an example page):
# a heading-like line inside one of these is meant as code
HASH_LINE_LANGUAGES = {"sh", "bash", "shell", "console", "python", "toml", "yaml", "markdown", "md"}
HEADING_LINE = re.compile(r"#{1,6}(?:[ \t]|$)")
FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...
# docs/commands.md is generated from each command's --help by its own change; until that lands,
# a link to it may point at a missing file. Once the file exists it is checked like any other.
GENERATED_ELSEWHERE = {ROOT / "docs" / "commands.md"}


def parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


@cache
def tokens(page: Path) -> tuple[Token, ...]:
    return tuple(parser().parse(page.read_text(encoding="utf-8")))


@cache
def source_lines(page: Path) -> tuple[str, ...]:
    return tuple(page.read_text(encoding="utf-8").splitlines())


def rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix() if ROOT in page.parents else page.name


def fences(page: Path) -> Iterator[Token]:
    yield from (t for t in tokens(page) if t.type == "fence" and t.map is not None)


def fence_language(token: Token) -> str:
    return token.info.strip().split(" ")[0].lower() if token.info.strip() else ""


def closes(line: str, opener: str) -> bool:
    """CommonMark's closing fence: the opener's character, at least as many, nothing after."""
    match = FENCE_LINE.fullmatch(line)
    return bool(
        match
        and match.group(1)[0] == opener[0]
        and len(match.group(1)) >= len(opener)
        and not match.group(2).strip()
    )


def github_slug(text: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def heading_text(inline: Token) -> str:
    """What a reader sees of a heading: text and code spans, markup and raw HTML left out."""
    parts = [c.content for c in inline.children or () if c.type in ("text", "code_inline")]
    return "".join(parts)


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every heading's id; GitHub numbers repeats of one id as id-1, id-2, ..."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    toks = tokens(page)
    for i, token in enumerate(toks):
        if token.type != "heading_open":
            continue
        slug = github_slug(heading_text(toks[i + 1]))
        count = seen.get(slug, 0)
        found.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return frozenset(found)


def links(page: Path) -> Iterator[tuple[int, str]]:
    """(source line, href) of every link the parser renders, so none inside code."""
    lines = source_lines(page)
    for token in tokens(page):
        if token.type != "inline" or token.map is None:
            continue
        start, end = token.map
        for child in token.children or ():
            if child.type == "link_open":
                href = str(child.attrs.get("href", ""))
                hits = [n for n in range(start, end) if f"]({href}" in lines[n]]
                yield (hits[0] if hits else start) + 1, href


def unclosed_fences(page: Path) -> list[str]:
    lines = source_lines(page)
    found = []
    for token in fences(page):
        start, end = token.map  # type: ignore[misc]
        if end - 1 <= start or not closes(lines[end - 1], token.markup):
            found.append(
                f"{rel(page)}:{start + 1}: the {token.markup} block opened here never closes"
            )
    return found


def late_closed_fences(page: Path) -> list[str]:
    """A fence line with a language inside a block can only be the author opening a new one:
    the block around it was not closed where it was meant to be."""
    lines = source_lines(page)
    found = []
    for token in fences(page):
        start, end = token.map  # type: ignore[misc]
        for number in range(start + 1, end - 1):
            match = FENCE_LINE.fullmatch(lines[number])
            if (
                match
                and match.group(1)[0] == token.markup[0]
                and len(match.group(1)) >= len(token.markup)
                and match.group(2).strip()
            ):
                found.append(
                    f"{rel(page)}:{number + 1}: {lines[number].strip()!r} is inside the block "
                    f"opened at line {start + 1}, which is not closed before it"
                )
    return found


def swallowed_headings(page: Path) -> list[str]:
    """Lines written as headings that render as something else (code, most often)."""
    lines = source_lines(page)
    rendered = {t.map[0] for t in tokens(page) if t.type == "heading_open" and t.map}
    as_code = {
        number
        for token in fences(page)
        if fence_language(token) in HASH_LINE_LANGUAGES
        for number in range(*token.map)  # type: ignore[misc]
    }
    return [
        f"{rel(page)}:{number + 1}: {line.strip()!r} does not render as a heading"
        for number, line in enumerate(lines)
        if HEADING_LINE.match(line) and number not in rendered and number not in as_code
    ]


def dead_links(page: Path) -> list[str]:
    found = []
    for line, href in links(page):
        if not href or EXTERNAL.match(href):
            continue
        path_part, _, anchor = href.partition("#")
        target = (page.parent / unquote(path_part)).resolve() if path_part else page
        where = f"{rel(page)}:{line}: link {href!r}"
        if path_part and not target.exists():
            if target in GENERATED_ELSEWHERE:
                continue
            found.append(f"{where}: no such file")
        elif path_part and ROOT not in target.parents:
            found.append(f"{where}: outside the repository")
        elif anchor and target.suffix == ".md" and unquote(anchor) not in anchors(target):
            found.append(f"{where}: no heading with that id in {rel(target)}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_the_page_renders_as_written(page: Path) -> None:
    problems = (
        unclosed_fences(page)
        + late_closed_fences(page)
        + swallowed_headings(page)
        + dead_links(page)
    )
    assert not problems, "\n".join(problems)


README_HEAD = """# skill-trainer

```sh
make demo   # sets up .venv, then trains workspaces/demo offline on the built-in simulated model
make test   # sets up .venv, then runs ruff (lint, format check), mypy and the test suite
```
"""


def test_the_readme_stays_a_front_door() -> None:
    """Short, with the two commands first; the detail lives on the docs pages it links."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith(README_HEAD)
    assert len(text.splitlines()) <= 150, "README.md is the front door: detail goes in docs/"
    linked = {href.partition("#")[0] for _, href in links(ROOT / "README.md")}
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set(), "docs pages the README does not link"


def test_the_checks_see_a_fence_left_open(tmp_path: Path) -> None:
    """The README's own past break: a block left open is closed by the next block's closer,
    whose own closer then opens a block that swallows the rest of the page."""
    page = tmp_path / "page.md"
    lines = [
        "# Top",
        "",
        "See [the gate](#the-gate).",
        "",
        "```",  # 5: an example page, never closed
        "name: x",
        "## Next section",  # 7
        "",
        "```sh",  # 9: meant to open a block
        "run it",
        "```",  # 11: closes the block of line 5
        "tail of the example",
        "```",  # 13: meant to close, opens a block to the end of the page
        "",
        "## The gate",  # 15
    ]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert unclosed_fences(page) == ["page.md:13: the ``` block opened here never closes"]
    assert late_closed_fences(page) == [
        "page.md:9: '```sh' is inside the block opened at line 5, which is not closed before it"
    ]
    assert swallowed_headings(page) == [
        "page.md:7: '## Next section' does not render as a heading",
        "page.md:15: '## The gate' does not render as a heading",
    ]
    assert dead_links(page) == ["page.md:3: link '#the-gate': no heading with that id in page.md"]
    fine = tmp_path / "fine.md"
    fine.write_text("# Top\n\n```sh\n# a comment\n```\n\n## The gate\n", encoding="utf-8")
    assert unclosed_fences(fine) + late_closed_fences(fine) + swallowed_headings(fine) == []


def test_github_slugs() -> None:
    assert github_slug("The gate: what it guarantees") == "the-gate-what-it-guarantees"
    assert github_slug("Agent Skills: import → train → export") == (
        "agent-skills-import--train--export"
    )
    assert github_slug("Try your benchmark offline, and estimate a run") == (
        "try-your-benchmark-offline-and-estimate-a-run"
    )
