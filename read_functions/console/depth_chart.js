// One book drawn live: a depth chart (uPlot, cumulative quantity against price) and a ladder of
// the best levels with the venue's exact strings. The chart's numbers are floats for drawing
// only; every figure written out is the string the API sent.

import uPlot from "./vendor/uPlot.esm.min.js";
import { el, fill } from "./dom.js";
import { PlotHolder } from "./plot.js";

const LADDER_LEVELS = 12;

export class DepthChart extends PlotHolder {
  constructor() {
    super(280);
    this.notice = el("div", { class: "not-live-notice", id: "not-live-notice", hidden: true });
    this.ladder = el("div", { class: "ladder", id: "ladder" });
    this.node = el("div", { class: "depth", id: "depth-chart" },
      el("div", { class: "plot-wrap" }, this.plotNode, this.notice), this.ladder);
  }

  /** Draw one book (the stream's JSON) as live. */
  draw(book) {
    const bids = book.bids.map(([p, q]) => [Number(p), Number(q)]).reverse(); // ascending price
    const asks = book.asks.map(([p, q]) => [Number(p), Number(q)]);
    const xs = [];
    const bidSum = [];
    const askSum = [];
    let total = bids.reduce((sum, [, q]) => sum + q, 0);
    for (const [price, quantity] of bids) { xs.push(price); bidSum.push(total); askSum.push(null); total -= quantity; }
    total = 0;
    for (const [price, quantity] of asks) { total += quantity; xs.push(price); bidSum.push(null); askSum.push(total); }
    this._ensurePlot();
    this.plot.setData([xs, bidSum, askSum]);
    this._drawLadder(book);
    this.setLive(true);
  }

  /** Mark the chart as not live (stale, resyncing, silent): greyed, with the reason on top. */
  setLive(live, reason = "") {
    this.node.classList.toggle("not-live", !live);
    this.node.dataset.live = String(live);
    this.notice.hidden = live;
    this.notice.textContent = live ? "" : `not live: ${reason}`;
  }

  _ensurePlot() {
    if (this.plot) return;
    const stepped = (align) => uPlot.paths.stepped({ align });
    this.plot = new uPlot({
      ...this._size(),
      scales: { x: { time: false } },
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      axes: [{ label: "price", size: 40, values: priceLabels }, { label: "cumulative quantity", size: 70 }],
      series: [
        {},
        { label: "bids", stroke: "#1a7f37", fill: "rgba(26, 127, 55, 0.18)", width: 1.5, paths: stepped(-1), spanGaps: false },
        { label: "asks", stroke: "#cf222e", fill: "rgba(207, 34, 46, 0.18)", width: 1.5, paths: stepped(1), spanGaps: false },
      ],
    }, [[], [], []], this.plotNode);
  }

  _drawLadder(book) {
    const row = (side, [price, quantity]) => el("tr", { class: side }, el("td", {}, price), el("td", {}, quantity));
    const asks = book.asks.slice(0, LADDER_LEVELS).reverse();
    const bids = book.bids.slice(0, LADDER_LEVELS);
    fill(this.ladder, el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "price"), el("th", {}, "quantity"))),
      el("tbody", {}, asks.map((l) => row("ask", l)), el("tr", { class: "spread" }, el("td", { colspan: 2 }, spread(book))),
        bids.map((l) => row("bid", l)))));
  }
}

/** Tick labels with as many decimals as the tick step needs (0.00891, not 0.009 five times). */
function priceLabels(_plot, ticks, _axis, _space, step) {
  const decimals = Math.min(12, Math.max(0, Math.ceil(-Math.log10(step))));
  return ticks.map((tick) => tick.toFixed(decimals));
}

function spread(book) {
  if (!book.bids.length || !book.asks.length) return "one side empty";
  return `best ${book.bids[0][0]} / ${book.asks[0][0]}`;
}
