"""The one sanitiser for text that reaches a terminal (CLI output, log lines, the TUI).

Benchmark questions, model replies, run ids, file and folder names are data, and data must not
drive the terminal: an ESC or OSC sequence could set the window title, clear the screen or
rewrite what is shown. `visible` turns every control character into a printable stand-in
(ESC becomes the control picture "␛", so `ESC[2J` shows as `␛[2J`); `markup_safe` also
escapes Rich/Textual markup, for the few places that parse markup.

Newlines and tabs are kept (multi-line text stays readable). The stand-ins contain no
backslash or quote, so sanitising JSON text keeps it valid JSON.
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape as _escape_markup

# C0 (except \t and \n), DEL, C1, zero-width and bidirectional controls (which can reorder
# what a line appears to say), and the BOM.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
)


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␀ … ␛ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def visible(text: Any) -> str:
    """`text` as a str with every control character shown as printable text."""
    text = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_stand_in, text)


def markup_safe(text: Any) -> str:
    """`visible(text)` with Rich markup escaped: for markup-parsing widgets and titles."""
    return _escape_markup(visible(text))


def visible_tree(value: Any) -> Any:
    """Every string (keys included) inside JSON-like data made `visible`."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_tree(k): visible_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(visible_tree(v) for v in value)
    return value


def visible_sqlite_text(raw: bytes) -> str:
    """sqlite3 `text_factory` for connections whose rows are shown on a terminal."""
    return visible(raw.decode("utf-8", "replace"))
