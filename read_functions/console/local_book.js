// One book kept from the multiplexed stream's diff mode (ladder.v2, docs/api.md), as the SDK's
// LocalBook keeps it: a snapshot replaces the book, a diff applies only to the book at its
// prev_update_id of the same replica (each level sets its price's quantity, "0" deletes it), and
// after every message the CRC-32 of the best 10 levels a side must equal the message's checksum.
// Prices and quantities stay the exact strings the server sent; they are ordered exactly (as
// decimals, never as floats), so the checksum is over the same text the server's is.

const CHECKSUM_LEVELS = 10;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE, as zlib's crc32) of a string's UTF-8 bytes, unsigned. */
export function crc32(text) {
  let crc = 0xffffffff;
  for (const byte of new TextEncoder().encode(text)) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** Compare two non-negative decimal strings exactly: negative, 0 or positive as a < b, a = b, a > b. */
export function compareDecimals(a, b) {
  const [ai, af = ""] = a.split(".");
  const [bi, bf = ""] = b.split(".");
  const aInt = ai.replace(/^0+/, "");
  const bInt = bi.replace(/^0+/, "");
  if (aInt.length !== bInt.length) return aInt.length - bInt.length;
  if (aInt !== bInt) return aInt < bInt ? -1 : 1;
  const width = Math.max(af.length, bf.length);
  const aFrac = af.padEnd(width, "0");
  const bFrac = bf.padEnd(width, "0");
  return aFrac === bFrac ? 0 : aFrac < bFrac ? -1 : 1;
}

const isZero = (quantity) => !/[1-9]/.test(quantity);

/** A diff that does not continue the book, or a checksum that disagrees: fetch a snapshot again. */
export class OutOfSync extends Error {
  constructor(message, checksum) {
    super(message);
    this.checksum = checksum;
  }
}

export class LocalBook {
  constructor() {
    this.bids = new Map(); // price -> quantity, the exact strings
    this.asks = new Map();
    this.status = "starting";
    this.replica = null;
    this.updateId = null;
    this.message = null; // the last message applied (its times)
  }

  get synced() {
    return this.status === "synced" && this.updateId !== null;
  }

  /** Apply one book message (snapshot, diff or status); throws OutOfSync (the book is then void). */
  apply(message) {
    if (message.type === "status") {
      this.void(message.status);
      return;
    }
    if (message.type === "diff") {
      if (!this.synced || message.replica !== this.replica || message.prev_update_id !== this.updateId) {
        this.void("resyncing");
        throw new OutOfSync(`a diff from ${message.prev_update_id} does not continue the book at ${this.updateId}`, false);
      }
      set(this.bids, message.bids);
      set(this.asks, message.asks);
    } else if (message.type === "snapshot") {
      this.bids = new Map(message.bids);
      this.asks = new Map(message.asks);
    } else {
      throw new OutOfSync(`not a book message: ${message.type}`, false);
    }
    this.status = message.status;
    this.replica = message.replica;
    this.updateId = message.update_id;
    this.message = message;
    if (this.checksum() !== message.checksum) {
      this.void("resyncing");
      throw new OutOfSync(`checksum mismatch at ${message.update_id}`, true);
    }
  }

  void(status) {
    this.status = status;
    this.updateId = null;
    this.bids = new Map();
    this.asks = new Map();
  }

  /** The book as a one-book stream sends it: levels best first, as [price, quantity] strings. */
  view() {
    const { replica, message } = this;
    return { replica, update_id: this.updateId, age_ms: message.age_ms, bids: this.levels(this.bids, -1),
      asks: this.levels(this.asks, 1) };
  }

  levels(side, direction) {
    return [...side].sort(([a], [b]) => direction * compareDecimals(a, b));
  }

  checksum() {
    const text = [[this.bids, -1], [this.asks, 1]]
      .map(([side, direction]) => this.levels(side, direction).slice(0, CHECKSUM_LEVELS).map(([p, q]) => `${p}:${q}`).join(","))
      .join("|");
    return crc32(text);
  }
}

function set(side, levels) {
  for (const [price, quantity] of levels) {
    if (isZero(quantity)) side.delete(price);
    else side.set(price, quantity);
  }
}
