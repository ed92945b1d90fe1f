// One run: status, the graph with the current state and the path taken, the journal
// timeline, params/vars/result, sub-runs and parent, and the operator's buttons.

import { ApiError, events, get, getJson, post, projectBase } from "./api.js";
import { announce, badge, duration, ended, errorBox, h, json, mount, runHref, time } from "./dom.js";
import { drawGraph } from "./graph.js";

const JOURNAL_MAX = 5000; // records shown at most; the API pages beyond

export async function runView(ctx, view, id) {
  const base = `${projectBase(ctx)}/workflows/runs/${encodeURIComponent(id)}`;
  const head = h("div");
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Run actions" });
  const actionMsg = h("div", { "aria-live": "polite" });
  const graphBox = h("div", { class: "graph-box", id: "run-graph" });
  const facts = h("div", { class: "facts" });
  const links = h("div");
  const journalBody = h("tbody");
  const journalMore = h("p", { class: "muted" });
  mount(view, h("article", { "aria-labelledby": "run-title" },
    h("p", {}, h("a", { href: "#/runs" }, "← Runs")),
    head, actions, actionMsg,
    h("section", { "aria-labelledby": "graph-title" }, h("h3", { id: "graph-title" }, "Graph"), graphBox),
    links, facts,
    h("section", { "aria-labelledby": "journal-title" },
      h("h3", { id: "journal-title" }, "Journal"),
      h("table", { class: "journal", id: "journal" },
        h("thead", {}, h("tr", {}, ["#", "Time", "Record", "Step", "Attempt", "Outcome", "Details"]
          .map((t) => h("th", { scope: "col" }, t)))),
        journalBody),
      journalMore)));

  let run = await getJson(base, ctx.signal);
  const records = [];
  let graph = null;
  try {
    // The definition the run started with, not the document as it is now.
    graph = await getJson(`${base}/graph?format=reactflow`, ctx.signal);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    mount(graphBox, h("p", { class: "muted" }, `No graph: ${e.message}`));
  }

  function path() {
    return records.filter((r) => r.type === "StateEnteredRecord").map((r) => r.state);
  }

  // Each move between states with the outcome the state left with: the last final task
  // result journaled between entering it and entering the next.
  function moves() {
    const out = [];
    let from = null;
    let outcome = null;
    for (const r of records) {
      if (r.type === "TaskResultRecord" && r.final !== false) outcome = r.outcome;
      if (r.type !== "StateEnteredRecord") continue;
      if (from !== null) out.push({ from, to: r.state, outcome });
      from = r.state;
      outcome = null;
    }
    return out;
  }

  function render() {
    mount(head,
      h("h2", { id: "run-title" }, `${run.workflowName} `, badge(run.status)),
      h("p", { class: "mono", id: "run-id" }, run.workflowRunId),
      h("dl", { class: "meta" },
        dt("Current state", run.currentState || "—"),
        dt("Started by", run.startedBy || ""),
        dt("Started", time(run.createdAt)),
        run.finishedAt ? dt("Finished", time(run.finishedAt)) : null,
        dt("Duration", h("span", { id: "run-duration" }, duration((run.finishedAt || Date.now()) - run.createdAt))),
        run.reason ? dt("Reason", run.reason) : null,
        // The cause behind a reason such as "no transition for outcome 'permission_error'".
        run.lastError
          ? dt("Error", h("span", { id: "run-error" },
            `${run.lastError.name} attempt ${run.lastError.attempt}: ${run.lastError.outcome} — ${run.lastError.error}`))
          : null));
    if (graph) mount(graphBox, drawGraph(graph, run.currentState, path(), run.status, moves()));
    renderActions();
    const sub = run.subRuns || [];
    mount(links,
      run.parentRunId
        ? h("p", {}, "Sub-run of ", h("a", { href: runHref(ctx, run.parentRunId), class: "mono" }, run.parentRunId))
        : null,
      sub.length
        ? h("section", { "aria-labelledby": "subruns-title" }, h("h3", { id: "subruns-title" }, "Sub-runs"),
          h("ul", {}, sub.map((s) => h("li", {},
            h("a", { href: runHref(ctx, s.runId), class: "mono" }, s.runId),
            ` ${s.workflow || ""} from state ${s.state || "?"} `, s.status ? badge(s.status) : null))))
        : null);
    mount(facts,
      h("section", { "aria-labelledby": "params-title" }, h("h3", { id: "params-title" }, "Parameters"), json(run.params)),
      h("section", { "aria-labelledby": "vars-title" }, h("h3", { id: "vars-title" }, "Variables"), json(run.vars)),
      h("section", { "aria-labelledby": "result-title" }, h("h3", { id: "result-title" }, "Result"), json(run.result)));
  }

  function renderActions() {
    if (!ctx.scopes.includes("workflow.run")) {
      mount(actions);
      return;
    }
    // One action at a time: a second click while the first is on its way (a double click)
    // would start a second run, or be refused.
    const act = (label, route, body, ok) => h("button", {
      type: "button", "data-action": route,
      onclick: async () => {
        const buttons = [...actions.querySelectorAll("button")];
        if (buttons.some((b) => b.disabled)) return;
        for (const b of buttons) b.disabled = true;
        try {
          const r = await post(`${base}/${route}`, body);
          mount(actionMsg, h("p", { class: "ok" }, ok(r)));
          await refresh();
        } catch (e) {
          mount(actionMsg, errorBox(e));
          for (const b of buttons) b.disabled = false;
        }
      },
    }, label);
    const s = run.status;
    const again = !run.parentRunId;
    mount(actions,
      !ended(s) ? act("Cancel", "cancel", { reason: "cancelled from the web UI" }, () => "Cancellation requested.") : null,
      // A BLOCKED run is not paused (the server refuses it): it waits for a cancel.
      !ended(s) && s !== "PAUSED" && s !== "BLOCKED" ? act("Pause", "pause", { reason: "paused from the web UI" }, () => "Paused.") : null,
      s === "PAUSED" ? act("Resume", "resume", {}, () => "Resumed.") : null,
      // A retry begins again at the state the run ended in; which definition is the
      // operator's explicit choice.
      // A sub-run is retried or run again through its parent (the server refuses it).
      again && (s === "FAILED" || s === "CANCELLED") ? act("Retry (current definition)", "retry", { definition: "current" }, (r) => newRun("Retry", r)) : null,
      again && (s === "FAILED" || s === "CANCELLED") ? act("Retry (frozen definition)", "retry", { definition: "frozen" }, (r) => newRun("Retry", r)) : null,
      again && ended(s) ? act("Run again", "rerun", {}, (r) => newRun("Rerun", r)) : null);
  }

  function newRun(what, r) {
    const id2 = r && r.workflowRunId;
    return h("span", {}, `${what} started: `, id2 ? h("a", { href: runHref(ctx, id2), class: "mono" }, id2) : "");
  }

  function addRecord(r) {
    if (records.length >= JOURNAL_MAX) {
      journalMore.textContent = `Showing the first ${JOURNAL_MAX} records.`;
      return;
    }
    if (records.some((x) => x.seq === r.seq)) return;
    records.push(r);
    journalBody.append(recordRow(r));
  }

  // The journal as it stands, page by page, then live.
  let cursor = "";
  do {
    const q = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
    const page = await get(`${base}/journal${q}`, ctx.signal);
    for (const r of page.json || []) addRecord(r);
    cursor = page.headers.get("X-Next-Cursor") || "";
  } while (cursor && records.length < JOURNAL_MAX);
  render();

  // The duration of a run that has not ended goes on while it waits, is paused or runs a
  // long step: counted here between the records that redraw the page.
  const ticker = setInterval(() => {
    if (ctx.signal.aborted) { clearInterval(ticker); return; }
    const el = document.getElementById("run-duration");
    if (el && !run.finishedAt && !ended(run.status) && run.status !== "BLOCKED") el.textContent = duration(Date.now() - run.createdAt);
  }, 1000);
  ctx.signal.addEventListener("abort", () => clearInterval(ticker));

  let timer = null;
  async function refresh() {
    try {
      run = await getJson(base, ctx.signal);
      render();
      // A read that worked clears the failure of one before it (the server was away, and
      // is back); what an action answered stays.
      if (actionMsg.querySelector("[data-read-failed]")) mount(actionMsg);
    } catch (e) {
      if (e.name !== "AbortError") {
        const box = errorBox(e);
        box.dataset.readFailed = "1";
        mount(actionMsg, box);
      }
    }
  }
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 100);
  };
  follow();

  async function follow() {
    // The run's SSE stream replays the journal from the start, then follows it to the end.
    while (!ctx.signal.aborted) {
      try {
        await events(`${base}/events`, (name, rec) => {
          // The stream answers again: a read that failed while the server was away is over.
          if (actionMsg.querySelector("[data-read-failed]")) mount(actionMsg);
          if (name !== "record" || typeof rec !== "object") return;
          const fresh = !records.some((x) => x.seq === rec.seq);
          addRecord(rec);
          if (fresh) {
            announce(`${rec.type}${rec.state ? ` ${rec.state}` : ""}`);
            soon();
          }
        }, ctx.signal);
      } catch (e) {
        if (e.name === "AbortError") return;
        if (e instanceof ApiError && e.status === 429) {
          mount(actionMsg, errorBox(e));
        }
      }
      await refresh();
      if (ended(run.status)) return;
      // A BLOCKED run moves only when it is cancelled: looked at again less often.
      await new Promise((r) => setTimeout(r, run.status === "BLOCKED" ? 15000 : 2000));
    }
  }
}

function dt(term, value) {
  return [h("dt", {}, term), h("dd", {}, value)];
}

/** The outcomes of a step that failed. */
const FAILURES = ["technical_error", "business_error", "timeout", "failure", "cancelled"];

function recordRow(r) {
  const { seq, createdAt, type, step, attempt, outcome, ...rest } = r;
  const summary = r.state || r.name || r.status || r.task || "";
  const late = r.ignored || r.late || type === "IgnoredRecord" || type === "IgnoredAnswerRecord";
  const cls = [`rec-${type}`];
  // A failed attempt carries its error; a gate's `approved` or a decision's option is no
  // failure, whatever its word.
  if (r.error || FAILURES.includes(outcome) || (type === "StatusRecord" && r.status === "FAILED")) cls.push("rec-bad");
  if (late) cls.push("rec-ignored");
  return h("tr", { class: cls.join(" "), "data-type": type },
    h("td", {}, seq),
    h("td", {}, time(createdAt)),
    h("td", {}, type.replace(/Record$/, ""), summary ? h("span", { class: "muted" }, ` ${summary}`) : null),
    // A StartRecord's step is its parent's step (of a sub-run), not one of this run.
    h("td", {}, type === "StartRecord" ? "" : step ?? ""),
    h("td", {}, attempt ?? ""),
    h("td", {}, outcome ?? ""),
    h("td", {}, h("details", {}, h("summary", {}, "payload"), json(rest))));
}
