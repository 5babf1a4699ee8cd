// Calls to the node's API, same origin, with the tab's key (api/console/doc.go).

const keyName = 'cairn.key';

// The key lives in sessionStorage: this tab only, gone when it closes, never in storage
// that outlives the tab.
export function getKey() { return sessionStorage.getItem(keyName) || ''; }
export function setKey(k) {
  if (k) sessionStorage.setItem(keyName, k); else sessionStorage.removeItem(keyName);
}

// NetworkError: no answer came (the request may or may not have reached the node).
export class NetworkError extends Error {}

// ApiError: the node answered an error; code is the surface's (REST code, documents error).
export class ApiError extends Error {
  constructor(status, body, text) {
    const msg = body && typeof body === 'object' ? (body.message || body.error || body.code) : text;
    super(`${status}: ${msg || 'error'}`);
    this.status = status;
    this.body = body || {};
    this.code = this.body.error || this.body.code || String(status);
  }
}

// request sends one call and returns its JSON answer; json is a request body.
export async function request(method, path, { json, headers, signal } = {}) {
  const h = new Headers(headers || {});
  const k = getKey();
  if (k) h.set('Authorization', 'Bearer ' + k);
  let body;
  if (json !== undefined) {
    h.set('Content-Type', 'application/json');
    body = JSON.stringify(json);
  }
  let resp, text;
  try {
    resp = await fetch(path, { method, headers: h, body, signal, credentials: 'omit', cache: 'no-store' });
    text = await resp.text();
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new NetworkError(`${method} ${path}: no answer (${e && e.message ? e.message : e})`);
  }
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) throw new ApiError(resp.status, data, text);
  return data;
}

// open returns the raw response of a GET (file bodies, event streams).
export async function open(path, { headers, signal } = {}) {
  const h = new Headers(headers || {});
  const k = getKey();
  if (k) h.set('Authorization', 'Bearer ' + k);
  let resp;
  try {
    resp = await fetch(path, { headers: h, signal, credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new NetworkError(`GET ${path}: no answer`);
  }
  if (!resp.ok) {
    const text = await resp.text().catch(() => '');
    let data = null;
    try { data = JSON.parse(text); } catch { data = null; }
    throw new ApiError(resp.status, data, text);
  }
  return resp;
}

// allPages reads a cursor-paged listing (GET answers with next_cursor) page after page:
// page(cursor) answers one page ('' for the first), key names its array. It stops after
// max items, answering truncated when more exist (and the cursor of the rest). A live listing whose cursor fails
// because the listing changed meanwhile (409 ReadFenceChanged) is read again from its
// first page, up to 5 times (as the Go client's ListAll does).
export async function allPages(page, key, max) {
  for (let attempt = 0; ; attempt++) {
    const items = [];
    let cursor = '';
    try {
      for (;;) {
        const r = await page(cursor);
        items.push(...((r && r[key]) || []));
        cursor = (r && r.next_cursor) || '';
        if (!cursor) return { items, truncated: false, cursor: '' };
        if (items.length >= max) return { items, truncated: true, cursor };
      }
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'ReadFenceChanged') || attempt >= 4) throw e;
    }
  }
}

// seg escapes one path segment; filePath escapes each segment of a file path.
export const seg = encodeURIComponent;
export function filePath(p) { return p.split('/').map(encodeURIComponent).join('/'); }
export function agentPath(agent) { return '/v1/agents/' + seg(agent); }
export function wbPath(agent, wb) { return agentPath(agent) + '/workbenches/' + seg(wb); }

// Client ids of writes (page state, never stored): a write not known to have finished
// keeps its id, so retrying the same write sends the same id (a replay on the node).
const pending = new Map();

function newID() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'console-' + Array.from(b, x => x.toString(16).padStart(2, '0')).join('');
}

// clientID returns the id of the write named action with payload: the pending one's when
// the same write is still unsettled, else a new one.
export function clientID(action, payload) {
  const s = JSON.stringify(payload);
  const p = pending.get(action);
  if (p && p.payload === s) return p.id;
  const id = newID();
  pending.set(action, { id, payload: s });
  return id;
}

// settle forgets action's id: its outcome is known.
export function settle(action) { pending.delete(action); }

// write sends a write with the client id of action; the answer is {ok, data} or
// {unknown, id, error} when no answer came (or the node could not say: 503), in which
// case the id is kept for the retry. An error answer settles the id and throws.
export async function write(action, payload, send) {
  const id = clientID(action, payload);
  try {
    const data = await send(id);
    settle(action);
    return { ok: true, data, id };
  } catch (e) {
    if (e instanceof NetworkError || (e instanceof ApiError && e.status === 503)) {
      return { unknown: true, id, error: e };
    }
    settle(action);
    throw e;
  }
}

// describe turns an error into one line for a person.
export function describe(e) {
  if (e instanceof NetworkError) return 'The node did not answer: ' + e.message;
  if (e instanceof ApiError) return `${e.code} (${e.status}): ${e.body.message || e.message}`;
  return String(e && e.message ? e.message : e);
}
