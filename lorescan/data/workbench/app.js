// The workbench page: its state (kept in the URL so a permalink reproduces the view), the book
// list on the left, the editable chat in the middle and the result on the right. Every number and
// reason shown comes from the service's API (see api.js).

import { Activator, ApiError, call, setToken, takeTokenFromFragment } from "./api.js";
import { budgetBar, buckets, chips, el, entryHue, entryKey, entryName, highlighted, positionText,
  POSITIONS, timeline } from "./render.js";

const $ = (id) => document.getElementById(id);
const LIST_LIMIT = 300;       // entries drawn at once; the search narrows a large book
const DEBOUNCE_MS = 40;       // quiet time after an edit before asking (a newer edit aborts the older request)

const state = {
  book: null, stVersion: "1.18", macroEngine: "new", tokenizer: "chars4", settings: {}, userName: "User",
  charName: "Character",
  chat: [], type: "normal", dryRun: false, replay: false, step: 0, selected: null,
  search: "", status: "all", group: "", position: "",
};
let entries = [];             // the book's entries (GET /v1/books/{name})
let byKey = new Map();        // "<book>.<uid>" -> {entry, index}
let settingsSchema = {};      // Settings' properties, from /openapi.json
let result = null;            // the result shown (a replay's current generation)
let turns = null;             // a replay's results
let lastChange = performance.now();   // the last edit (or selection) that asked for a new result

// ------------------------------------------------------------------ URL state

function encodeState() {
  const keep = { ...state };
  const json = JSON.stringify(keep);
  const bytes = new TextEncoder().encode(json);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeState(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

function saveUrl() {
  const url = new URL(location.href);
  if (state.book) url.searchParams.set("book", state.book);
  url.hash = "s=" + encodeState();
  history.replaceState(null, "", url);
}

function loadUrlState() {
  const params = new URLSearchParams(location.hash.slice(1));
  const s = params.get("s");
  if (!s) return false;
  try { Object.assign(state, decodeState(s)); return true; } catch { return false; }
}

// ------------------------------------------------------------------ entries

function info(key) {
  const found = byKey.get(key);
  const active = Boolean(result && result.activated.includes(key));
  const miss = explained(key)?.closest_miss;
  const state = active ? "activated" : miss ? `not activated: ${missWords(miss.kind)}` : "not activated";
  if (!found) return { label: key, hue: 0, active, state };
  return { label: `${entryName(found.entry)} (${key})`, hue: entryHue(found.index), active, state };
}

const MISS_WORDS = { secondary: "secondary keys", whole_words: "inside a word", scan_depth: "beyond the scan depth",
  case: "another case", group: "lost its group", probability: "probability roll", budget: "budget",
  cooldown: "cooldown", delay: "delay", recursion: "recursion only", trigger: "generation type",
  character_filter: "character filter", decorator: "decorator", disabled: "disabled", no_keys: "no keys",
  no_match: "no key matched" };
function missWords(kind) { return MISS_WORDS[kind] || kind.replace(/_/g, " "); }

function explained(key) { return result?.explain?.find((e) => e.entry === key) || null; }

function statusOf(key, entry) {
  if (entry.disable) return { cls: "disabled", text: "disabled" };
  if (result?.activated.includes(key)) return { cls: "on", text: "activated" };
  const row = result?.budget_use?.rows.find((r) => r.entry === key && r.outcome !== "fits");
  if (row) return { cls: "budget", text: "budget" };
  const exp = explained(key);
  if (exp?.closest_miss && exp.closest_miss.kind !== "no_match") {
    return { cls: "near", text: missWords(exp.closest_miss.kind) };
  }
  return { cls: "", text: entry.constant ? "constant" : "" };
}

function matchesFilter(key, entry) {
  const s = state.status;
  const active = result?.activated.includes(key);
  if (s === "activated" && !active) return false;
  if (s === "not-activated" && active) return false;
  if (s === "matched" && (active || !explained(key))) return false;
  if (s === "constant" && !entry.constant) return false;
  if (s === "disabled" && !entry.disable) return false;
  if (state.group && !(entry.group || "").split(/,\s*/).includes(state.group)) return false;
  if (state.position !== "" && String(entry.position) !== state.position) return false;
  const q = state.search.trim().toLowerCase();
  if (!q) return true;
  const keys = [...(entry.key || []), ...(entry.keysecondary || [])].join(" ");
  return `${entry.uid} ${entry.comment || ""} ${keys} ${entry.content || ""}`.toLowerCase().includes(q);
}

function renderEntries() {
  const list = $("entries");
  list.replaceChildren();
  let shown = 0, total = 0;
  const unfiltered = state.status === "all" && !state.group && state.position === "" && !state.search.trim();
  for (const [i, entry] of entries.entries()) {
    if (unfiltered && shown >= LIST_LIMIT) { total = entries.length; break; }   // no need to count
    const key = entryKey(state.book, entry);
    if (!matchesFilter(key, entry)) continue;
    total++;
    if (shown >= LIST_LIMIT) continue;
    shown++;
    const st = statusOf(key, entry);
    const item = el("li", { role: "option", id: `entry-${CSS.escape(key)}`, class: `entry ${st.cls}`,
      "aria-selected": key === state.selected ? "true" : "false", dataset: { key }, tabindex: "-1",
      onclick: () => select(key) },
    el("span", { class: "dot", "aria-hidden": "true" }),
    el("span", { class: "name" }, entryName(entry)),
    el("span", { class: "uid muted" }, `#${entry.uid}`),
    st.text ? el("span", { class: `badge ${st.cls}` }, st.text) : null);
    item.querySelector(".dot").style.setProperty("--hue", entryHue(i));
    list.append(item);
  }
  $("entry-count").textContent = total > shown ? `${total} entries match; the first ${shown} are shown (search to narrow)`
    : `${total} of ${entries.length} entries`;
}

function moveSelection(delta) {
  const items = [...$("entries").children];
  if (!items.length) return;
  let i = items.findIndex((li) => li.dataset.key === state.selected);
  i = i < 0 ? 0 : Math.max(0, Math.min(items.length - 1, i + delta));
  select(items[i].dataset.key);
}

function select(key) {
  state.selected = key;
  renderEntries();
  const item = document.getElementById(`entry-${CSS.escape(key)}`);
  if (item) { item.scrollIntoView({ block: "nearest" }); $("entries").setAttribute("aria-activedescendant", item.id); }
  renderDetail();
  if (!explained(key)) {                             // ask for its explanation (trace_focus)
    lastChange = performance.now();
    activator.schedule(true);
  }
  saveUrl();
}

function field(name, value) {
  if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) return null;
  const text = Array.isArray(value) ? value.map((v) => `'${v}'`).join(", ") : String(value);
  return [el("dt", {}, name), el("dd", {}, text)];
}

function renderDetail() {
  const box = $("detail");
  box.replaceChildren();
  const found = byKey.get(state.selected);
  if (!found) return;
  const e = found.entry;
  const logic = { 0: "AND ANY", 1: "NOT ALL", 2: "NOT ANY", 3: "AND ALL" }[e.selectiveLogic ?? 0];
  const dl = el("dl", { class: "fields" });
  for (const pair of [field("keys", e.key), field(`secondary keys (${logic})`, e.selective ? e.keysecondary : []),
    field("position", positionText(e)), field("order", e.order), field("probability", e.useProbability === false ? null : e.probability),
    field("group", e.group), field("scan depth", e.scanDepth), field("sticky", e.sticky || null),
    field("cooldown", e.cooldown || null), field("delay", e.delay || null), field("constant", e.constant ? "yes" : null), field("disabled", e.disable ? "yes" : null)]) {
    if (pair) dl.append(...pair);
  }
  const exp = explained(state.selected);
  const verdict = exp ? el("div", { class: `verdict ${exp.activated ? "on" : "off"}` },
    el("p", { class: "verdict-text" }, exp.verdict),
    exp.closest_miss && exp.closest_miss.kind !== "no_match" ? el("p", { class: "miss" }, el("strong", {}, "Closest miss: "), missWords(exp.closest_miss.kind),
      exp.closest_miss.text !== exp.verdict ? el("span", {}, ` — ${exp.closest_miss.text}`) : null) : null,
    exp.lines.length ? el("ul", { class: "lines" }, ...exp.lines.map((l) => el("li", {}, l))) : null,
    exp.steps.length ? el("details", {}, el("summary", {}, "Every gate, pass by pass"),
      el("ol", { class: "steps" }, ...exp.steps.map((l) => el("li", {}, l)))) : null)
    : el("p", { class: "muted" }, "Explaining…");
  box.append(el("h3", {}, `${entryName(e)} `, el("span", { class: "muted" }, state.selected)), verdict, dl,
    el("details", {}, el("summary", {}, "Content"), el("pre", { class: "content" }, e.content || "")));
}

// ------------------------------------------------------------------ chat

function spansOf(index) {
  return (result?.spans || []).filter((s) => s.message === index);
}

function renderMessage(li, index) {
  const m = state.chat[index];
  const spans = spansOf(index);
  const back = li.querySelector(".hl");
  back.replaceChildren(highlighted(m.mes, spans, info));
  const old = li.querySelector(".chips");
  const fresh = chips(spans, info, select);
  if (old) old.remove();
  if (fresh) li.append(fresh);
  const later = Boolean(state.replay && turns && turns.length && index >= replayPoints()[state.step]);
  const unscanned = !later && !m.is_system && scannedMessages() !== null && !scannedMessages().has(index);
  li.classList.toggle("later", later);
  li.classList.toggle("unscanned", unscanned);
  li.querySelector(".note").textContent = later ? "not written yet at this generation"
    : unscanned ? `beyond the scan depth (${scanDepth()})` : m.is_system ? "system: not scanned" : "";
}

function scanDepth() {
  const pass = result?.trace?.find((e) => e.event === "pass");
  return pass ? pass.scan_depth : null;
}

// The messages the first pass scanned: the newest `scan depth` of those SillyTavern reads (no system
// messages; a swipe leaves out the last), in this generation's chat.
function scannedMessages() {
  const depth = scanDepth();
  if (depth === null || !result) return null;
  const upto = state.replay && turns ? replayPoints()[state.step] : state.chat.length;
  const kept = [];
  for (let i = 0; i < upto; i++) if (!state.chat[i].is_system) kept.push(i);
  if (state.type === "swipe") kept.pop();
  return new Set(kept.slice(Math.max(0, kept.length - depth)));
}

function fit(ta) { ta.style.height = "auto"; ta.style.height = `${ta.scrollHeight + 2}px`; }

function messageItem(index) {
  const m = state.chat[index];
  const ta = el("textarea", { "aria-label": `message ${index + 1} text`, rows: "1", spellcheck: "false" });
  ta.value = m.mes;
  const li = el("li", { class: `msg ${m.is_user ? "user" : "char"}` });
  const name = el("input", { class: "who", value: m.name, "aria-label": `message ${index + 1} speaker`, autocomplete: "off" });
  name.addEventListener("input", () => { m.name = name.value; changed(); });
  const role = el("select", { "aria-label": `message ${index + 1} role` },
    el("option", { value: "user" }, "user"), el("option", { value: "char" }, "character"), el("option", { value: "system" }, "system"));
  role.value = m.is_system ? "system" : m.is_user ? "user" : "char";
  role.addEventListener("change", () => {
    m.is_user = role.value === "user"; m.is_system = role.value === "system";
    li.className = `msg ${m.is_user ? "user" : "char"}`; changed();
  });
  const del = el("button", { type: "button", class: "del", "aria-label": `delete message ${index + 1}`,
    onclick: () => { state.chat.splice(index, 1); renderChat(); changed(); } }, "✕");
  ta.addEventListener("input", () => { m.mes = ta.value; fit(ta); back.replaceChildren(highlighted(m.mes, [], info)); changed(); });
  ta.addEventListener("scroll", () => { back.scrollTop = ta.scrollTop; });
  ta.addEventListener("mousemove", (ev) => {      // name the entry under the pointer
    ta.style.pointerEvents = "none";
    const under = document.elementFromPoint(ev.clientX, ev.clientY);
    ta.style.pointerEvents = "";
    ta.title = under && under.tagName === "MARK" ? under.title : "";
  });
  const back = el("div", { class: "hl", "aria-hidden": "true" });
  li.append(el("div", { class: "msg-head" }, el("span", { class: "num" }, `#${index + 1}`), name, role,
    el("span", { class: "note muted" }), del),
    el("div", { class: "field" }, back, ta));
  requestAnimationFrame(() => fit(ta));
  return li;
}

function renderChat() {
  const ol = $("messages");
  ol.replaceChildren(...state.chat.map((_, i) => messageItem(i)));
  renderHighlights();
}

function renderHighlights() {
  [...$("messages").children].forEach((li, i) => renderMessage(li, i));
}

function addMessage(isUser) {
  state.chat.push({ name: isUser ? state.userName : state.charName, is_user: isUser, is_system: false, mes: "" });
  renderChat();
  const tas = $("messages").querySelectorAll("textarea");
  tas[tas.length - 1].focus();
  changed();
}

function replayPoints() {
  const pts = [];
  state.chat.forEach((m, i) => { if (i > 0 && !m.is_user && !m.is_system) pts.push(i); });
  return pts;
}

// ------------------------------------------------------------------ activation

function changedSettings() {
  const out = {};
  for (const [name, value] of Object.entries(state.settings)) {
    if (settingsSchema[name] && value !== settingsSchema[name].default) out[name] = value;
  }
  return out;
}

function buildBody() {
  if (!state.book) return null;
  const chat = state.chat.map((m) => ({ name: m.name, is_user: m.is_user, is_system: m.is_system, mes: m.mes }));
  const body = { stored_books: [state.book], settings: changedSettings(), user_name: state.userName,
    char_name: state.charName, st_version: state.stVersion, tokenizer: state.tokenizer, trace: true,
    macro_engine: state.stVersion === "1.12" ? "legacy" : state.macroEngine,
    trace_focus: state.selected && byKey.has(state.selected) ? [state.selected] : [] };
  if (state.replay) {
    const pts = replayPoints();
    if (pts.length) {
      body.turns = pts.map((p) => ({ chat: chat.slice(0, p), type: state.type, dry_run: state.dryRun }));
      return body;
    }
  }
  return { ...body, chat, type: state.type, dry_run: state.dryRun };
}

function showResult(data, body, ms) {
  $("error").hidden = true;
  turns = data.turns || null;
  if (turns) state.step = Math.min(state.step, turns.length - 1);
  result = turns ? turns[state.step] : data;
  const drawing = performance.now();
  renderResult();
  // from the last edit to this result drawn (the debounce, the request and the drawing)
  const now = performance.now();
  const latency = Math.round(now - lastChange);
  Object.assign(document.body.dataset, { latency, requestMs: Math.round(ms), drawMs: Math.round(now - drawing) });
  $("status").textContent = `${result.activated.length} activated · ${latency} ms after the last edit`;
  $("status").title = `the service answered in ${Math.round(ms)} ms; drawing took ${Math.round(now - drawing)} ms`;
}

function renderResult() {
  const pts = replayPoints();
  $("replay-controls").hidden = !(state.replay && turns);
  $("timeline-box").hidden = !(state.replay && turns);
  if (state.replay && turns) {
    $("step-label").textContent = `generation ${state.step + 1} of ${turns.length} (before message #${pts[state.step] + 1})`;
    $("timeline").replaceChildren(timeline(turns, info, state.step, (g) => { state.step = g; result = turns[g]; renderResult(); saveUrl(); }));
  }
  $("budget").replaceChildren(budgetBar(result.budget_use, info));
  const act = $("activated");
  act.replaceChildren(...result.activated.map((key) => {
    const found = byKey.get(key);
    const where = found ? positionText(found.entry) : "";
    const b = el("button", { type: "button", class: "link", onclick: () => select(key) }, info(key).label);
    const li = el("li", { class: "act", dataset: { entry: key } }, el("span", { class: "dot" }), b, " ",
      el("span", { class: "where" }, `→ ${where}`));
    li.querySelector(".dot").style.setProperty("--hue", info(key).hue);
    return li;
  }));
  if (!result.activated.length) act.append(el("li", { class: "muted" }, "Nothing activated."));
  const skipped = (result.budget_use?.rows || []).filter((r) => r.outcome !== "fits");
  $("skipped").replaceChildren(...skipped.map((r) => el("li", { dataset: { entry: r.entry } },
    el("button", { type: "button", class: "link", onclick: () => select(r.entry) }, info(r.entry).label),
    ` — ${r.tokens ?? "?"} tokens, `, r.outcome === "overflow" ? "overflowed the budget" : "skipped: the budget had overflowed")));
  if (!skipped.length) $("skipped").append(el("li", { class: "muted" }, "None."));
  $("buckets").replaceChildren(buckets(result));
  renderEntries();
  renderDetail();
  renderHighlights();
}

function showError(err) {
  if (err instanceof ApiError && err.status === 401) { $("token-box").hidden = false; $("token-input").focus(); }
  const box = $("error");
  box.hidden = false;
  box.textContent = err instanceof ApiError ? `${err.message}${err.field ? ` (${err.field})` : ""}` : String(err);
  $("status").textContent = "error";
}

const activator = new Activator(DEBOUNCE_MS, buildBody, showResult, showError,
  (busy) => document.body.classList.toggle("busy", busy));

function changed() { lastChange = performance.now(); saveUrl(); activator.schedule(); }

// ------------------------------------------------------------------ settings

//: what a setting's number counts, where its name does not say
const UNITS = { world_info_depth: "messages", world_info_budget: "% of max_context", world_info_budget_cap: "tokens, 0: none",
  world_info_min_activations_depth_max: "messages, 0: no limit", world_info_max_recursion_steps: "0: no limit",
  max_context: "tokens", world_info_character_strategy: "0 evenly, 1 character first, 2 global first" };

function renderSettings() {
  const box = $("settings-fields");
  box.replaceChildren();
  for (const [name, prop] of Object.entries(settingsSchema)) {
    const value = state.settings[name] ?? prop.default;
    let input;
    if (prop.type === "boolean") {
      input = el("input", { type: "checkbox", id: `set-${name}` });
      input.checked = Boolean(value);
      input.addEventListener("change", () => { state.settings[name] = input.checked; changed(); });
      box.append(el("label", { class: "check" }, input, ` ${name}`));
      continue;
    }
    input = el("input", { type: "number", id: `set-${name}`, step: prop.type === "integer" ? "1" : "any" });
    input.value = value;
    input.addEventListener("input", () => {
      if (input.value === "" || Number.isNaN(Number(input.value))) return;
      state.settings[name] = Number(input.value); changed();
    });
    box.append(el("label", { title: UNITS[name] || null }, el("span", {}, name,
      UNITS[name] ? el("span", { class: "unit" }, ` (${UNITS[name]})`) : null), input));
  }
}

async function loadSchema() {
  const api = await call("GET", "/openapi.json");
  const schemas = api.components.schemas;
  settingsSchema = schemas.Settings.properties;
  const tok = $("tokenizer");
  tok.replaceChildren(...schemas.ActivateBody.properties.tokenizer.enum.map((t) => el("option", { value: t }, t)));
}

// ------------------------------------------------------------------ books

async function openBook(name) {
  state.book = name;
  const data = await call("GET", `/v1/books/${encodeURIComponent(name)}`);
  entries = data.entries;
  byKey = new Map(entries.map((entry, index) => [entryKey(name, entry), { entry, index }]));
  $("book-info").textContent = `${entries.length} entries (${data.format} format)`;
  const groups = new Set();
  const positions = new Set();
  for (const e of entries) {
    for (const g of (e.group || "").split(/,\s*/)) if (g) groups.add(g);
    positions.add(e.position);
  }
  $("filter-group").replaceChildren(el("option", { value: "" }, "any"), ...[...groups].sort().map((g) => el("option", { value: g }, g)));
  $("filter-position").replaceChildren(el("option", { value: "" }, "any"),
    ...[...positions].sort().map((p) => el("option", { value: String(p) }, POSITIONS[p] ?? String(p))));
  $("filter-group").value = state.group;
  $("filter-position").value = state.position;
  if (state.selected && !byKey.has(state.selected)) state.selected = null;
  renderEntries();
  renderDetail();
  changed();
}

async function start() {
  takeTokenFromFragment();
  const fromUrl = loadUrlState();
  let books, preset;
  try {
    await loadSchema();
    [books, preset] = await Promise.all([call("GET", "/v1/books"), call("GET", "/v1/workbench")]);
  } catch (err) { showError(err); return; }
  const names = books.books.map((b) => b.name);
  const select = $("book-select");
  select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  const asked = new URLSearchParams(location.search).get("book");
  const newest = [...books.books].sort((a, b) => b.updated - a.updated)[0];
  const name = [asked, fromUrl ? state.book : null, preset.book, newest?.name].find((n) => n && names.includes(n));
  if (!fromUrl && preset.chat) {
    state.chat = preset.chat.messages;
    if (preset.chat.user_name) state.userName = preset.chat.user_name;
    if (preset.chat.char_name) state.charName = preset.chat.char_name;
  }
  if (!state.chat.length) state.chat = [{ name: state.userName, is_user: true, is_system: false, mes: "" }];
  syncControls();
  renderChat();
  if (!name) {
    $("entries").replaceChildren(el("li", { class: "muted" }, asked ? `No stored book named '${asked}'.` :
      "No book is stored yet: store one with PUT /v1/books/NAME, or start with `lorescan workbench BOOK`."));
    return;
  }
  select.value = name;
  await openBook(name);
}

function syncControls() {
  $("st-version").value = state.stVersion;
  $("macro-engine").value = state.stVersion === "1.12" ? "legacy" : state.macroEngine;
  $("macro-engine").disabled = state.stVersion === "1.12";    // 1.12.6 has only the legacy engine
  $("tokenizer").value = state.tokenizer;
  $("user-name").value = state.userName;
  $("char-name").value = state.charName;
  $("gen-type").value = state.type;
  $("dry-run").checked = state.dryRun;
  $("replay").checked = state.replay;
  $("search").value = state.search;
  $("filter-status").value = state.status;
  renderSettings();
}

function wire() {
  const on = (id, ev, fn) => $(id).addEventListener(ev, fn);
  on("book-select", "change", (e) => { state.selected = null; openBook(e.target.value).catch(showError); });
  on("st-version", "change", (e) => { state.stVersion = e.target.value; syncControls(); changed(); });
  on("macro-engine", "change", (e) => { state.macroEngine = e.target.value; changed(); });
  on("tokenizer", "change", (e) => { state.tokenizer = e.target.value; changed(); });
  on("user-name", "input", (e) => { state.userName = e.target.value; changed(); });
  on("char-name", "input", (e) => { state.charName = e.target.value; changed(); });
  on("gen-type", "change", (e) => { state.type = e.target.value; changed(); });
  on("dry-run", "change", (e) => { state.dryRun = e.target.checked; changed(); });
  on("replay", "change", (e) => { state.replay = e.target.checked; state.step = 0; changed(); });
  on("step-back", "click", () => step(-1));
  on("step-next", "click", () => step(1));
  on("search", "input", (e) => { state.search = e.target.value; renderEntries(); saveUrl(); });
  on("filter-status", "change", (e) => { state.status = e.target.value; renderEntries(); saveUrl(); });
  on("filter-group", "change", (e) => { state.group = e.target.value; renderEntries(); saveUrl(); });
  on("filter-position", "change", (e) => { state.position = e.target.value; renderEntries(); saveUrl(); });
  on("add-user", "click", () => addMessage(true));
  on("add-char", "click", () => addMessage(false));
  on("settings-toggle", "click", (e) => {
    const open = $("settings").hidden;
    $("settings").hidden = !open;
    e.target.setAttribute("aria-expanded", String(open));
  });
  on("settings-reset", "click", () => { state.settings = {}; renderSettings(); changed(); });
  on("permalink", "click", async () => {
    saveUrl();
    try { await navigator.clipboard.writeText(location.href); $("status").textContent = "permalink copied"; }
    catch { $("status").textContent = "the address bar holds the permalink"; }
  });
  on("token-form", "submit", (e) => {
    e.preventDefault(); setToken($("token-input").value); $("token-box").hidden = true; start();
  });
  on("chat-file", "change", async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    try {
      const chat = await call("POST", `/v1/chats/read?name=${encodeURIComponent(file.name)}`, { raw: await file.arrayBuffer() });
      state.chat = chat.messages;
      if (chat.user_name) state.userName = chat.user_name;
      if (chat.char_name) state.charName = chat.char_name;
      syncControls(); renderChat(); changed();
    } catch (err) { showError(err); }
    e.target.value = "";
  });
  on("entries", "keydown", (e) => {
    if (e.key === "ArrowDown") { e.preventDefault(); moveSelection(1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); moveSelection(-1); }
    else if (e.key === "Home") { e.preventDefault(); moveSelection(-1e9); }
    else if (e.key === "End") { e.preventDefault(); moveSelection(1e9); }
  });
}

function step(delta) {
  if (!turns) return;
  state.step = Math.max(0, Math.min(turns.length - 1, state.step + delta));
  result = turns[state.step];
  renderResult();
  saveUrl();
}

wire();
start();
