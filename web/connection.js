// The connection state machine: one socket at a time, one reconnect loop, one timer.
//
//   idle ──start()──▶ connecting ──socket open + handshake done──▶ open
//                      │    ▲                                       │
//        socket closed, │    │ the timer fires                       │ socket closed, or
//        handshake      ▼    │ (the next attempt)                    │ no heartbeat answer
//        failed or   waiting ◀──────────────────────────────────────┘
//        timed out
//   any state ──stop(), a final close code, or a refused handshake──▶ closed
//
// Every attempt gets a new Transport; the machine listens only to the current one, and a
// transport it gives up on (timed out, stopped, superseded) is closed and its events ignored. The
// only timer is held in one slot, cleared on every transition: the connect timeout while
// connecting, the retry delay while waiting, the next heartbeat while open. So a failed attempt
// schedules exactly one retry, whatever reports the failure first.

import { Emitter } from "./emitter.js";
import { ConnectionClosed } from "./errors.js";
import { Transport } from "./transport.js";

/**
 * @typedef {"idle" | "connecting" | "open" | "waiting" | "closed"} ConnectionState
 *
 * @typedef {object} StateEvent
 * @property {ConnectionState} state
 * @property {number} attempt  the number of the attempt being made (connecting) or to be made next
 *   (waiting), counted from 1 since the connection was last open; 0 when open or closed
 * @property {number} [delayMs]  while waiting: how long until the next attempt
 * @property {number} [code]  the close code that ended the previous socket, when there was one
 * @property {string} [reason]
 *
 * @typedef {object} Backoff  delay before attempt n: min(maxMs, initialMs * factor ** (n - 1)),
 *   less a random part of up to `jitter` of it (0.5: between half and all of it)
 * @property {number} initialMs
 * @property {number} maxMs
 * @property {number} factor
 * @property {number} jitter
 *
 * @typedef {object} ConnectionOptions
 * @property {() => Promise<void>} [handshake]  run once the socket is open (the logon); the
 *   connection is open when it resolves. A rejection with `final: true` closes for good; any
 *   other rejection is a failed attempt.
 * @property {Partial<Backoff>} [backoff]
 * @property {number} [heartbeatMs]  send a heartbeat this often while open; the socket is dropped
 *   when nothing was heard for two of these (0: no heartbeats)
 * @property {number} [connectTimeoutMs]  an attempt (socket and handshake) that takes longer fails
 * @property {number} [stableMs]  an open connection that lasted less than this does not reset the
 *   backoff, so a server that accepts and drops at once is not hammered
 * @property {(code: number) => boolean} [isFinal]  close codes after which retrying would be wrong
 * @property {() => number} [random]  in [0, 1), for the jitter
 * @property {(url: string) => Transport} [createTransport]
 */

/** Bad credentials (1008), or replaced by a newer logon with the same client name (4002). */
export const FINAL_CLOSE_CODES = new Set([1008, 4002]);
/** The close code this side uses when it gives up on a socket (no heartbeat, timeout). */
export const CLOSE_ABANDONED = 4000;

/** @type {Backoff} */
const DEFAULT_BACKOFF = { initialMs: 200, maxMs: 10000, factor: 2, jitter: 0.5 };

/**
 * The delay before attempt `level` (1, 2, ...) of a backoff.
 * @param {Backoff} backoff @param {number} level @param {number} random in [0, 1)
 */
export function backoffDelay(backoff, level, random) {
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.factor ** Math.max(0, level - 1));
  return Math.round(base * (1 - backoff.jitter * random));
}

/** @extends {Emitter<any>} */
export class Connection extends Emitter {
  /** @param {string} url @param {ConnectionOptions} [options] */
  constructor(url, options = {}) {
    super();
    this.url = url;
    this.handshake = options.handshake ?? (async () => {});
    /** @type {Backoff} */
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.heartbeatMs = options.heartbeatMs ?? 10000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10000;
    this.stableMs = options.stableMs ?? 2000;
    this.isFinal = options.isFinal ?? ((code) => FINAL_CLOSE_CODES.has(code));
    this.random = options.random ?? Math.random;
    this.createTransport = options.createTransport ?? ((url) => new Transport(url));
    /** @type {ConnectionState} */
    this.state = "idle";
    this.attempt = 0;
    /** Sockets opened over the connection's life (every attempt makes one). */
    this.sockets = 0;
    /** Times the connection became open: each is a new session on the server. */
    this.opens = 0;
    /** @type {Transport | null} the current attempt's transport; events of any other are ignored */
    this.transport = null;
    this._level = 0; // backoff step; reset only after a stable open
    /** When the connection last became open (Date.now()). */
    this.openedAt = 0;
    this._lastHeard = 0;
    /** @type {ReturnType<typeof setTimeout> | null} the one timer */
    this._timer = null;
    /** @type {{ promise: Promise<void>, resolve: () => void, reject: (e: Error) => void } | null} */
    this._started = null;
    /** @type {ConnectionClosed | null} why it is closed for good, while it is */
    this.closedBy = null;
  }

  /**
   * Start connecting (from idle or closed). Resolves when the connection is first open; rejects
   * if it is closed for good before that. Calling it again while running returns the same promise.
   * @returns {Promise<void>}
   */
  start() {
    if (this._started && this.state !== "closed") return this._started.promise;
    this.closedBy = null;
    /** @type {any} */
    const started = {};
    started.promise = new Promise((resolve, reject) => Object.assign(started, { resolve, reject }));
    started.promise.catch(() => {}); // the caller handles it; an unawaited start() is no error
    this._started = started;
    this._level = 0;
    this.attempt = 1;
    this._connect();
    return started.promise;
  }

  /**
   * Close for good: no more attempts. The current socket (open or still connecting) is closed.
   * @param {number} [code] @param {string} [reason] @param {unknown} [cause]  why, for the error
   */
  stop(code = 1000, reason = "closed by the client", cause = undefined) {
    if (this.state === "closed") return;
    this._detach()?.close(code, reason);
    this._finish(code, reason, cause);
  }

  /**
   * Send on the current socket when it is open (during the handshake too).
   * @param {object | object[]} message @returns {boolean} whether it was sent
   */
  send(message) {
    return this.transport?.send(message) ?? false;
  }

  // -- transitions ------------------------------------------------------------------------------

  /**
   * @param {ConnectionState} state
   * @param {{ delayMs?: number, code?: number, reason?: string }} [details]
   */
  _enter(state, details = {}) {
    this._clearTimer();
    this.state = state;
    /** @type {StateEvent} */
    const event = { state, attempt: this.attempt, ...details };
    this.emit("state", event);
  }

  /** A new attempt: a new transport, the connect timeout armed. */
  _connect() {
    this.sockets += 1;
    const transport = this.createTransport(this.url);
    this.transport = transport;
    this._enter("connecting");
    this._timer = setTimeout(() => this._abandon(transport, "connect timeout"), this.connectTimeoutMs);
    transport.on("frame", (/** @type {import("./transport.js").FrameEvent} */ frame) => {
      if (transport !== this.transport) return;
      this._lastHeard = Date.now();
      this.emit("frame", frame);
    });
    transport.on("close", (/** @type {import("./transport.js").CloseEvent} */ { code, reason }) => {
      if (transport === this.transport) this._lost(code, reason);
    });
    transport.on("open", () => {
      if (transport === this.transport) this._handshake(transport);
    });
    transport.on("error", (/** @type {Error} */ error) => {
      if (transport === this.transport) this.emit("error", error);
    });
    try {
      transport.open();
    } catch (error) {
      // A URL the browser refuses (malformed, or ws: from an https: page): retrying cannot help.
      this._detach();
      this._finish(1006, error instanceof Error ? error.message : String(error));
    }
  }

  /** @param {Transport} transport */
  async _handshake(transport) {
    this._lastHeard = Date.now();
    try {
      await this.handshake();
    } catch (error) {
      if (transport !== this.transport) return; // already failed for another reason
      const reason = error instanceof Error ? error.message : String(error);
      if (/** @type {any} */ (error)?.final) {
        this._detach()?.close(1000, "refused");
        this._finish(1008, reason, error);
      } else {
        this._abandon(transport, `handshake failed: ${reason}`);
      }
      return;
    }
    if (transport !== this.transport || this.state !== "connecting") return;
    this.attempt = 0;
    this.opens += 1;
    this.openedAt = Date.now();
    this._enter("open");
    this._started?.resolve();
    this._scheduleHeartbeat(transport);
  }

  /** @param {Transport} transport */
  _scheduleHeartbeat(transport) {
    if (!this.heartbeatMs) return;
    this._timer = setTimeout(() => {
      this._timer = null;
      if (transport !== this.transport || this.state !== "open") return;
      if (Date.now() - this._lastHeard > 2 * this.heartbeatMs) {
        this._abandon(transport, "no answer to heartbeats");
        return;
      }
      transport.send({ c: "heartbeat" });
      this._scheduleHeartbeat(transport);
    }, this.heartbeatMs);
  }

  /**
   * Give up on the current transport (it hangs, or failed its handshake): close it, then retry.
   * @param {Transport} transport @param {string} reason
   */
  _abandon(transport, reason) {
    if (transport !== this.transport) return;
    this._detach()?.close(CLOSE_ABANDONED, reason.slice(0, 120));
    this._lost(CLOSE_ABANDONED, reason);
  }

  /**
   * The current socket ended: retry after a delay, unless its close code is final.
   * @param {number} code @param {string} reason
   */
  _lost(code, reason) {
    this._detach();
    if (this.isFinal(code)) {
      this._finish(code, reason);
      return;
    }
    if (this.state === "open") {
      if (Date.now() - this.openedAt >= this.stableMs) this._level = 0;
      this.attempt = 0;
    }
    this._level += 1;
    this.attempt += 1; // the upcoming attempt's number, so a banner can say "attempt 3 in 1.6 s"
    const delayMs = backoffDelay(this.backoff, this._level, this.random());
    this._enter("waiting", { delayMs, code, reason });
    this._timer = setTimeout(() => {
      this._timer = null;
      if (this.state === "waiting") this._connect();
    }, delayMs);
  }

  /** @param {number} code @param {string} reason @param {unknown} [cause] */
  _finish(code, reason, cause) {
    this.attempt = 0;
    this.closedBy = new ConnectionClosed(code, reason, { command: "connect", cause });
    this._enter("closed", { code, reason });
    this._started?.reject(this.closedBy);
  }

  /** Forget the current transport (its later events are ignored); returns it. */
  _detach() {
    const transport = this.transport;
    this.transport = null;
    return transport;
  }

  _clearTimer() {
    if (this._timer !== null) clearTimeout(this._timer);
    this._timer = null;
  }
}
