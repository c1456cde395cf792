// The operator's views: the cluster (nodes, weight budgets, publish latency), every book's
// replicas and their disagreements, and the tenants with their usage, limits and keys.
// Each figure comes from one documented route: /v1/admin/nodes, /v1/admin/egress,
// /v1/admin/books, /v1/admin/tenants[/{id}/usage|/keys], /v1/admin/keys/{id}.

import { call, get, path } from "./api.js";
import { age, badge, bytes, el, fill, meter, ms, reasons, table } from "./dom.js";

export function operatorViews() {
  return [clusterView(), booksView(), tenantsView()];
}

function clusterView() {
  const nodes = el("div");
  const egress = el("div");
  const latency = el("div");
  const node = el("section", {},
    el("h2", {}, "Ingest nodes"), nodes,
    el("h2", {}, "Weight budget per egress"), egress,
    el("h2", {}, "Ingest → publish latency (last minute)"), latency);
  const previous = new Map(); // node id -> its last process reading, for a CPU share

  async function refresh() {
    const [nodeList, budget] = await Promise.all([get("/v1/admin/nodes"), get("/v1/admin/egress")]);
    const now = Date.now();
    fill(nodes, table(
      ["node", "state", "books held", "synced", "CPU", "memory", "last heartbeat"],
      nodeList.nodes.map((n) => {
        const stats = n.stats || {};
        return { attrs: { dataset: { node: n.id } }, cells: [
          n.id,
          badge(!n.live ? "down" : n.draining ? "draining" : "up"),
          n.assignments.length,
          stats.replicas === undefined ? "–" : `${stats.synced} / ${stats.replicas}`,
          cpuShare(previous, n.id, stats.process),
          bytes(stats.process ? stats.process.rss_bytes : null),
          `${age(now - n.heartbeat_at)} ago`,
        ] };
      })));
    fill(egress, table(
      ["egress", "pool", "weight used / limit (this minute)", "window ends in", "closed for", "429", "418", "nodes"],
      budget.egress.map((p) => ({ attrs: { dataset: { pool: p.pool } }, cells: [
        p.egress_id, p.pool, meter(p.used, p.limit), age(p.window_ends_in_ms),
        p.closed_for_ms ? [age(p.closed_for_ms), { class: "error" }] : "–",
        p.refusals["429"], p.refusals["418"], p.nodes.join(", "),
      ] }))));
    const rows = [];
    for (const n of nodeList.nodes) {
      for (const [exchange, l] of Object.entries((n.stats && n.stats.publish_latency_ms) || {})) {
        rows.push({ cells: [n.id, exchange, l.count, ms(l.p50), ms(l.p90), ms(l.p99)] });
      }
    }
    fill(latency, table(["node", "exchange", "snapshots", "p50 ≤", "p90 ≤", "p99 ≤"], rows));
  }
  return { id: "cluster", title: "Cluster", node, refresh };
}

function cpuShare(previous, id, process) {
  if (!process) return "–";
  const last = previous.get(id);
  previous.set(id, process);
  if (!last || process.at_ms <= last.at_ms) return "…";
  return `${((100 * 1000 * (process.cpu_s - last.cpu_s)) / (process.at_ms - last.at_ms)).toFixed(0)} %`;
}

function booksView() {
  const summary = el("p", { class: "summary" });
  const onlyTrouble = el("input", { type: "checkbox", id: "only-trouble" });
  const books = el("div");
  const disagreements = el("div");
  const node = el("section", {},
    el("h2", {}, "Books × replicas"), summary,
    el("label", { class: "inline" }, onlyTrouble, " only replicas that are not synced"), books,
    el("h2", {}, "Replica disagreements (cross-checks and audits)"), disagreements);
  let last = null;
  onlyTrouble.addEventListener("change", () => last && render(last));

  function render(answer) {
    const counts = {};
    const rows = [];
    for (const book of answer.books) {
      for (const r of book.replicas) {
        counts[r.status] = (counts[r.status] || 0) + 1;
        if (onlyTrouble.checked && r.status === "synced") continue;
        rows.push({ attrs: { dataset: { book: `${book.exchange}/${book.market}`, replica: r.replica, status: r.status } },
          cells: [book.exchange, book.market, r.replica, r.node_id || "–", badge(r.status),
            r.update_id ?? "–", age(r.age_ms), r.restarts ?? "–", reasons(r.resyncs),
            r.stale_episodes ?? "–", r.mismatches ?? "–"] });
      }
    }
    fill(summary, `${answer.books.length} books: `,
      Object.entries(counts).sort().map(([status, n]) => el("span", { class: "count" }, badge(status), ` ${n}`)));
    fill(books, table(["exchange", "market", "replica", "node", "status", "update id", "age", "restarts",
      "resync reasons", "stale episodes", "mismatches"], rows, { id: "books-table" }));
    fill(disagreements, table(["exchange", "market", "replica", "node", "mismatches", "audit mismatches", "last audit"],
      answer.disagreements.map((d) => ({ cells: [d.exchange, d.market, d.replica, d.node_id || "–",
        d.mismatches ?? "–", d.audit_mismatches ?? "–", d.last_audit_ms ? new Date(d.last_audit_ms).toISOString() : "–"] }))));
  }

  async function refresh() {
    last = await get("/v1/admin/books");
    render(last);
  }
  return { id: "books", title: "Books", node, refresh };
}

const LIMIT_FIELDS = [
  ["max_markets", "max markets", 10], ["max_replicas", "max replicas", 2], ["max_depth", "max depth", 1000],
  ["rate_limit_rps", "requests/s", 10], ["burst", "burst", 20],
];

function tenantsView() {
  const list = el("div");
  const keys = el("div", { id: "tenant-keys" });
  const created = el("div", { id: "new-key", role: "status" });
  const problem = el("p", { class: "error", role: "alert" });
  const form = el("form", { id: "create-tenant", class: "row", autocomplete: "off" },
    el("label", {}, "name ", el("input", { name: "name", required: true, maxlength: 64 })),
    LIMIT_FIELDS.map(([name, label, value]) =>
      el("label", {}, `${label} `, el("input", { name, type: "number", min: 1, value, step: name === "rate_limit_rps" ? "any" : 1 }))),
    el("button", { type: "submit" }, "Create tenant"));
  const node = el("section", {}, el("h2", {}, "Tenants"), form, problem, list, created, keys);
  let selected = null; // the tenant whose keys are shown

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { name: String(data.get("name")).trim() };
    for (const [name] of LIMIT_FIELDS) body[name] = Number(data.get(name));
    try {
      const tenant = await call("POST", "/v1/admin/tenants", body);
      problem.textContent = "";
      form.reset();
      selected = tenant;
      await refresh();
    } catch (error) {
      problem.textContent = error.message;
    }
  });

  async function createKey(tenant) {
    try {
      const key = await call("POST", path("v1", "admin", "tenants", tenant.id, "keys"), {});
      problem.textContent = "";
      showKeyOnce(created, tenant, key);
      await renderKeys(tenant);
    } catch (error) {
      problem.textContent = error.message;
    }
  }

  async function revoke(tenant, key) {
    try {
      await call("DELETE", path("v1", "admin", "keys", key.id));
      await renderKeys(tenant);
    } catch (error) {
      problem.textContent = error.message;
    }
  }

  async function renderKeys(tenant) {
    const answer = await get(path("v1", "admin", "tenants", tenant.id, "keys"));
    fill(keys, el("h3", {}, `Keys of ${tenant.name}`),
      el("button", { type: "button", id: "create-key", onclick: () => createKey(tenant) }, "Create key"),
      table(["key", "created", "last used", "expires", "state", ""], answer.keys.map((k) => ({ cells: [
        `${k.prefix}…${k.last4}`, new Date(k.created_at).toISOString(),
        k.last_used_at ? `${age(Date.now() - k.last_used_at)} ago` : "never",
        k.expires_at ? new Date(k.expires_at).toISOString() : "never",
        badge(k.revoked_at ? "revoked" : "active"),
        k.revoked_at ? "" : el("button", { type: "button", class: "danger", onclick: () => revoke(tenant, k) }, "Revoke"),
      ] }))));
  }

  function showKeys(tenant) {
    selected = tenant;
    renderKeys(tenant).catch((error) => { problem.textContent = error.message; });
  }

  async function refresh() {
    const answer = await get("/v1/admin/tenants");
    const usages = await Promise.all(answer.tenants.map((t) => get(path("v1", "admin", "tenants", t.id, "usage"))));
    fill(list, table(["tenant", "id", "state", "markets", "replicas", "depth", "requests (last minute)", "rate limit", ""],
      answer.tenants.map((t, i) => {
        const u = usages[i];
        return { attrs: { dataset: { tenant: t.name } }, cells: [
          t.name, [t.id, { class: "mono" }], badge(t.disabled ? "disabled" : "active"),
          meter(u.markets, t.max_markets), meter(u.most_replicas, t.max_replicas), meter(u.deepest, t.max_depth),
          lastMinute(u), `${t.rate_limit_rps}/s, burst ${t.burst}`,
          el("button", { type: "button", class: "show-keys", onclick: () => showKeys(t) }, "Keys"),
        ] };
      }), { id: "tenants-table" }));
    if (selected) await renderKeys(selected);
  }
  return { id: "tenants", title: "Tenants", node, refresh };
}

function lastMinute(usage) {
  const minute = Math.floor(Date.now() / 60000) * 60000;
  const entry = usage.minutes.find((m) => m.minute === minute);
  return entry ? entry.requests : 0;
}

/** A new key, shown this once with a way to copy it; it is dropped from the page when dismissed. */
function showKeyOnce(container, tenant, created) {
  const value = el("code", { id: "new-key-value" }, created.key);
  fill(container, el("div", { class: "card once" },
    el("strong", {}, `New key for ${tenant.name}`), " — shown this once; store it now.", el("br"), value, " ",
    el("button", { type: "button", onclick: () => navigator.clipboard?.writeText(created.key).catch(() => {}) }, "Copy"), " ",
    el("button", { type: "button", onclick: () => fill(container) }, "Done")));
}
