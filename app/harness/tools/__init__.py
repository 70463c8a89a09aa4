"""Tools a benchmark declares and the fixtures they act on (docs/tools.md).

`sandbox` runs tool and oracle processes under limits, `child` is what runs inside one,
`spec` parses `[[tools]]`, `[faults]` and `[fixtures.*]`, `python_tools` and `mcp_tools` call
the two kinds of tool, `fixtures` copies, checks and judges a fixture's folder, `faults`
decides which call fails on purpose, and `runtime` ties them together for the agent loop.
"""
