// A view's figures, at the right of its toolbar: its size, the changes it receives each second
// and their latency, publish to screen; in its ⋯ menu, the time since its last message.

import { formatAge, formatMs, formatNumber } from "/static/format.js";

export class Figures {
  /** @param {HTMLElement} view */
  constructor(view) {
    this.$ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (view.querySelector(selector));
    this.lastUpdates = 0;
    /** what the latency's tooltip says before it says of how many changes */
    this.latencyTitle = this.$(".latency-figure").title;
  }

  /** The view's size: its records, and its groups when grouped.
   * @param {import("/static/tree.js").RowTree} tree */
  count(tree) {
    const grouped = tree.grouping.length > 0;
    const rows = formatNumber(grouped ? tree.records() : tree.count, 0);
    if (this.$(".rows").textContent !== rows) this.$(".rows").textContent = rows;
    this.$(".group-count").hidden = !grouped;
    if (grouped) this.$(".groups").textContent = formatNumber(tree.count, 0);
  }

  /** Once a second. Returns the age of the last message, as said.
   * @param {number} updates  changes received so far @param {number} lastMessageAt  ms since the epoch, 0: none
   * @param {import("/web/latency.js").LatencyWindow | undefined} latency */
  tick(updates, lastMessageAt, latency) {
    this.$(".rate").textContent = String(updates - this.lastUpdates);
    this.lastUpdates = updates;
    const age = lastMessageAt ? formatAge((Date.now() - lastMessageAt) / 1000) : "–";
    this.$(".age").textContent = age;
    const { p50, p99, count } = latency?.percentiles() ?? { p50: null, p99: null, count: 0 };
    this.$(".latency").textContent = p50 !== null && p99 !== null ? `${formatMs(p50)} / ${formatMs(p99)}` : "–";
    const of = count ? `${formatNumber(count, 0)} live ${count === 1 ? "change" : "changes"}` : "no live change yet";
    this.$(".latency-figure").title = `${this.latencyTitle} Now: ${of} in the last minute.`;
    return age;
  }
}
