"""The workbench page in a real headless Chromium (Debian's ``/usr/bin/chromium`` through
Playwright's Python package; no browser is ever downloaded): type a message and see the key
highlighted, the entry activated with its place in the prompt, an entry blocked by a missing
secondary key, and an entry the budget skipped. A screenshot is saved for a person to look at."""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .serve_helpers import ROOT, STOPPED, Server

CHROMIUM = os.environ.get("LORESCAN_CHROMIUM", "/usr/bin/chromium")
if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
    pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed "
                                                             "(pip install playwright; never playwright install)")

BOOK = ROOT / "corpora" / "saltmere.json"
CHAT = ROOT / "corpora" / "saltmere-chat.jsonl"
#: screenshots for a person to look at (gitignored)
OUTPUT = ROOT / "test-output"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("workbench-page") / "data")
    try:
        with srv.client() as c:
            assert c.put("/v1/books/saltmere", content=BOOK.read_bytes()).status_code == 201
        yield srv
    finally:
        assert srv.stop() in STOPPED, srv.output()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        except Exception as exc:  # noqa: BLE001 (a browser that cannot start here is a skip, not a failure)
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {exc}")
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(server.url + "/?book=saltmere")
    pg.wait_for_selector("#entries li.entry")
    yield pg
    pg.close()
    assert not errors, errors


def _text(locator: Any) -> str:
    return " ".join((locator.text_content() or "").split())


def _url_state(url: str) -> dict[str, Any]:
    """The view state a permalink carries (``#s=`` base64url JSON)."""
    encoded = url.split("#s=", 1)[1]
    return dict(json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))))


def _type(page: Any, text: str) -> None:
    page.locator("#messages textarea").first.fill(text)


def test_a_typed_key_is_highlighted_and_its_entry_activated_in_its_bucket(page: Any) -> None:
    _type(page, "Rowan asks about the lighthouse.")
    mark = page.locator('#messages mark.hit[data-entry="saltmere.1"]')
    mark.wait_for()
    assert mark.inner_text() == "lighthouse"
    assert "Lighthouse (saltmere.1)" in (mark.get_attribute("title") or "")
    row = page.locator('#activated li[data-entry="saltmere.1"]')
    row.wait_for()
    assert row.locator(".where").inner_text() == "→ before the character"
    before = page.locator("#buckets .bucket", has_text="Before the character")
    assert "The Saltmere lighthouse has been dark for nine years." in before.locator("pre").inner_text()
    # the list on the left says so too
    assert page.locator('#entries li[data-key="saltmere.1"] .badge').inner_text() == "activated"


def test_an_entry_blocked_by_a_missing_secondary_key_says_so(page: Any) -> None:
    _type(page, "A ship came in at dusk.")
    page.locator('#messages mark.hit.idle[data-entry="saltmere.4"]').wait_for()
    page.locator('#entries li[data-key="saltmere.4"]').click()
    miss = page.locator("#detail .miss")
    miss.wait_for()
    assert miss.inner_text().startswith("Closest miss: secondary keys")
    verdict = page.locator("#detail .verdict-text").inner_text()
    assert verdict == ("not activated: primary key 'ship' matched in message #1 (User), but the secondary keys "
                       "failed (AND ANY: none of them matched)")
    assert page.locator('#entries li[data-key="saltmere.4"] .badge').inner_text() == "secondary keys"


def test_a_budget_skipped_entry_is_listed_with_its_tokens(page: Any) -> None:
    page.click("#settings-toggle")
    page.fill("#set-world_info_budget", "2")       # 2 % of 4,096 tokens: 82
    _type(page, "The keeper lit the lighthouse and poured rum for the smuggler.")
    skipped = page.locator('#skipped li[data-entry="saltmere.7"]')
    skipped.wait_for()
    assert _text(skipped) == "Rum (saltmere.7) — 13 tokens, skipped: the budget had overflowed"
    over = page.locator('#skipped li[data-entry="saltmere.2"]')
    assert _text(over) == "Old Maren (saltmere.2) — 29 tokens, overflowed the budget"
    assert _text(page.locator("#budget")).startswith("57 / 82 tokens · overflowed at Old Maren (saltmere.2)")
    assert _url_state(page.url)["settings"] == {"world_info_budget": 2}     # the permalink keeps the setting
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "workbench-budget.png"), full_page=True)


def test_a_permalink_reproduces_the_view(page: Any, browser: Any) -> None:
    _type(page, "Where is the tide bell?")
    page.locator('#activated li[data-entry="saltmere.3"]').wait_for()
    page.locator('#entries li[data-key="saltmere.3"]').click()
    page.locator("#detail .verdict-text").wait_for()
    url = page.url
    again = browser.new_page()
    again.goto(url)
    again.locator('#messages mark.hit[data-entry="saltmere.3"]').wait_for()
    assert again.locator("#messages textarea").first.input_value() == "Where is the tide bell?"
    assert again.locator("#detail .verdict-text").inner_text().startswith("activated in pass 1")
    again.close()


def test_the_macro_engine_select_reads_a_spaced_macro_its_own_way(browser: Any, server: Server) -> None:
    """A key written ``{{ user }}`` is the user's name to SillyTavern's default macro engine and
    text to the legacy one: choosing the engine in the settings changes what fires, the permalink
    keeps it, and under 1.12.6 the select is off (it has only the legacy engine)."""
    book = {"entries": {"0": {"uid": 0, "key": ["{{ user }}"], "content": "The user is here."}}}
    with server.client() as c:
        assert c.put("/v1/books/spaced", content=json.dumps(book).encode()).status_code in (200, 201)
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.goto(server.url + "/?book=spaced")
    pg.wait_for_selector("#entries li.entry")
    _type(pg, "User waves.")
    pg.locator('#activated li[data-entry="spaced.0"]').wait_for()
    pg.click("#settings-toggle")
    pg.select_option("#macro-engine", "legacy")
    pg.locator('#activated li[data-entry="spaced.0"]').wait_for(state="detached")
    assert pg.locator("#activated li[data-entry]").count() == 0
    assert _url_state(pg.url)["macroEngine"] == "legacy"
    pg.select_option("#macro-engine", "new")
    pg.locator('#activated li[data-entry="spaced.0"]').wait_for()
    pg.select_option("#st-version", "1.12")
    pg.locator('#activated li[data-entry="spaced.0"]').wait_for(state="detached")
    assert pg.locator("#macro-engine").is_disabled() and pg.locator("#macro-engine").input_value() == "legacy"
    pg.close()


def test_screenshot_of_a_replayed_chat(browser: Any, server: Server) -> None:
    """The sample chat loaded from its file, replayed, an entry selected: saved for a person to look at."""
    pg = browser.new_page(viewport={"width": 1440, "height": 1100})
    pg.goto(server.url + "/?book=saltmere")
    pg.wait_for_selector("#entries li.entry")
    pg.set_input_files("#chat-file", str(CHAT))
    pg.locator("#messages li.msg").nth(12).wait_for()
    assert pg.locator("#messages li.msg").count() == 13
    pg.check("#replay")
    pg.locator("#timeline table").wait_for()
    pg.click('#timeline thead button[aria-label="generation 3"]')
    pg.locator('#entries li[data-key="saltmere.5"]').click()
    pg.locator("#detail .verdict-text").wait_for()
    assert pg.locator("#step-label").inner_text() == "generation 3 of 6 (before message #7)"
    OUTPUT.mkdir(exist_ok=True)
    shot = OUTPUT / "workbench.png"
    pg.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    pg.close()


def test_every_control_has_a_name_and_the_list_works_from_the_keyboard(page: Any) -> None:
    page.click("#settings-toggle")
    _type(page, "The keeper.")
    page.locator('#messages mark.hit[data-entry="saltmere.2"]').wait_for()
    unnamed = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
        .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim())
        .map((c) => c.outerHTML.slice(0, 80))""")
    assert unnamed == []
    page.focus("#entries")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")
    assert page.locator('#entries li[aria-selected="true"]').get_attribute("data-key") == "saltmere.1"
    page.locator("#detail .verdict-text").wait_for()
    assert page.locator("#detail h3").inner_text().startswith("Lighthouse")


def test_with_a_token_the_page_asks_for_it_or_takes_it_from_the_address(browser: Any,
                                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    srv = Server(tmp_path_factory.mktemp("workbench-token-page") / "data", "--token", "tok-123")
    try:
        with srv.client("tok-123") as c:
            assert c.put("/v1/books/saltmere", content=BOOK.read_bytes()).status_code == 201
        pg = browser.new_page()
        pg.goto(srv.url + "/?book=saltmere")                  # no token: the page asks for one
        pg.locator("#token-input").wait_for()
        assert "needs 'Authorization: Bearer <token>'" in pg.locator("#error").inner_text()
        pg.fill("#token-input", "tok-123")
        pg.click("#token-form button")
        pg.locator('#entries li[data-key="saltmere.0"]').wait_for()
        pg.close()
        pg = browser.new_page()
        pg.goto(srv.url + "/?book=saltmere#token=tok-123")    # in the fragment, never sent to the server
        pg.locator('#entries li[data-key="saltmere.0"]').wait_for()
        assert "token=" not in pg.url                         # taken out of the address (and the permalink)
        pg.close()
    finally:
        assert srv.stop() in STOPPED, srv.output()
