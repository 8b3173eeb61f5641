// PushClient: logon, reconnect with jittered backoff, views re-established after every
// reconnect, a publish store that re-sends unacknowledged publishes with their sequence numbers,
// and heartbeats that notice a dead connection.

import { Emitter } from "./emitter.js";
import { Transport } from "./transport.js";
import { View } from "./view.js";

/** Close codes after which reconnecting would be wrong: bad credentials, or replaced by a newer logon. */
const FINAL_CLOSES = new Set([1008, 4002]);

/**
 * @typedef {{ clientName?: string, userId?: string, password?: string, heartbeatMs?: number,
 *             reconnect?: boolean, maxBackoffMs?: number }} ClientOptions
 * @typedef {"idle" | "connecting" | "connected" | "reconnecting" | "closed"} ConnectionState
 */

export class PushClient extends Emitter {
  /** @param {string} url @param {ClientOptions} [options] */
  constructor(url, options = {}) {
    super();
    this.url = url;
    this.options = { heartbeatMs: 10000, reconnect: true, maxBackoffMs: 10000, ...options };
    /** @type {ConnectionState} */
    this.state = "idle";
    this.attempt = 0;
    this.transport = new Transport(url);
    this.transport.on("frame", ({ messages, bytes }) => this._receive(messages, bytes));
    this.transport.on("close", (event) => this._closed(event));
    /** @type {Map<string, View>} */
    this.views = new Map();
    /** @type {Map<string, {message: any, resolve: Function, reject: Function, publish: boolean}>} */
    this._pending = new Map();
    this._queries = new Map();
    this._counter = 0;
    this._seq = 0;
    this._lastHeard = 0;
    this._heartbeat = null;
    this._userClosed = false;
  }

  /** @param {ConnectionState} state */
  _setState(state) {
    if (this.state !== state) {
      this.state = state;
      this.emit("state", { state, attempt: this.attempt });
    }
  }

  /** Connect and log on; resolves once logged on (later reconnects happen by themselves). */
  async connect() {
    this._userClosed = false;
    this._setState(this.attempt ? "reconnecting" : "connecting");
    await this.transport.open();
    this._lastHeard = Date.now();
    const logon = { c: "logon" };
    if (this.options.clientName) logon.client_name = this.options.clientName;
    if (this.options.userId) logon.user_id = this.options.userId;
    if (this.options.password) logon.pw = this.options.password;
    const ack = await this._request(logon, false, true);
    if (typeof ack.s === "number") this._seq = Math.max(this._seq, ack.s);
    this.attempt = 0;
    this._setState("connected");
    for (const view of this.views.values()) this._open(view);
    for (const [cid, pending] of this._pending) {
      if (pending.publish) this.transport.send({ ...pending.message, cid });
    }
    this._startHeartbeat();
  }

  _startHeartbeat() {
    clearInterval(this._heartbeat);
    const every = this.options.heartbeatMs;
    this._heartbeat = setInterval(() => {
      if (Date.now() - this._lastHeard > 2 * every) {
        this.transport.close(4000); // nothing heard for two beats: the connection is dead
      } else {
        this.transport.send({ c: "heartbeat" });
      }
    }, every);
  }

  _closed({ code, reason }) {
    clearInterval(this._heartbeat);
    for (const [cid, pending] of this._pending) {
      if (!pending.publish) {
        this._pending.delete(cid);
        pending.reject(new Error(`connection closed (${code})`));
      }
    }
    if (this._userClosed || !this.options.reconnect || FINAL_CLOSES.has(code)) {
      this._setState("closed");
      this.emit("closed", { code, reason });
      return;
    }
    this.attempt += 1;
    this._setState("reconnecting");
    const base = Math.min(this.options.maxBackoffMs, 100 * 2 ** Math.min(this.attempt, 10));
    const delay = base * (0.5 + Math.random() / 2);
    setTimeout(() => this._reconnect(), delay);
  }

  async _reconnect() {
    if (this._userClosed) return;
    try {
      await this.connect();
    } catch {
      if (this.state !== "closed") this._closed({ code: 1006, reason: "reconnect failed" });
    }
  }

  _receive(messages, bytes) {
    this._lastHeard = Date.now();
    const share = messages.length ? bytes / messages.length : 0;
    for (const message of messages) {
      if (message.c === "ack") {
        this._ack(message);
      } else if (message.sids) {
        for (const sid of message.sids) this.views.get(String(sid))?.handle(message, share);
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

  _ack(message) {
    const pending = message.cid !== undefined ? this._pending.get(String(message.cid)) : undefined;
    if (!pending || message.a !== "processed") return;
    this._pending.delete(String(message.cid));
    if (message.status === "success") pending.resolve(message);
    else pending.reject(Object.assign(new Error(message.reason), { reason: message.reason }));
  }

  /** Send a command with a cid; resolves with its processed ack, rejects with a failure's reason. */
  _request(message, publish = false, now = false) {
    const cid = String(++this._counter);
    return new Promise((resolve, reject) => {
      this._pending.set(cid, { message, resolve, reject, publish });
      if (now || this.state === "connected") this.transport.send({ ...message, cid });
    });
  }

  _publish(command, topic, data, expiration) {
    const message = { c: command, t: topic, data };
    if (this.options.clientName) message.s = ++this._seq;
    if (expiration !== undefined) message.e = expiration;
    return this._request(message, true);
  }

  /** Publish a record; resolves on the processed ack (re-sent after a reconnect until acked). */
  publish(topic, data, { expiration } = {}) {
    return this._publish("publish", topic, data, expiration);
  }

  /** Merge `data` into the record with its key (PROTOCOL 6.1). */
  deltaPublish(topic, data, { expiration } = {}) {
    return this._publish("delta_publish", topic, data, expiration);
  }

  /** A one-off query: resolves with the matching records, in order. */
  sow(topic, { filter, orderby, topN, skipN, options } = {}) {
    const queryId = `q${++this._counter}`;
    const message = { c: "sow", t: topic, query_id: queryId };
    if (filter) message.filter = filter;
    if (orderby) message.orderby = orderby;
    if (topN !== undefined) message.top_n = topN;
    if (skipN !== undefined) message.skip_n = skipN;
    if (options) message.o = options;
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

  _view(command, topic, settings = {}) {
    const subId = settings.subId ?? `v${++this._counter}`;
    const view = new View(this, command, topic, { ...settings, subId });
    this.views.set(subId, view);
    if (this.state === "connected") this._open(view);
    return view;
  }

  _open(view) {
    this._request(view.request()).then(
      () => view.subscribed(),
      (error) => {
        if (error.reason) {
          this.views.delete(view.subId);
          view.refused(error.reason);
        }
      },
    );
  }

  subscribe(topic, settings) { return this._view("subscribe", topic, settings); }
  sowAndSubscribe(topic, settings) { return this._view("sow_and_subscribe", topic, settings); }
  deltaSubscribe(topic, settings) { return this._view("delta_subscribe", topic, settings); }
  sowAndDeltaSubscribe(topic, settings) { return this._view("sow_and_delta_subscribe", topic, settings); }

  /** @param {View | string} view */
  unsubscribe(view) {
    const subId = typeof view === "string" ? view : view.subId;
    this.views.delete(subId);
    if (this.state === "connected") this.transport.send({ c: "unsubscribe", sub_id: subId });
  }

  /** Close for good (no reconnect). */
  close() {
    this._userClosed = true;
    clearInterval(this._heartbeat);
    this.transport.close(1000);
    this._setState("closed");
  }
}
