"""An MCP server of the tools-calc example (stdio): a notes tool the agent may consult."""

from __future__ import annotations

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

server = Server("notes")
NOTES = {"calc": "calc.add must return the sum of its two arguments."}


@server.tool()
def lookup_note(topic: str) -> str:
    """The project's note on a topic (empty when there is none)."""
    return NOTES.get(topic, "")


if __name__ == "__main__":
    server.run()
