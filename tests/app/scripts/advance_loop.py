"""Subprocess target for the SIGKILL test: advance a version and move the manifest, forever.

    python advance_loop.py WORKSPACE [LIMIT]

Prints "ready" once imports are done, then loops `advance_version` + `update_manifest` on the
skills of WORKSPACE until killed (or LIMIT iterations when given).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
for _name in ("pandas", "numpy"):  # sqlite-utils would import them; nothing here needs them
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from app.harness.workspace.workspace import (  # noqa: E402
    advance_version,
    list_versions,
    update_manifest,
)


def main() -> None:
    root = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print("ready", flush=True)
    done = 0
    while not limit or done < limit:
        last = list_versions(root, "skills")[-1]
        # Enough bytes per file that a kill often lands mid-write.
        files = {
            f"skill_{i}.md": f"# after {last}, file {i}\n" + f"rule {i}: be careful\n" * 3000
            for i in range(4)
        }
        version = advance_version(
            root,
            "skills",
            files,
            source="test:loop",
            parent=last,
            description=f"loop iteration {done}",
        )
        update_manifest(root, skills=version, run_id=f"loop-{version}")
        done += 1


if __name__ == "__main__":
    main()
