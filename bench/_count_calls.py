"""Runs a command agent with its model calls counted on the agent's side (bench/external_agents.py).

    python bench/_count_calls.py COUNT_FILE AGENT.py [args...]

Every HTTP response with status 200 that the agent's `urllib.request.urlopen` gets from a
`/chat/completions` URL appends one byte to COUNT_FILE (an `O_APPEND` write of one byte is
atomic, so concurrent rollouts do not lose counts); then AGENT.py runs as `__main__`. The
count is what the agent saw answered, independent of the trainer's log, which the bench
compares it with (`external_agents.<agent>.calls_lost`).
"""

from __future__ import annotations

import os
import runpy
import sys
import urllib.request
from typing import Any

COUNT_FILE, AGENT = sys.argv[1], sys.argv[2]
_urlopen = urllib.request.urlopen


def counted_urlopen(request: Any, *args: Any, **kwargs: Any) -> Any:
    response = _urlopen(request, *args, **kwargs)
    url = request.full_url if isinstance(request, urllib.request.Request) else str(request)
    if response.status == 200 and url.rstrip("/").endswith("/chat/completions"):
        fd = os.open(COUNT_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b".")
        finally:
            os.close(fd)
    return response


urllib.request.urlopen = counted_urlopen  # type: ignore[assignment]
sys.argv = [AGENT, *sys.argv[3:]]
runpy.run_path(AGENT, run_name="__main__")
