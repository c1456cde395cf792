// The console's entry: sign in with a key, learn its role from GET /v1/account, show that role's
// views, refresh the visible one every REFRESH_MS (or the view's own refreshMs), sign out.

import { ApiError, REFRESH_MS, get, session } from "./api.js";
import { el, fill } from "./dom.js";
import { operatorViews } from "./operator.js";
import { tenantViews } from "./tenant.js";

const $ = (id) => document.getElementById(id);
let current = null; // { views, active, timer, stopped }

async function signIn(key) {
  session.save(key);
  let account;
  try {
    account = await get("/v1/account");
  } catch (error) {
    session.clear();
    throw error;
  }
  start(account);
}

function start(account) {
  $("sign-in").hidden = true;
  $("sign-out").hidden = false;
  const who = account.role === "operator" ? "operator" : `tenant ${account.tenant_name}`;
  fill($("who"), el("span", { class: `role ${account.role}`, id: "role", dataset: { role: account.role } }, who));
  const views = account.role === "operator" ? operatorViews() : tenantViews(account);
  const container = fill($("views"));
  for (const view of views) {
    view.node.hidden = true;
    view.node.classList.add("view");
    view.node.id = `view-${view.id}`;
    container.append(view.node);
  }
  current = { views, active: null, timer: null, stopped: false };
  fill($("tabs"), views.map((view) => el("button", {
    type: "button", id: `tab-${view.id}`, class: "tab", onclick: () => show(view.id),
  }, view.title)));
  show(views[0].id);
}

function show(id) {
  const state = current;
  if (!state) return;
  for (const view of state.views) {
    view.node.hidden = view.id !== id;
    $(`tab-${view.id}`).classList.toggle("active", view.id === id);
  }
  state.active = state.views.find((view) => view.id === id);
  clearTimeout(state.timer);
  refresh(state);
}

async function refresh(state) {
  if (state.stopped || !state.active) return;
  const view = state.active;
  try {
    await view.refresh();
    view.node.dataset.refreshed = String(Date.now());
    setProblem(view, null);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signOut("The key is no longer valid.");
    setProblem(view, error);
  }
  if (!state.stopped && state.active === view) {
    state.timer = setTimeout(() => refresh(state), view.refreshMs || REFRESH_MS);
  }
}

function setProblem(view, error) {
  let line = view.node.querySelector(":scope > .problem");
  if (!error) { if (line) line.remove(); return; }
  if (!line) { line = el("p", { class: "problem error", role: "alert" }); view.node.prepend(line); }
  line.textContent = `Could not refresh: ${error.message}`;
}

function signOut(message) {
  if (current) {
    current.stopped = true;
    clearTimeout(current.timer);
    for (const view of current.views) view.stop?.();
  }
  current = null;
  session.clear();
  fill($("views"));
  fill($("tabs"));
  fill($("who"));
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("key").value = "";
  $("sign-in-error").textContent = message || "";
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("sign-in-error").textContent = "";
  try {
    await signIn($("key").value.trim());
  } catch (error) {
    $("sign-in-error").textContent = error.status === 401 ? "Unknown, revoked or expired key." : error.message;
  }
});
$("sign-out").addEventListener("click", () => signOut());

if (session.key()) {
  // A reload in the same tab keeps the session; a new tab or window starts signed out.
  get("/v1/account").then(start, () => signOut());
}
