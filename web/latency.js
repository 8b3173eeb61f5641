// How late a view's live changes arrive: the time from the server's `ts` on a message (when the
// server took the publish; the subscription needs the `timestamp` option) to its receipt here,
// kept for the last minute. Only live changes are given (view.js, viewport.js): not a snapshot's
// records, nor the rows a move or a change elsewhere sends as they are. The two clocks are the server's and the browser's: on one machine,
// or with both synchronised (NTP), the figure is the change-to-screen latency; otherwise it is
// off by the clocks' difference.

const WINDOW_MS = 60_000;
const MAX_SAMPLES = 20_000; // a busy view keeps every 3rd, 4th... so memory stays bounded

// While the page is hidden the server holds its changes (docs/protocol.md, Hidden views: one
// message per record per interval, the rest when it is shown) and the browser slows its timers:
// a change made then arrives late on purpose. Only changes made while the page is seen count.
const page = typeof document === "undefined" ? null : document;
let shownAt = 0; // when the page was last shown (ms since the epoch)
page?.addEventListener("visibilitychange", () => {
  if (page.visibilityState === "visible") shownAt = Date.now();
});

export class LatencyWindow {
  constructor(windowMs = WINDOW_MS) {
    this.windowMs = windowMs;
    /** @type {number[]} receipt times, oldest first (from `_start`) */
    this._at = [];
    /** @type {number[]} latencies in ms, in the same order */
    this._ms = [];
    this._start = 0; // samples before it are older than the window (dropped in bulk, not one by one)
    this._skip = 0;
  }

  /** @param {string} ts  the server's ISO-8601 time @param {number} [now]  ms since the epoch */
  add(ts, now = Date.now()) {
    const sent = Date.parse(ts);
    if (Number.isNaN(sent) || page?.visibilityState === "hidden" || sent < shownAt) return;
    this._trim(now);
    if (this._at.length - this._start >= MAX_SAMPLES && this._skip++ % 2 === 0) return; // sample a burst
    this._at.push(now);
    this._ms.push(Math.max(0, now - sent));
  }

  /** @param {number} now */
  _trim(now) {
    while (this._start < this._at.length && now - this._at[this._start] > this.windowMs) this._start += 1;
    if (this._start > 1024 && this._start * 2 > this._at.length) {
      this._at = this._at.slice(this._start);
      this._ms = this._ms.slice(this._start);
      this._start = 0;
    }
  }

  /**
   * The p50 and p99 (ms) of the last minute, and how many messages they are of; nulls when none.
   * @returns {{ p50: number | null, p99: number | null, count: number }}
   */
  percentiles(now = Date.now()) {
    this._trim(now);
    const sorted = Float64Array.from(this._ms.slice(this._start)).sort();
    const pick = (/** @type {number} */ q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null);
    return { p50: pick(0.5), p99: pick(0.99), count: sorted.length };
  }
}
