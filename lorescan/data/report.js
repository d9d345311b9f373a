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
    panel.appendChild(el("p", "meta", "generation " + g.n + " (before message #" + g.message + ") · keys: " +
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
    panel.appendChild(el("h2", null, "Generation " + g.n + " (before message #" + g.message + ")"));
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
