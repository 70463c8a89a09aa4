"""Entry point: `python main.py <command>` (same CLI as the `skill-trainer` script)."""

import sys

from app.cli import entry

if __name__ == "__main__":
    sys.exit(entry())
