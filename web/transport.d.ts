// Types of transport.js: one WebSocket, used once.

import { Emitter } from "./emitter.js";
import type { PushError } from "./errors.js";

/** One frame: its messages (a frame holds one message or an array) and its length. */
export interface FrameEvent {
  messages: any[];
  bytes: number;
}

export interface CloseEvent {
  code: number;
  reason: string;
}

export interface TransportEvents {
  open: undefined;
  frame: FrameEvent;
  /** emitted exactly once; nothing is emitted after it */
  close: CloseEvent;
  /** a frame that is not JSON (code "bad_frame") */
  error: PushError;
}

/** The only module that touches WebSocket. */
export declare class Transport extends Emitter<TransportEvents> {
  /** `WebSocketClass`: the runtime's own by default (browsers, Node.js 22+); another
   * implementation of the same API (Node.js 20 and the ws package, say). */
  constructor(url: string, WebSocketClass?: typeof WebSocket);
  readonly url: string;
  /** True once "close" was emitted. */
  ended: boolean;
  /** Open the socket (once). */
  open(): void;
  /** True while the socket is open and can send. */
  readonly isOpen: boolean;
  /** Returns whether the message was handed to the socket. */
  send(message: object | object[]): boolean;
  /** Close the socket and emit "close" now. */
  close(code?: number, reason?: string): void;
}
