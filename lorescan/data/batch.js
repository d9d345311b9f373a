"use strict";
(function () {
  var data = JSON.parse(document.getElementById("lorescan-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  function el(tag, attrs, text) {
    var e = tag === "svg" || ["rect", "text", "line", "g", "title"].indexOf(tag) >= 0 ?
      document.createElementNS(NS, tag) : document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function pct(x) { return (100 * x).toFixed(1) + "%"; }
  function label(e) { return e.key + (e.comment ? " — " + e.comment : ""); }
  function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // horizontal bars: rows of {label, value, max, cls, tip}
  function hbars(target, rows, kind) {
    var rowH = 16, left = 300, width = 760, top = 4;
    var svg = el("svg", {width: left + width + 80, height: top + rows.length * rowH + 8, "data-bars": rows.length,
      "class": "hbars " + kind});
    rows.forEach(function (r, i) {
      var y = top + i * rowH;
      var g = el("g", {"class": "row"});
      g.appendChild(el("text", {x: 0, y: y + 11}, clip(r.label, 48)));
      var w = r.max > 0 ? Math.max(1, Math.round(width * r.value / r.max)) : 0;
      var bar = el("rect", {x: left, y: y + 2, width: w, height: rowH - 4, "class": r.cls});
      bar.appendChild(el("title", {}, r.tip));
      g.appendChild(bar);
      g.appendChild(el("text", {x: left + w + 4, y: y + 11}, r.text));
      svg.appendChild(g);
    });
    target.appendChild(svg);
    return rows.length;
  }

  function fireChart() {
    var fired = data.entries.filter(function (e) { return !e.never_fired; });
    fired.sort(function (a, b) { return b.fire_rate - a.fire_rate || (a.key < b.key ? -1 : 1); });
    var shown = fired.slice(0, data.max_bars);
    var max = shown.length ? shown[0].fire_rate : 0;
    var target = document.getElementById("fire-chart");
    if (fired.length > shown.length) target.appendChild(el("p", {"class": "hint"},
      "The " + shown.length + " busiest of " + fired.length + " entries that fired."));
    return hbars(target, shown.map(function (e) {
      var b = e.blocked;
      return {label: label(e), value: e.fire_rate, max: max, cls: "bar-fire", text: pct(e.fire_rate),
        tip: label(e) + ": fired in " + e.fired_generations + " generations of " + e.fired_chats + " chats; cut by the budget " +
          e.budget_cut + "; blocked by cooldown " + b.cooldown + ", delay " + b.delay + ", group " + b.group +
          ", probability " + b.probability};
    }), "fire");
  }

  function budgetChart() {
    var hist = data.budget.histogram, W = 36, H = 160, top = 10;
    var max = Math.max.apply(null, hist.map(function (h) { return h.generations; }).concat([1]));
    var svg = el("svg", {width: hist.length * W + 20, height: H + top + 40, "data-bins": hist.length, "class": "hist"});
    hist.forEach(function (h, i) {
      var bh = Math.round(H * h.generations / max), x = 10 + i * W;
      var full = i === hist.length - 1;
      var r = el("rect", {x: x, y: top + H - bh, width: W - 4, height: bh, "class": "bar-hist" + (full ? " full" : "")});
      r.appendChild(el("title", {}, (full ? "full or overflowed" : h.from_percent + "–" + h.to_percent + "%") + ": " +
        h.generations + " generations"));
      svg.appendChild(r);
      svg.appendChild(el("text", {x: x, y: top + H + 14}, full ? "full" : String(h.from_percent)));
      if (h.generations) svg.appendChild(el("text", {x: x, y: top + H - bh - 2}, String(h.generations)));
    });
    svg.appendChild(el("line", {x1: 8, x2: hist.length * W + 10, y1: top + H, y2: top + H, "class": "axis"}));
    svg.appendChild(el("text", {x: 10, y: top + H + 30}, "% of the budget used (mean " + pct(data.budget.mean_use) +
      ", overflowed in " + pct(data.overflow_rate) + " of generations)"));
    document.getElementById("budget-chart").appendChild(svg);
    return hist.length;
  }

  function consumersChart() {
    var target = document.getElementById("consumers-chart"), n = 0;
    data.books.forEach(function (book) {
      target.appendChild(el("h3", {}, book.name + " — " + book.fired + " of " + book.entries + " entries fired, " +
        pct(book.token_share) + " of the tokens, " + pct(book.budget_share) + " of the budget on average"));
      var top = book.top_consumers, max = top.length ? top[0].share : 0;
      n += hbars(target, top.map(function (t) {
        return {label: label(t), value: t.share, max: max, cls: "bar-tokens", text: pct(t.share),
          tip: label(t) + ": " + t.tokens + " tokens in all"};
      }), "tokens");
    });
    return n;
  }

  function diffView() {
    var target = document.getElementById("diff-view"), d = data.diff;
    if (!d) { target.appendChild(el("p", {"class": "muted"}, "No edited book was compared (replay with --diff OTHER_BOOK).")); return 0; }
    target.appendChild(el("p", {"class": "summary"}, "Against " + (data.edited || "the edited book") + ": " +
      d.changed_generations + " of " + d.generations + " generations change (" + pct(d.changed_rate) + "), " +
      d.text_changed_generations + " in bucket text."));
    var table = el("table", {"class": "list diff"}), head = el("tr");
    ["entry", "gained", "lost", "text changed"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    table.appendChild(head);
    d.entries.slice(0, data.max_bars).forEach(function (e) {
      var tr = el("tr", {"class": "diff-row"});
      tr.appendChild(el("td", {}, label(e)));
      [["gained", "bar-gained"], ["lost", "bar-lost"], ["text_changed", "bar-changed"]].forEach(function (f) {
        var td = el("td", {"class": "n"}), v = e[f[0]];
        var svg = el("svg", {width: 110, height: 12});
        var w = d.generations ? Math.max(v ? 1 : 0, Math.round(70 * v / d.generations)) : 0;
        svg.appendChild(el("rect", {x: 0, y: 1, width: w, height: 10, "class": f[1]}));
        svg.appendChild(el("text", {x: w + 3, y: 10}, String(v)));
        td.appendChild(svg);
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    target.appendChild(table);
    return d.entries.length;
  }

  function lists() {
    var never = document.getElementById("never-list");
    never.appendChild(el("p", {}, data.never_fired.length + " of " + data.entries.length + " entries never fired."));
    if (data.never_fired.length) never.appendChild(el("p", {"class": "muted"}, data.never_fired.slice(0, 500).join(", ") +
      (data.never_fired.length > 500 ? ", …" : "")));
    var fail = document.getElementById("failure-list");
    if (!data.failures.length) { fail.appendChild(el("p", {"class": "muted"}, "None.")); return; }
    var table = el("table", {"class": "list"});
    data.failures.slice(0, 1000).forEach(function (f) {
      var tr = el("tr", {"class": "failure"});
      tr.appendChild(el("td", {}, f.path));
      tr.appendChild(el("td", {}, f.error));
      table.appendChild(tr);
    });
    fail.appendChild(table);
  }

  var counts = {fire: fireChart(), bins: budgetChart(), consumers: consumersChart(), diff: diffView()};
  lists();
  document.body.setAttribute("data-fire-bars", counts.fire);
  document.body.setAttribute("data-bins", counts.bins);
  document.body.setAttribute("data-consumer-bars", counts.consumers);
  document.body.setAttribute("data-diff-rows", counts.diff);
  document.body.setAttribute("data-rendered", "1");
})();
