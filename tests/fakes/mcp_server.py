"""A tiny stdio MCP server for the tool tests and bench/mcp_overhead.py: `python
tests/fakes/mcp_server.py` serves echo, add, sleep and die over stdio."""

from __future__ import annotations

import os
import time

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

server = Server("test-tools")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep, then say so (a hanging tool when seconds is large)."""
    time.sleep(seconds)
    return "slept"


@server.tool()
def die() -> str:
    """Exit the whole server at once, mid-call (a server that crashes)."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
