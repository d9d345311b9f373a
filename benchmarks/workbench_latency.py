"""How fast the workbench answers on a large book: the page's request (``/v1/activate`` with a trace
focused on the reached entries and the selected one) against the service, and, with Chromium, the
time from the last keystroke to the result drawn in the page.

    python benchmarks/workbench_latency.py                # 20,000 entries, 30 requests per kind
    python benchmarks/workbench_latency.py --entries 2000 --requests 5 --no-browser   # quick

The server is a real ``lorescan serve`` process on a free loopback port (see ``load_service``);
the browser is Debian's ``/usr/bin/chromium`` through Playwright (skipped when either is missing).
Figures are medians and 95th percentiles in milliseconds; ``--json FILE`` writes them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import generate as gen  # noqa: E402
from load_service import ServerProcess  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def _post(server: ServerProcess, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(server.url("/v1/activate"), data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as reply:
        payload = reply.read()
    return (time.perf_counter() - started) * 1000, json.loads(payload)["result"]


def _figures(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)}


def typed_texts(entries: list[dict[str, Any]], count: int) -> list[str]:
    """Messages an author might type: each names two entries' first keys."""
    keys = [e["key"][0] for e in entries if e.get("key") and not str(e["key"][0]).startswith("/")]
    return [f"Then {keys[(7 * i) % len(keys)]} met {keys[(13 * i + 5) % len(keys)]} by the gate." for i in range(count)]


def http_figures(server: ServerProcess, entries: list[dict[str, Any]], chat: list[dict[str, Any]],
                 requests: int) -> dict[str, Any]:
    texts = typed_texts(entries, requests)
    base = {"stored_books": [gen.BOOK_NAME], "user_name": gen.USER_NAME, "char_name": gen.CHAR_NAME}
    kinds = {"untraced": {}, "page (trace, focused)": {"trace": True, "trace_focus": [f"{gen.BOOK_NAME}.5"]},
             "full trace": {"trace": True}}
    out: dict[str, Any] = {}
    for name, extra in kinds.items():
        _post(server, {**base, **extra, "chat": chat})          # warm: compile, caches
        samples = []
        size = 0
        for text in texts:
            ms, result = _post(server, {**base, **extra, "chat": [*chat, {"name": gen.USER_NAME, "is_user": True,
                                                                          "mes": text}]})
            samples.append(ms)
            size = len(json.dumps(result))
        out[name] = {**_figures(samples), "reply_kb": round(size / 1024, 1)}
    return out


def browser_figures(server: ServerProcess, entries: list[dict[str, Any]], requests: int) -> dict[str, Any] | None:
    """Keystroke to drawn result in Chromium: fill the message, wait until the status line shows the
    new result (the page debounces 40 ms, then asks the service, then draws)."""
    if not Path(CHROMIUM).is_file():
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    texts = typed_texts(entries, requests)
    samples: list[float] = []
    parts: list[list[float]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server.url(f"/?book={gen.BOOK_NAME}"))
        page.wait_for_selector("#entries li.entry", timeout=120_000)
        page.locator("#status").filter(has_text="activated").wait_for(timeout=120_000)
        box = page.locator("#messages textarea").first
        for i, text in enumerate(texts):
            page.evaluate("document.getElementById('status').textContent = ''")
            box.fill(text)
            page.locator("#status").filter(has_text="activated").wait_for(timeout=60_000)
            # the page's own measure: from the edit to the result drawn
            samples.append(float(page.evaluate("Number(document.body.dataset.latency)")))
            parts.append(page.evaluate("[Number(document.body.dataset.requestMs), Number(document.body.dataset.drawMs)]"))
            if i == 0:
                samples.clear()           # the first one pays for first-time drawing
                parts.clear()
        browser.close()
    if not samples:
        return None
    return {**_figures(samples), "request_p50_ms": statistics.median(r for r, _ in parts),
            "draw_p50_ms": statistics.median(d for _, d in parts)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=20_000)
    ap.add_argument("--messages", type=int, default=20, help="chat messages before the typed one (default 20)")
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    entries = gen.make_entries(args.entries, 0)
    chat = gen.make_chat(entries, args.messages, 0)
    book = json.dumps({"entries": {str(e["uid"]): e for e in entries}}).encode()
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp) / "data", workers=2)
        try:
            put = urllib.request.Request(server.url(f"/v1/books/{gen.BOOK_NAME}"), data=book, method="PUT")
            with urllib.request.urlopen(put, timeout=600):
                pass
            figures: dict[str, Any] = {"entries": args.entries, "messages": args.messages,
                                       "requests": args.requests, "http": http_figures(server, entries, chat,
                                                                                       args.requests)}
            if not args.no_browser:
                figures["browser_keystroke_to_result"] = browser_figures(server, entries, args.requests)
        finally:
            server.stop()
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
