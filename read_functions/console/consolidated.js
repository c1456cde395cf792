// A tenant's consolidated ladder: one pair's books on several venues merged, each level's quantity
// split by venue in that venue's colour, with every book's update id and age and the books left
// out (and why). Routes: GET /v1/consolidated/{pair}, POST /v1/subscriptions/consolidated.

import { ApiError, call, get, path } from "./api.js";
import { age, badge, el, fill, table } from "./dom.js";

const DEFAULT_DEPTH = 20;
const COLOURS = 8; // .venue-0 ... .venue-7 in console.css

export function consolidatedView() {
  const problem = el("p", { class: "error", role: "alert", id: "consolidated-problem" });
  const form = el("form", { id: "consolidated-form", class: "row", autocomplete: "off" },
    el("label", {}, "pair ", el("input", { name: "pair", placeholder: "BTC-USDT", required: true, spellcheck: "false" })),
    el("label", {}, "venues ", el("input", { name: "venues", placeholder: "your books of the pair", spellcheck: "false" })),
    el("label", {}, "quotes ", el("input", { name: "quotes", placeholder: "the pair's own", spellcheck: "false" })),
    el("label", {}, "depth ", el("input", { name: "depth", type: "number", min: 1, max: 1000, value: DEFAULT_DEPTH })),
    el("button", { type: "submit" }, "Show"),
    el("button", { type: "button", id: "consolidated-subscribe", onclick: () => subscribe() }, "Subscribe on these venues"));
  const status = el("span", { id: "consolidated-status" });
  const crossed = el("span", { id: "consolidated-crossed" });
  const books = el("div", { id: "consolidated-books" });
  const leftOut = el("div", { id: "consolidated-left-out" });
  const ladder = el("div", { id: "consolidated-ladder", class: "ladder venues" });
  const board = el("div", { class: "depth consolidated" }, el("div", {}, books, leftOut), ladder);
  const node = el("section", {}, el("h2", {}, "Consolidated book"), form, problem,
    el("p", { class: "facts" }, status, crossed), board);
  let asked = null; // { pair, venues, quotes, depth }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    asked = question();
    problem.textContent = "";
    refresh().catch((error) => { problem.textContent = error.message; });
  });

  function question() {
    const data = new FormData(form);
    const list = (name) => String(data.get(name) || "").split(",").map((s) => s.trim()).filter(Boolean);
    return { pair: String(data.get("pair")).trim().toUpperCase(), venues: list("venues"), quotes: list("quotes"),
      depth: Number(data.get("depth")) || DEFAULT_DEPTH };
  }

  async function subscribe() {
    const wanted = question();
    if (!wanted.venues.length) { problem.textContent = "name the venues to subscribe the pair on"; return; }
    const body = { pair: wanted.pair, venues: wanted.venues };
    if (wanted.quotes.length) body.quotes = wanted.quotes;
    try {
      const answer = await call("POST", "/v1/subscriptions/consolidated", body);
      const failed = answer.results.filter((r) => r.result === "failed");
      problem.textContent = failed.map((r) => `${r.exchange}: ${r.error.message}`).join("; ");
      asked = wanted;
      await refresh();
    } catch (error) {
      problem.textContent = error.message;
    }
  }

  async function refresh() {
    if (!asked) return;
    const query = new URLSearchParams({ depth: String(asked.depth) });
    if (asked.venues.length) query.set("venues", asked.venues.join(","));
    if (asked.quotes.length) query.set("quotes", asked.quotes.join(","));
    let answer;
    try {
      answer = await get(`${path("v1", "consolidated", asked.pair)}?${query}`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      problem.textContent = error.message;
      showLive(false, error.code);
      return;
    }
    draw(answer);
  }

  function showLive(live, why) {
    fill(status, badge(live ? "live" : why));
    status.dataset.status = live ? "live" : why;
    board.classList.toggle("not-live", !live);
  }

  function draw(answer) {
    const colour = colours(answer);
    showLive(answer.books.length > 0, "no book synced");
    fill(crossed, answer.crossed ? el("span", { class: "badge crossed", title: "a venue's bid is above another's ask" }, "crossed") : null,
      answer.truncated ? " cut short where a book's levels end" : null);
    crossed.dataset.crossed = String(answer.crossed);
    fill(books, table(["", "book", "quote", "update id", "age", "replica"], answer.books.map((b) => ({
      attrs: { dataset: { book: b.id } },
      cells: [swatch(colour(b.exchange)), b.id, b.quote, [String(b.update_id), { class: "mono" }], age(b.age_ms), b.replica],
    })), { id: "consolidated-books-table" }));
    fill(leftOut, answer.left_out.length ? table(["left out", "why"], answer.left_out.map((b) => ({
      attrs: { dataset: { book: `${b.exchange}:${b.market || ""}`, code: b.code } },
      cells: [[b.exchange, {}], b.status ? badge(b.status) : b.code],
    })), { id: "consolidated-left-out-table" }) : null);
    const levels = [...answer.asks.slice().reverse().map((l) => [l, "ask"]), ...answer.bids.map((l) => [l, "bid"])];
    const most = Math.max(...levels.map(([l]) => Number(l[1])), 0) || 1;
    const rows = levels.map(([level, side]) => ({
      attrs: { class: side, dataset: { side, price: level[0] } },
      cells: [[venueBar(level, most, colour, answer.books), {}], level[1], level[0]],
    }));
    if (answer.bids.length && answer.asks.length) {  // between the best ask and the best bid
      rows.splice(answer.asks.length, 0, { attrs: { class: "spread" }, cells: [["", { colspan: 3 }]] });
    }
    fill(ladder, table(["venues", "quantity", "price"], rows, { id: "consolidated-ladder-table" }));
  }
  return { id: "consolidated", title: "Consolidated", node, refresh };
}

/** Each exchange's colour class, in the order of the exchange names of the answer (stable for one question). */
function colours(answer) {
  const names = [...new Set([...answer.books, ...answer.left_out].map((b) => b.exchange))].sort();
  return (exchange) => `venue-${names.indexOf(exchange) % COLOURS}`;
}

function swatch(colourClass) {
  return el("span", { class: `swatch ${colourClass}` });
}

/** A level's quantity split by book, each part as wide as its share of the view's largest level. */
function venueBar(level, most, colour, books) {
  const exchangeOf = Object.fromEntries(books.map((b) => [b.id, b.exchange]));
  return el("span", { class: "venue-bar" }, Object.entries(level[2]).map(([book, qty]) => {
    const part = el("span", { class: `part ${colour(exchangeOf[book])}`, title: `${book}: ${qty}`, dataset: { book } });
    part.style.width = `${Math.max(1, (100 * Number(qty)) / most).toFixed(1)}%`;
    return part;
  }));
}
