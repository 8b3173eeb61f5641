// A live view of a topic: `records` (SowKey -> current record) kept up to date from snapshots,
// full records, RFC 6902 patches, merge deltas and OOF notices, with a "change" event per record.
// Events: "change" (Change), "ready", "error" ({reason, code, error}), "unsubscribed" ({reason}),
// "warning" (a TopicWarning: the topic is not one the server keeps, so the view is plain pub/sub;
// also `view.warning`, and said once per topic by the client's console.warn) and "stale" ({stale}): true when the connection is lost (records kept, last known values), false
// once the view is re-established on a new connection (its snapshot in, for the sow_and_* commands).
// The same changes can be read with `for await (const change of view)` (changes.js).
//
// A view ends once: closed (close(), or its client closed), or failed with a PushError (refused,
// its timeoutMs passed before it was ready, its signal aborted, dropped by the server, or its
// client closed for good by the server); `ready` rejects with that error if it was still waiting.
//
// A sow_and_* view subscribes with the option `resume` (docs/protocol.md, Resuming a view): every message carries a
// bookmark, and after a reconnect it subscribes again from the newest one it holds, so the server
// sends only the net change of the view (`resumed: true`) instead of the whole snapshot.

import { ChangeIterator } from "./changes.js";
import { Deadline } from "./deadline.js";
import { Emitter } from "./emitter.js";
import { CommandRefused, PushError, RequestTimeout, ViewDropped, topicWarning } from "./errors.js";
import { LatencyWindow } from "./latency.js";
import { mergeRecord } from "./merge.js";
import { applyPatch } from "./patch.js";

/**
 * @typedef {"snapshot" | "insert" | "update" | "oof"} ChangeKind
 * @typedef {import("./deadline.js").RequestOptions} RequestOptions
 * @typedef {import("./errors.js").TopicWarning} TopicWarning
 * @typedef {{ filter?: string, options?: string, subId?: string, resume?: boolean } & RequestOptions} ViewSettings
 */
/**
 * @template [T=any]
 * @typedef {{ key: string, record: T, kind: ChangeKind, reason?: string, news?: boolean, previous?: T }} Change
 *   (an OOF's `news`: a change took the record out of the view; `previous`: the record as held before)
 */

/**
 * The client side of a view, as a View needs it (client.js).
 * @typedef {object} ViewHost
 * @property {(view: View) => Promise<void>} _unsubscribe  tell the server, when it holds the view
 * @property {() => string} _waitHint  why there may be no answer yet (for a timeout's message)
 * @property {(warning: TopicWarning) => void} [_topicWarning]  say a view's warning (once per topic)
 */

/** @extends {Emitter<any>} */
export class View extends Emitter {
  /**
   * @param {ViewHost} client
   * @param {string} command  the subscribe command that opens the view
   * @param {string} topic
   * @param {ViewSettings & { subId: string }} settings
   */
  constructor(client, command, topic, settings) {
    super();
    this.client = client;
    this.command = command;
    this.topic = topic;
    this.filter = settings.filter;
    this.options = settings.options;
    this.subId = settings.subId;
    /** @type {Map<string, any>} */
    this.records = new Map();
    /** Live figures: messages applied, bytes received, bytes saved by deltas against full records. */
    this.stats = { updates: 0, bytes: 0, bytesSaved: 0 };
    /** Server `ts` to receipt of the live messages of the last minute (with the `timestamp` option). */
    this.latency = new LatencyWindow();
    /** @type {string | null} the server's reason when it refused the view */
    this.error = null;
    /** @type {PushError | null} why the view failed (refused, timeout, aborted, dropped, closed) */
    this.failure = null;
    /** @type {TopicWarning | null} the server's words when the topic is not one it keeps (a typo) */
    this.warning = null;
    /** True once the view has ended (closed or failed): it receives nothing more. */
    this.closed = false;
    /** True while the connection is down, until the view is re-established on a new one: its
     * records are the last known values, which may since have changed on the server. */
    this.stale = false;
    /** The connection (its `opens` count) this view was last subscribed on; set by the client. */
    this.openedOn = 0;
    this._collecting = /** @type {Map<string, any> | null} */ (null);
    /** The newest bookmark of a complete view (after its group_end): where a resume starts. */
    this.bookmark = /** @type {string | null} */ (null);
    /** Whether the last snapshot was a resume (only the net change was sent). */
    this.resumed = false;
    /** Whether it resumes after a reconnect (sow_and_* views, unless `resume: false`). */
    this.resumes = this.hasSnapshot && settings.resume !== false;
    this._plainKeys = 0;
    /** @type {Set<ChangeIterator>} the loops reading this view */
    this._iterators = new Set();
    /** @type {Promise<void> | null} close()'s, once asked */
    this._closing = null;
    /** @type {(view: any) => void} (any: a subclass resolves with itself) */
    let resolveReady = () => {};
    /** @type {(error: PushError) => void} */
    let rejectReady = () => {};
    /** @type {Promise<this>} resolves once the view is established (its snapshot in, for sow_and_*);
     * `this`: a Viewport's resolves with the Viewport */
    this.ready = new Promise((resolve, reject) => {
      resolveReady = resolve;
      rejectReady = reject;
    });
    this.ready.catch(() => {}); // a failed view is also reported by `failure` and its iterators
    this._resolveReady = resolveReady;
    this._rejectReady = rejectReady;
    this._isReady = false;
    /** @type {Deadline | null} */
    this._deadline = null;
    // The timeout counts until the view is ready; the signal, for its whole life. (A signal
    // aborted already ends the view here and now.)
    this._deadline = new Deadline(command, settings, (error) => this._fail(error), () => client._waitHint());
  }

  /** The subscribe command, sent when the view opens and again after every reconnect (from
   * the newest bookmark it holds, when it resumes). */
  request() {
    /** @type {Record<string, any>} */
    const message = { c: this.command, t: this.topic, sub_id: this.subId };
    if (this.filter) message.filter = this.filter;
    const asked = (this.options ?? "").split(",").map((item) => item.trim());
    const options = this.resumes && !asked.includes("resume")
      ? [this.options, "resume"].filter(Boolean).join(",")
      : this.options;
    if (options) message.o = options;
    if (this.resumes && this.bookmark !== null) message.bm = this.bookmark;
    return message;
  }

  /** @param {any} bm */
  _noteBookmark(bm) {
    if (typeof bm !== "string" || this._collecting !== null) return;
    // Bookmarks are decimal integers beyond 2^53: compared as text, by length first.
    const newer = this.bookmark === null || bm.length > this.bookmark.length
      || (bm.length === this.bookmark.length && bm > this.bookmark);
    if (newer) this.bookmark = bm;
  }

  get hasSnapshot() {
    return this.command.startsWith("sow_and_");
  }

  /** The server refused the subscribe (the client has forgotten the view). @param {PushError} error */
  refused(error) {
    this.error = error.reason;
    this._end(error);
  }

  /**
   * The subscribe's processed ack, or a group_end, said the topic is not one the server keeps:
   * `warning`, a "warning" event, and the client says it (once per topic).
   * @param {any} message
   */
  _noteWarning(message) {
    if (this.warning !== null) return;
    const warning = topicWarning(message, this.topic, this.command);
    if (!warning) return;
    this.warning = warning;
    this.emit("warning", warning);
    if (this.client._topicWarning) this.client._topicWarning(warning);
    else console.warn(`sowpush: ${warning.reason}`);
  }

  subscribed() {
    if (!this.hasSnapshot) {
      this._becameReady();
      this._fresh();
    }
  }

  _becameReady() {
    this._isReady = true;
    this._deadline?.stopTimer();
    this._resolveReady(this);
  }

  /**
   * The view's deadline fired: it is unsubscribed and fails with the error.
   * @param {PushError} error
   */
  _fail(error) {
    if (this.closed) return;
    this._closing = this.client._unsubscribe(this);
    this._end(error);
  }

  /**
   * The view ends: ready rejects if it was waiting, every iterator ends (or throws `error`). A
   * refusal or a timeout is also an "error" event (an abort was the caller's own doing, a drop
   * is the "unsubscribed" event, and a client closed for good says so with its "state" event).
   * @param {PushError | null} error
   */
  _end(error) {
    if (this.closed) return;
    this.closed = true;
    this._deadline?.clear();
    if (error) this.failure = error;
    if (!this._isReady) this._rejectReady(error ?? new PushError("closed", "the view was closed before it was ready", { command: this.command }));
    for (const iterator of [...this._iterators]) iterator.end(error);
    if (error instanceof CommandRefused || error instanceof RequestTimeout) {
      this.emit("error", { reason: error.reason || error.message, code: error.code, error });
    }
  }

  /** @param {Change} change */
  _changed(change) {
    this.emit("change", change);
    for (const iterator of this._iterators) iterator.push(change);
  }

  /**
   * Read the changes with `for await`: first the records held now (as "snapshot" changes), then
   * every change; see changes.js for what a slow reader gets.
   * @returns {ChangeIterator}
   */
  [Symbol.asyncIterator]() {
    const iterator = new ChangeIterator(this.closed ? [] : this.records, (done) => this._iterators.delete(done));
    if (this.closed) iterator.end(this.failure);
    else this._iterators.add(iterator);
    return iterator;
  }

  /** The connection went away: the records are kept, marked stale until the view is back. */
  disconnected() {
    this._collecting = null;
    if (this.stale) return;
    this.stale = true;
    this.emit("stale", { stale: true });
  }

  _fresh() {
    if (!this.stale) return;
    this.stale = false;
    this.emit("stale", { stale: false });
  }

  /** Whether an OOF is news: a change took its record out of the view (a viewport's move also
   * sends OOFs, for the records scrolled past: viewport.js). Only news counts in the latency. */
  _oofIsNews(/** @type {any} */ _message) {
    return true;
  }

  /** @param {any} message @param {number} bytes */
  handle(message, bytes) {
    this.stats.bytes += bytes;
    switch (message.c) {
      case "group_begin":
        this._collecting = new Map();
        break;
      case "sow":
        (this._collecting ?? this.records).set(this._key(message), message.data);
        break;
      case "group_end":
        this._noteWarning(message);
        this._endSnapshot(message.resumed === true);
        if (this.resumes) this._noteBookmark(message.bm);
        break;
      case "p": // (inside a snapshot, a resume's backlog: no latency)
        if (message.ts !== undefined && this._collecting === null) this.latency.add(message.ts);
        this._update(message, bytes);
        this._noteBookmark(message.bm);
        break;
      case "oof": {
        const news = this._oofIsNews(message);
        if (news && message.ts !== undefined && this._collecting === null) this.latency.add(message.ts);
        const key = this._key(message);
        const previous = this.records.get(key);
        this._collecting?.delete(key); // (inside a snapshot only when it is a resume)
        this.records.delete(key);
        this.stats.updates += 1;
        this._changed({ key, record: message.data, kind: "oof", reason: message.reason, news, previous });
        this._noteBookmark(message.bm);
        break;
      }
      case "unsubscribed": // (the client has forgotten the view)
        this.emit("unsubscribed", { reason: message.reason });
        this._end(new ViewDropped(message.reason ?? "", this.command));
        break;
      default:
        break;
    }
  }

  /** @param {any} message @returns {string} */
  _key(message) {
    return message.k ?? `#${++this._plainKeys}`;
  }

  /** @param {boolean} resumed  only the net change came: the rows it does not name stand */
  _endSnapshot(resumed) {
    const fresh = this._collecting ?? new Map();
    this._collecting = null;
    this.resumed = resumed;
    // After a reconnect the whole snapshot is the truth: rows it lacks are gone.
    for (const [key, record] of resumed ? [] : this.records) {
      if (!fresh.has(key)) {
        this.records.delete(key);
        this._changed({ key, record, kind: "oof", reason: "stale" });
      }
    }
    for (const [key, record] of fresh) {
      this.records.set(key, record);
      this._changed({ key, record, kind: "snapshot" });
    }
    this._becameReady();
    this._fresh();
    this.emit("ready", this);
  }

  /** @param {any} message @param {number} bytes */
  _update(message, bytes) {
    const key = this._key(message);
    const held = this.records.get(key);
    let record;
    if ("data" in message) {
      record = message.data;
    } else if (held === undefined) {
      this.emit("error", { reason: `a delta for ${key}, which this view does not hold`, code: "missing_record" });
      return;
    } else {
      record = "patch" in message ? applyPatch(held, message.patch) : mergeRecord(held, message.delta);
      this.stats.bytesSaved += Math.max(0, JSON.stringify(record).length - bytes);
    }
    this.records.set(key, record);
    this.stats.updates += 1;
    this._changed({ key, record, kind: held === undefined ? "insert" : "update" });
  }

  /**
   * Stop the view: it ends here at once (iterators done, nothing more applied), and the promise
   * resolves when the server has acknowledged the unsubscribe, at once when the server does not
   * hold the view (not connected, or the view failed). It never rejects.
   * @returns {Promise<void>}
   */
  close() {
    if (this._closing) return this._closing;
    if (this.closed) return Promise.resolve();
    this._closing = this.client._unsubscribe(this);
    this._end(null);
    return this._closing;
  }
}
