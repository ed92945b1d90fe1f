// Workflows: every document of the project with its validation diagnostics, each one's
// graph, a form to start it, and the project's triggers (schedules, webhooks, events) with
// their deliveries.

import { ApiError, getJson, getText, post, projectBase, putText } from "./api.js";
import { badge, errorBox, h, json, mount, runHref, time, workflowHref } from "./dom.js";
import { drawGraph } from "./graph.js";

export async function workflowsView(ctx, view) {
  const base = projectBase(ctx);
  const list = h("div", { id: "workflow-list" });
  const triggers = h("div", { id: "triggers" });
  mount(view, h("section", { "aria-labelledby": "wf-title" },
    h("h2", { id: "wf-title" }, "Workflows"), list,
    h("h2", { id: "tr-title" }, "Triggers"), triggers));
  let docs;
  try {
    docs = await getJson(`${base}/workflows`, ctx.signal);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    mount(list, errorBox(e instanceof ApiError && e.status === 404
      ? new Error("This server does not list workflows.") : e));
    docs = null;
  }
  if (docs) {
    mount(list, h("table", { class: "workflows" },
      h("thead", {}, h("tr", {}, ["Name", "Document", "Source", "Valid", "Diagnostics"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, docs.map((w) => h("tr", { "data-workflow": w.name, class: w.valid ? "" : "invalid" },
        h("td", {}, h("a", { href: workflowHref(ctx, w.name) }, w.name),
          w.archived ? h("span", { class: "tag" }, "archived") : null,
          w.hasDraft ? h("span", { class: "tag" }, "draft") : null,
          w.description ? h("div", { class: "muted" }, w.description) : null),
        h("td", { class: "mono" }, w.path || ""),
        h("td", {}, w.source || ""),
        h("td", {}, w.valid ? badge("VALID") : badge("INVALID")),
        h("td", {}, diagnostics(w)))))));
  }
  await triggerList(ctx, triggers, `${base}/triggers`);
}

function diagnostics(w) {
  const ds = w.diagnostics || [];
  if (!ds.length) return "";
  return h("ul", { class: "diagnostics" }, ds.map((d) => h("li", { class: `diag-${d.severity || "error"}` },
    h("span", { class: "mono" }, `${w.path || w.name}:${d.line ?? "?"}:${d.column ?? "?"}`),
    ` ${d.severity || "error"} `, d.code ? h("span", { class: "mono" }, `[${d.code}] `) : null,
    d.message || "")));
}

export async function workflowView(ctx, view, name) {
  const base = projectBase(ctx);
  const graphBox = h("div", { class: "graph-box", id: "workflow-graph" });
  const triggers = h("div");
  const diag = h("div");
  const starter = h("div");
  const editor = h("div");
  mount(view, h("article", { "aria-labelledby": "wfd-title" },
    h("p", {}, h("a", { href: "#/workflows" }, "← Workflows")),
    h("h2", { id: "wfd-title" }, name), diag, starter,
    h("section", { "aria-labelledby": "wfg-title" }, h("h3", { id: "wfg-title" }, "Graph"), graphBox),
    h("section", { "aria-labelledby": "wft-title" }, h("h3", { id: "wft-title" }, "Triggers"), triggers),
    h("section", { "aria-labelledby": "wfe-title" }, h("h3", { id: "wfe-title" }, "Document"), editor)));
  // The list's entry, graph and start form follow the document: loaded now, and again after
  // a save, so that the next run started here takes the saved defaults.
  const load = async () => {
    let w = null;
    let listError = null;
    try {
      const docs = await getJson(`${base}/workflows`, ctx.signal);
      w = (docs || []).find((d) => d.name === name) || null;
      mount(diag, w && (w.diagnostics || []).length ? diagnostics(w) : null);
    } catch (e) {
      if (e.name === "AbortError") throw e;
      listError = e;
    }
    let config = {};
    try {
      const g = await getJson(`${base}/workflows/${encodeURIComponent(name)}/graph?format=reactflow`, ctx.signal);
      config = g.config || {};
      mount(graphBox, drawGraph(g, null, []));
    } catch (e) {
      if (e.name === "AbortError") throw e;
      mount(graphBox, errorBox(e));
    }
    mount(starter, ctx.scopes.includes("workflow.run") && w && w.valid && !w.archived
      ? startForm(ctx, base, name, config.parameters || {})
      : null);
    return { w, listError };
  };
  const { w, listError } = await load();
  await triggerList(ctx, triggers, `${base}/workflows/${encodeURIComponent(name)}/triggers`);
  if (listError) {
    // Whether a document exists is not this token's to know (a missing scope, …): said as is.
    mount(editor, errorBox(listError));
    return;
  }
  await documentEditor(ctx, editor, base, name, w, load);
}

/**
 * The workflow's YAML document (`_vance/workflows/<name>.yaml`) as text, the reference's
 * document editor: a token with `workflow.write` saves it through the documents API, which
 * validates it first and answers a refusal with its `path:line:column` diagnostics; other
 * tokens read it. A document the project takes from its tenant is not the project's to edit.
 * After a save, `reload` shows the saved document's graph, diagnostics and start form.
 */
async function documentEditor(ctx, box, base, name, w, reload) {
  if (!w) {
    mount(box, h("p", { class: "muted" }, "No document of this name in the project (a workflow written in code has none)."));
    return;
  }
  if (w.source === "tenant") {
    mount(box, h("p", { class: "muted" }, "The document is the tenant's (_tenant/_vance/workflows/), not this project's to edit."));
    return;
  }
  const path = `${base}/documents/workflows/${encodeURIComponent(name)}.yaml`;
  let text;
  try {
    text = await getText(path, ctx.signal);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    mount(box, errorBox(e));
    return;
  }
  const writable = ctx.scopes.includes("workflow.write");
  const area = h("textarea", {
    id: "document-text", rows: "18", spellcheck: "false", class: "mono",
    "aria-label": `_vance/workflows/${name}.yaml`,
  });
  area.value = text;
  area.readOnly = !writable;
  const msg = h("div", { "aria-live": "polite", id: "document-message" });
  if (!writable) {
    mount(box, h("p", { class: "muted" }, `_vance/workflows/${name}.yaml (read only: saving takes workflow.write)`), area);
    return;
  }
  const button = h("button", { type: "submit", id: "document-save" }, "Save");
  const form = h("form", { class: "document-form" },
    h("p", { class: "muted" }, `_vance/workflows/${name}.yaml: runs started after a save use it; runs in flight keep the definition they started with.`),
    area, button, msg);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    button.disabled = true;
    try {
      const r = await putText(path, area.value);
      const warnings = (r && r.warnings) || [];
      mount(msg, h("p", { class: "ok" }, "Saved."),
        warnings.length ? h("ul", { class: "diagnostics" }, warnings.map((d) =>
          h("li", { class: "diag-warning" }, typeof d === "string" ? d : d.message || JSON.stringify(d)))) : null);
      await reload();
    } catch (e) {
      mount(msg, errorBox(e), e.diagnostics && e.diagnostics.length
        ? h("ul", { class: "diagnostics" }, e.diagnostics.map((d) => h("li", { class: "diag-error" },
          typeof d === "string" ? d : `${d.path || ""}:${d.line ?? "?"}:${d.column ?? "?"} [${d.code || ""}] ${d.message || ""}`)))
        : null);
    } finally {
      button.disabled = false;
    }
  });
  mount(box, form);
}

async function triggerList(ctx, box, path) {
  let data;
  try {
    data = await getJson(path, ctx.signal);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    mount(box, errorBox(e));
    return;
  }
  const items = data.triggers || [];
  if (!items.length) {
    mount(box, h("p", {}, "No schedules, webhooks or event subscriptions."));
    return;
  }
  // The cells that move on while the view stays open: a schedule's next fire and each
  // trigger's last delivery, read again every 5 s (the rest of the row stays as it is, so
  // an opened delivery list is kept).
  const moving = new Map();
  const nextFire = (t) => (t.nextFireMs ? time(t.nextFireMs) : "");
  const lastDelivery = (t) => (t.lastDelivery ? `${t.lastDelivery.status} ${time(t.lastDelivery.atMs)}` : "");
  const refresh = async () => {
    while (!ctx.signal.aborted) {
      await new Promise((r) => setTimeout(r, 5000));
      if (ctx.signal.aborted) return;
      let again;
      try {
        again = await getJson(path, ctx.signal);
      } catch (e) {
        continue;
      }
      for (const t of again.triggers || []) {
        const cells = moving.get(t.id || t.name);
        if (!cells) continue;
        cells.next.textContent = nextFire(t);
        cells.last.textContent = lastDelivery(t);
      }
    }
  };
  mount(box, h("table", { class: "triggers" },
    h("thead", {}, h("tr", {}, ["Trigger", "Kind", "Workflow", "Enabled", "Next fire", "Last delivery", ""].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, items.map((t) => {
      const out = h("div");
      const next = h("td", { class: "next-fire" }, nextFire(t));
      const last = h("td", { class: "last-delivery" }, lastDelivery(t));
      moving.set(t.id || t.name, { next, last });
      return h("tr", {},
        h("td", {}, t.name || t.id),
        h("td", {}, t.triggerType || ""),
        h("td", {}, t.workflow || ""),
        h("td", {}, t.paused ? "paused" : t.active === false ? "inactive" : "yes",
          // Why it cannot fire (a missing setting, an archived workflow), as the server says.
          t.error ? h("div", { class: "error" }, t.error)
            : t.workflowArchived ? h("div", { class: "muted" }, "its workflow is archived")
            : t.enabledInDocument === false ? h("div", { class: "muted" }, "enabled: false in its document")
            : null),
        next,
        last,
        h("td", {}, t.id ? h("button", { type: "button", onclick: async () => {
          try {
            const d = await getJson(`/v1/workflow-triggers/${encodeURIComponent(t.id)}/deliveries`, ctx.signal);
            mount(out, json(d.deliveries));
          } catch (e) {
            mount(out, errorBox(e));
          }
        } }, "Deliveries") : null, out));
    }))));
  refresh();
}

/**
 * A starting value for each parameter: its default; a required one without a default is
 * offered as `null`, to fill in: sent as it is, the server refuses it as missing, where an
 * empty value of its type ("" or 0) would start a run with it.
 */
function paramsTemplate(parameters) {
  const out = {};
  for (const [key, spec] of Object.entries(parameters)) {
    if (spec && "default" in spec) out[key] = spec.default;
    else if (spec && spec.required) out[key] = null;
  }
  return out;
}

/** The form that starts a run of `name` with the parameters written as a JSON object. */
function startForm(ctx, base, name, parameters) {
  const area = h("textarea", { id: "start-params", rows: "6", cols: "60", spellcheck: "false" });
  area.value = JSON.stringify(paramsTemplate(parameters), null, 2);
  const msg = h("div", { "aria-live": "polite" });
  const button = h("button", { type: "submit", id: "start-run" }, "Start");
  const form = h("form", { class: "start-form" },
    h("label", { for: "start-params" }, "Parameters (a JSON object)"), area, button, msg);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    // One start at a time: a second click while the first is on its way starts nothing.
    if (button.disabled) return;
    let params;
    try {
      params = area.value.trim() ? JSON.parse(area.value) : {};
    } catch (e) {
      mount(msg, errorBox(new Error(`The parameters are not JSON: ${e.message}`)));
      return;
    }
    if (params === null || typeof params !== "object" || Array.isArray(params)) {
      mount(msg, errorBox(new Error("The parameters must be a JSON object, such as {\"who\": \"world\"}.")));
      return;
    }
    button.disabled = true;
    try {
      const r = await post(`${base}/workflows/${encodeURIComponent(name)}/start`, { params });
      mount(msg, h("p", { class: "ok" }, "Started: ",
        h("a", { href: runHref(ctx, r.workflowRunId), class: "mono", id: "started-run" }, r.workflowRunId)));
    } catch (e) {
      mount(msg, errorBox(e));
    } finally {
      button.disabled = false;
    }
  });
  return h("section", { "aria-labelledby": "wfs-title" }, h("h3", { id: "wfs-title" }, "Start a run"), form);
}
