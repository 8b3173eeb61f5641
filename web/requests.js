// The commands waiting for their processed ack, by cid, in the order they were made.
//
// A command made while the connection is not open waits here and is sent when it opens (before
// connect() too: every command is queued until then, and its deadline still runs). When a
// connection is lost, the commands sent on it will get no answer: queries and subscribes fail,
// publishes (publish, delta_publish, sow_delete, tx: the ones with sequence numbers) stay and are
// sent again on the next connection, with the same sequence number, until one is acknowledged.
// When the client is closed for good, everything still here fails.

import { underDeadline } from "./deadline.js";
import { CommandRefused } from "./errors.js";

/**
 * @typedef {import("./deadline.js").RequestOptions} RequestOptions
 *
 * @typedef {object} Ack  a successful processed ack (docs/protocol.md, Messages from the server)
 * @property {"ack"} c
 * @property {"processed"} a
 * @property {string} [cid]
 * @property {"success"} status
 * @property {string} [reason]  "duplicate" for a publish the server had already applied
 * @property {number} [s]
 * @property {string} [bm]
 * @property {number} [matches]
 * @property {number} [records_deleted]
 * @property {string} [warning]  the server's words: the topic is not one it keeps (docs/protocol.md,
 *   Topics the server does not keep), with `pubsub`, `t`, `did_you_mean`, `configured_topics`
 * @property {true} [pubsub]
 * @property {string} [t]
 * @property {string[]} [did_you_mean]
 * @property {string[]} [configured_topics]
 *
 * @typedef {object} Pending
 * @property {string} command
 * @property {Record<string, any>} message
 * @property {(ack: Ack) => void} resolve
 * @property {(error: Error) => void} reject
 * @property {boolean} publish  sent again on every new connection until acknowledged
 * @property {boolean} sent  on the current connection
 *
 * @typedef {RequestOptions & { publish?: boolean, handshake?: boolean, hint?: () => string }} RequestKind
 */

export class Requests {
  /**
   * @param {(message: object) => boolean} send  hands a message to the open socket
   * @param {() => boolean} isOpen  whether commands go out now (logged on)
   */
  constructor(send, isOpen) {
    this._send = send;
    this._isOpen = isOpen;
    /** @type {Map<string, Pending>} */
    this._pending = new Map();
    this._counter = 0;
  }

  /** A new id for a query or a view, from the same counter as the cids. */
  nextId() {
    return String(++this._counter);
  }

  /**
   * Send a command with a cid; resolves with its processed ack, rejects with CommandRefused, or
   * with the deadline's error (it is then forgotten: not sent, or not sent again).
   * @param {Record<string, any>} message
   * @param {RequestKind} [kind]  the handshake is sent while the connection is being made
   * @returns {Promise<Ack>}
   */
  request(message, kind = {}) {
    const { publish = false, handshake = false, hint } = kind;
    return underDeadline(message.c, kind, (resolve, reject) => {
      const cid = this.nextId();
      /** @type {Pending} */
      const pending = { command: message.c, message, resolve, reject, publish, sent: false };
      this._pending.set(cid, pending);
      if (handshake || this._isOpen()) pending.sent = this._send({ ...message, cid });
      return () => this._pending.delete(cid);
    }, hint);
  }

  /** @param {any} ack  an ack from the server: a processed one settles its command */
  answer(ack) {
    const cid = ack.cid === undefined ? undefined : String(ack.cid);
    const pending = cid === undefined ? undefined : this._pending.get(cid);
    if (!pending || cid === undefined || ack.a !== "processed") return;
    this._pending.delete(cid);
    if (ack.status === "success") pending.resolve(ack);
    else pending.reject(new CommandRefused(ack.reason ?? "", pending.command));
  }

  /** A new connection is logged on: send what waits (publishes again, with their numbers). */
  opened() {
    for (const [cid, pending] of this._pending) {
      if (pending.publish || !pending.sent) pending.sent = this._send({ ...pending.message, cid });
    }
  }

  /**
   * The connection went away: commands sent on it fail with `failure(command)`, publishes wait
   * to be sent again; when it is closed for good (`final`) everything fails.
   * @param {(command: string) => Error} failure @param {boolean} final
   */
  lost(failure, final) {
    for (const [cid, pending] of this._pending) {
      if (final || (!pending.publish && pending.sent)) {
        this._pending.delete(cid);
        pending.reject(failure(pending.command));
      } else {
        pending.sent = false;
      }
    }
  }
}
