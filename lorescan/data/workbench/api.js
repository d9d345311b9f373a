// The service's public API, as the page calls it: the token (from the URL fragment or asked for),
// JSON errors in the one error shape, and one activation in flight at a time (a newer one aborts
// the older, so a slow reply never overwrites a newer view).

const TOKEN_KEY = "lorescan-token";

export class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || `HTTP ${status}`);
    this.status = status;
    this.type = err.type || "http";
    this.field = err.field || null;
  }
}

export function takeTokenFromFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export async function call(method, path, { body, raw, signal } = {}) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (raw !== undefined) {
    headers["Content-Type"] = "application/octet-stream";
    payload = raw;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const reply = await fetch(path, { method, headers, body: payload, signal });
  const text = await reply.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!reply.ok) throw new ApiError(reply.status, data);
  return data;
}

// Debounced activation: schedule() waits `delay` ms of quiet, then runs the latest request; a run
// aborts the one before it. onResult gets only the newest reply.
export class Activator {
  constructor(delay, build, onResult, onError, onBusy) {
    this.delay = delay;
    this.build = build;
    this.onResult = onResult;
    this.onError = onError;
    this.onBusy = onBusy;
    this.timer = 0;
    this.controller = null;
    this.seq = 0;
  }

  schedule(now = false) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), now ? 0 : this.delay);
  }

  async run() {
    const body = this.build();
    if (!body) return;
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    const seq = ++this.seq;
    const started = performance.now();
    this.onBusy(true);
    try {
      const data = await call("POST", "/v1/activate", { body, signal: controller.signal });
      if (seq === this.seq) this.onResult(data.result, body, performance.now() - started);
    } catch (err) {
      if (err.name !== "AbortError" && seq === this.seq) this.onError(err);
    } finally {
      if (seq === this.seq) this.onBusy(false);
    }
  }
}
