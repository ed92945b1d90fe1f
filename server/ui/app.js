// The application shell: sign-in, the tenant/project picker, and the views by URL hash
// (#/runs, #/run/<id>, #/inbox, #/workflows, #/workflow/<name>). A run's or a workflow's
// link names its project (`?project=<tenant>/<project>`), so it opens the same page in
// another tab; the project picker follows it.

import { ApiError, getJson, onTokenRefused, setToken, token } from "./api.js";
import { errorBox, mount } from "./dom.js";
import { runsView } from "./runs.js";
import { runView } from "./run.js";
import { inboxView } from "./inbox.js";
import { workflowsView, workflowView } from "./workflows.js";

const PROJECT_KEY = "magrathea.project";

/** What every view gets: tenant, project, the token's scopes and a signal ending with it. */
const ctx = { tenant: null, project: null, scopes: [], subject: "", me: null };
let current = null; // the AbortController of the view on screen

function $(id) {
  return document.getElementById(id);
}

/** Whether the token may act on runs (answer, cancel, pause, …). */
export function canRun(c) {
  return c.scopes.includes("workflow.run");
}

function showSignIn(message) {
  $("sign-in").hidden = false;
  $("nav").hidden = true;
  $("picker").hidden = true;
  mount($("view"));
  $("sign-in-error").textContent = message || "";
  $("token").focus();
}

let signingIn = false; // a refusal while signing in is said by signIn itself

async function signIn() {
  let me;
  try {
    signingIn = true;
    me = await getJson("/v1/me");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      setToken(null);
      showSignIn("That token was refused.");
      return;
    }
    if (e instanceof ApiError && e.status === 404) {
      me = null; // an older server without /v1/me: ask for the project by hand
    } else {
      showSignIn(`Could not sign in: ${e.message}`);
      return;
    }
  } finally {
    signingIn = false;
  }
  ctx.me = me;
  ctx.subject = me ? me.subject : "";
  ctx.scopes = me ? me.scopes || [] : ["workflow.read"];
  const choices = [];
  for (const t of (me && me.tenants) || []) {
    for (const p of t.projects || []) choices.push(`${t.name}/${p}`);
  }
  const select = $("project-select");
  mount(select, ...choices.map((c) => new Option(c, c)));
  if (!me) {
    // A server without /v1/me: the project chosen before in this tab, if any.
    const before = sessionStorage.getItem(PROJECT_KEY);
    if (before) {
      choices.push(before);
      select.append(new Option(before, before));
    }
  }
  const saved = sessionStorage.getItem(PROJECT_KEY);
  select.value = choices.includes(saved) ? saved : choices[0] || "";
  setProject(select.value);
  $("who").textContent = ctx.subject ? `Signed in as ${ctx.subject}` : "";
  $("sign-in").hidden = true;
  $("nav").hidden = false;
  $("picker").hidden = false;
  if (!location.hash || location.hash === "#") location.hash = "#/runs";
  else route();
}

// A token the server stops accepting during the session (revoked, the server restarted with
// other tokens) is forgotten wherever the refusal came from: the view on screen stops (its
// polls and streams end with its signal) and the sign-in form takes its place.
onTokenRefused(() => {
  if (signingIn || !token()) return;
  setToken(null);
  if (current) current.abort();
  showSignIn("The session's token is no longer accepted.");
});

function setProject(value) {
  const [tenant, ...rest] = String(value || "").split("/");
  ctx.tenant = tenant || null;
  ctx.project = rest.join("/") || null;
  if (value) sessionStorage.setItem(PROJECT_KEY, value);
}

function route() {
  if (!token()) {
    showSignIn();
    return;
  }
  if (current) current.abort();
  current = new AbortController();
  // Each view draws into a box of its own: a view left behind (still awaiting an answer)
  // draws into a box no longer on the page.
  const view = document.createElement("div");
  mount($("view"), view);
  const [path, query = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const named = new URLSearchParams(query).get("project");
  if (named && named !== `${ctx.tenant}/${ctx.project}`) {
    const select = $("project-select");
    if (![...select.options].some((o) => o.value === named)) {
      mount(view, errorBox(new Error(`This token gives no access to project ${named}.`)));
      return;
    }
    select.value = named;
    setProject(named);
  }
  let hash;
  try {
    hash = decodeURIComponent(path);
  } catch {
    mount(view, errorBox(new Error("This link is malformed: it names no page of the UI.")));
    return;
  }
  const [name, ...rest] = hash.split("/");
  const arg = rest.join("/");
  for (const a of document.querySelectorAll("#nav a")) {
    const on = a.dataset.view === name || (a.dataset.view === "runs" && name === "run") ||
      (a.dataset.view === "workflows" && name === "workflow");
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!ctx.tenant || !ctx.project) {
    mount(view, errorBox(new Error("This token gives access to no project.")));
    return;
  }
  const c = { ...ctx, signal: current.signal };
  let render;
  if (name === "run" && arg) render = runView(c, view, arg);
  else if (name === "inbox") render = inboxView(c, view);
  else if (name === "workflows") render = workflowsView(c, view);
  else if (name === "workflow" && arg) render = workflowView(c, view, arg);
  else render = runsView(c, view);
  Promise.resolve(render).catch((e) => {
    if (e.name === "AbortError") return;
    if (e instanceof ApiError && e.status === 401) {
      setToken(null);
      showSignIn("The session's token is no longer accepted.");
      return;
    }
    mount(view, errorBox(e));
  });
}

$("sign-in-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = $("token").value.trim();
  $("token").value = "";
  if (!t) return;
  setToken(t);
  signIn();
});

$("sign-out").addEventListener("click", () => {
  setToken(null);
  sessionStorage.removeItem(PROJECT_KEY);
  if (current) current.abort();
  location.hash = "";
  showSignIn("Signed out.");
});

$("project-select").addEventListener("change", (ev) => {
  setProject(ev.target.value);
  if (location.hash.startsWith("#/run/")) location.hash = "#/runs";
  else if (location.hash.startsWith("#/workflow/")) location.hash = "#/workflows";
  else route();
});

// The skip link moves the focus to the content: it must not become the view's address (the
// router would read `#main` as a view and leave the one on screen).
document.querySelector("a.skip").addEventListener("click", (event) => {
  event.preventDefault();
  $("main").focus();
});

window.addEventListener("hashchange", () => {
  if (token() && ctx.tenant) route();
});

if (token()) signIn();
else showSignIn();
