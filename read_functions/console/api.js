// The console's only way to the server: the documented API routes of this origin, with the key
// from session storage in a header. The key never goes into a URL or a cookie: sessionStorage
// lives in this tab alone and ends with it; the stream carries it as a WebSocket subprotocol.

const KEY = "ladder.console.key";
export const REFRESH_MS = 2000; // views poll no faster than this (the brief's floor is 1 s)

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const session = {
  key: () => sessionStorage.getItem(KEY),
  save: (key) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

/** One API call; resolves to the JSON answer (null for 204), rejects with an ApiError. */
export async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${session.key()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
    redirect: "error",
  });
  if (response.status === 204) return null;
  const answer = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (answer && answer.error) || {};
    throw new ApiError(response.status, error.code || "http_error", error.message || `HTTP ${response.status}`);
  }
  return answer;
}

export const get = (path) => call("GET", path);

/** A path from segments, each percent-encoded (a market such as BTC/USD stays one segment). */
export function path(...segments) {
  return `/${segments.map((s) => encodeURIComponent(s)).join("/")}`;
}

/** Open the multiplexed stream (ladder.v2: books subscribed by message); the key rides in the
 * subprotocol list, not the URL. */
export function openBooks() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return new WebSocket(`${scheme}//${location.host}/v1/stream`, ["ladder.v2", `ladder.key.${session.key()}`]);
}
