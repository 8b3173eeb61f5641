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
