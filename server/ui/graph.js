// A workflow's state graph as SVG, at the positions the server gives (graph?format=reactflow),
// with the current state highlighted and the path taken drawn.

import { h } from "./dom.js";

const W = 170;
const H = 46;
const PAD = 24;

function size(n) {
  return {
    w: n.width || (n.style && n.style.width) || W,
    h: n.height || (n.style && n.style.height) || H,
  };
}

/**
 * A state's name as it fits its box: a smaller font for a long name (down to 10 px), then
 * cut with "…" (the node's tooltip holds the whole name). Widths are estimated (a bold
 * sans-serif character is about 0.58 of its font size wide): the SVG is drawn before it is
 * on the page, where nothing can be measured.
 */
function fitName(name, width) {
  const room = width - 14;
  const px = Math.max(10, Math.min(14, room / (0.58 * name.length)));
  const fits = Math.floor(room / (0.58 * px));
  const text = name.length <= fits ? name : `${name.slice(0, Math.max(1, fits - 1))}…`;
  return { text, px };
}

/** The point where the segment from the centre of `b` towards `p` leaves box `b`. */
function clip(b, p) {
  const cx = b.x + b.w / 2;
  const cy = b.y + b.h / 2;
  const dx = p.x - cx;
  const dy = p.y - cy;
  if (!dx && !dy) return { x: cx, y: cy };
  const sx = dx ? b.w / 2 / Math.abs(dx) : Infinity;
  const sy = dy ? b.h / 2 / Math.abs(dy) : Infinity;
  const s = Math.min(sx, sy);
  return { x: cx + dx * s, y: cy + dy * s };
}

/**
 * The SVG of `graph` ({nodes, edges}); `current` is the current state, `path` the states
 * entered in order, `moves` the transitions taken ({from, to, outcome}: the outcome the
 * state ended with before the next was entered). Each node is a
 * <g data-state="…" class="node [current] [visited]">; each edge a <g data-edge="…">, with
 * class `taken` when the run went along it.
 */
export function drawGraph(graph, current, path, status, moves) {
  const boxes = new Map();
  for (const n of graph.nodes || []) {
    const s = size(n);
    boxes.set(n.id, { x: n.position.x, y: n.position.y, w: s.w, h: s.h, node: n });
  }
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const b of boxes.values()) {
    minX = Math.min(minX, b.x); minY = Math.min(minY, b.y);
    maxX = Math.max(maxX, b.x + b.w); maxY = Math.max(maxY, b.y + b.h);
  }
  if (!boxes.size) { minX = minY = 0; maxX = maxY = 10; }
  const visited = new Set(path || []);
  const taken = takenEdges(graph.edges || [], path || [], moves);
  const width = maxX - minX + 2 * PAD;
  const height = maxY - minY + 2 * PAD;
  const svg = h("svg", {
    class: "graph", role: "img", viewBox: `${minX - PAD} ${minY - PAD} ${width} ${height}`,
    width: Math.min(width, 1100), "aria-label": `State graph; current state ${current || "none"}`,
  });
  svg.append(h("defs", {},
    h("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      h("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" })),
    h("marker", { id: "arrow-taken", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      h("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-taken" }))));
  const pairs = new Map(); // labels already drawn between two states, to stack the next
  for (const e of graph.edges || []) {
    const a = boxes.get(e.source);
    const b = boxes.get(e.target);
    if (!a || !b) continue;
    const isTaken = taken.has(e);
    let d;
    let mid;
    if (a === b) {
      const x = a.x + a.w / 2;
      d = `M${x - 20},${a.y} C${x - 30},${a.y - 40} ${x + 30},${a.y - 40} ${x + 20},${a.y}`;
      mid = { x, y: a.y - 34 };
    } else {
      const p = clip(a, { x: b.x + b.w / 2, y: b.y + b.h / 2 });
      const q = clip(b, { x: a.x + a.w / 2, y: a.y + a.h / 2 });
      d = `M${p.x},${p.y} L${q.x},${q.y}`;
      mid = { x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 };
    }
    const g = h("g", { class: isTaken ? "edge taken" : "edge", "data-edge": `${e.source}->${e.target}`, "data-label": e.label || "" },
      h("path", { d, "marker-end": isTaken ? "url(#arrow-taken)" : "url(#arrow)" }));
    if (e.label) {
      // Several transitions between the same two states (an outcome and a `catch`): their
      // labels are stacked, not drawn over each other.
      const pair = [e.source, e.target].sort().join("\u0000");
      const nth = pairs.get(pair) || 0;
      pairs.set(pair, nth + 1);
      g.append(h("text", { x: mid.x, y: mid.y - 4 + nth * 13, "text-anchor": "middle", class: "edge-label" }, e.label));
    }
    svg.append(g);
  }
  for (const [id, b] of boxes) {
    const data = b.node.data || {};
    const kind = (data.config && data.config.type) || data.type || "";
    const cls = ["node", `kind-${String(data.type || "state")}`];
    if (visited.has(id)) cls.push("visited");
    if (id === current) cls.push("current");
    if (id === current && status === "FAILED") cls.push("failed");
    svg.append(h("g", { class: cls.join(" "), "data-state": id },
      h("title", {}, `${id} (${kind})${id === current ? ", current" : visited.has(id) ? ", visited" : ""}`),
      h("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: 8 }),
      nameText(b, String(data.name || id)),
      h("text", { x: b.x + b.w / 2, y: b.y + b.h / 2 + 13, "text-anchor": "middle", class: "node-kind" }, kind)));
  }
  return svg;
}

function nameText(b, name) {
  const { text, px } = fitName(name, b.w);
  const t = h("text", { x: b.x + b.w / 2, y: b.y + b.h / 2 - 3, "text-anchor": "middle", class: "node-name" }, text);
  // Through the CSS object model: the page's Content-Security-Policy refuses style attributes.
  if (px < 14) t.style.fontSize = `${px.toFixed(1)}px`;
  return t;
}

/**
 * The edges the run went along. Between two states the edge of the outcome the first ended
 * with (`on:`), or of its error kind (`catch <kind>`); a condition's rule or `else`, or a
 * move whose outcome no edge names, takes the only edge between the two, else all of them.
 */
function takenEdges(edges, path, moves) {
  const taken = new Set();
  const between = (from, to) => edges.filter((e) => e.source === from && e.target === to);
  if (!moves) {
    for (let i = 1; i < path.length; i++) for (const e of between(path[i - 1], path[i])) taken.add(e);
    return taken;
  }
  for (const m of moves) {
    const all = between(m.from, m.to);
    const named = all.filter((e) => m.outcome && (e.label === m.outcome || e.label === `catch ${m.outcome}`));
    for (const e of named.length ? named : all) taken.add(e);
  }
  return taken;
}
