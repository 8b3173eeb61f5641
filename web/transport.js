// The only module that touches WebSocket: frames in (text or binary UTF-8 JSON, one message or an
// array of them), frames out, and how the connection ended.

import { Emitter } from "./emitter.js";

export class Transport extends Emitter {
  /** @param {string} url */
  constructor(url) {
    super();
    this.url = url;
    /** @type {WebSocket | null} */
    this.socket = null;
    this.decoder = new TextDecoder();
  }

  /** Open the socket; resolves when it is open, rejects when it fails to open. */
  open() {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url);
      socket.binaryType = "arraybuffer";
      this.socket = socket;
      let opened = false;
      socket.onopen = () => {
        opened = true;
        resolve(undefined);
      };
      socket.onmessage = (event) => {
        const text = typeof event.data === "string" ? event.data : this.decoder.decode(event.data);
        let decoded;
        try {
          decoded = JSON.parse(text);
        } catch (error) {
          this.emit("error", new Error(`a frame that is not JSON: ${text.slice(0, 80)}`));
          return;
        }
        this.emit("frame", { messages: Array.isArray(decoded) ? decoded : [decoded], bytes: text.length });
      };
      socket.onclose = (event) => {
        if (this.socket === socket) this.socket = null;
        if (!opened) reject(new Error(`cannot connect to ${this.url}`));
        this.emit("close", { code: event.code, reason: event.reason });
      };
    });
  }

  /** @param {object | object[]} message */
  send(message) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  close(code = 1000) {
    this.socket?.close(code);
  }
}
