// Drawing the page from API replies: entry names and colours, highlighted messages, the prompt's
// buckets, the budget bar, the skipped list and the replay timeline. No state lives here.

export const POSITIONS = {
  0: "before the character", 1: "after the character", 2: "author's note, top", 3: "author's note, bottom",
  4: "at depth", 5: "example messages, top", 6: "example messages, bottom", 7: "outlet",
};
const ROLES = { 0: "system", 1: "user", 2: "assistant" };

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

export function entryKey(book, entry) { return `${book}.${entry.uid}`; }

export function entryName(entry) {
  const keys = Array.isArray(entry.key) ? entry.key.filter(k => typeof k === "string") : [];
  return entry.comment || keys.slice(0, 3).join(", ") || `entry ${entry.uid}`;
}

export function positionText(entry) {
  const pos = entry.position;
  if (pos === 4) return `at depth ${entry.depth ?? 4} (${ROLES[entry.role ?? 0] || "system"})`;
  if (pos === 7) return `outlet ${JSON.stringify(entry.outletName || "")}`;
  return POSITIONS[pos] ?? `position ${pos}`;
}

// A colour per entry, spread around the wheel by the entry's place in the book.
export function entryHue(index) { return Math.round((index * 137.508) % 360); }

// The text of one message with its spans marked: solid for matches, dashed for occurrences that
// whole-word matching ignores. Overlapping spans share a segment that names every entry.
export function highlighted(text, spans, info) {
  const cuts = new Set([0, text.length]);
  for (const s of spans) { cuts.add(Math.min(s.start, text.length)); cuts.add(Math.min(s.end, text.length)); }
  const points = [...cuts].sort((a, b) => a - b);
  const frag = document.createDocumentFragment();
  for (let i = 0; i + 1 < points.length; i++) {
    const a = points[i], b = points[i + 1];
    const piece = text.slice(a, b);
    const over = spans.filter(s => s.start <= a && s.end >= b);
    if (!over.length) { frag.append(piece); continue; }
    const counted = over.filter(s => s.counts);
    const lead = counted.find(s => info(s.entry).active) || counted[0] || over[0];
    const names = over.map(s => `${info(s.entry).label}, ${s.counts ? info(s.entry).state : "inside a word: not a match"}: ${s.role} key '${s.key}'`);
    const kind = !counted.length ? "near" : info(lead.entry).active ? "hit" : "hit idle";
    const mark = el("mark", {
      class: kind, title: names.join("\n"),
      dataset: { entry: lead.entry, key: lead.key },
    }, piece);
    mark.style.setProperty("--hue", info(lead.entry).hue);
    frag.append(mark);
  }
  frag.append("\u200b");     // keeps a trailing newline's height, as the textarea has it
  return frag;
}

export function chips(spans, info, onPick) {
  const seen = new Map();
  for (const s of spans) {
    const id = `${s.entry}\u0000${s.key}\u0000${s.counts}`;
    if (!seen.has(id)) seen.set(id, s);
  }
  if (!seen.size) return null;
  const list = el("ul", { class: "chips", "aria-label": "keys found in this message" });
  for (const s of seen.values()) {
    const e = info(s.entry);
    const cls = !s.counts ? "chip near" : e.active ? "chip" : "chip idle";
    const note = !s.counts ? " (inside a word)" : e.active ? "" : ` (${e.state})`;
    const chip = el("button", { type: "button", class: cls, dataset: { entry: s.entry },
      title: s.counts ? `${e.label}, ${e.state}` : "inside a word: whole-word matching ignores it",
      onclick: () => onPick(s.entry) }, `${s.key} → ${e.label}${note}`);
    chip.style.setProperty("--hue", e.hue);
    list.append(el("li", {}, chip));
  }
  return list;
}

function bucket(title, body, extra = "") {
  return el("section", { class: "bucket" }, el("h4", {}, title, extra ? el("span", { class: "muted" }, ` ${extra}`) : null),
    el("pre", {}, body));
}

export function buckets(result) {
  const out = document.createDocumentFragment();
  let any = false;
  const add = (title, text, extra) => { if (text) { out.append(bucket(title, text, extra)); any = true; } };
  add("Before the character", result.before);
  add("After the character", result.after);
  add("Author's note, top", (result.an_top || []).join("\n"));
  add("Author's note, bottom", (result.an_bottom || []).join("\n"));
  for (const em of result.em || []) add(`Example messages, ${em.position}`, em.content);
  for (const g of result.depth || []) {
    add(`At depth ${g.depth}`, (g.entries || []).join("\n"), `(role: ${ROLES[g.role] || g.role})`);
  }
  for (const [name, items] of Object.entries(result.outlets || {})) add(`Outlet ${JSON.stringify(name)}`, items.join("\n"));
  if (!any) out.append(el("p", { class: "muted" }, "No world info enters the prompt."));
  return out;
}

export function budgetBar(use, info) {
  const box = document.createDocumentFragment();
  if (!use || use.budget === null || use.budget === undefined) {
    box.append(el("p", { class: "muted" }, "No entry reached the budget."));
    return box;
  }
  const budget = Math.max(use.budget, 1);
  const rows = use.rows.filter(r => r.outcome !== "skipped");
  const total = Math.max(budget, ...rows.map(r => r.used || 0));
  const bar = el("div", { class: "bar", role: "img",
    "aria-label": `${use.used} of ${use.budget} tokens used${use.overflowed ? ", overflowed" : ""}` });
  for (const r of rows) {
    const seg = el("span", { class: `seg ${r.outcome}`, title: `${info(r.entry).label}: ${r.tokens} tokens (${r.outcome})`,
      dataset: { entry: r.entry } });
    seg.style.width = `${(100 * (r.tokens || 0)) / total}%`;
    if (r.outcome === "fits") seg.style.setProperty("--hue", info(r.entry).hue);
    bar.append(seg);
  }
  const limit = el("span", { class: "limit", title: `the budget: ${use.budget} tokens` });
  limit.style.left = `${(100 * budget) / total}%`;
  bar.append(limit);
  box.append(el("p", {}, el("strong", {}, `${use.used} / ${use.budget}`), " tokens",
    use.overflowed ? el("span", { class: "warn" }, ` · overflowed at ${info(use.overflow_entry).label}`) : null));
  box.append(bar);
  const legend = el("ol", { class: "legend" });
  for (const r of rows) {
    const sw = el("span", { class: `swatch ${r.outcome}` });
    if (r.outcome === "fits") sw.style.setProperty("--hue", info(r.entry).hue);
    legend.append(el("li", {}, sw, `${info(r.entry).label} `, el("span", { class: "muted" },
      r.outcome === "fits" ? `${r.tokens} tokens` : `${r.tokens} tokens: over the budget (${r.used} > ${use.budget})`)));
  }
  box.append(legend);
  return box;
}

// The replay's timeline: one row per entry that took part, one cell per generation.
export function timeline(turns, info, current, onStep) {
  const states = new Map();
  turns.forEach((t, g) => {
    const mark = (entry, s) => {
      if (!states.has(entry)) states.set(entry, new Array(turns.length).fill(""));
      const row = states.get(entry);
      if (!row[g] || s === "A") row[g] = s;
    };
    for (const r of t.budget_use?.rows || []) if (r.outcome !== "fits") mark(r.entry, "B");
    for (const e of t.explain || []) if (!e.activated && e.closest_miss && e.closest_miss.kind !== "no_match") mark(e.entry, "D");
    for (const k of t.activated) mark(k, "A");
  });
  const table = el("table", { class: "heat" });
  const head = el("tr", {}, el("th", { scope: "col" }, "entry"));
  turns.forEach((_, g) => head.append(el("th", { scope: "col" },
    el("button", { type: "button", class: g === current ? "on" : "", onclick: () => onStep(g),
      "aria-label": `generation ${g + 1}` }, String(g + 1)))));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  const words = { A: "activated", B: "dropped by the budget", D: "matched, not activated", "": "not matched" };
  for (const [entry, row] of states) {
    const tr = el("tr", {}, el("th", { scope: "row" }, info(entry).label));
    row.forEach((s, g) => {
      const td = el("td", { class: `c${s || "N"}${g === current ? " now" : ""}`, title: `generation ${g + 1}: ${words[s]}` });
      if (s === "A") td.style.setProperty("--hue", info(entry).hue);
      tr.append(td);
    });
    body.append(tr);
  }
  table.append(body);
  return el("div", { class: "heat-wrap" }, table,
    el("p", { class: "muted" }, "Filled: activated. Hatched: dropped by the budget. Outlined: matched but not activated."));
}
