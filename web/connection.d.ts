// Types of connection.js: the connection state machine (one socket at a time, one reconnect
// loop, one timer). PushClient drives one; it is exported for those who speak the protocol
// themselves.

import { Emitter } from "./emitter.js";
import type { ConnectionClosed, PushError } from "./errors.js";
import type { FrameEvent, Transport } from "./transport.js";

/** idle -> connecting -> open; a lost socket -> waiting -> connecting ...; closed for good. */
export type ConnectionState = "idle" | "connecting" | "open" | "waiting" | "closed";

export interface StateEvent {
  state: ConnectionState;
  /**
   * The attempt being made (connecting) or to be made next (waiting), counted from 1 since the
   * connection was last open; 0 when open or closed.
   */
  attempt: number;
  /** While waiting: how long until the next attempt. */
  delayMs?: number;
  /** The close code that ended the previous socket, when there was one. */
  code?: number;
  reason?: string;
}

/**
 * The delay before attempt n: min(maxMs, initialMs * factor ** (n - 1)), less a random part of up
 * to `jitter` of it (0.5: between half and all of it).
 */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  factor: number;
  jitter: number;
}

export interface ConnectionOptions {
  /**
   * Run once the socket is open (the logon); the connection is open when it resolves. A rejection
   * with `final: true` closes for good; any other is a failed attempt.
   */
  handshake?: () => Promise<void>;
  backoff?: Partial<Backoff>;
  /** Send a heartbeat this often while open; dropped when nothing was heard for two (0: none). */
  heartbeatMs?: number;
  /** An attempt (socket and handshake) that takes longer fails. */
  connectTimeoutMs?: number;
  /** An open connection that lasted less than this does not reset the backoff. */
  stableMs?: number;
  /** Close codes after which retrying would be wrong. */
  isFinal?: (code: number) => boolean;
  /** In [0, 1), for the jitter. */
  random?: () => number;
  createTransport?: (url: string) => Transport;
}

export interface ConnectionEvents {
  state: StateEvent;
  frame: FrameEvent;
  error: PushError;
}

/** Bad credentials (1008), or replaced by a newer logon with the same client name (4002). */
export declare const FINAL_CLOSE_CODES: ReadonlySet<number>;
/** The close code this side uses when it gives up on a socket (no heartbeat, timeout). */
export declare const CLOSE_ABANDONED: number;

/** The delay before attempt `level` (1, 2, ...) of a backoff; `random` in [0, 1). */
export declare function backoffDelay(backoff: Backoff, level: number, random: number): number;

export declare class Connection extends Emitter<ConnectionEvents> {
  constructor(url: string, options?: ConnectionOptions);
  readonly url: string;
  state: ConnectionState;
  attempt: number;
  /** Sockets opened over the connection's life (every attempt makes one). */
  sockets: number;
  /** Times the connection became open: each is a new session on the server. */
  opens: number;
  /** The current attempt's transport. */
  transport: Transport | null;
  /** When the connection last became open (Date.now()). */
  openedAt: number;
  /** Why it is closed for good, while it is. */
  closedBy: ConnectionClosed | null;
  /**
   * Start connecting (from idle or closed). Resolves when the connection is first open; rejects
   * with a ConnectionClosed if it is closed for good before that.
   */
  start(): Promise<void>;
  /** Close for good: no more attempts. */
  stop(code?: number, reason?: string, cause?: unknown): void;
  /** Send on the current socket when it is open (during the handshake too). */
  send(message: object | object[]): boolean;
}
