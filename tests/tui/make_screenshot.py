"""Write docs/tui.svg (docs/tui.md's screenshot) from the synthetic test workspace.

.venv/bin/python -m tests.tui.make_screenshot [OUT.svg] [--screen overview|steps|...]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from app.tui.app import MODES, make_app
from tests.tui.conftest import make_workspace
from tests.tui.helpers import settle


async def shoot(out: Path, screen: str, size: tuple[int, int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        demo = make_workspace(Path(tmp))
        app = make_app(demo.root, poll_interval=0, warm_up=False, start=screen)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            out.parent.mkdir(parents=True, exist_ok=True)
            app.save_screenshot(out.name, str(out.parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "out",
        type=Path,
        nargs="?",
        default=Path(__file__).resolve().parents[2] / "docs" / "tui.svg",
    )
    ap.add_argument("--screen", choices=MODES, default="overview")
    ap.add_argument("--size", default="140x45")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    asyncio.run(shoot(args.out, args.screen, (width, height)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
