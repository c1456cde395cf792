// Small DOM and formatting helpers. Text goes in through textContent only, never as HTML, so a
// name or market from the API can never become markup or script.

/** An element with attributes (or event handlers: on* keys) and children (nodes or text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** A table: header names and rows of cells (each a node, text, or [value, attrs]). */
export function table(headers, rows, attrs = {}) {
  return el("table", attrs,
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows.length ? rows.map((row) => el("tr", row.attrs || {}, row.cells.map(cell)))
      : el("tr", {}, el("td", { colspan: headers.length, class: "empty" }, "none"))));
}

function cell(value) {
  if (Array.isArray(value)) return el("td", value[1], value[0]);
  return el("td", {}, value);
}

/** A status badge: synced, resyncing, stale, starting, live, down... */
export function badge(status) {
  return el("span", { class: `badge ${String(status).replace(/[^a-z-]/g, "")}`, dataset: { status } }, status);
}

/** A used/limit meter: a bar whose width is set through the CSS object model (CSP-safe). */
export function meter(used, limit, label) {
  const share = limit > 0 ? Math.min(1, used / limit) : 0;
  const bar = el("span", { class: share >= 0.9 ? "fill high" : "fill" });
  bar.style.width = `${(share * 100).toFixed(1)}%`;
  return el("span", { class: "meter", title: label || `${used} of ${limit}` },
    el("span", { class: "track" }, bar), el("span", { class: "figure" }, `${used} / ${limit}`));
}

/** "850 ms", "12 s", "4 min", "3 h", "2 d" */
export function age(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function ms(value) {
  return value === null || value === undefined ? "–" : `${value} ms`;
}

/** "gap 2, disconnect 1" from {reason: count}. */
export function reasons(counts) {
  const entries = Object.entries(counts || {}).filter(([, n]) => n > 0);
  return entries.length ? entries.map(([reason, n]) => `${reason} ${n}`).join(", ") : "–";
}
