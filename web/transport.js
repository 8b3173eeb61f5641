// The only module that touches WebSocket: frames in (text or binary UTF-8 JSON, one message or an
// array of them), frames out, and how the connection ended.
//
// A Transport is one socket, used once: the connection state machine (connection.js) makes a new
// one for every attempt and drops the old one, so events of a superseded socket can never be
// mistaken for the current one's.

import { Emitter } from "./emitter.js";
import { PushError } from "./errors.js";

/**
 * @typedef {{ messages: any[], bytes: number }} FrameEvent
 * @typedef {{ code: number, reason: string }} CloseEvent
 */

// The socket's ready states, as every WebSocket implementation numbers them (not read from the
// runtime's WebSocket, which another implementation replaces).
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

/** @extends {Emitter<any>} */
export class Transport extends Emitter {
  /**
   * @param {string} url
   * @param {typeof WebSocket} [WebSocketClass] the runtime's own by default (a browser's, Node's
   *   from version 22); another implementation of the same API (Node 20 and the ws package, say)
   */
  constructor(url, WebSocketClass = globalThis.WebSocket) {
    super();
    this.url = url;
    this.WebSocketClass = WebSocketClass;
    /** @type {WebSocket | null} */
    this.socket = null;
    this.decoder = new TextDecoder();
    /** True once "close" was emitted: nothing is emitted after it. */
    this.ended = false;
  }

  /** Open the socket. Emits "open" when it is open, "frame" per frame, then "close" exactly once. */
  open() {
    if (this.socket || this.ended) throw new Error("a Transport opens once");
    if (typeof this.WebSocketClass !== "function") {
      // (Like a URL the runtime refuses: the connection ends for good, with this as its reason.)
      throw new Error(
        "this runtime has no WebSocket: use Node.js 22 or later, or pass one: new PushClient(url, { WebSocket })",
      );
    }
    const socket = new this.WebSocketClass(this.url);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    socket.onopen = () => {
      if (!this.ended) this.emit("open", undefined);
    };
    socket.onmessage = (event) => {
      if (this.ended) return;
      const text = typeof event.data === "string" ? event.data : this.decoder.decode(event.data);
      let decoded;
      try {
        decoded = JSON.parse(text);
      } catch {
        this.emit("error", new PushError("bad_frame", `a frame that is not JSON: ${text.slice(0, 80)}`));
        return;
      }
      this.emit("frame", { messages: Array.isArray(decoded) ? decoded : [decoded], bytes: text.length });
    };
    socket.onclose = (event) => this._end(event.code, event.reason);
  }

  /** True while the socket is open and can send. */
  get isOpen() {
    return !this.ended && this.socket !== null && this.socket.readyState === OPEN;
  }

  /** @param {object | object[]} message @returns {boolean} whether it was handed to the socket */
  send(message) {
    if (!this.isOpen) return false;
    /** @type {WebSocket} */ (this.socket).send(JSON.stringify(message));
    return true;
  }

  /**
   * Close the socket (also one still connecting) and emit "close" now, without waiting for the
   * browser's close handshake: the caller is done with this transport.
   * @param {number} [code] 1000 or 3000-4999
   * @param {string} [reason]
   */
  close(code = 1000, reason = "") {
    const socket = this.socket;
    if (socket && socket.readyState !== CLOSED && socket.readyState !== CLOSING) {
      socket.close(code, reason);
    }
    this._end(code, reason);
  }

  /** @param {number} code @param {string} reason */
  _end(code, reason) {
    if (this.ended) return;
    this.ended = true;
    const socket = this.socket;
    if (socket) socket.onopen = socket.onmessage = null;
    this.emit("close", { code, reason });
  }
}
