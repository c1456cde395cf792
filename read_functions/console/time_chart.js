// A figure over time, drawn with uPlot: a title, a time axis, a value axis with its unit, a line
// with each series' latest value, and a legend with the values under the cursor. Every history
// chart of the console and the tenant's usage chart are one of these.

import uPlot from "./vendor/uPlot.esm.min.js";
import { el, fill } from "./dom.js";
import { PlotHolder } from "./plot.js";

const PALETTE = ["#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#1b7c83", "#57606a"];
const HEIGHT = 220;

export class TimeChart extends PlotHolder {
  /** `id` names the chart for tests; `unit` labels the value axis. */
  constructor(id, title, unit) {
    super(HEIGHT);
    this.unit = unit;
    this.empty = el("p", { class: "empty-chart" }, "no data yet");
    this.latest = el("p", { class: "latest" });
    this.node = el("figure", { class: "time-chart", id },
      el("figcaption", {}, title), this.latest, this.plotNode, this.empty);
    this.labels = null;
    this.node.dataset.points = "0";
  }

  /** Draw `series` ([{label, values, dashed?}], values aligned with `times`, ms since the epoch). */
  set(times, series) {
    const labels = series.map((s) => s.label).join("\u0000");
    if (!this.plot || labels !== this.labels) this._build(series);
    this.labels = labels;
    this.plot.setData([times.map((t) => t / 1000), ...series.map((s) => s.values)]);
    const at = times.length ? new Date(times[times.length - 1]).toLocaleTimeString() : "";
    fill(this.latest, times.length ? `at ${at}: ` : "", series.map((s, i) => el("span", { class: "value" },
      el("span", { class: "swatch", dataset: { color: String(i % PALETTE.length) } }),
      `${s.label} ${show(s.values[s.values.length - 1], this.unit)}`)));
    this.node.dataset.points = String(times.length);
    this.empty.hidden = times.length > 0;
  }

  _build(series) {
    this.destroy();
    const unit = this.unit;
    this.plot = new uPlot({
      ...this._size(),
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, niceMax(max)] } },
      axes: [
        { label: "time (your clock)", size: 44 },
        { label: unit, size: 64, values: (_u, ticks) => ticks.map((t) => compact(t)) },
      ],
      series: [
        { label: "time", value: (_u, t) => (t === null ? "–" : new Date(t * 1000).toLocaleTimeString()) },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length],
          width: 1.5,
          dash: s.dashed ? [6, 4] : undefined,
          points: { show: false },
          value: (_u, v) => show(v, unit),
        })),
      ],
    }, [[], ...series.map(() => [])], this.plotNode);
  }
}

/** The start of each of the last 60 minutes, oldest first (ms). */
export function lastHourMinutes() {
  const now = Math.floor(Date.now() / 60000) * 60000;
  return Array.from({ length: 60 }, (_, i) => now - (59 - i) * 60000);
}

/** The top of a value axis: a little above the highest value, never zero (an empty chart). */
function niceMax(max) {
  if (!max || max <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(max));
  return Math.ceil((max * 1.1) / step) * step;
}

function show(value, unit) {
  return value === null || value === undefined ? "–" : `${compact(value)} ${unit}`;
}

/** 1234 -> "1.2k", 0.5 -> "0.5", 12 -> "12". */
function compact(value) {
  if (Math.abs(value) >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (Math.abs(value) >= 1e4) return `${(value / 1e3).toFixed(0)}k`;
  if (Math.abs(value) >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  return Number.isInteger(value) ? String(value) : value.toFixed(value < 1 ? 2 : 1);
}
