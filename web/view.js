// A live view of a topic: `records` (SowKey -> current record) kept up to date from snapshots,
// full records, RFC 6902 patches, merge deltas and OOF notices, with a "change" event per record.
// Events: "change" (Change), "ready", "error" ({reason}), "unsubscribed" ({reason}) and "stale"
// ({stale}): true when the connection is lost (records kept, last known values), false once the
// view is re-established on a new connection (its snapshot in, for the sow_and_* commands).
//
// A sow_and_* view subscribes with the option `resume` (PROTOCOL 11.1): every message carries a
// bookmark, and after a reconnect it subscribes again from the newest one it holds, so the server
// sends only the net change of the view (`resumed: true`) instead of the whole snapshot.

import { Emitter } from "./emitter.js";
import { LatencyWindow } from "./latency.js";
import { mergeRecord } from "./merge.js";
import { applyPatch } from "./patch.js";

/**
 * @typedef {"snapshot" | "insert" | "update" | "oof"} ChangeKind
 * @typedef {{ key: string, record: any, kind: ChangeKind, reason?: string }} Change
 */

/** @extends {Emitter<any>} */
export class View extends Emitter {
  /**
   * @param {import("./client.js").PushClient} client
   * @param {string} command  the subscribe command that opens the view
   * @param {string} topic
   * @param {{ filter?: string, options?: string, subId: string, resume?: boolean }} settings
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
    this._resetReady();
  }

  _resetReady() {
    this.ready = new Promise((resolve, reject) => {
      this._resolveReady = resolve;
      this._rejectReady = reject;
    });
    this.ready.catch(() => {}); // a refused view is reported through `error` and the "error" event
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

  /** @param {string} reason */
  refused(reason) {
    this.error = reason;
    this._rejectReady(new Error(reason));
    this.emit("error", { reason });
  }

  subscribed() {
    if (!this.hasSnapshot) {
      this._resolveReady(this);
      this._fresh();
    }
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
        this._endSnapshot(message.resumed === true);
        if (this.resumes) this._noteBookmark(message.bm);
        break;
      case "p":
        if (message.ts !== undefined) this.latency.add(message.ts);
        this._update(message, bytes);
        this._noteBookmark(message.bm);
        break;
      case "oof": {
        if (message.ts !== undefined) this.latency.add(message.ts);
        const key = this._key(message);
        this._collecting?.delete(key); // (inside a snapshot only when it is a resume)
        this.records.delete(key);
        this.stats.updates += 1;
        this.emit("change", { key, record: message.data, kind: "oof", reason: message.reason });
        this._noteBookmark(message.bm);
        break;
      }
      case "unsubscribed":
        this.closed = true;
        this.emit("unsubscribed", { reason: message.reason });
        break;
      default:
        break;
    }
  }

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
        this.emit("change", { key, record, kind: "oof", reason: "stale" });
      }
    }
    for (const [key, record] of fresh) {
      this.records.set(key, record);
      this.emit("change", { key, record, kind: "snapshot" });
    }
    this._resolveReady(this);
    this._fresh();
    this.emit("ready", this);
  }

  _update(message, bytes) {
    const key = this._key(message);
    const held = this.records.get(key);
    let record;
    if ("data" in message) {
      record = message.data;
    } else if (held === undefined) {
      this.emit("error", { reason: `a delta for ${key}, which this view does not hold` });
      return;
    } else {
      record = "patch" in message ? applyPatch(held, message.patch) : mergeRecord(held, message.delta);
      this.stats.bytesSaved += Math.max(0, JSON.stringify(record).length - bytes);
    }
    this.records.set(key, record);
    this.stats.updates += 1;
    this.emit("change", { key, record, kind: held === undefined ? "insert" : "update" });
  }

  /** Stop the view (unsubscribe). */
  close() {
    this.closed = true;
    this.client.unsubscribe(this);
  }
}
