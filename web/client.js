// PushClient: logon, views re-established once after every reconnect (resumed from their
// bookmarks: view.js), a publish store that re-sends unacknowledged publishes with their sequence
// numbers, transactions, one-off queries, and the page's visibility told to the server (PROTOCOL
// 11.2: a hidden tab costs one message per record per interval). The
// connection itself (one socket at a time, the reconnect loop, backoff, heartbeats) is the state
// machine in connection.js.

import { Connection, FINAL_CLOSE_CODES } from "./connection.js";
import { Emitter } from "./emitter.js";
import { View } from "./view.js";

/**
 * @typedef {import("./connection.js").ConnectionState} ConnectionState
 * @typedef {import("./connection.js").StateEvent} StateEvent
 * @typedef {import("./connection.js").Backoff} Backoff
 *
 * @typedef {object} ClientOptions
 * @property {string} [clientName]  with one, publishes carry sequence numbers (re-sent safely)
 * @property {string} [userId]
 * @property {string} [password]
 * @property {number} [heartbeatMs]  10000 by default; 0 turns heartbeats off
 * @property {boolean} [reconnect]  true by default; false: the first lost socket closes the client
 * @property {number} [maxBackoffMs]  the longest wait between attempts (10000)
 * @property {Partial<Backoff>} [backoff]  the whole backoff, if `maxBackoffMs` is not enough
 * @property {number} [connectTimeoutMs]  an attempt that is not logged on by then fails (10000)
 * @property {boolean} [reportVisibility]  true by default: tell the server when the page is hidden
 *
 * @typedef {object} Pending
 * @property {any} message
 * @property {(ack: any) => void} resolve
 * @property {(error: Error) => void} reject
 * @property {boolean} publish  re-sent on every new connection until acknowledged
 * @property {boolean} sent  on the current connection
 */

/** @extends {Emitter<any>} */
export class PushClient extends Emitter {
  /** @param {string} url @param {ClientOptions} [options] */
  constructor(url, options = {}) {
    super();
    this.url = url;
    this.options = { heartbeatMs: 10000, reconnect: true, maxBackoffMs: 10000, ...options };
    const reconnect = this.options.reconnect;
    this.connection = new Connection(url, {
      handshake: () => this._logon(),
      heartbeatMs: this.options.heartbeatMs,
      connectTimeoutMs: this.options.connectTimeoutMs,
      backoff: { maxMs: this.options.maxBackoffMs, ...this.options.backoff },
      isFinal: (code) => !reconnect || FINAL_CLOSE_CODES.has(code),
    });
    this.connection.on("state", (/** @type {StateEvent} */ event) => this._changed(event));
    this.connection.on("frame", ({ messages, bytes }) => this._receive(messages, bytes));
    this.connection.on("error", (/** @type {Error} */ error) => this.emit("error", error));
    /** @type {Map<string, View>} */
    this.views = new Map();
    /** @type {Map<string, Pending>} in the order the commands were made */
    this._pending = new Map();
    /** @type {Map<string, (message: any) => void>} */
    this._queries = new Map();
    this._counter = 0;
    this._seq = 0;
    /** @type {{ tx: string, views: Set<View> } | null} the transaction being received */
    this._tx = null;
    if (typeof document !== "undefined" && this.options.reportVisibility !== false) {
      document.addEventListener("visibilitychange", () => this._reportVisibility());
    }
  }

  /** Whether the page is hidden (never, outside a browser). */
  get hidden() {
    return typeof document !== "undefined" && this.options.reportVisibility !== false
      && document.visibilityState === "hidden";
  }

  _reportVisibility() {
    if (this.state === "open") this.connection.send({ c: "visibility", hidden: this.hidden });
  }

  /** @returns {ConnectionState} */
  get state() {
    return this.connection.state;
  }

  /** The number of the attempt being made or to be made next; 0 while open. */
  get attempt() {
    return this.connection.attempt;
  }

  /**
   * Connect and log on. Resolves once logged on, however many attempts that takes; rejects only
   * if the client is closed for good first (close(), bad credentials, replaced by a newer logon).
   * Later reconnects happen by themselves.
   * @returns {Promise<void>}
   */
  connect() {
    return this.connection.start();
  }

  /** Close for good (no reconnect). */
  close() {
    this.connection.stop(1000);
  }

  // -- the connection's life --------------------------------------------------------------------

  /** The handshake of every attempt: log on (a refusal is final: retrying cannot fix it). */
  async _logon() {
    /** @type {Record<string, any>} */
    const logon = { c: "logon" };
    if (this.options.clientName) logon.client_name = this.options.clientName;
    if (this.options.userId) logon.user_id = this.options.userId;
    if (this.options.password) logon.pw = this.options.password;
    let ack;
    try {
      ack = await this._request(logon, { handshake: true });
    } catch (error) {
      if (/** @type {any} */ (error).reason) throw Object.assign(/** @type {Error} */ (error), { final: true });
      throw error;
    }
    if (typeof ack.s === "number") this._seq = Math.max(this._seq, ack.s);
  }

  /** @param {StateEvent} event */
  _changed(event) {
    if (event.state === "open") this._opened();
    else if (event.state === "waiting" || event.state === "closed") this._lost(event.state === "closed");
    this.emit("state", event);
    if (event.state === "closed") this.emit("closed", { code: event.code, reason: event.reason });
  }

  /** A new connection is logged on: every view once, then whatever was waiting to be sent. */
  _opened() {
    if (this.hidden) this._reportVisibility(); // a new socket starts out visible
    for (const view of this.views.values()) this._open(view);
    for (const [cid, pending] of this._pending) {
      if (pending.publish || !pending.sent) pending.sent = this.connection.send({ ...pending.message, cid });
    }
  }

  /**
   * The connection went away. Commands sent on it will get no answer: queries and subscribes fail
   * (views are opened again on the next connection), publishes wait to be re-sent. When it is
   * closed for good, everything still waiting fails.
   * @param {boolean} final
   */
  _lost(final) {
    for (const [cid, pending] of this._pending) {
      if (final || (!pending.publish && pending.sent)) {
        this._pending.delete(cid);
        pending.reject(new Error(final ? "connection closed" : "connection lost"));
      } else {
        pending.sent = false;
      }
    }
    for (const view of this.views.values()) view.disconnected();
  }

  // -- messages in -----------------------------------------------------------------------------

  /** @param {any[]} messages @param {number} bytes */
  _receive(messages, bytes) {
    const share = messages.length ? bytes / messages.length : 0;
    for (const message of messages) {
      if (message.c === "ack") {
        this._ack(message);
      } else if (message.c === "tx_begin") {
        this._tx = { tx: message.tx, views: new Set() };
      } else if (message.c === "tx_end") {
        // A transaction arrives in one frame and is applied in this one task: no paint falls
        // between its messages. Then one event names it and the views it changed.
        const done = this._tx;
        this._tx = null;
        if (done) this.emit("transaction", done);
      } else if (message.sids) {
        for (const sid of message.sids) {
          const view = this.views.get(String(sid));
          view?.handle(message, share);
          if (view && this._tx) this._tx.views.add(view);
        }
      } else if (message.query_id !== undefined) {
        const id = String(message.query_id);
        const query = this._queries.get(id);
        if (query) query(message);
        else this.views.get(id)?.handle(message, share);
      } else if (message.c === "unsubscribed") {
        this.views.get(String(message.sub_id))?.handle(message, share);
      }
    }
  }

  /** @param {any} message */
  _ack(message) {
    const pending = message.cid !== undefined ? this._pending.get(String(message.cid)) : undefined;
    if (!pending || message.a !== "processed") return;
    this._pending.delete(String(message.cid));
    if (message.status === "success") pending.resolve(message);
    else pending.reject(Object.assign(new Error(message.reason), { reason: message.reason }));
  }

  // -- commands out ----------------------------------------------------------------------------

  /**
   * Send a command with a cid; resolves with its processed ack, rejects with a failure's reason.
   * Sent now when the connection is open (or, for the handshake, while it is being made),
   * otherwise when it next opens.
   * @param {Record<string, any>} message
   * @param {{ publish?: boolean, handshake?: boolean }} [kind]
   * @returns {Promise<any>}
   */
  _request(message, { publish = false, handshake = false } = {}) {
    const cid = String(++this._counter);
    return new Promise((resolve, reject) => {
      /** @type {Pending} */
      const pending = { message, resolve, reject, publish, sent: false };
      this._pending.set(cid, pending);
      if (handshake || this.state === "open") pending.sent = this.connection.send({ ...message, cid });
    });
  }

  /** @param {string} command @param {string} topic @param {any} data @param {number} [expiration] */
  _publish(command, topic, data, expiration) {
    /** @type {Record<string, any>} */
    const message = { c: command, t: topic, data };
    if (this.options.clientName) message.s = ++this._seq;
    if (expiration !== undefined) message.e = expiration;
    return this._request(message, { publish: true });
  }

  /**
   * Publish a record; resolves on the processed ack (re-sent after a reconnect until acked).
   * @param {string} topic @param {any} data @param {{ expiration?: number }} [options]
   */
  publish(topic, data, { expiration } = {}) {
    return this._publish("publish", topic, data, expiration);
  }

  /**
   * Merge `data` into the record with its key (PROTOCOL 6.1).
   * @param {string} topic @param {any} data @param {{ expiration?: number }} [options]
   */
  deltaPublish(topic, data, { expiration } = {}) {
    return this._publish("delta_publish", topic, data, expiration);
  }

  /**
   * Apply several publishes, delta publishes and deletes as one step (PROTOCOL 11.3): all or
   * nothing, delivered whole. Resolves on the processed ack.
   * @param {Array<Record<string, any>>} commands  e.g. {c: "publish", t: "orders", data: {...}}
   */
  transaction(commands) {
    /** @type {Record<string, any>} */
    const message = { c: "tx", cmds: commands };
    if (this.options.clientName) message.s = ++this._seq;
    return this._request(message, { publish: true });
  }

  /**
   * A one-off query: resolves with the matching records, in order. Asked while disconnected, it is
   * sent when the connection opens; it fails if the connection is lost before the answer is in.
   * @param {string} topic
   * @param {{ filter?: string, orderby?: string, topN?: number, skipN?: number, options?: string }} [query]
   * @returns {Promise<any[]>}
   */
  sow(topic, { filter, orderby, topN, skipN, options } = {}) {
    const queryId = `q${++this._counter}`;
    /** @type {Record<string, any>} */
    const message = { c: "sow", t: topic, query_id: queryId };
    if (filter) message.filter = filter;
    if (orderby) message.orderby = orderby;
    if (topN !== undefined) message.top_n = topN;
    if (skipN !== undefined) message.skip_n = skipN;
    if (options) message.o = options;
    /** @type {any[]} */
    const records = [];
    return new Promise((resolve, reject) => {
      this._queries.set(queryId, (m) => {
        if (m.c === "sow") records.push(m.data);
        if (m.c === "group_end") {
          this._queries.delete(queryId);
          resolve(records);
        }
      });
      this._request(message).catch((error) => {
        this._queries.delete(queryId);
        reject(error);
      });
    });
  }

  /**
   * @param {string} command @param {string} topic
   * @param {{ filter?: string, options?: string, subId?: string }} [settings]
   */
  _view(command, topic, settings = {}) {
    const subId = settings.subId ?? `v${++this._counter}`;
    if (this.views.has(subId)) throw new Error(`a view with sub_id ${subId} is open`);
    const view = new View(this, command, topic, { ...settings, subId });
    this.views.set(subId, view);
    if (this.state === "open") this._open(view);
    return view;
  }

  /**
   * Subscribe `view` on the current connection: called once per connection per view (when the
   * view is made while open, or for every view when a connection opens), so the server never
   * sees its sub_id twice on one socket.
   * @param {View} view
   */
  _open(view) {
    const opens = this.connection.opens;
    if (view.openedOn === opens) return;
    view.openedOn = opens;
    this._request(view.request()).then(
      () => view.subscribed(),
      (error) => {
        if (error.reason && this.views.get(view.subId) === view) {
          this.views.delete(view.subId);
          view.refused(error.reason);
        }
      },
    );
  }

  /** @param {string} topic @param {{ filter?: string, options?: string, subId?: string }} [settings] */
  subscribe(topic, settings) { return this._view("subscribe", topic, settings); }
  /** @param {string} topic @param {{ filter?: string, options?: string, subId?: string }} [settings] */
  sowAndSubscribe(topic, settings) { return this._view("sow_and_subscribe", topic, settings); }
  /** @param {string} topic @param {{ filter?: string, options?: string, subId?: string }} [settings] */
  deltaSubscribe(topic, settings) { return this._view("delta_subscribe", topic, settings); }
  /** @param {string} topic @param {{ filter?: string, options?: string, subId?: string }} [settings] */
  sowAndDeltaSubscribe(topic, settings) { return this._view("sow_and_delta_subscribe", topic, settings); }

  /** @param {View | string} view */
  unsubscribe(view) {
    const subId = typeof view === "string" ? view : view.subId;
    this.views.delete(subId);
    if (this.state === "open") this.connection.send({ c: "unsubscribe", sub_id: subId });
  }
}
