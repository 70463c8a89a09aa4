"""Pages of the TUI's lists (docs/architecture.md#commands-and-the-tui): what a screen holds of
a list and how it moves through it. The queries are in `app/harness/workspace/harness_log/reader.py`; a page's
rows are plain dicts here because the tables render them by column key."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.harness.workspace.harness_log.rows import Keyset, PageCursor


@dataclass(frozen=True)
class StepPage:
    rows: list[dict[str, Any]]
    offset: int
    total: int

    @property
    def has_prev(self) -> bool:
        return self.offset > 0

    @property
    def has_next(self) -> bool:
        return self.offset + len(self.rows) < self.total


@dataclass(frozen=True)
class KeysetPage:
    """One page of a keyset-paginated list; `first`/`last` are the keys at its edges."""

    rows: list[dict[str, Any]]
    has_prev: bool
    has_next: bool
    first: Any = None
    last: Any = None


def clamp_offset(offset: int, total: int, limit: int) -> int:
    """The offset of the page holding `offset`, within the list (the last page at most)."""
    return max(0, min(offset, max(0, total - 1) // limit * limit))


def keyset_page(keyset: Keyset, rows: list[Any], limit: int, cursor: PageCursor) -> KeysetPage:
    """The page from the (up to limit + 1) typed rows the keyset query selected, in list
    order: one row more than a page says whether another follows, and a page found
    backwards was read in reverse and is turned round."""
    more = len(rows) > limit
    shown = [asdict(r) for r in rows[:limit]]
    if cursor.backwards:
        shown.reverse()
        has_prev, has_next = more, not cursor.last
    else:
        has_prev, has_next = cursor.after is not None or cursor.start is not None, more
    return KeysetPage(
        shown,
        has_prev,
        has_next,
        shown[0][keyset.column] if shown else None,
        shown[-1][keyset.column] if shown else None,
    )
