"""An HTML report of a replayed chat: a timeline heat map of entries by generation, budget use per
generation, and each entry's trace in plain words at any generation.

Pure apart from reading its own templates: :func:`render_report` returns one self-contained page
(inline CSS and JavaScript, the data as JSON in a ``<script type="application/json">`` tag, nothing
fetched from the network). The page, stylesheet and script are package data
(``lorescan/data/report.html``, ``report.css``, ``report.js``; ``${name}`` placeholders in the page).
Replay with ``trace=True`` so the report can tell dropped candidates from entries that never matched
and show why; without traces it shows activations only.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from ._compile import compile_books
from ._model import ChatMessage, Lorebook
from ._replay import Generation

#: Cell states: one letter per (entry, generation) in the embedded data.
STATES: dict[str, str] = {
    "A": "activated",
    "G": "candidate, removed by its inclusion group",
    "P": "candidate, failed its probability roll",
    "B": "candidate, dropped by the token budget",
    "D": "candidate, not activated",
    "S": "suppressed by a timed effect (delay or cooldown)",
    "N": "not matched",
}
_DROPPED = "GPBD"
_POSITIONS = {0: "before", 1: "after", 2: "AN top", 3: "AN bottom", 4: "at depth", 5: "EM top",
              6: "EM bottom", 7: "outlet"}


def _position(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in _POSITIONS:
        return _POSITIONS[int(value)]
    return f"nowhere ({json.dumps(value)})"


def _num(value: Any) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def describe_event(ev: dict[str, Any]) -> str | None:
    """One trace event about an entry in plain words (``None`` for events that name no entry)."""
    kind = ev.get("event")
    if kind == "candidate":
        return f"candidate: {ev.get('why')}"
    if kind == "skipped":
        return f"not a candidate: {ev.get('why')}"
    if kind == "group":
        return f"removed by its inclusion group: {ev.get('why')}"
    if kind == "probability":
        verdict = "passed" if ev.get("passed") else "failed, so it is out for this generation"
        return f"probability roll {_num(ev.get('roll'))} against {_num(ev.get('probability'))}%: {verdict}"
    if kind == "budget":
        outcome = str(ev.get("outcome"))
        total = (ev.get("before") or 0) + (ev.get("pass_tokens") or 0)
        if outcome == "fits":
            return f"fits the budget ({total} of {ev.get('budget')} tokens used with it)"
        if outcome == "overflow":
            return (f"budget overflow: with it the text would take {total} tokens and the budget is "
                    f"{ev.get('budget')}; it is dropped")
        return f"budget: {outcome}"
    if kind == "activated":
        return "activated"
    return None


def _merge(lines: list[tuple[int, str]], passes: dict[int, str]) -> list[str]:
    """One line per sentence, the same sentence over consecutive passes merged (``passes 2-4``)."""
    out: list[str] = []
    prev: str | None = None
    first = last = 0
    for p, body in lines + [(-1, "")]:
        if body == prev and p == last + 1:
            last = p
            continue
        if prev is not None:
            head = f"pass {first} ({passes.get(first, '?')})" if first == last else f"passes {first}-{last}"
            out.append(f"{head}: {prev}")
        prev, first, last = body, p, p
    return out


def _state(key: str, activated: set[str], events: list[dict[str, Any]]) -> str:
    if key in activated:
        return "A"
    if not any(e.get("event") == "candidate" for e in events):
        if any(e.get("event") == "skipped" and str(e.get("why", "")).startswith("suppressed") for e in events):
            return "S"
        return "N"
    state = "D"
    for e in events:
        kind = e.get("event")
        if kind == "group":
            state = "G"
        elif kind == "probability" and not e.get("passed"):
            state = "P"
        elif kind == "budget" and e.get("outcome") != "fits":
            state = "B"
    return state


def report_data(generations: Sequence[Generation], books: Iterable[Lorebook], title: str = "lorescan report",
                messages: Sequence[ChatMessage] | None = None) -> dict[str, Any]:
    """The data the page embeds: generations, entry rows with one state letter per generation, texts."""
    entries = [ce for _, compiled in compile_books(list(books)) for ce in compiled]
    order = {ce.key: i for i, ce in reversed(list(enumerate(entries)))}
    by_key = {ce.key: ce for ce in reversed(entries)}
    gens: list[dict[str, Any]] = []
    states: dict[str, list[str]] = {}
    cell_texts: dict[str, list[int]] = {}
    texts: list[list[str]] = []
    text_ids: dict[tuple[str, ...], int] = {}
    traced = True
    for n, gen in enumerate(generations):
        r = gen.result
        activated = set(r.activated_keys())
        trace = r.trace if isinstance(r.trace, list) else None
        traced = traced and trace is not None
        per_entry: dict[str, list[dict[str, Any]]] = {}
        passes: dict[int, str] = {}
        for ev in trace or ():
            if ev.get("event") == "pass":
                passes[int(ev.get("pass", 0))] = str(ev.get("state"))
            key = ev.get("entry")
            if isinstance(key, str):
                per_entry.setdefault(key, []).append(ev)
        for key in activated:
            per_entry.setdefault(key, [])
        for key, events in per_entry.items():
            st = _state(key, activated, events)
            row = states.get(key)
            if row is None:
                row = states[key] = ["N"] * len(generations)
                cell_texts[key] = [-1] * len(generations)
            row[n] = st
            lines = [(int(e.get("pass", 0)), d) for e in events if (d := describe_event(e))]
            merged = tuple(_merge(lines, passes)) if lines else \
                (("activated (no trace recorded)",) if st == "A" else ())
            if merged:
                tid = text_ids.get(merged)
                if tid is None:
                    tid = text_ids[merged] = len(texts)
                    texts.append(list(merged))
                cell_texts[key][n] = tid
        prompt = None
        if messages is not None and 0 < gen.index <= len(messages):
            m = messages[gen.index - 1]
            prompt = f"{m.name}: {m.mes}"[:400]
        gens.append({"n": n + 1, "message": gen.index + 1, "budget": r.budget, "used": r.budget_used,
                     "overflowed": bool(r.overflowed), "activated": r.activated_keys(), "new": list(gen.new),
                     "gone": list(gen.gone), "passes": max(passes) if passes else None, "last_message": prompt})
    rows = []
    for key in sorted((k for k, row in states.items() if any(s == "A" or s in _DROPPED for s in row)),
                      key=lambda k: (order.get(k, len(order)), k)):
        ce = by_key.get(key)
        entry = ce.entry if ce is not None else None
        cells = "".join(states[key])
        rows.append({
            "key": key,
            "book": ce.book if ce is not None else key.rsplit(".", 1)[0],
            "uid": ce.uid if ce is not None else None,
            "comment": entry.comment_text if entry is not None else "",
            "keys": [k for k in (ce.keys if ce is not None and isinstance(ce.keys, list) else [])][:8],
            "position": _position(ce.position) if ce is not None else "?",
            "constant": bool(ce.constant) if ce is not None else False,
            "states": cells,
            "count": cells.count("A"),
            "cells": cell_texts[key],
        })
    return {"title": title, "traced": traced, "states": STATES, "generations": gens, "rows": rows,
            "texts": texts, "books": sorted({ce.book for ce in entries}), "entry_count": len(entries)}


def _json_for_script(data: Any) -> str:
    """JSON that cannot end its ``<script>`` element early."""
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            .replace("</", "<\\/").replace("<!--", "\\u003c!--"))


def render_report(generations: Sequence[Generation], books: Iterable[Lorebook], title: str = "lorescan report",
                  messages: Sequence[ChatMessage] | None = None) -> str:
    """One self-contained HTML page for a replay (``generations`` from ``replay(..., trace=True)``).

    ``messages`` (the replayed chat) adds the message before each generation to its panel.
    """
    return render_page(report_data(list(generations), books, title, messages))


def render_page(data: dict[str, Any]) -> str:
    """The HTML page for data from :func:`report_data`."""
    title = str(data["title"])
    gens = data["generations"]
    overflows = sum(1 for g in gens if g["overflowed"])
    summary = (f"{len(gens)} generations · {len(data['rows'])} of {data['entry_count']} entries ever "
               f"candidates · {sum(len(g['activated']) for g in gens)} activations · {overflows} budget overflows"
               f" · books: {', '.join(data['books'])}")
    legend = "".join(f'<span class="key"><i class="s-{k}"></i>{html.escape(v)}</span>' for k, v in STATES.items())
    note = "" if data["traced"] or not gens else _NO_TRACE_NOTE
    # One pass over the page template: substituted text (a title, the data) is never scanned again.
    return Template(_asset("report.html")).substitute(
        title=html.escape(title), summary=html.escape(summary), legend=legend, note=note,
        css=_asset("report.css"), js=_asset("report.js"), data=_json_for_script(data))


_NO_TRACE_NOTE = ('<p class="warn">No traces were recorded (replay without trace=True): '
                  'only activations are shown.</p>')


@cache
def _asset(name: str) -> str:
    """A report template from ``lorescan/data/`` (page, stylesheet, script), read once per process."""
    return (resources.files("lorescan") / "data" / name).read_text(encoding="utf-8")
