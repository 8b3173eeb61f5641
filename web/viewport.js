// A viewport: the rows first..last of a sorted, filtered view of a topic, live, and movable in
// place (docs/protocol.md, Live windows and Viewports). Made by client.viewport(); client.aggregate()
// makes the same over groups (docs/protocol.md, Aggregated views).
//
// Rows are 0-based and inclusive at both ends, as AG Grid's and Deephaven's are: rows [0, 49]
// are the first 50 rows of the view. On the wire that is skip_n = first, top_n = last - first + 1.
// It is a View (view.js): `records` holds the window's records by key, "change" events and
// `for await` work as for any view, and so do `ready`, "stale", "error", close(), the deadline
// (timeoutMs until ready, signal for its whole life) and the reconnect. On top of that it keeps
// the window's order: `keys` (the SowKeys, in window order) and `rows` (their records), from
// the `pos` every message carries (the option `positions`), and `count`, the whole view's size
// (the option `count`: group_end's `matches`, then `count` messages).
//
// Applying the server's messages (docs/protocol.md, Live windows and Viewports):
// - a snapshot (group_begin, `sow` messages with `pos`, group_end) is the whole window: after a
//   subscribe, a reconnect, or a replace (a move). A `sow` message without `data` names a record
//   the viewport already holds: its record is reused;
// - an OOF takes its row out (the rows below move up); a `p` with `pos` takes the record out of
//   its row, if it has one, and puts it at row `pos` (the rows from there move down); `count`
//   updates `count`. An OOF's change is news unless a move or a push across the edge made it.
// The "rows" event comes once per frame from the server that changed the rows or the count
// (after every message of the frame is applied), never once per message.
// Moves (moveTo, sortBy, filterBy) are replaces of the same sub_id, one in flight at a time
// (moves.js says which waits, which is superseded, and how each settles). After a reconnect the
// viewport subscribes again with the range, order and filter last asked for, and its rows become
// that window's as the server sends it (records it no longer has leave with reason "stale").

import { Moves } from "./moves.js";
import { CommandRefused, PushError } from "./errors.js";
import { View } from "./view.js";
import { DEFAULT_ROWS, OWN_OPTIONS, pulledAcross, pushedAcross, rangeProblem, sameWindow, splitOptions } from "./windows.js";

export { DEFAULT_ROWS, MAX_ROWS, rangeProblem } from "./windows.js";

/**
 * @typedef {import("./deadline.js").RequestOptions} RequestOptions
 * @typedef {import("./moves.js").MoveResult} MoveResult
 * @typedef {import("./moves.js").Part} Part
 * @typedef {import("./view.js").ViewHost} ViewHost
 * @typedef {import("./windows.js").RowRange} RowRange
 *
 * @typedef {object} ViewportFields
 * @property {string} [filter]
 * @property {string} [orderby]  e.g. "/qty DESC, /order"; without one the order is by SowKey
 * @property {RowRange} [rows]  [first, last], 0-based, inclusive (DEFAULT_ROWS)
 * @property {string} [options]  more options, e.g. "select=[-/notes],conflation=250ms" (the viewport
 *   adds positions, count and oof itself)
 * @property {boolean} [count]  false: do not ask the server to count the view (`count` stays
 *   null), for a server without the option, or to spare it the counting
 * @property {string} [subId]
 * @property {string[]} [grouping]  the grouping fields of an aggregated view, e.g. ["/desk"]
 * @property {string[]} [projection]  its projection, e.g. ["/desk", "SUM(/qty) AS /qty"]
 * @typedef {ViewportFields & RequestOptions} ViewportSettings
 *
 * @typedef {object} RowsEvent
 * @property {number} first
 * @property {number} last
 * @property {any[]} rows
 * @property {string[]} keys
 * @property {number | null} count
 *
 * @typedef {import("./windows.js").Window} Window
 *
 * @typedef {ViewHost & { _move: (view: Viewport, message: Record<string, any>) => Promise<any> | null }} ViewportHost
 */

/** @template [T=any] */
export class Viewport extends View {
  /**
   * @param {ViewportHost} client
   * @param {string} topic
   * @param {ViewportSettings & { subId: string }} settings
   */
  constructor(client, topic, settings) {
    const [first, last] = settings.rows ?? DEFAULT_ROWS;
    const problem = rangeProblem(first, last);
    if (problem) throw new RangeError(`viewport: ${problem}`);
    // A window cannot resume from a bookmark: after a reconnect its snapshot is sent whole.
    super(client, "sow_and_subscribe", topic, { ...settings, resume: false });
    this.host = client;
    this.grouping = settings.grouping;
    this.projection = settings.projection;
    this.counts = settings.count !== false;
    /** @type {Window} the subscription to state next: what was last asked for */
    this.wanted = { first, last, orderby: settings.orderby || undefined, filter: settings.filter || undefined };
    this.filter = this.wanted.filter;
    /** The window `rows` holds (as the server answered): the row `rows[i]` is row first + i. */
    this.first = first;
    this.last = last;
    /** @type {string | undefined} */
    this.orderby = this.wanted.orderby;
    /** @type {string[]} the SowKeys (group keys) of the rows, in window order */
    this.keys = [];
    /** @type {number | null} the whole view's size (not the window's), once the server said */
    this.count = null;
    this._moves = new Moves();
    /** @type {Window | null} the window the request in flight states */
    this._asked = null;
    /** @type {Array<[string, any]> | null} a snapshot being received: [key, record] by position */
    this._window = null;
    /** @type {any[] | null} rows, worked out when read */
    this._rows = null;
    this._changedRows = false;
    this._changedCount = false;
    this._flushing = false;
    /** @type {import("./moves.js").Move[]} answered in this frame: settled after its "rows" event */
    this._settle = [];
  }

  /** The records of the window, in window order (row first + i is rows[i]). @returns {T[]} */
  get rows() {
    if (this._rows === null) this._rows = this.keys.map((key) => this.records.get(key));
    return this._rows;
  }

  // -- the subscription ---------------------------------------------------------------------

  /**
   * The subscribe command for a new connection (the client calls it once per connection): the
   * window last asked for, carrying every change waiting.
   */
  request() {
    this._moves.send();
    this._asked = { ...this.wanted };
    return this._command(this._asked, false);
  }

  /** @param {Window} window @param {boolean} replace */
  _command(window, replace) {
    /** @type {Record<string, any>} */
    const message = { c: this.command, t: this.topic, sub_id: this.subId };
    if (window.filter) message.filter = window.filter;
    if (window.orderby) message.orderby = window.orderby;
    message.skip_n = window.first;
    message.top_n = window.last - window.first + 1;
    if (this.grouping) message.grouping = this.grouping;
    if (this.projection) message.projection = this.projection;
    const own = [replace && "replace", "positions", this.counts && "count", "oof"].filter(Boolean);
    const theirs = splitOptions(this.options ?? "").filter((item) => !OWN_OPTIONS.has(item.split("=")[0].trim()));
    message.o = [...own, ...theirs].join(",");
    return message;
  }

  /**
   * Show the rows first..last (0-based, inclusive) of the view. Resolves once the server's answer
   * is applied (moves.js: or at once, `superseded`, when a newer move replaced it first); rejects
   * with a RangeError for a range no window can have.
   * @param {number} first @param {number} last
   * @returns {Promise<MoveResult>}
   */
  moveTo(first, last) {
    const problem = rangeProblem(first, last);
    if (problem) return Promise.reject(new RangeError(`moveTo: ${problem}`));
    return this._ask(["rows"], { first, last });
  }

  /**
   * Order the view anew (the window keeps its range). Undefined or "": by SowKey.
   * @param {string | undefined} orderby
   * @returns {Promise<MoveResult>}
   */
  sortBy(orderby) {
    return this._ask(["orderby"], { orderby: orderby || undefined });
  }

  /**
   * Filter the view anew (the window keeps its range). Undefined or "": every record.
   * @param {string | undefined} filter
   * @returns {Promise<MoveResult>}
   */
  filterBy(filter) {
    return this._ask(["filter"], { filter: filter || undefined });
  }

  /** @param {Part[]} parts @param {Partial<Window>} change @returns {Promise<MoveResult>} */
  _ask(parts, change) {
    if (this.closed) {
      const failed = Promise.reject(this.failure ?? new PushError("closed", "the viewport is closed", { command: this.command }));
      failed.catch(() => {}); // as for a move the viewport's end fails (moves.js)
      return failed;
    }
    const settled = this._moves.ask(parts, () => this._result(false));
    Object.assign(this.wanted, change);
    this._sendNext();
    return settled;
  }

  /** @param {boolean} superseded @returns {MoveResult} */
  _result(superseded) {
    return { superseded, first: this.first, last: this.last, count: this.count };
  }

  /** Send a replace with everything waiting, unless a request is in flight (then after it). */
  _sendNext() {
    if (this.closed || this._moves.inFlight !== null || this._moves.waiting.length === 0) return;
    const window = { ...this.wanted };
    if (this._isReady && sameWindow(window, this._applied())) {
      // Asked for what is there already (a grid asks again as it scrolls within the window):
      // nothing to send; the rows are those.
      this._moves.send();
      for (const move of this._moves.answered()) move.resolve(this._result(false));
      return;
    }
    const sent = this.host._move(this, this._command(window, true));
    if (sent === null) return; // not subscribed on an open connection: the next request carries it
    const carried = this._moves.send();
    this._asked = window;
    sent.then(() => {}, (error) => {
      if (this._moves.inFlight !== carried) return; // lost with its connection, or ended
      if (!(error instanceof CommandRefused)) return;
      // Refused: the server kept the window as it was. What the refused request asked, and
      // nothing asked since replaced, is forgotten.
      this._moves.answered();
      this._asked = null;
      for (const part of /** @type {Array<keyof Window>} */ (["first", "last", "orderby", "filter"])) {
        if (this.wanted[part] === window[part]) Object.assign(this.wanted, { [part]: this._applied()[part] });
      }
      for (const move of carried) move.reject(error);
      this.emit("error", { reason: error.reason || error.message, code: error.code, error });
      this._sendNext();
    });
  }

  /** @returns {Window} */
  _applied() {
    return { first: this.first, last: this.last, orderby: this.orderby, filter: this.filter };
  }

  // -- the view's life ------------------------------------------------------------------------

  /** @param {import("./errors.js").PushError | null} error */
  _end(error) {
    if (this.closed) return;
    super._end(error);
    this._window = null;
    // (A signal aborted already ends the view inside View's constructor, before _moves exists.)
    this._moves?.failAll(error ?? new PushError("closed", "the viewport was closed", { command: this.command }));
  }

  disconnected() {
    this._window = null;
    this._asked = null;
    this._moves.lost();
    super.disconnected();
  }

  subscribed() {} // ready with its first snapshot

  // -- messages in ----------------------------------------------------------------------------

  /** Not news: an OOF answering a move (it carries its record's last change time), or one of a row
   * a change pushed across the window's edge (the window keeps its size: the row is still in the view). */
  _oofIsNews(/** @type {any} */ message) {
    return this._moves.inFlight === null && !pushedAcross(this, message, this.records.get(this._key(message)));
  }

  /** @param {any} message @param {number} bytes */
  handle(message, bytes) {
    if (this.closed) return;
    switch (message.c) {
      case "group_begin":
        this.stats.bytes += bytes;
        this._window = [];
        break;
      case "sow":
        this.stats.bytes += bytes;
        this._snapshotRecord(message);
        break;
      case "group_end":
        this.stats.bytes += bytes;
        this._endWindow(message);
        break;
      case "p": {
        this.stats.bytes += bytes;
        const key = this._key(message);
        if (message.ts !== undefined && !pulledAcross(this, message, this.records.has(key))) this.latency.add(message.ts);
        this._update(message, bytes);
        if (this.records.has(key)) this._place(key, message.pos);
        break;
      }
      case "oof": {
        const key = this._key(message);
        super.handle(message, bytes);
        const at = this.keys.indexOf(key);
        if (at >= 0) this._spliceKeys(at, 1);
        break;
      }
      case "count":
        this.stats.bytes += bytes;
        this._setCount(message.matches);
        break;
      default:
        super.handle(message, bytes);
    }
  }

  /** @param {any} message  a `sow` message of a snapshot */
  _snapshotRecord(message) {
    if (this._window === null) return; // (its group_begin came on a lost connection)
    const key = this._key(message);
    let record;
    if ("data" in message) {
      record = message.data;
    } else if (this.records.has(key)) {
      record = this.records.get(key); // the server knows the viewport holds it as it is
    } else {
      this.emit("error", { reason: `the server named ${key} as held, which this viewport does not hold`, code: "missing_record" });
      return;
    }
    const at = typeof message.pos === "number" ? message.pos - 1 : this._window.length;
    this._window[at] = [key, record];
  }

  /** The snapshot is complete: it is the window. @param {any} message  its group_end */
  _endWindow(message) {
    if (this._window === null) return; // (its group_begin came on a lost connection)
    const entries = this._window.filter(Boolean);
    this._window = null;
    const fresh = new Map(entries);
    for (const [key, record] of [...this.records]) {
      if (fresh.has(key)) continue;
      this.records.delete(key);
      this._changed({ key, record, kind: "oof", reason: "stale" });
    }
    for (const [key, record] of entries) {
      if (this.records.get(key) === record) continue; // held as it is (a key-only message)
      this.records.set(key, record);
      this._changed({ key, record, kind: "snapshot" });
    }
    this.keys = entries.map(([key]) => key);
    const asked = this._asked;
    this._asked = null;
    if (asked) {
      ({ first: this.first, last: this.last, orderby: this.orderby, filter: this.filter } = asked);
    }
    this._settle.push(...this._moves.answered());
    if (typeof message.matches === "number") this._setCount(message.matches);
    this._rowsChanged();
    if (!this._isReady) {
      this._becameReady();
      this.emit("ready", this);
    }
    this._fresh();
  }

  /** @param {string} key @param {unknown} pos  1-based place in the window, when given */
  _place(key, pos) {
    const at = this.keys.indexOf(key);
    if (typeof pos !== "number") {
      if (at < 0) this._spliceKeys(this.keys.length, 0, key);
      else this._rowsChanged(); // its record changed
      return;
    }
    if (at >= 0) this.keys.splice(at, 1);
    this._spliceKeys(Math.min(pos - 1, this.keys.length), 0, key);
  }

  /** @param {number} start @param {number} remove @param {string[]} add */
  _spliceKeys(start, remove, ...add) {
    this.keys.splice(start, remove, ...add);
    this._rowsChanged();
  }

  /** @param {unknown} matches */
  _setCount(matches) {
    if (typeof matches !== "number" || matches === this.count) return;
    this.count = matches;
    this._changedCount = true;
    this._atFrameEnd();
  }

  _rowsChanged() {
    this._rows = null;
    this._changedRows = true;
    this._atFrameEnd();
  }

  /** The client applies a frame's messages in one task: a microtask runs once they all are. */
  _atFrameEnd() {
    if (this._flushing) return;
    this._flushing = true;
    queueMicrotask(() => this._frameEnd());
  }

  _frameEnd() {
    this._flushing = false;
    if (this._changedRows || this._changedCount) {
      const { first, last, keys, count } = this;
      this.emit("rows", { first, last, rows: this.rows, keys, count });
    }
    if (this._changedCount) this.emit("count", { count: this.count });
    this._changedRows = false;
    this._changedCount = false;
    const done = this._settle.splice(0);
    for (const move of done) move.resolve(this._result(false));
    this._sendNext();
  }
}
