"""The Streamlit app in a real headless Chromium: ask, open a cited source, follow up,
narrow by a scoped question and widen it again with its chips.

Starts `streamlit run ui/app.py` on a free loopback port over a copy of the seeded index,
drives it with Playwright and the system Chromium (`apt-get install chromium`; the test
fails, never skips, when it is missing), and saves a screenshot per step to
artifacts/screenshots/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.openai_server import OpenAIServer, reply
from tests.test_ui_apptest import fake_endpoint

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "ui" / "app.py"
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
QUESTION = "Which papers study speculative decoding, and what speedups do they report?"
FOLLOW_UP = "What speedup does it report?"
ABSTAIN = "What is the best recipe for sourdough bread?"
SCOPED = "Which ICLR 2026 papers use DCT?"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, server: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"streamlit exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"streamlit did not answer on {url} within {timeout_s} s")


@pytest.fixture
def app_url(seeded_index: Path, tmp_path: Path) -> Iterator[str]:
    """Serve the app over a private copy of the seeded index, with a loopback endpoint."""
    index = tmp_path / "index"
    shutil.copytree(seeded_index, index)
    with fake_endpoint() as endpoint:
        yield from _serve(index, endpoint.base_url, tmp_path)


def _serve(index: Path, base_url: str, tmp_path: Path) -> Iterator[str]:
    """Run `streamlit run ui/app.py` on a free port until the test ends."""
    port = _free_port()
    env = {**os.environ, "RAG_INDEX_DIR": str(index), "OPENAI_BASE_URL": base_url}
    env["RAG_LLM_MIN_NEW_WORDS"] = "0"  # the scripted endpoint answers with framed quotes
    log = (tmp_path / "streamlit.log").open("wb")
    command = [
        *(sys.executable, "-m", "streamlit", "run", str(APP)),
        *("--server.port", str(port), "--server.address", "127.0.0.1"),
        *("--server.headless", "true", "--browser.gatherUsageStats", "false"),
    ]
    # cwd is the temporary folder, so a developer's .env is not read.
    server = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, server)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    output = (tmp_path / "streamlit.log").read_text(errors="replace")
    assert "Traceback" not in output, output[-3000:]


# A small model's typical failure: fluent, invented, citing nothing.
INVENTED = (
    "Speculative decoding was invented by a team at the University of California, "
    "Berkeley in 2019 and always doubles the speed of every model."
)


@pytest.fixture
def weak_model_url(seeded_index: Path, tmp_path: Path) -> Iterator[str]:
    """Serve the app over a copy of the seeded index with an endpoint that invents."""
    index = tmp_path / "index"
    shutil.copytree(seeded_index, index)
    with OpenAIServer(reply(INVENTED)) as endpoint:
        yield from _serve(index, endpoint.base_url, tmp_path)


def test_an_answer_that_does_not_hold_up_is_never_the_body(weak_model_url: str) -> None:
    """The streamed invention is replaced by the quoted answer, the page says so, and the
    draft stays one click away, folded."""
    with _open(weak_model_url) as page:
        expect(page.get_by_role("heading", name="Ask the abstracts")).to_be_visible()
        _wait_idle(page)
        _ask(page, QUESTION)
        expect(page.get_by_text("did not hold up against the abstracts")).to_be_visible()
        expect(page.locator("#src-0-1")).to_be_visible()  # the quoted answer's source
        draft = page.locator("[data-testid='stExpander']", has_text="The model's draft")
        expect(draft).to_be_visible()
        invented = page.get_by_text("University of California, Berkeley", exact=False)
        expect(invented).to_be_hidden()  # folded in the draft, nowhere in the body
        _wait_idle(page)
        answer = page.locator('[data-testid="stChatMessage"]').last
        assert "Berkeley" not in answer.inner_text()
        page.screenshot(path=SHOTS / "12-rejected-draft.png")
        draft.get_by_text("The model's draft").click()
        expect(invented).to_be_visible()
        expect(draft).to_contain_text("Not shown as the answer: it cites no source")
        page.screenshot(path=SHOTS / "13-draft-opened.png")
        assert page.locator('[data-testid="stException"]').count() == 0


def test_ask_open_source_and_follow_up(app_url: str) -> None:
    with _open(app_url) as page:
        expect(page.get_by_role("heading", name="Ask the abstracts")).to_be_visible()
        expect(page.get_by_role("button", name=QUESTION)).to_be_visible()  # a suggestion
        expect(page.get_by_test_id("stMetricValue").first).to_have_text("52")
        expect(page.get_by_text("Endpoint reachable")).to_be_visible()
        _wait_idle(page)
        page.screenshot(path=SHOTS / "01-start.png")

        _ask(page, QUESTION)  # answered by the (loopback) endpoint model, streamed
        expect(page.locator("#src-0-1")).to_be_visible()
        expect(page.locator('a[href="#src-0-1"]').first).to_be_visible()
        expect(page.get_by_text("The top paper reports that")).to_be_visible()
        _wait_idle(page)
        page.screenshot(path=SHOTS / "02-cited-answer.png")

        page.locator('a[href="#src-0-1"]').first.click()
        page.locator("[data-testid='stExpander']", has_text="Full abstract").first.click()
        mark = page.locator(".rag-abstract mark").first
        expect(mark).to_be_visible()
        mark.scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "03-source-opened.png")

        page.get_by_text("Offline extractive", exact=True).click()  # switch the mode
        _wait_idle(page)
        _ask(page, FOLLOW_UP)
        expect(page.locator("#src-1-1")).to_be_visible()
        expect(page.get_by_text("searched as")).to_be_visible()
        _wait_idle(page)
        page.locator("#src-1-1").scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "04-follow-up.png")

        _ask(page, ABSTAIN)
        expect(page.get_by_text("Not found in the indexed abstracts")).to_be_visible()
        expect(page.get_by_text("Closest papers")).to_be_visible()
        _wait_idle(page)
        page.get_by_text("Closest papers").scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "05-abstention.png")

        _ask(page, SCOPED)  # turn 3: searched inside ICLR 2026, shown as two chips
        year = _chip(page, 3, "year")
        expect(_chip(page, 3, "venue")).to_have_accessible_name("ICLR")
        expect(year).to_have_accessible_name("2026")
        expect(page.locator(".st-key-scope-3")).to_contain_text("Searched within")
        _wait_idle(page)
        assert page.get_by_text("scope: ICLR 2026").count() == 0  # the chips say it once
        page.locator(".st-key-scope-3").scroll_into_view_if_needed()
        page.mouse.wheel(0, 250)  # the chips, the caption and the first source card
        page.screenshot(path=SHOTS / "06-scope-chips.png")

        year.click()  # asks again, as turn 4, without the year
        expect(_chip(page, 4, "venue")).to_have_accessible_name("ICLR")
        expect(page.get_by_text("Asked again without 2026")).to_be_visible()
        _wait_idle(page)
        assert page.locator(".st-key-chip-4-year").count() == 0
        page.get_by_text("Asked again without 2026").scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "07-scope-widened.png")

        assert page.locator('[data-testid="stException"]').count() == 0


@contextmanager
def _open(url: str) -> Iterator[Any]:
    """A page of the app in Debian's headless Chromium (missing: a failure, never a skip);
    screenshots go to artifacts/screenshots/."""
    assert Path(CHROMIUM).exists(), "chromium is missing: apt-get install -y chromium"
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 1000})
        page.set_default_timeout(90_000)
        expect.set_options(timeout=90_000)  # the first run loads the embedding model
        page.goto(url)
        try:
            yield page
        finally:
            browser.close()


def _wait_idle(page: Any) -> None:
    """Wait until the script run ends (Streamlit shows a Stop button while it runs)."""
    page.get_by_role("button", name="Stop").wait_for(state="hidden")


def _chip(page: Any, turn: int, field: str) -> Any:
    """The remove button of a scope chip (Streamlit also renders a hidden copy to measure)."""
    return page.locator(f".st-key-chip-{turn}-{field}").get_by_role("button")


def _ask(page: Any, question: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(question)
    box.press("Enter")


def test_topics_map_renders_and_a_topic_is_asked_about(app_url: str) -> None:
    """The Topics tab: the map and the list render; a topic's question is answered in the
    chat; a source card's Related papers open."""
    with _open(app_url) as page:
        expect(page.get_by_role("heading", name="Ask the abstracts")).to_be_visible()
        _wait_idle(page)
        page.get_by_role("tab", name="Topics").click()
        chart = page.locator('[data-testid="stVegaLiteChart"]').first
        expect(chart).to_be_visible()
        expect(chart.locator("canvas, svg").first).to_be_visible()
        expect(page.get_by_text("5 topics among 52 papers")).to_be_visible()
        expect(page.locator(".rag-terms")).to_be_visible()
        _wait_idle(page)
        page.wait_for_timeout(500)  # the chart's entry transition
        page.get_by_role("tab", name="Topics").scroll_into_view_if_needed()
        page.mouse.wheel(0, -2000)  # the page top: the map under the tabs
        page.screenshot(path=SHOTS / "08-topics-map.png")

        page.get_by_role("button", name="Ask about these").click()
        expect(page.get_by_text("About the papers of the topic")).to_be_visible()
        expect(page.locator("#src-0-1")).to_be_visible()
        _wait_idle(page)
        page.locator(".st-key-related-0-1").get_by_role("button").click()
        related = page.locator(".rag-related-list").first
        expect(related).to_be_visible()
        _wait_idle(page)
        related.scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "09-related-papers.png")
        assert page.locator('[data-testid="stException"]').count() == 0


def test_a_comparison_table_and_a_count_render(app_url: str) -> None:
    """'compare X and Y' renders its quoted table, each row linked to its source card;
    a count question lists its papers and says how the set was decided."""
    with _open(app_url) as page:
        expect(page.get_by_role("heading", name="Ask the abstracts")).to_be_visible()
        _wait_idle(page)
        _ask(page, "compare GTO and the n-draft speculative sampling paper")
        table = page.locator(".rag-table").first
        expect(table).to_be_visible()
        expect(table.locator("tbody tr")).to_have_count(2)
        expect(table.locator("th")).to_have_text(["Paper", "Problem", "Method", "Key result"])
        expect(table.locator('a[href="#src-0-1"]')).to_be_visible()
        expect(table).to_contain_text("7.4")
        _wait_idle(page)
        table.evaluate("e => e.scrollIntoView({block: 'center'})")
        page.screenshot(path=SHOTS / "10-comparison-table.png")

        _ask(page, "how many ICLR 2026 papers study speculative decoding?")
        expect(page.get_by_text("2 papers", exact=False).last).to_be_visible()
        expect(page.get_by_text("counted paper by paper", exact=False)).to_be_visible()
        _wait_idle(page)
        page.get_by_text("counted paper by paper", exact=False).scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "11-count.png")
        assert page.locator('[data-testid="stException"]').count() == 0
