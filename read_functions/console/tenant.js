// A tenant's views: its subscriptions (status, age), subscribe and unsubscribe, one book live
// over the multiplexed stream in diff mode, a consolidated ladder (consolidated.js), and its usage
// against its limits with its requests and errors over the last hour. Routes: /v1/subscriptions,
// /v1/exchanges, /v1/markets, /v1/stream (ladder.v2), /v1/usage.

import { call, get, openBooks, path } from "./api.js";
import { consolidatedView } from "./consolidated.js";
import { DepthChart } from "./depth_chart.js";
import { age, badge, el, fill, meter, table } from "./dom.js";
import { LocalBook, OutOfSync } from "./local_book.js";
import { TimeChart, lastHourMinutes } from "./time_chart.js";

const DIFF_DEPTHS = [1, 5, 10, 20, 50, 100]; // the depths diff mode follows (docs/api.md)
const SILENT_MS = 3000; // quiet books are republished every second: this long without one is not live
const REOPEN_MS = 2000;

export function tenantViews(account) {
  const live = new LiveBook();
  return [booksView(live), consolidatedView(), usageView(account)];
}

function booksView(live) {
  const list = el("div");
  const problem = el("p", { class: "error", role: "alert" });
  const exchange = el("select", { name: "exchange", id: "subscribe-exchange", required: true });
  const markets = el("datalist", { id: "market-names" });
  const form = el("form", { id: "subscribe", class: "row", autocomplete: "off" },
    el("label", {}, "exchange ", exchange),
    el("label", {}, "market ", el("input", { name: "market", id: "subscribe-market", list: "market-names", required: true })),
    markets,
    el("label", {}, "replicas ", el("input", { name: "replicas", type: "number", min: 1, value: 1 })),
    el("label", {}, "depth ", el("input", { name: "depth", type: "number", min: 1, value: 100 })),
    el("button", { type: "submit" }, "Subscribe"));
  const node = el("section", {}, el("h2", {}, "Subscriptions"), form, problem, list, live.node);
  let exchangesLoaded = false;

  exchange.addEventListener("change", () => loadMarkets(exchange.value, markets).catch(() => {}));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { exchange: data.get("exchange"), market: String(data.get("market")).trim(),
      replicas: Number(data.get("replicas")), depth: Number(data.get("depth")) };
    try {
      await call("POST", "/v1/subscriptions", body);
      problem.textContent = "";
      await refresh();
    } catch (error) {
      problem.textContent = error.message;
    }
  });

  async function unsubscribe(sub) {
    if (live.showing(sub)) live.close();
    try {
      await call("DELETE", path("v1", "subscriptions", sub.exchange, sub.market));
      await refresh();
    } catch (error) {
      problem.textContent = error.message;
    }
  }

  async function refresh() {
    if (!exchangesLoaded) {
      const answer = await get("/v1/exchanges");
      fill(exchange, answer.exchanges.map((x) => el("option", { value: x }, x)));
      exchangesLoaded = true;
      await loadMarkets(exchange.value, markets);
    }
    const answer = await get("/v1/subscriptions");
    const now = Date.now();
    fill(list, table(["exchange", "market", "replicas", "depth", "status", "subscribed", ""],
      answer.subscriptions.map((s) => ({ attrs: { dataset: { book: `${s.exchange}/${s.market}`, status: s.status } },
        cells: [s.exchange, s.market, s.replicas, s.depth, badge(s.status), `${age(now - s.created_at)} ago`,
          el("span", { class: "actions" },
            el("button", { type: "button", class: "view-book", onclick: () => live.open(s) }, "View live"),
            el("button", { type: "button", class: "danger unsubscribe", onclick: () => unsubscribe(s) }, "Unsubscribe"))],
      })), { id: "subscriptions-table" }));
    live.statusIs(answer.subscriptions);
  }
  return { id: "books", title: "Books", node, refresh, stop: () => live.close() };
}

async function loadMarkets(exchange, datalist) {
  if (!exchange) return;
  const answer = await get(`/v1/markets?${new URLSearchParams({ exchange })}`);
  fill(datalist, answer.markets.filter((m) => m.status === "TRADING" || !m.status).map((m) => el("option", { value: m.market })));
}

/** The deepest diff-mode depth within the subscription's. */
function diffDepth(subscribed) {
  return DIFF_DEPTHS.filter((d) => d <= subscribed).pop() || DIFF_DEPTHS[0];
}

/** One book over the multiplexed stream in diff mode: kept as a LocalBook, checked against the
 * checksum after every message (a mismatch asks for a snapshot again, counted), and drawn as live
 * only while its subscription says synced, the stream has not said otherwise, and it speaks. */
class LiveBook {
  constructor() {
    this.chart = new DepthChart();
    this.title = el("h2", { id: "live-title" }, "Live book");
    this.status = el("span", { id: "live-status" });
    this.updateId = el("span", { id: "live-update-id", class: "mono" }, "–");
    this.age = el("span", { id: "live-age" }, "–");
    this.replica = el("span", { id: "live-replica" }, "–");
    this.verified = el("span", { id: "live-verified" }, "–");
    this.node = el("section", { id: "live-book", hidden: true, dataset: { mode: "diff" } }, this.title,
      el("p", { class: "facts" }, this.status, " update id ", this.updateId, " · age ", this.age, " · replica ", this.replica,
        " · ", this.verified, " ", el("button", { type: "button", onclick: () => this.close() }, "Close")),
      this.chart.node);
    this.book = null; // { exchange, market, depth }
    this.socket = null;
    this.local = null; // the LocalBook the stream keeps
    this.counts = { diffs: 0, snapshots: 0, mismatches: 0 };
    this.streamStatus = null; // what a status message said (null: the stream serves the book)
    this.latest = null; // { message, receivedAt }
    this.drawn = null;
    this.subscriptionStatus = "starting";
    this.reason = "";
    this.timer = null;
    this.reopen = null;
    addEventListener("resize", () => this.chart.resize());
  }

  showing(sub) {
    return this.book && this.book.exchange === sub.exchange && this.book.market === sub.market;
  }

  open(sub) {
    this.close();
    this.book = { exchange: sub.exchange, market: sub.market, depth: diffDepth(sub.depth) };
    this.counts = { diffs: 0, snapshots: 0, mismatches: 0 };
    this.subscriptionStatus = sub.status;
    this.node.hidden = false;
    this.title.textContent = `${sub.exchange} ${sub.market}`;
    this._connect();
    this.timer = setInterval(() => this._render(), 1000); // redraw at most once a second
    this._render();
  }

  close() {
    clearInterval(this.timer);
    clearTimeout(this.reopen);
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close(1000);
    this.book = this.local = this.streamStatus = null;
    this.latest = this.drawn = null;
    this.node.hidden = true;
    this.chart.destroy();
  }

  /** The latest poll of the subscriptions: the shown book's status from the API. */
  statusIs(subscriptions) {
    if (!this.book) return;
    const sub = subscriptions.find((s) => this.showing(s));
    this.subscriptionStatus = sub ? sub.status : "unsubscribed";
  }

  _subscribe(socket) {
    const { exchange, market, depth } = this.book;
    socket.send(JSON.stringify({ op: "subscribe", books: [{ exchange, market, depth, mode: "diff" }] }));
  }

  _connect() {
    const socket = this.socket = openBooks();
    this.local = new LocalBook();
    socket.addEventListener("open", () => this._subscribe(socket));
    socket.addEventListener("message", (event) => {
      if (socket === this.socket) this._take(socket, JSON.parse(event.data));
    });
    socket.addEventListener("close", (event) => {
      if (socket !== this.socket) return;
      this.socket = null;
      this.reason = event.code >= 4000 ? `stream closed (${event.code}): ${event.reason}` : "stream closed";
      this.reopen = setTimeout(() => this.book && this._connect(), REOPEN_MS);
    });
  }

  _take(socket, message) {
    if (message.type === "ack" || message.type === "error" || message.type === "unsubscribed") {
      const refused = message.type === "ack" ? message.results.find((r) => r.result === "refused") : message;
      if (refused) this.reason = `stream refused the book: ${refused.error.code}`;
      return;
    }
    try {
      this.local.apply(message);
    } catch (error) {
      if (!(error instanceof OutOfSync)) throw error;
      if (error.checksum) this.counts.mismatches += 1;
      this._subscribe(socket); // a fresh snapshot
      return;
    }
    if (message.type === "status") {
      this.streamStatus = message.status;
      return;
    }
    this.streamStatus = null;
    this.counts[message.type === "diff" ? "diffs" : "snapshots"] += 1;
    this.latest = { message: this.local.view(), receivedAt: Date.now() };
  }

  _render() {
    if (!this.book) return;
    const now = Date.now();
    const latest = this.latest;
    const silentFor = latest ? now - latest.receivedAt : Infinity;
    let state = this.subscriptionStatus;
    if (state === "synced" && this.streamStatus) state = this.streamStatus;
    if (state === "synced" && !this.socket) state = "disconnected";
    else if (state === "synced" && silentFor > SILENT_MS) state = latest ? "silent" : "waiting";
    const live = state === "synced";
    fill(this.status, badge(live ? "live" : state));
    this.status.dataset.status = live ? "live" : state;
    const { diffs, snapshots, mismatches } = this.counts;
    Object.assign(this.node.dataset, { diffs, snapshots, mismatches });
    this.verified.textContent = `${diffs} diffs, ${snapshots} snapshots checksum-verified`
      + (mismatches ? `, ${mismatches} mismatched (fetched again)` : "");
    if (latest) {
      const book = latest.message;
      this.updateId.textContent = String(book.update_id);
      this.age.textContent = age(book.age_ms + silentFor);
      this.replica.textContent = String(book.replica);
      if (live && latest !== this.drawn) {
        this.chart.draw(book);
        this.drawn = latest;
      }
    }
    if (!live) {
      const why = { silent: `no update for ${age(silentFor)}`, waiting: "waiting for the first update",
        disconnected: this.reason || "stream closed" }[state] || state;
      this.chart.setLive(false, why);
    } else if (this.drawn) {
      this.chart.setLive(true);
    }
  }
}

function usageView(account) {
  const limits = el("div");
  const chart = new TimeChart("chart-usage", "Requests per minute, last hour (dashed: of them, errors)", "per min");
  const node = el("section", {}, el("h2", {}, `Usage of ${account.tenant_name} against its limits`), limits,
    chart.node);
  addEventListener("resize", () => chart.resize());

  async function refresh() {
    const usage = await get("/v1/usage");
    const l = usage.limits;
    const minutes = lastHourMinutes();
    const byMinute = new Map(usage.minutes.map((m) => [m.minute, m]));
    const thisMinute = (byMinute.get(minutes[minutes.length - 1]) || { requests: 0 }).requests;
    fill(limits, table(["what", "used / limit"], [
      { cells: ["markets subscribed", meter(usage.markets, l.max_markets)] },
      { cells: ["replicas (most of any subscription)", meter(usage.most_replicas, l.max_replicas)] },
      { cells: ["depth (deepest subscription)", meter(usage.deepest, l.max_depth)] },
      usage.streams === undefined ? null : { cells: ["streams open", meter(usage.streams, l.max_streams)] },
      { cells: ["requests this minute", meter(thisMinute, Math.round(l.rate_limit_rps * 60), `rate limit ${l.rate_limit_rps}/s`)] },
      { cells: ["requests in total", usage.requests_total] },
    ].filter(Boolean), { id: "usage-table" }));
    chart.set(minutes, [
      { label: "requests", values: minutes.map((m) => (byMinute.get(m) || {}).requests || 0) },
      { label: "errors", dashed: true, values: minutes.map((m) => (byMinute.get(m) || {}).errors || 0) },
    ]);
  }
  return { id: "usage", title: "Usage", node, refresh, stop: () => chart.destroy() };
}
