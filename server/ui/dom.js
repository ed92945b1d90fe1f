// Small helpers to build DOM nodes without innerHTML (no markup from data, ever).

/** An element: h("a", {href: "#"}, "text", child, …). */
export function h(tag, attrs, ...children) {
  const svg = ["svg", "g", "rect", "text", "path", "defs", "marker", "title", "line"].includes(tag);
  const el = svg
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces the children of `el`. */
export function mount(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

/** A status badge. */
export function badge(status) {
  const s = String(status || "UNKNOWN");
  return h("span", { class: `badge badge-${s.toLowerCase()}` }, s);
}

/** A time stamp (epoch ms) as local date and time. */
export function time(ms) {
  if (ms === null || ms === undefined) return "";
  return new Date(ms).toLocaleString();
}

/** A duration in ms as "1h 2m", "3.4 s", "120 ms". */
export function duration(ms) {
  if (ms === null || ms === undefined || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  if (m < 60) return `${m}m ${Math.floor((ms % 60000) / 1000)}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** A JSON value in a <pre>. */
export function json(value) {
  return h("pre", { class: "json" }, pretty(value, ""));
}

/** `JSON.stringify(value, null, 2)`, with BigInts (see `parseJson`) written as the integers
 * they are. */
function pretty(value, indent) {
  if (value === undefined) return "";
  if (typeof value === "bigint") return value.toString();
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return `[\n${value.map((v) => inner + (v === undefined ? "null" : pretty(v, inner))).join(",\n")}\n${indent}]`;
  }
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined);
    if (!keys.length) return "{}";
    return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${pretty(value[k], inner)}`).join(",\n")}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/** An error message for people. */
export function errorBox(e) {
  const code = e && e.code ? `${e.code}: ` : "";
  return h("p", { class: "error", role: "alert" }, code + (e && e.message ? e.message : String(e)));
}

/** Announces `text` to screen readers. */
export function announce(text) {
  const s = document.getElementById("status");
  if (s) s.textContent = text;
}

/** The link to run `id` of the context's project: a link that opens the same run in any tab. */
export function runHref(ctx, id) {
  return `#/run/${encodeURIComponent(id)}?project=${encodeURIComponent(`${ctx.tenant}/${ctx.project}`)}`;
}

/** The link to workflow `name` of the context's project. */
export function workflowHref(ctx, name) {
  return `#/workflow/${encodeURIComponent(name)}?project=${encodeURIComponent(`${ctx.tenant}/${ctx.project}`)}`;
}

/** Whether a run status is final. */
export function ended(status) {
  return ["DONE", "FAILED", "CANCELLED"].includes(status);
}
