// A live view of a topic: `records` (SowKey -> current record) kept up to date from snapshots,
// full records, RFC 6902 patches, merge deltas and OOF notices, with a "change" event per record.
// Events: "change" (Change), "ready", "error" ({reason}), "unsubscribed" ({reason}) and "stale"
// ({stale}): true when the connection is lost (records kept, last known values), false once the
// view is re-established on a new connection (its snapshot in, for the sow_and_* commands).

import { Emitter } from "./emitter.js";
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
   * @param {{ filter?: string, options?: string, subId: string }} settings
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
    /** @type {string | null} the server's reason when it refused the view */
    this.error = null;
    this.closed = false;
    /** True while the connection is down, until the view is re-established on a new one: its
     * records are the last known values, which may since have changed on the server. */
    this.stale = false;
    /** The connection (its `opens` count) this view was last subscribed on; set by the client. */
    this.openedOn = 0;
    this._collecting = /** @type {Map<string, any> | null} */ (null);
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

  /** The subscribe command, sent when the view opens and again after every reconnect. */
  request() {
    const message = { c: this.command, t: this.topic, sub_id: this.subId };
    if (this.filter) message.filter = this.filter;
    if (this.options) message.o = this.options;
    return message;
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
        this._endSnapshot();
        break;
      case "p":
        this._update(message, bytes);
        break;
      case "oof": {
        const key = this._key(message);
        this.records.delete(key);
        this.stats.updates += 1;
        this.emit("change", { key, record: message.data, kind: "oof", reason: message.reason });
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

  _endSnapshot() {
    const fresh = this._collecting ?? new Map();
    this._collecting = null;
    // After a reconnect the snapshot is the truth: rows it lacks are gone.
    for (const [key, record] of this.records) {
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
