"""The web report in a real browser: `serve` on a tiny trained simulated workspace, its page at
`/` loaded by headless Chromium (Debian's `chromium`, driven by playwright): the charts render
(their regions of the screenshot are not blank), the titles are there, and the chat box gets an
answer from the served agent with the skill it opened (docs/serving.md#the-web-report).

Skips, saying why, when there is no chromium binary or no playwright (a dev extra)."""

from __future__ import annotations

import io
import json
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli import main

ROOT = Path(__file__).resolve().parents[3]
READY = re.compile(r"serving (\S+) at (http://\S+)/v1 ")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no chromium binary: the browser test needs Debian's chromium "
        "(apt-get install -y chromium); .ci/run installs it when it can",
    ),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    ws = tmp_path_factory.mktemp("web") / "ws"
    assert main(["demo", "-w", str(ws), "--no-progress", "--set", "epochs=2"]) == 0
    proc = subprocess.Popen(
        [sys.executable, "main.py", "serve", "-w", str(ws), "--port", "0", "--name", "trained"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    found = READY.search(proc.stdout.readline())
    if found is None:
        proc.kill()
        raise AssertionError(f"serve did not start: {proc.communicate()[1]}")
    yield found.group(2), ws
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)


@pytest.fixture(scope="module")
def page(served: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright (a dev extra: pip install -e '.[dev]')"
    )
    url, _ = served
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 2000})
        requests: list[str] = []
        tab.on("request", lambda r: requests.append(r.url))
        tab.goto(f"{url}/", wait_until="load")
        tab.requests_seen = requests  # type: ignore[attr-defined]
        yield tab
        browser.close()


def non_background_share(png: bytes, box: dict[str, float]) -> float:
    """Share of the box's pixels that are not the page's white background."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    left, top = int(box["x"]), int(box["y"])
    region = image.crop((left, top, left + int(box["width"]), top + int(box["height"])))
    raw = region.tobytes()  # RGB, 3 bytes a pixel
    pixels = len(raw) // 3
    drawn = sum(1 for i in range(0, len(raw), 3) if min(raw[i : i + 3]) < 235)
    return drawn / max(1, pixels)


def test_the_charts_render_in_chromium_and_their_regions_are_not_blank(page, tmp_path):
    pytest.importorskip("PIL", reason="Pillow (a dev extra) reads the screenshot")
    png = page.screenshot(full_page=False, path=str(tmp_path / "page.png"))
    for chart_id in ("chart-curve", "chart-gates"):
        box = page.locator(f"#{chart_id}").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 200, chart_id
        assert box["y"] + box["height"] <= 2000, f"{chart_id} is below the screenshot"
        share = non_background_share(png, box)
        # axes, grid, lines and dots: a few percent of the box; an empty box has none
        assert share > 0.02, f"{chart_id}: only {share:.4f} of its pixels are drawn"
    blank = {"x": 1180, "y": 20, "width": 90, "height": 90}  # right margin, nothing there
    assert non_background_share(png, blank) < 0.001


def test_the_expected_titles_are_in_the_rendered_page(page):
    headings = page.locator("h2").all_inner_texts()
    for title in (
        "Learning curve",
        "Gate decisions",
        "Accuracy by task type",
        "Cost and calls per role",
        "Savings",
        "Chat with the served agent",
    ):
        assert title in headings
    svg_text = " ".join(page.locator("figure.chart svg").all_text_contents())
    assert "Learning curve: accuracy by epoch" in svg_text
    assert "Gate decisions: e-value over time" in svg_text
    assert page.locator("figure.chart svg").count() == 5
    # self-contained: the page asked for nothing beyond itself
    assert len(page.requests_seen) == 1


def test_the_chat_box_gets_an_answer_and_shows_the_skills_opened(page, served):
    _, ws = served
    lines = (ws / "questions" / "questions.jsonl").read_text().splitlines()
    q = json.loads(next(line for line in lines if line.strip()))
    page.fill("#chat-message", q["question"])
    page.fill("#chat-task-type", q["task_type"])
    page.click("#chat-send")
    # a locator wait: the page's Content-Security-Policy forbids the eval of wait_for_function
    page.locator("#chat-status", has_text="answered by").wait_for(timeout=30_000)
    assert "ANSWER:" in page.inner_text("#chat-answer")
    assert page.inner_text("#chat-skills") == f"{q['task_type']}.md"
    assert page.input_value("#chat-model") == "trained"  # the served name, filled in
