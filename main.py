"""Entry point: `python main.py <command>` (same CLI as the `skill-trainer` script)."""

import sys

try:
    from app.launch import run
except KeyboardInterrupt:  # Ctrl-C within the first milliseconds: one line, as app/launch.py
    sys.stderr.write("stopped by Ctrl-C while starting; nothing was done\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(run())
