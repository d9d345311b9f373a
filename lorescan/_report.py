"""An HTML report of a replayed chat: a timeline heat map of entries by generation, budget use per
generation, and each entry's trace in plain words at any generation.

Pure: :func:`render_report` returns one self-contained page (inline CSS and JavaScript, the data as
JSON in a ``<script type="application/json">`` tag, nothing fetched from the network). Replay with
``trace=True`` so the report can tell dropped candidates from entries that never matched and show
why; without traces it shows activations only.
"""

from __future__ import annotations

import html
import json
from typing import Any, Iterable, Sequence

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
            merged = tuple(_merge(lines, passes)) if lines else (("activated (no trace recorded)",) if st == "A" else ())
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
        gens.append({"n": n + 1, "message": gen.index, "budget": r.budget, "used": r.budget_used,
                     "overflowed": bool(r.overflowed), "activated": r.activated_keys(), "new": list(gen.new),
                     "gone": list(gen.gone), "passes": max(passes) if passes else None, "last_message": prompt})
    rows = []
    for key in sorted((k for k, row in states.items() if any(s == "A" or s in _DROPPED for s in row)),
                      key=lambda k: (order.get(k, len(order)), k)):
        ce = by_key.get(key)
        entry = ce.entry if ce is not None else None
        row = "".join(states[key])
        rows.append({
            "key": key,
            "book": ce.book if ce is not None else key.rsplit(".", 1)[0],
            "uid": ce.uid if ce is not None else None,
            "comment": (entry.comment or "") if entry is not None else "",
            "keys": [k for k in (ce.keys if ce is not None and isinstance(ce.keys, list) else [])][:8],
            "position": _position(ce.position) if ce is not None else "?",
            "constant": bool(ce.constant) if ce is not None else False,
            "states": row,
            "count": row.count("A"),
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
    note = "" if data["traced"] or not gens else \
        '<p class="warn">No traces were recorded (replay without trace=True): only activations are shown.</p>'
    return (_PAGE.replace("%TITLE%", html.escape(title)).replace("%SUMMARY%", html.escape(summary))
            .replace("%LEGEND%", legend).replace("%NOTE%", note).replace("%CSS%", _CSS).replace("%JS%", _JS)
            .replace("%DATA%", _json_for_script(data)))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%TITLE%</title>
<style>%CSS%</style>
</head>
<body data-rendered="0">
<header>
<h1>%TITLE%</h1>
<p class="summary">%SUMMARY%</p>
<div class="legend">%LEGEND%<span class="key"><i class="bar"></i>budget used</span><span class="key"><i class="bar over"></i>budget overflowed</span></div>
%NOTE%
<div class="controls">Sort rows: <select id="sort"><option value="book">book order</option>
<option value="first">first activation</option><option value="count">most activations</option></select>
<span id="status"></span></div>
</header>
<main>
<div id="scroll"><table id="timeline" aria-label="entries by generation"></table>
<noscript><p class="warn">The timeline is drawn by JavaScript; enable it to see the report.</p></noscript></div>
<aside id="panel"><h2>How to read this</h2><p>Each row is an entry that was a candidate at least once;
each column is one generation (a character message of the chat). Click a cell to see, in plain words,
what happened to that entry at that generation; click a budget bar for the generation itself.</p></aside>
</main>
<script type="application/json" id="lorescan-data">%DATA%</script>
<script>%JS%</script>
</body>
</html>
"""

_CSS = """
:root{--cell:14px;--label:260px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
body{margin:0;color:#1d2430;background:#fff;font-size:14px}
header{padding:12px 18px 8px;border-bottom:1px solid #d7dce3}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:0 0 8px}
.summary{margin:0 0 8px;color:#4a5568}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:#333}
.legend .key{display:inline-flex;align-items:center;gap:5px}
.legend i{display:inline-block;width:12px;height:12px;border:1px solid #0002}
.legend i.bar{background:#4a7fd4}.legend i.bar.over{background:#d9473f}
.controls{margin-top:6px;font-size:12px;color:#4a5568}#status{margin-left:12px}
.warn{color:#9a3412;background:#fff7ed;padding:6px 10px;border:1px solid #fed7aa}
main{display:flex;align-items:stretch;height:calc(100vh - 150px);min-height:300px}
#scroll{flex:1;overflow:auto;position:relative}
#panel{width:360px;flex:none;overflow:auto;border-left:1px solid #d7dce3;padding:12px 16px;background:#f8fafc}
#panel ul{padding-left:18px;margin:6px 0}#panel li{margin:3px 0}
#panel .meta{color:#4a5568;font-size:12px;margin:2px 0 8px}
#panel blockquote{margin:6px 0;padding:6px 8px;background:#fff;border-left:3px solid #c3cbd6;font-size:12px;white-space:pre-wrap}
table{border-collapse:separate;border-spacing:1px;font-size:11px}
th.label{position:sticky;left:0;z-index:2;background:#fff;text-align:left;font-weight:normal;
 width:var(--label);min-width:var(--label);max-width:var(--label);white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:0 8px 0 4px}
th.label b{font-weight:600}th.label span{color:#6b7280}
thead th.label{z-index:3}tr.gens th.label{padding:0 8px 0 4px}
tr.budget td{height:56px;vertical-align:bottom;padding:0;cursor:pointer;background:#eef2f7}
tr.budget .bar{width:100%;background:#4a7fd4;min-height:1px}tr.budget .bar.over{background:#d9473f}
tr.gens th{font-weight:normal;color:#6b7280;font-size:10px;height:14px;padding:0;text-align:left;white-space:nowrap;
 max-width:var(--cell);overflow:visible}
td.c{width:var(--cell);min-width:var(--cell);height:var(--cell);padding:0;cursor:pointer}
td.c:hover,td.c.sel{outline:2px solid #111;outline-offset:-1px}
.s-A{background:#2e9e5b}.s-G{background:#f0a030}.s-P{background:#9b59b6}.s-B{background:#d9473f}
.s-D{background:#8a6d3b}.s-S{background:#a9c4dd}.s-N{background:#eceff3}
.tag{display:inline-block;padding:1px 6px;border-radius:8px;color:#fff;font-size:12px}
.tag.s-N,.tag.s-S{color:#1d2430}
"""

_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("lorescan-data").textContent);
  var table = document.getElementById("timeline");
  var panel = document.getElementById("panel");
  var gens = data.generations, rows = data.rows.slice();
  data.rows.forEach(function (r, i) { r.index = i; });
  var selected = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function labelCell(b, rest, title) {
    var th = el("th", "label");
    th.appendChild(el("b", null, b));
    if (rest) th.appendChild(el("span", null, " " + rest));
    th.title = title || b;
    return th;
  }
  function firstActive(r) { var i = r.states.indexOf("A"); return i < 0 ? 1e9 : i; }

  function draw() {
    var mode = document.getElementById("sort").value;
    if (mode === "count") rows.sort(function (a, b) { return b.count - a.count; });
    else if (mode === "first") rows.sort(function (a, b) { return firstActive(a) - firstActive(b); });
    else rows = data.rows.slice();
    table.textContent = "";
    var thead = el("thead");
    var budget = el("tr", "budget");
    budget.appendChild(labelCell("budget", "tokens used per generation"));
    gens.forEach(function (g, i) {
      var td = el("td");
      var frac = g.budget ? Math.min(1, g.used / g.budget) : 0;
      var bar = el("div", "bar" + (g.overflowed ? " over" : ""));
      bar.style.height = Math.max(1, Math.round(frac * 56)) + "px";
      td.appendChild(bar);
      td.title = "generation " + g.n + ": " + g.used + " / " + g.budget + " tokens" + (g.overflowed ? " (overflowed)" : "");
      td.dataset.g = i;
      budget.appendChild(td);
    });
    thead.appendChild(budget);
    var head = el("tr", "gens");
    head.appendChild(labelCell("entry", "generation →"));
    var step = gens.length > 200 ? 20 : gens.length > 60 ? 10 : 5;
    gens.forEach(function (g, i) {
      head.appendChild(el("th", null, (i === 0 || g.n % step === 0) ? g.n : ""));
    });
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el("tbody"), cells = 0;
    rows.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(labelCell(r.key, r.comment, r.key + (r.comment ? " — " + r.comment : "") + "\nkeys: " + r.keys.join(", ")));
      for (var i = 0; i < r.states.length; i++) {
        var s = r.states.charAt(i);
        var td = el("td", "c s-" + s);
        td.dataset.r = r.index;
        td.dataset.g = i;
        td.title = r.key + " @ generation " + gens[i].n + ": " + data.states[s];
        tr.appendChild(td);
        cells++;
      }
      body.appendChild(tr);
    });
    table.appendChild(body);
    document.body.setAttribute("data-cells", String(cells));
    document.getElementById("status").textContent = rows.length + " rows × " + gens.length + " generations";
  }

  function showCell(td) {
    var r = data.rows[+td.dataset.r], gi = +td.dataset.g, g = gens[gi], s = r.states.charAt(gi);
    panel.textContent = "";
    panel.appendChild(el("h2", null, r.key + (r.comment ? " — " + r.comment : "")));
    panel.appendChild(el("p", "meta", "generation " + g.n + " (before message " + g.message + ") · keys: " +
      (r.keys.length ? r.keys.join(", ") : "none") + (r.constant ? " · constant" : "") + " · position: " + r.position));
    var p = el("p");
    p.appendChild(el("span", "tag s-" + s, data.states[s]));
    panel.appendChild(p);
    var ti = r.cells[gi];
    if (ti >= 0) {
      var ul = el("ul");
      data.texts[ti].forEach(function (line) { ul.appendChild(el("li", null, line)); });
      panel.appendChild(ul);
    } else {
      panel.appendChild(el("p", null, data.traced ? "No primary key matched in any pass." : "No trace recorded."));
    }
    if (g.last_message) { panel.appendChild(el("p", "meta", "last message before this generation:")); panel.appendChild(el("blockquote", null, g.last_message)); }
  }

  function showGeneration(gi) {
    var g = gens[gi];
    panel.textContent = "";
    panel.appendChild(el("h2", null, "Generation " + g.n + " (before message " + g.message + ")"));
    panel.appendChild(el("p", "meta", "budget: " + g.used + " of " + g.budget + " tokens" +
      (g.overflowed ? " — overflowed" : "") + (g.passes ? " · " + g.passes + " pass(es)" : "")));
    [["activated", g.activated], ["new", g.new], ["gone", g.gone]].forEach(function (pair) {
      panel.appendChild(el("p", null, pair[0] + ": " + (pair[1].length ? pair[1].join(", ") : "none")));
    });
    if (g.last_message) { panel.appendChild(el("p", "meta", "last message before this generation:")); panel.appendChild(el("blockquote", null, g.last_message)); }
  }

  table.addEventListener("click", function (ev) {
    var td = ev.target.closest("td");
    if (!td) return;
    if (selected) selected.classList.remove("sel");
    if (td.classList.contains("c")) { selected = td; td.classList.add("sel"); showCell(td); }
    else if (td.dataset.g !== undefined) showGeneration(+td.dataset.g);
  });
  document.getElementById("sort").addEventListener("change", draw);
  if (gens.length <= 40) document.documentElement.style.setProperty("--cell", "22px");
  else if (gens.length <= 80) document.documentElement.style.setProperty("--cell", "18px");
  draw();
  var m = /^#cell=(\d+),(\d+)$/.exec(location.hash), m2 = /^#gen=(\d+)$/.exec(location.hash);
  if (m) {
    var td = table.querySelector('td.c[data-r="' + m[1] + '"][data-g="' + m[2] + '"]');
    if (td) { selected = td; td.classList.add("sel"); showCell(td); }
  } else if (m2 && +m2[1] < gens.length) showGeneration(+m2[1]);
  document.body.setAttribute("data-rendered", "1");
})();
"""
