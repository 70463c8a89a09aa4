"""Unified diffs of two versions of a file, and their colouring for the widgets."""

from __future__ import annotations

import difflib


def colour_diff_lines(diff: str) -> list[tuple[str, str]]:
    """(line, style) pairs for a unified diff; the widgets turn them into rich Text."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        out.append((line, style))
    return out


def unified_diff(a: str, b: str, a_name: str, b_name: str, context: int = 3) -> str:
    return "".join(
        difflib.unified_diff(
            a.splitlines(keepends=True),
            b.splitlines(keepends=True),
            fromfile=a_name,
            tofile=b_name,
            n=context,
        )
    )
