"""Tool-output summarisation: the same compact form for the model and for the trajectory."""

from __future__ import annotations

HEAD_LINES = 20
TAIL_LINES = 10
MAX_BYTES = 4000


def summarise_tool_output(
    text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES, max_bytes: int = MAX_BYTES
) -> str:
    """First lines + `[... N lines omitted ...]` + last lines, then a byte cap. Deterministic."""
    lines = text.splitlines()
    if len(lines) > head + tail:
        omitted = len(lines) - head - tail
        lines = lines[:head] + [f"[... {omitted} lines omitted ...]"] + lines[-tail:]
    out = "\n".join(lines)
    raw = out.encode("utf-8", "surrogatepass")
    if len(raw) > max_bytes:
        cut = raw[:max_bytes].decode("utf-8", "ignore")
        out = (
            f"{cut}\n[... {len(raw) - len(cut.encode('utf-8', 'surrogatepass'))} bytes omitted ...]"
        )
    return out
