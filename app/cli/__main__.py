"""`python -m app.cli <command>`: the same command line as main.py and `skill-trainer`."""

import sys

from app.cli import entry

sys.exit(entry())
