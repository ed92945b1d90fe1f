// The runs list: newest first, filters, search by id, cursor paging, live updates.

import { ApiError, events, get, getJson, projectBase } from "./api.js";
import { announce, badge, duration, errorBox, h, mount, runHref, time } from "./dom.js";

const STATUSES = ["RUNNING", "WAITING", "PAUSED", "DONE", "FAILED", "CANCELLED", "BLOCKED"];
const PAGE = 25;

/** Filters survive navigation within the tab. */
const saved = { workflow: "", status: "", startedBy: "", since: "", until: "" };

function field(id, label, input) {
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

function epoch(local) {
  // A datetime-local value is local time; the API takes epoch ms.
  return local ? String(new Date(local).getTime()) : "";
}

export async function runsView(ctx, view) {
  const base = projectBase(ctx);
  const workflowNames = await workflowList(ctx).catch(() => []);
  const wf = h("input", { id: "f-workflow", name: "workflow", list: "workflow-names", value: saved.workflow });
  const names = h("datalist", { id: "workflow-names" }, workflowNames.map((n) => h("option", { value: n })));
  const status = h("select", { id: "f-status", name: "status" },
    h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s)));
  status.value = saved.status;
  const startedBy = h("input", { id: "f-started-by", name: "startedBy", value: saved.startedBy });
  const since = h("input", { id: "f-since", name: "since", type: "datetime-local", value: saved.since });
  const until = h("input", { id: "f-until", name: "until", type: "datetime-local", value: saved.until });
  const filters = h("form", { class: "filters", "aria-label": "Filter runs" },
    field("f-workflow", "Workflow", wf), names,
    field("f-status", "Status", status),
    field("f-started-by", "Started by", startedBy),
    field("f-since", "Started after", since),
    field("f-until", "Started before", until),
    h("button", { type: "submit" }, "Apply"));
  const runId = h("input", { id: "run-search", name: "runId", placeholder: "run id", required: true });
  const search = h("form", { class: "filters", role: "search", "aria-label": "Find a run by id" },
    field("run-search", "Run id", runId), h("button", { type: "submit" }, "Open"));
  const message = h("div", { "aria-live": "polite" });
  // What the search says stays until the next search: the list's reloads do not clear it.
  const found = h("div", { "aria-live": "polite", id: "run-search-message" });
  const body = h("tbody");
  const table = h("table", { class: "runs", id: "runs-table" },
    h("caption", { class: "sr-only" }, "Runs, newest first"),
    h("thead", {}, h("tr", {}, ["Run", "Workflow", "Status", "State", "Started by", "Started", "Duration"]
      .map((t) => h("th", { scope: "col" }, t)))),
    body);
  const prev = h("button", { type: "button", disabled: true }, "Newer");
  const next = h("button", { type: "button", disabled: true }, "Older");
  const pageInfo = h("span", { class: "muted" });
  const live = h("span", { class: "live muted" }, "");
  mount(view, h("section", { "aria-labelledby": "runs-title" },
    h("div", { class: "title-row" }, h("h2", { id: "runs-title" }, "Runs"), live),
    search, found, filters, message, table,
    h("nav", { class: "pager", "aria-label": "Pages" }, prev, pageInfo, next)));

  let cursors = [""]; // cursors[i] opens page i
  let page = 0;
  let nextCursor = null;

  async function load() {
    const q = new URLSearchParams();
    q.set("limit", String(PAGE));
    for (const [k, v] of Object.entries({
      workflow: saved.workflow, status: saved.status, startedBy: saved.startedBy,
      since: epoch(saved.since), until: epoch(saved.until), cursor: cursors[page],
    })) if (v) q.set(k, v);
    let r;
    try {
      r = await get(`${base}/workflows/runs?${q}`, ctx.signal);
    } catch (e) {
      if (e.name === "AbortError") return;
      mount(message, errorBox(e));
      return;
    }
    mount(message);
    nextCursor = r.headers.get("X-Next-Cursor");
    const now = Date.now();
    // The rows are drawn afresh at each poll: the run link that had the keyboard's focus has
    // it again in its new row, so that going through the list is not thrown back to its top.
    const focused = body.contains(document.activeElement)
      ? document.activeElement.closest("tr[data-run]")?.dataset.run : null;
    mount(body, (r.json || []).map((run) => row(ctx, run, now)));
    if (!(r.json || []).length) mount(body, h("tr", {}, h("td", { colspan: 7 }, "No runs.")));
    if (focused) {
      const again = [...body.querySelectorAll("tr[data-run]")]
        .find((tr) => tr.dataset.run === focused)?.querySelector("a");
      if (again) again.focus();
    }
    prev.disabled = page === 0;
    next.disabled = !nextCursor;
    pageInfo.textContent = `Page ${page + 1}`;
  }

  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    Object.assign(saved, { workflow: wf.value.trim(), status: status.value,
      startedBy: startedBy.value.trim(), since: since.value, until: until.value });
    cursors = [""];
    page = 0;
    load();
  });
  search.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const typed = runId.value.trim();
    // The list shows each id's first and last characters (`0195f3a2…9c41d7`): those open the
    // run they name, and so do first characters alone, when one run of the page has them.
    const [head, tail = ""] = typed.split("…");
    const listed = [...body.querySelectorAll("tr[data-run]")]
      .map((tr) => tr.dataset.run)
      .filter((id) => head && id.startsWith(head) && id.endsWith(tail));
    mount(found);
    if (listed.length > 1) {
      mount(found, errorBox(new Error(`${listed.length} runs of this page match ${typed}: give more of the id.`)));
      return;
    }
    const id = listed.length === 1 ? listed[0] : typed;
    try {
      await getJson(`${base}/workflows/runs/${encodeURIComponent(id)}`, ctx.signal);
      location.hash = runHref(ctx, id);
    } catch (e) {
      mount(found, errorBox(e instanceof ApiError && e.status === 404
        ? new Error(`No run ${typed} in this project.`) : e));
    }
  });
  next.addEventListener("click", () => {
    if (!nextCursor) return;
    cursors[page + 1] = nextCursor;
    page += 1;
    load();
  });
  prev.addEventListener("click", () => {
    if (page === 0) return;
    page -= 1;
    load();
  });

  await load();
  followTenant(ctx, live, () => load());
}

function row(ctx, run, now) {
  const end = run.finishedAt || now;
  const id = run.workflowRunId;
  return h("tr", { "data-run": id, "data-status": run.status },
    h("td", {}, h("a", { href: runHref(ctx, id), class: "mono", title: id, "aria-label": `Run ${id}` }, shortId(id)),
      run.parentRunId ? h("span", { class: "muted" }, " (sub-run)") : null),
    h("td", {}, run.workflowName),
    h("td", {}, badge(run.status)),
    h("td", {}, run.currentState || ""),
    h("td", {}, run.startedBy || ""),
    h("td", {}, time(run.createdAt)),
    h("td", {}, duration(end - run.createdAt)));
}

/**
 * Live updates: the tenant's event stream (`/v1/workflow-events`) asks for a reload on each
 * event; a slow poll covers what the stream does not announce (a run entering WAITING) and
 * a lost stream.
 */
export function followTenant(ctx, indicator, reload) {
  // Without workflow.read the lists are refused (the view says so once): nothing to follow.
  if (!ctx.scopes.includes("workflow.read")) return;
  let timer = null;
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(reload, 150);
  };
  const poll = setInterval(reload, 3000);
  ctx.signal.addEventListener("abort", () => {
    clearInterval(poll);
    clearTimeout(timer);
  });
  const path = `/v1/workflow-events?project=${encodeURIComponent(ctx.project)}`;
  const open = () => {
    if (ctx.signal.aborted) return;
    indicator.textContent = "● live";
    events(path, (name) => {
      if (name.startsWith("workflow.")) {
        announce(`Event ${name}`);
        soon();
      }
    }, ctx.signal)
      .catch(() => {})
      .finally(() => {
        indicator.textContent = "polling";
        if (!ctx.signal.aborted) setTimeout(open, 5000);
      });
  };
  open();
}

/** The workflow names of the project (empty when the route is missing). */
export async function workflowList(ctx) {
  const list = await getJson(`${projectBase(ctx)}/workflows`, ctx.signal);
  return (list || []).map((w) => w.name);
}

/** A run id as the list shows it: its first characters (the time it was made, shared by runs
 * started in the same millisecond, a parent and its sub-run often) and its last (random). */
function shortId(id) {
  return id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-6)}` : id;
}
