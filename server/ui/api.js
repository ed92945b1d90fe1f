// The HTTP API: every call carries the session's token as a Bearer header; nothing else.

const KEY = "magrathea.token";

/** The token of this tab's session, or null. */
export function token() {
  return sessionStorage.getItem(KEY);
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

let refused = null; // what to do when the server no longer accepts the session's token

/**
 * Calls `handler` whenever an answer is 401 to a request that carried the session's token,
 * whichever view sent it (views catch their errors to show them in place).
 */
export function onTokenRefused(handler) {
  refused = handler;
}

/** An answer of the API that is not 2xx. */
export class ApiError extends Error {
  constructor(status, code, message, diagnostics) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || "";
    this.diagnostics = diagnostics || [];
  }
}

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

async function fail(r) {
  if (r.status === 401 && token() && refused) queueMicrotask(refused);
  let body = null;
  try {
    body = await r.json();
  } catch (_) {
    body = null;
  }
  const e = (body && body.error) || {};
  return new ApiError(r.status, e.code, e.message, e.diagnostics);
}

/**
 * JSON text as values, with the integers a JavaScript number cannot hold exactly (beyond
 * 2^53, say a journaled input hash) kept whole as BigInts: `JSON.parse` alone would round
 * them, and the page would show numbers the server never sent.
 */
export function parseJson(text) {
  return JSON.parse(text, (_key, value, context) =>
    typeof value === "number" && !Number.isSafeInteger(value) && context &&
      /^-?\d+$/.test(context.source) ? BigInt(context.source) : value);
}

/** GET `path`: {json, headers}. */
export async function get(path, signal) {
  const r = await fetch(path, { headers: headers(), signal });
  if (!r.ok) throw await fail(r);
  const text = await r.text();
  return { json: text ? parseJson(text) : null, headers: r.headers };
}

/** GET `path` and only its JSON. */
export async function getJson(path, signal) {
  return (await get(path, signal)).json;
}

/** POST `body` as JSON to `path`: its JSON. */
export async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body || {}),
  });
  if (!r.ok) throw await fail(r);
  const text = await r.text();
  return text ? parseJson(text) : null;
}

/** PUT the text `body` to `path` (a document): its JSON. */
export async function putText(path, body) {
  const r = await fetch(path, {
    method: "PUT",
    headers: headers({ "Content-Type": "application/yaml; charset=utf-8" }),
    body,
  });
  if (!r.ok) throw await fail(r);
  const text = await r.text();
  return text ? parseJson(text) : null;
}

/** GET the text of `path` (a document). */
export async function getText(path, signal) {
  const r = await fetch(path, { headers: headers({ Accept: "application/yaml, text/plain" }), signal });
  if (!r.ok) throw await fail(r);
  return r.text();
}

/**
 * Reads the server-sent events of `path` (with the Bearer header, which EventSource cannot
 * send) and calls `onEvent(name, data)` for each; resolves when the stream ends. Abort with
 * `signal`.
 */
export async function events(path, onEvent, signal) {
  const r = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!r.ok) throw await fail(r);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
      let name = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) {
        let parsed = data.join("\n");
        try {
          parsed = parseJson(parsed);
        } catch (_) {
          // Not JSON: hand the text over.
        }
        onEvent(name, parsed);
      }
    }
  }
}

/** The base path of a project's routes. */
export function projectBase(ctx) {
  return `/brain/${encodeURIComponent(ctx.tenant)}/project/${encodeURIComponent(ctx.project)}`;
}
