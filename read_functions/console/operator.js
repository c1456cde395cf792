// The operator's views: the cluster (nodes, weight budgets, publish latency), its last hour,
// every book's replicas and their disagreements, and the tenants with their usage, limits
// (editable), state and keys. Each figure comes from one documented route: /v1/admin/nodes,
// /v1/admin/egress, /v1/admin/history, /v1/admin/books, /v1/admin/tenants[/{id}[/usage|/keys]],
// /v1/admin/keys/{id}, /v1/admin/audit; the tenant form's fields from /openapi.json.

import { call, get, path } from "./api.js";
import { age, badge, bytes, el, fill, meter, ms, reasons, table } from "./dom.js";
import { TimeChart, lastHourMinutes } from "./time_chart.js";

export function operatorViews() {
  return [clusterView(), historyView(), booksView(), tenantsView()];
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
      ["node", "state", "replicas assigned", "replicas synced / kept", "CPU", "memory", "last heartbeat"],
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

const HISTORY_REFRESH_MS = 10000; // the control plane samples every 10 s
const STATUSES = ["synced", "resyncing", "stale", "starting", "refused"];
const TENANT_LINES = 6; // the busiest tenants of the hour

function historyView() {
  const latency = new TimeChart("chart-latency", "Ingest → publish latency: the slowest node's, over the minute before each point", "ms");
  const replicas = new TimeChart("chart-replicas", "Replicas by status", "replicas");
  const resyncs = new TimeChart("chart-resyncs", "Resyncs by reason, per sample (10 s)", "resyncs");
  const requests = new TimeChart("chart-requests", "Requests per minute by tenant (dashed: of them, errors)", "per min");
  const charts = [latency, replicas, resyncs, requests];
  const node = el("section", {}, el("h2", {}, "The last hour"),
    el("p", { class: "note" }, "Sampled every 10 s by the control plane from what the ingest nodes report; " +
      "requests and errors are the read workers' per-minute counts. Hover a chart for the values at that time."),
    el("div", { class: "charts" }, charts.map((c) => c.node)));
  addEventListener("resize", () => charts.forEach((c) => c.resize()));

  async function refresh() {
    const history = await get("/v1/admin/history");
    const samples = history.samples;
    const times = samples.map((s) => s.at);
    latency.set(times, ["p50", "p90", "p99"].map((p) => ({ label: p,
      values: samples.map((s) => highest(Object.values(s.latency_ms).map((e) => e[p]))) })));
    const seen = new Set(samples.flatMap((s) => Object.keys(s.replicas)));
    replicas.set(times, [...STATUSES.filter((st) => seen.has(st)), ...[...seen].filter((st) => !STATUSES.includes(st))]
      .map((status) => ({ label: status, values: samples.map((s) => s.replicas[status] || 0) })));
    const why = [...new Set(samples.flatMap((s) => Object.keys(s.resyncs)))].sort();
    resyncs.set(times, (why.length ? why : ["none"]).map((reason) => ({ label: reason,
      values: samples.map((s) => s.resyncs[reason] || 0) })));
    const minutes = lastHourMinutes();
    const busiest = history.tenants
      .map((t) => ({ ...t, total: t.minutes.reduce((sum, m) => sum + m.requests + m.errors, 0) }))
      .filter((t) => t.total > 0).sort((a, b) => b.total - a.total).slice(0, TENANT_LINES);
    requests.set(minutes, busiest.flatMap((t) => {
      const byMinute = new Map(t.minutes.map((m) => [m.minute, m]));
      const lines = [{ label: `${t.name} requests`, values: minutes.map((m) => (byMinute.get(m) || {}).requests || 0) }];
      if (t.minutes.some((m) => m.errors)) {
        lines.push({ label: `${t.name} errors`, dashed: true, values: minutes.map((m) => (byMinute.get(m) || {}).errors || 0) });
      }
      return lines;
    }));
  }
  return { id: "history", title: "History", node, refresh, refreshMs: HISTORY_REFRESH_MS,
    stop: () => charts.forEach((c) => c.destroy()) };
}

function highest(values) {
  const known = values.filter((v) => v !== null && v !== undefined);
  return known.length ? Math.max(...known) : null;
}

/** Why a replica is not synced and since when ("" when it is). */
function notSynced(replica, now) {
  if (replica.status === "synced" || !replica.status_reason) return replica.status === "synced" ? "" : "–";
  const since = replica.status_since_ms ? `, for ${age(now - replica.status_since_ms)}` : "";
  return `${replica.status_reason}${since}`;
}

/** "gap, 3 min ago" */
function lastResync(event, now) {
  return event ? `${event.reason}, ${age(now - event.at_ms)} ago` : "never";
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
  const listing = el("div");
  const disagreements = el("div");
  const node = el("section", {},
    el("h2", {}, "Books × replicas"), summary,
    el("label", { class: "inline" }, onlyTrouble, " only replicas that are not synced"), listing,
    el("h2", {}, "Replica disagreements (cross-checks and audits)"), disagreements);
  let last = null;
  onlyTrouble.addEventListener("change", () => last && render(last));

  function render(answer) {
    const counts = {};
    const rows = [];
    const now = Date.now();
    let total = 0;
    for (const book of answer.books) {
      for (const r of book.replicas) {
        total += 1;
        counts[r.status] = (counts[r.status] || 0) + 1;
        if (onlyTrouble.checked && r.status === "synced") continue;
        rows.push({ attrs: { dataset: { book: `${book.exchange}/${book.market}`, replica: r.replica, status: r.status } },
          cells: [book.exchange, book.market, r.replica, r.node_id || "–", badge(r.status),
            [notSynced(r, now), { class: "why" }], r.update_id ?? "–", age(r.age_ms), r.restarts ?? "–",
            [lastResync(r.last_resync, now), { class: "last-resync" }], reasons(r.resyncs),
            r.stale_episodes ?? "–", r.mismatches ?? "–"] });
      }
    }
    const books = answer.books.length;
    fill(summary, `${books} book${books === 1 ? "" : "s"}, ${total} replica${total === 1 ? "" : "s"}: `,
      Object.entries(counts).sort().map(([status, n]) => el("span", { class: "count" }, `${n} `, badge(status))));
    fill(listing, table(["exchange", "market", "replica", "node", "status", "not synced: why, since", "update id",
      "age", "resyncs", "last resync", "resyncs by reason", "stale episodes", "mismatches"], rows, { id: "books-table" }));
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

const AUDIT_SHOWN = 8; // the tenant's latest audit entries under its form

/** The tenant fields an operator may set, from the API's own schema (TenantUpdate in
 * /openapi.json), so a limit the server adds shows up here without a console change. */
async function tenantFields() {
  const doc = await get("/openapi.json");
  const props = doc.components.schemas.TenantUpdate.properties;
  return Object.entries(props).filter(([name]) => name !== "disabled" && name !== "name")
    .map(([name, schema]) => ({ name, label: name.replace(/_/g, " "), integer: schema.type === "integer",
      min: schema.minimum, max: schema.maximum, help: schema.description }));
}

function fieldInput(field, value) {
  return el("label", { title: field.help || "" }, `${field.label} `, el("input", {
    name: field.name, type: "number", min: field.min ?? (field.integer ? 1 : 0), max: field.max,
    step: field.integer ? 1 : "any", value: value ?? "", placeholder: value === undefined ? "default" : undefined,
  }));
}

function tenantsView() {
  const list = el("div");
  const keys = el("div", { id: "tenant-keys" });
  const editor = el("div", { id: "tenant-editor" });
  const created = el("div", { id: "new-key", role: "status" });
  const problem = el("p", { class: "error", role: "alert" });
  const form = el("form", { id: "create-tenant", class: "row", autocomplete: "off" });
  const node = el("section", {}, el("h2", {}, "Tenants"), form, problem, list, editor, created, keys);
  let fields = null; // from /openapi.json, once
  let selected = null; // the tenant whose keys are shown
  let editing = null; // the tenant whose limits are being edited

  async function ensureFields() {
    if (fields) return;
    fields = await tenantFields();
    fill(form, el("label", {}, "name ", el("input", { name: "name", required: true, maxlength: 64 })),
      fields.map((f) => fieldInput(f)), el("button", { type: "submit" }, "Create tenant"));
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { name: String(data.get("name")).trim() };
    for (const f of fields) if (String(data.get(f.name)) !== "") body[f.name] = Number(data.get(f.name));
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

  /** PATCH the tenant with `changes`; the answer replaces it everywhere it is shown. */
  async function update(tenant, changes) {
    try {
      const updated = await call("PATCH", path("v1", "admin", "tenants", tenant.id), changes);
      problem.textContent = "";
      if (editing && editing.id === updated.id) {
        editing = updated;
        await renderEditor(updated); // with the change in its audit trail
      }
      await refresh();
      return updated;
    } catch (error) {
      problem.textContent = error.message;
      return null;
    }
  }

  async function renderEditor(tenant) {
    // The operator's changes to this tenant are in the operator's scope of the log, each naming it.
    const audit = await get(`/v1/admin/audit?${new URLSearchParams({ scope: "operator", limit: "1000" })}`);
    const mine = audit.audit.filter((e) => e.target === tenant.id).slice(0, AUDIT_SHOWN);
    const edit = el("form", { id: "edit-tenant", class: "row", autocomplete: "off", dataset: { tenant: tenant.name } },
      fields.map((f) => fieldInput(f, tenant[f.name])),
      el("button", { type: "submit" }, "Save limits"),
      el("button", { type: "button", onclick: () => { editing = null; fill(editor); } }, "Close"));
    const said = el("p", { id: "edit-result", class: "note", role: "status" });
    edit.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = new FormData(edit);
      const changes = {};
      for (const f of fields) {
        const value = Number(data.get(f.name));
        if (String(data.get(f.name)) !== "" && value !== tenant[f.name]) changes[f.name] = value;
      }
      if (!Object.keys(changes).length) { said.textContent = "nothing changed"; return; }
      const updated = await update(tenant, changes);
      if (updated) {
        fill(editor.querySelector("#edit-result"), `saved: ${Object.keys(changes)
          .map((k) => `${k} ${tenant[k]} → ${updated[k]}`).join(", ")}`);
      }
    });
    fill(editor, el("h3", {}, `Limits of ${tenant.name} `, badge(tenant.disabled ? "disabled" : "active")),
      el("p", { class: "note" }, "Lowering a limit keeps the tenant's subscriptions; the scheduler caps what they keep."),
      edit, said,
      el("h3", {}, `Audit trail of ${tenant.name} (latest ${AUDIT_SHOWN})`),
      table(["when", "who", "what", "detail"], mine.map((e) => ({ attrs: { dataset: { action: e.action } }, cells: [
        new Date(e.at).toISOString().replace("T", " ").slice(0, 19), e.actor, e.action,
        [Object.entries(e.detail).map(([k, v]) => `${k}=${v}`).join(", "), { class: "mono" }],
      ] })), { id: "tenant-audit" }));
  }

  function openEditor(tenant) {
    editing = tenant;
    renderEditor(tenant).catch((error) => { problem.textContent = error.message; });
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
    await ensureFields();
    const answer = await get("/v1/admin/tenants");
    const usages = await Promise.all(answer.tenants.map((t) => get(path("v1", "admin", "tenants", t.id, "usage"))));
    fill(list, table(["tenant", "id", "state", "markets subscribed", "replicas (most asked)", "depth (deepest asked)",
      "streams open", "requests (this minute)", "rate limit", ""],
      answer.tenants.map((t, i) => {
        const u = usages[i];
        return { attrs: { dataset: { tenant: t.name, state: t.disabled ? "disabled" : "active" } }, cells: [
          t.name, [t.id, { class: "mono" }], badge(t.disabled ? "disabled" : "active"),
          meter(u.markets, t.max_markets), meter(u.most_replicas, t.max_replicas), meter(u.deepest, t.max_depth),
          u.streams === undefined ? "–" : meter(u.streams, t.max_streams), lastMinute(u), `${t.rate_limit_rps}/s, burst ${t.burst}`,
          el("span", { class: "actions" },
            el("button", { type: "button", class: "edit-tenant", onclick: () => openEditor(t) }, "Limits"),
            el("button", { type: "button", class: t.disabled ? "enable-tenant" : "danger disable-tenant",
              onclick: () => update(t, { disabled: !t.disabled }) }, t.disabled ? "Enable" : "Disable"),
            el("button", { type: "button", class: "show-keys", onclick: () => showKeys(t) }, "Keys")),
        ] };
      }), { id: "tenants-table" }));
    if (selected) await renderKeys(selected);
    if (editing) {
      const now = answer.tenants.find((t) => t.id === editing.id);
      if (now && (now.disabled !== editing.disabled || fields.some((f) => now[f.name] !== editing[f.name]))) {
        editing = now;
        await renderEditor(now);
      }
    }
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
