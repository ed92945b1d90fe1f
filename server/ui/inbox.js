// The inbox: pending items with their kind, title, body, options and deadline, and the
// forms that answer them (shown only to a token with workflow.run).

import { getJson, post, projectBase } from "./api.js";
import { badge, errorBox, h, mount, runHref, time } from "./dom.js";
import { followTenant } from "./runs.js";

/** Makes `next` the children of `parent` without taking out the ones it keeps: a card being
 * typed in keeps its focus and what is typed next (taking a node out of the page drops its
 * focus, and putting it back does not restore it). Kept cards stay in their order. */
function keepInPlace(parent, next) {
  const wanted = new Set(next);
  for (const el of [...parent.children]) if (!wanted.has(el)) el.remove();
  let at = parent.firstElementChild;
  for (const el of next) {
    if (el === at) at = at.nextElementSibling;
    else parent.insertBefore(el, at);
  }
}

/** What an answer's reply says: applied, counted toward a quorum, or ignored. */
function answered(r) {
  if (r && r.pending && r.applied === false && !r.ignored) {
    const got = (r.pending.approvals || []).length;
    return `Approval counted: ${got} of the ${r.pending.quorum} the item needs. `;
  }
  if (r && r.applied === false) return "The answer was ignored (the item was no longer open, or this person had answered it). ";
  return "Answered: the run moves on. ";
}

export async function inboxView(ctx, view) {
  const base = projectBase(ctx);
  const list = h("div", { id: "inbox-items" });
  const live = h("span", { class: "live muted" });
  const message = h("div", { "aria-live": "polite", id: "inbox-message" });
  mount(view, h("section", { "aria-labelledby": "inbox-title" },
    h("div", { class: "title-row" }, h("h2", { id: "inbox-title" }, "Inbox"), live),
    message, list));
  const answering = new Set(); // items being answered (see `card`): not re-rendered

  // A token that may answer but not read (workflow.run without workflow.read) finds what
  // it may answer through Friday's approvals route, which takes workflow.run.
  const readable = ctx.scopes.includes("workflow.read");
  const here = `${ctx.tenant}/${ctx.project}`;
  async function pending() {
    if (readable) return getJson(`${base}/inbox`, ctx.signal);
    const approvals = await getJson("/v1/workflow-approvals?limit=1000", ctx.signal);
    return approvals.filter((a) => a.scope === here).map((a) => ({ ...a, status: a.inboxStatus || a.status }));
  }

  async function load() {
    let items;
    try {
      items = await pending();
    } catch (e) {
      if (e.name !== "AbortError") mount(message, errorBox(e));
      return;
    }
    // A read that worked clears a failure it follows (the server was away, and is back).
    if (message.querySelector(".error")) mount(message);
    const keep = new Map();
    for (const el of list.children) if (answering.has(el.dataset.item)) keep.set(el.dataset.item, el);
    // A card being answered whose item is no longer pending (answered elsewhere, expired)
    // stays, with what was typed, and says so: its answer would be ignored.
    const open = new Set(items.map((it) => it.id));
    const gone = [...keep.entries()].filter(([id]) => !open.has(id)).map(([, el]) => el);
    for (const el of gone) {
      if (!el.querySelector(".closed-elsewhere")) {
        el.append(h("p", { class: "error closed-elsewhere" },
          "This item is no longer open (answered elsewhere, or expired): an answer sent now is ignored."));
      }
    }
    if (!items.length && !gone.length) {
      mount(list, h("p", {}, "Nothing waiting for an answer."));
      return;
    }
    keepInPlace(list, [...items.map((it) => keep.get(it.id) || card(it)), ...gone]);
  }

  function card(it) {
    const canAnswer = ctx.scopes.includes("workflow.run");
    const el = h("article", { class: "card", "data-item": it.id, "aria-labelledby": `t-${it.id}` },
      h("h3", { id: `t-${it.id}` }, it.title || "(untitled)", " ", h("span", { class: "tag" }, it.kind)),
      it.body ? h("p", { class: "body" }, it.body) : null,
      h("dl", { class: "meta" },
        // A token that cannot read runs gets the run's id, not a link to a page it may not open.
        h("dt", {}, "Run"), h("dd", {}, readable
          ? h("a", { href: runHref(ctx, it.workflowRunId), class: "mono" }, it.workflowRunId)
          : h("span", { class: "mono" }, it.workflowRunId),
          ` ${it.workflowName || ""} · ${it.workflowState || ""}`),
        it.assignedTo ? [h("dt", {}, "Assigned to"), h("dd", {}, it.assignedTo)] : null,
        it.expiresAt ? [h("dt", {}, "Deadline"), h("dd", {}, time(it.expiresAt))] : null,
        h("dt", {}, "Status"), h("dd", {}, badge(it.status)),
        h("dt", {}, "Created"), h("dd", {}, time(it.createdAt))),
      canAnswer ? form(it) : h("p", { class: "muted" }, "This token cannot answer (it lacks workflow.run)."));
    // A card being answered — focused, holding text not yet sent, with its answer on the
    // way, or showing why its answer was refused — is kept as it is.
    const typed = () => [...el.querySelectorAll("textarea")].some((t) => t.value.trim() !== "");
    const busy = () => !!el.dataset.sending || !!el.querySelector(".error:not(.closed-elsewhere)");
    el.addEventListener("focusin", () => answering.add(it.id));
    el.addEventListener("input", () => answering.add(it.id));
    el.addEventListener("focusout", () => {
      setTimeout(() => {
        if (!el.contains(document.activeElement) && !typed() && !busy()) answering.delete(it.id);
      }, 0);
    });
    return el;
  }

  function form(it) {
    const idc = `c-${it.id}`;
    const comment = h("textarea", { id: idc, name: "comment", rows: 2 });
    const out = h("div", { "aria-live": "polite" });
    // One answer at a time: a second click while the first is on its way would be journaled
    // as ignored and reported as such. The card says it is sending (see `busy`), so the
    // list's refresh keeps it; `buttons` are the form's, made below.
    const send = async (body) => {
      const card = out.closest("article");
      if (!card || card.dataset.sending) return;
      card.dataset.sending = "1";
      answering.add(it.id);
      mount(out);
      for (const b of buttons) b.disabled = true;
      const c = comment.value.trim();
      if (c) body.comment = c;
      try {
        const r = await post(`${base}/inbox/${encodeURIComponent(it.id)}/answer`, body);
        answering.delete(it.id);
        mount(message, h("p", { class: "ok" }, answered(r),
          readable ? h("a", { href: runHref(ctx, it.workflowRunId) }, "Open the run") : null));
        await load();
      } catch (e) {
        mount(out, errorBox(e));
        for (const b of buttons) b.disabled = false;
      } finally {
        delete card.dataset.sending;
      }
    };
    const buttons = [];
    const kind = String(it.kind || "").toUpperCase();
    const options = (it.options || []).map((o) => (typeof o === "string" ? { value: o, label: o } : { value: o.value ?? o.id ?? o.label, label: o.label ?? o.value ?? o.id }));
    if (options.length) {
      for (const o of options) buttons.push(h("button", { type: "button", "data-answer": "choose", onclick: () => send({ kind: "choose", option: String(o.value) }) }, o.label));
    }
    let text = null;
    if (kind === "FEEDBACK" || kind === "TEXT" || kind === "INPUT" || (!options.length && kind !== "APPROVAL")) {
      text = h("textarea", { id: `x-${it.id}`, name: "text", rows: 3 });
      buttons.push(h("button", { type: "button", "data-answer": "text", onclick: () => {
        if (!text.value.trim()) { mount(out, errorBox(new Error("Write the feedback first."))); return; }
        send({ kind: "text", text: text.value });
      } }, "Send feedback"));
    }
    // Only an APPROVAL takes approve or reject: a FEEDBACK item refuses them.
    if (kind === "APPROVAL") {
      buttons.unshift(
        h("button", { type: "button", class: "primary", "data-answer": "approve", onclick: () => send({ kind: "approve" }) }, "Approve"),
        h("button", { type: "button", class: "danger", "data-answer": "reject", onclick: () => send({ kind: "reject" }) }, "Reject"));
    }
    buttons.push(
      h("button", { type: "button", "data-answer": "insufficient_info", onclick: () => send({ kind: "insufficient_info" }) }, "Need more information"));
    return h("form", { class: "answer", onsubmit: (e) => e.preventDefault(), "aria-label": `Answer ${it.title || it.id}` },
      text ? h("div", { class: "field" }, h("label", { for: `x-${it.id}` }, "Feedback"), text) : null,
      h("div", { class: "field" }, h("label", { for: idc }, "Comment (optional)"), comment),
      h("div", { class: "actions" }, buttons), out);
  }

  await load();
  if (readable) followTenant(ctx, live, load);
  else {
    const poll = setInterval(load, 3000);
    ctx.signal.addEventListener("abort", () => clearInterval(poll));
  }
}
