// A viewport's windows (viewport.js): the range a window may have, and what its subscribe or
// replace command states beside the range (the options the viewport states itself).

/**
 * @typedef {[first: number, last: number]} RowRange
 * @typedef {{ first: number, last: number, orderby: string | undefined, filter: string | undefined }} Window
 */

/** The rows of a viewport made without `rows`: a first screen and its margin. */
export const DEFAULT_ROWS = /** @type {RowRange} */ ([0, 99]);
/** The most rows one window may hold (the server's limit on `top_n`). */
export const MAX_ROWS = 10000;
/** Options the viewport states itself (a caller's are dropped, not doubled). */
export const OWN_OPTIONS = new Set(["positions", "count", "oof", "replace", "resume", "top_n", "skip_n"]);

/**
 * Check a range: integers, 0 <= first <= last, at most MAX_ROWS rows.
 * @param {number} first @param {number} last
 * @returns {string | null} what is wrong with it
 */
export function rangeProblem(first, last) {
  if (!Number.isInteger(first) || !Number.isInteger(last)) return `rows must be integers, not [${first}, ${last}]`;
  if (first < 0 || last < first) return `rows [${first}, ${last}]: need 0 <= first <= last`;
  if (last - first + 1 > MAX_ROWS) return `rows [${first}, ${last}]: at most ${MAX_ROWS} rows in one window`;
  return null;
}

/** @param {Window} a @param {Window} b */
export function sameWindow(a, b) {
  return a.first === b.first && a.last === b.last && a.orderby === b.orderby && a.filter === b.filter;
}

/** Split an option list at its commas, except those inside [...]. @param {string} text */
export function splitOptions(text) {
  /** @type {string[]} */
  const items = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const char = text[i];
    if (char === "[") depth += 1;
    else if (char === "]") depth = Math.max(0, depth - 1);
    else if ((char === "," && depth === 0) || i === text.length) {
      const item = text.slice(start, i).trim();
      if (item) items.push(item);
      start = i + 1;
    }
  }
  return items;
}

/**
 * Whether an OOF is of a row a change pushed across the window's edge, still in the view: the
 * server sends such a row as it is (reason "match", the record unchanged), and only from the
 * window's first row (when rows are above it) or its last (docs/protocol.md, Live windows).
 * @param {{ keys: string[], first: number, last: number }} window @param {any} message  the OOF
 * @param {any} held  the record the window held
 */
export function pushedAcross({ keys, first, last }, message, held) {
  const at = keys.indexOf(message.k);
  const edge = (at === 0 && first > 0) || (at >= 0 && at >= last - first);
  return edge && message.reason === "match" && sameRecord(message.data, held);
}

/**
 * Whether a `p` is of a row a change elsewhere pulled across the window's edge into it: sent as it
 * is, with the `ts` of its own last change (seconds or hours ago), not of the change that moved
 * it, so it is no latency. Such a row is one the window did not hold, in full, at the window's
 * first row (when rows are above it) or its last (docs/protocol.md, Live windows). A new record
 * placed at an edge reads the same and is left out too: a sample lost, never a false one.
 * @param {{ first: number, last: number }} window @param {any} message  the `p`
 * @param {boolean} held  whether the window held its record
 */
export function pulledAcross({ first, last }, message, held) {
  if (held || !("data" in message) || typeof message.pos !== "number") return false;
  return (message.pos === 1 && first > 0) || message.pos === last - first + 1;
}

/** Two records with the same fields and values, in any order. @param {any} a @param {any} b */
function sameRecord(a, b) {
  if (!a || !b || typeof a !== "object" || typeof b !== "object") return a === b;
  const fields = Object.keys(a);
  return fields.length === Object.keys(b).length && fields.every((field) => JSON.stringify(a[field]) === JSON.stringify(b[field]));
}
