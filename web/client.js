// PushClient: logon, views re-established once after every reconnect (resumed from their
// bookmarks: view.js; viewports at the window last asked for: viewport.js), a publish store that re-sends unacknowledged publishes with their sequence
// numbers (requests.js), transactions, one-off queries, and the page's visibility told to the
// server (docs/protocol.md, Hidden views: a hidden tab costs one message per record per interval). The connection
// itself (one socket at a time, the reconnect loop, backoff, heartbeats) is the state machine in
// connection.js.
//
// Every command takes { signal, timeoutMs } (deadline.js) and fails with a PushError (errors.js).
// Commands made before connect(), or while reconnecting, wait and are sent once the client is
// logged on; commands made once it is closed for good fail at once with its ConnectionClosed.
// A view or a publish on a topic the server does not keep (a typo) goes on as plain pub/sub; the
// client says the server's words once per topic (routing.js: console.warn, a "warning" event).

import { logonCommand, publishCommand, sowCommand, sowDeleteCommand } from "./commands.js";
import { Connection, FINAL_CLOSE_CODES } from "./connection.js";
import { underDeadline } from "./deadline.js";
import { Emitter } from "./emitter.js";
import { CommandRefused, ConnectionClosed, PushError } from "./errors.js";
import { Queries } from "./queries.js";
import { Requests } from "./requests.js";
import { Transport } from "./transport.js";
import { open, publishAcked, receive, sayWarning, unsubscribe } from "./routing.js";
import { View } from "./view.js";
import { MAX_ROWS, Viewport } from "./viewport.js";

/**
 * @typedef {import("./connection.js").ConnectionState} ConnectionState
 * @typedef {import("./connection.js").StateEvent} StateEvent
 * @typedef {import("./connection.js").Backoff} Backoff
 * @typedef {import("./deadline.js").RequestOptions} RequestOptions
 * @typedef {import("./errors.js").TopicWarning} TopicWarning
 * @typedef {import("./requests.js").Ack} Ack
 * @typedef {import("./view.js").ViewSettings} ViewSettings
 * @typedef {import("./viewport.js").ViewportSettings} ViewportSettings
 * @typedef {Omit<ViewportSettings, "grouping" | "projection"> & ({ grouping: string[], projection?: string[] } | { grouping?: string[], projection: string[] })} AggregateSettings
 *
 * @typedef {object} ClientOptions
 * @property {string} [clientName]  with one, publishes carry sequence numbers (re-sent safely)
 * @property {string} [userId]
 * @property {string} [password]
 * @property {string} [label]  what this socket is, for people reading the server's /status (a
 *   screen's user and tab, say): not an identity, and not unique
 * @property {typeof WebSocket} [WebSocket]  the WebSocket class to connect with: the runtime's own
 *   by default (browsers, Node.js 22+); on Node.js 20, the ws package's
 * @property {number} [heartbeatMs]  10000 by default; 0 turns heartbeats off
 * @property {boolean} [reconnect]  true by default; false: the first lost socket closes the client
 * @property {number} [maxBackoffMs]  the longest wait between attempts (10000)
 * @property {Partial<Backoff>} [backoff]  the whole backoff, if `maxBackoffMs` is not enough
 * @property {number} [connectTimeoutMs]  an attempt that is not logged on by then fails (10000)
 * @property {number} [requestTimeoutMs]  the timeoutMs of one-off commands that name none
 *   (30000; 0: none). Views and connect() have no default: they wait for the server.
 * @property {boolean} [reportVisibility]  true by default: tell the server when the page is hidden
 *
 * @typedef {{ expiration?: number } & RequestOptions} PublishOptions
 * @typedef {{ filter?: string, orderby?: string, topN?: number, skipN?: number, options?: string } & RequestOptions} SowOptions
 * @typedef {{ filter?: string, keys?: string[], data?: any } & RequestOptions} SowDeleteOptions
 */

/** @extends {Emitter<any>} */
export class PushClient extends Emitter {
  /** @param {string} url @param {ClientOptions} [options] */
  constructor(url, options = {}) {
    super();
    this.url = url;
    this.options = { heartbeatMs: 10000, reconnect: true, maxBackoffMs: 10000, requestTimeoutMs: 30000, ...options };
    const reconnect = this.options.reconnect;
    this.connection = new Connection(url, {
      handshake: () => this._logon(),
      heartbeatMs: this.options.heartbeatMs,
      connectTimeoutMs: this.options.connectTimeoutMs,
      backoff: { maxMs: this.options.maxBackoffMs, ...this.options.backoff },
      isFinal: (code) => !reconnect || FINAL_CLOSE_CODES.has(code),
      createTransport: (address) => new Transport(address, this.options.WebSocket),
    });
    this.connection.on("state", (/** @type {StateEvent} */ event) => this._changed(event));
    this.connection.on("frame", ({ messages, bytes }) => this._receive(messages, bytes));
    this.connection.on("error", (/** @type {Error} */ error) => this.emit("error", error));
    this.requests = new Requests((message) => this.connection.send(message), () => this.state === "open");
    /** @type {Map<string, View>} */
    this.views = new Map();
    this.queries = new Queries(this.requests);
    this._seq = 0;
    /** @type {{ tx: string, views: Set<View> } | null} the transaction being received */
    this._tx = null;
    this._stopping = false; // inside close(): the views end quietly
    /** @type {Set<string>} the topics the server does not keep that were said (routing.js) */
    this._warnedTopics = new Set();
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
   * Connect and log on. Resolves once logged on, however many attempts that takes; rejects with a
   * ConnectionClosed if the client is closed for good first (close(), bad credentials, replaced
   * by a newer logon). Later reconnects happen by themselves. With a signal or timeoutMs, giving
   * up before the client is logged on closes it (and rejects with code "aborted" or "timeout").
   * @param {RequestOptions} [options]
   * @returns {Promise<void>}
   */
  connect(options = {}) {
    const started = this.connection.start();
    if (!options.signal && !options.timeoutMs) return started;
    return underDeadline("connect", options, (resolve, reject) => {
      started.then(resolve, reject);
      return (error) => {
        if (this.state !== "open") this.connection.stop(1000, error.message, error);
      };
    }, () => `attempt ${this.attempt}`);
  }

  /** Close for good (no reconnect): what waits fails with code "closed", views end. */
  close() {
    this._stopping = true;
    try {
      this.connection.stop(1000);
    } finally {
      this._stopping = false;
    }
  }

  // -- the connection's life --------------------------------------------------------------------

  /** The handshake of every attempt: log on (a refusal is final: retrying cannot fix it). */
  async _logon() {
    let ack;
    try {
      ack = await this.requests.request(logonCommand(this.options), { handshake: true });
    } catch (error) {
      if (error instanceof CommandRefused) throw Object.assign(error, { final: true });
      throw error;
    }
    if (typeof ack.s === "number") this._seq = Math.max(this._seq, ack.s);
  }

  /** @param {StateEvent} event */
  _changed(event) {
    if (event.state === "open") this._opened();
    else if (event.state === "waiting" || event.state === "closed") this._lost(event);
    this.emit("state", event);
    if (event.state === "closed") this.emit("closed", { code: event.code, reason: event.reason });
  }

  /** A new connection is logged on: every view once, then whatever was waiting to be sent. */
  _opened() {
    if (this.hidden) this._reportVisibility(); // a new socket starts out visible
    for (const view of this.views.values()) this._open(view);
    this.requests.opened();
  }

  /**
   * The connection went away. Commands sent on it will get no answer and fail (publishes wait to
   * be re-sent); views are marked stale and opened again on the next connection. When it is
   * closed for good, everything still waiting fails and every view ends.
   * @param {StateEvent} event
   */
  _lost({ state, code = 1006, reason = "" }) {
    const final = state === "closed";
    const cause = final ? this.connection.closedBy?.cause : undefined;
    /** @param {string} command */
    const closed = (command) => new ConnectionClosed(code, reason, { command, cause });
    this.requests.lost(closed, final);
    this.queries.lost(closed, final);
    const views = [...this.views.values()];
    for (const view of views) view.disconnected();
    if (!final) return;
    this.views.clear();
    for (const view of views) view._end(this._stopping ? null : closed(view.command));
  }

  /** Why a command may be waiting, for a timeout's message. */
  _waitHint() {
    if (this.state === "idle") return "the client is not connected: call connect()";
    return this.state === "open" ? "" : `the client is ${this.state}, attempt ${this.attempt}`;
  }

  /** The error of a command made while the client is closed for good. @param {string} command */
  _closedError(command) {
    const { closedBy } = this.connection;
    return new ConnectionClosed(closedBy?.closeCode ?? 1000, closedBy?.reason ?? "", { command, cause: closedBy?.cause });
  }

  // -- messages in -----------------------------------------------------------------------------

  /** Apply a frame's messages (routing.js). @param {any[]} messages @param {number} bytes */
  _receive(messages, bytes) {
    receive(this, messages, bytes);
  }

  /** A view's warning: said once per topic (routing.js). @param {TopicWarning} warning */
  _topicWarning(warning) {
    sayWarning(this, warning);
  }

  // -- commands out ----------------------------------------------------------------------------

  /**
   * Send a command; resolves with its processed ack.
   * @param {Record<string, any>} message @param {RequestOptions} options
   * @param {boolean} [publish]  carries a sequence number (with a clientName) and is re-sent
   * @returns {Promise<Ack>}
   */
  _send(message, { signal, timeoutMs }, publish = false) {
    if (this.state === "closed") return Promise.reject(this._closedError(message.c));
    if (publish && this.options.clientName && !signal?.aborted) message.s = ++this._seq;
    const acked = this.requests.request(message, {
      publish,
      signal,
      timeoutMs: timeoutMs ?? this.options.requestTimeoutMs,
      hint: () => this._waitHint(),
    });
    return publish ? acked.then((ack) => publishAcked(this, ack, message)) : acked;
  }

  /**
   * Publish a record; resolves on the processed ack (re-sent after a reconnect until acked).
   * @param {string} topic @param {any} data @param {PublishOptions} [options]
   */
  publish(topic, data, { expiration, ...options } = {}) {
    return this._send(publishCommand("publish", topic, data, expiration), options, true);
  }

  /**
   * Merge `data` into the record with its key (docs/protocol.md, Publish and delta publish).
   * @param {string} topic @param {any} data @param {PublishOptions} [options]
   */
  deltaPublish(topic, data, { expiration, ...options } = {}) {
    return this._send(publishCommand("delta_publish", topic, data, expiration), options, true);
  }

  /**
   * Delete the records matching a filter, the records with these SowKeys, or the record with the
   * key of `data`: exactly one of the three. The ack has `records_deleted`.
   * @param {string} topic @param {SowDeleteOptions} which
   */
  sowDelete(topic, { filter, keys, data, ...options }) {
    return this._send(sowDeleteCommand(topic, { filter, keys, data }), options, true);
  }

  /**
   * Apply several publishes, delta publishes and deletes as one step (docs/protocol.md, Transactions): all or
   * nothing, delivered whole. Resolves on the processed ack.
   * @param {Array<Record<string, any>>} commands  e.g. {c: "publish", t: "orders", data: {...}}
   * @param {RequestOptions} [options]
   */
  transaction(commands, options = {}) {
    return this._send({ c: "tx", cmds: commands }, options, true);
  }

  /**
   * Resolves once the server has processed every command this client sent before it.
   * @param {RequestOptions} [options]
   */
  flush(options = {}) {
    return this._send({ c: "flush" }, options);
  }

  /**
   * A one-off query: resolves with the matching records, in order. Asked while disconnected, it is
   * sent when the connection opens; it fails if the connection is lost before the answer is in.
   * @param {string} topic
   * @param {SowOptions} [query]
   * @returns {Promise<any[]>}
   */
  sow(topic, { filter, orderby, topN, skipN, options, signal, timeoutMs } = {}) {
    if (this.state === "closed") return Promise.reject(this._closedError("sow"));
    const message = sowCommand(topic, `q${this.requests.nextId()}`, { filter, orderby, topN, skipN, options });
    const deadline = { signal, timeoutMs: timeoutMs ?? this.options.requestTimeoutMs };
    return this.queries.ask(message, deadline, () => this._waitHint());
  }

  /**
   * @param {string} command @param {string} topic @param {ViewSettings} [settings]
   * @returns {View}
   */
  _view(command, topic, settings = {}) {
    return this._track(command, settings.subId, (subId) => new View(this, command, topic, { ...settings, subId }));
  }

  /**
   * Make a view (or viewport) with its sub_id and open it when the client is open.
   * @template {View} V
   * @param {string} command @param {string | undefined} subId
   * @param {(subId: string) => V} make
   * @returns {V}
   */
  _track(command, subId = `v${this.requests.nextId()}`, make) {
    if (this.views.has(subId)) {
      throw new PushError("subid_in_use", `a view with sub_id ${subId} is open`, { command });
    }
    const view = make(subId);
    if (view.closed) return view; // its signal was aborted already
    if (this.state === "closed") {
      view._end(this._closedError(command));
      return view;
    }
    this.views.set(subId, view);
    if (this.state === "open") this._open(view);
    return view;
  }

  /** Subscribe `view` on the current connection, once per connection (routing.js). @param {View} view */
  _open(view) {
    open(this, view);
  }

  /**
   * Send a viewport's replace (a move) on the connection it is subscribed on; null when it is not
   * (its next subscribe, on the next connection, states the move).
   * @param {Viewport} view @param {Record<string, any>} message
   * @returns {Promise<Ack> | null}
   */
  _move(view, message) {
    if (this.state !== "open" || view.openedOn !== this.connection.opens || this.views.get(view.subId) !== view) {
      return null;
    }
    return this.requests.request(message);
  }

  /** Forget a view, unsubscribing it if the server holds it; never rejects (routing.js). @param {View} view */
  _unsubscribe(view) {
    return unsubscribe(this, view);
  }

  /** @param {string} topic @param {ViewSettings} [settings] */
  subscribe(topic, settings) { return this._view("subscribe", topic, settings); }
  /** @param {string} topic @param {ViewSettings} [settings] */
  sowAndSubscribe(topic, settings) { return this._view("sow_and_subscribe", topic, settings); }
  /** @param {string} topic @param {ViewSettings} [settings] */
  deltaSubscribe(topic, settings) { return this._view("delta_subscribe", topic, settings); }
  /** @param {string} topic @param {ViewSettings} [settings] */
  sowAndDeltaSubscribe(topic, settings) { return this._view("sow_and_delta_subscribe", topic, settings); }

  /**
   * The rows first..last of a sorted, filtered view of `topic`, live, moved in place with
   * moveTo, sortBy and filterBy (viewport.js). Rows are 0-based and inclusive: [0, 49] is 50
   * rows. Without `rows`: [0, 99].
   * @template [T=any]
   * @param {string} topic @param {ViewportSettings} [settings]
   * @returns {Viewport<T>}
   */
  viewport(topic, settings = {}) {
    return this._track("sow_and_subscribe", settings.subId, (subId) => new Viewport(this, topic, { ...settings, subId }));
  }

  /**
   * A viewport over the groups of an aggregated view (docs/protocol.md, Aggregated views): its
   * rows are group records, keyed by the group's key. `grouping` and `projection` go as command
   * fields (arrays); at least one of them is needed. Without `rows`: the first MAX_ROWS
   * groups, the whole view for any that has no more (`count` says how many there are).
   * @template [T=any]
   * @param {string} topic @param {AggregateSettings} settings
   * @returns {Viewport<T>}
   */
  aggregate(topic, settings) {
    if (!settings?.grouping?.length && !settings?.projection?.length) {
      throw new TypeError("aggregate: a grouping, a projection, or both");
    }
    const rows = settings.rows ?? /** @type {[number, number]} */ ([0, MAX_ROWS - 1]);
    return this.viewport(topic, { ...settings, rows });
  }

  /**
   * Close a view (by itself or its sub_id): view.close().
   * @param {View | string} view
   * @returns {Promise<void>}
   */
  unsubscribe(view) {
    const held = this.views.get(typeof view === "string" ? view : view.subId);
    return held ? held.close() : Promise.resolve();
  }
}
