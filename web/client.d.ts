// Types of client.js: PushClient, the browser client of the push server.

import { Emitter } from "./emitter.js";
import type { Backoff, Connection, ConnectionState, StateEvent } from "./connection.js";
import type { PushError, TopicWarning } from "./errors.js";
import type { View, ViewSettings } from "./view.js";
import type { AggregateSettings, Viewport, ViewportSettings } from "./viewport.js";

/**
 * What every command takes. Commands made before connect(), or while the client reconnects, wait
 * and are sent once it is logged on; the deadline runs meanwhile.
 */
export interface RequestOptions {
  /** Aborting it rejects the command at once with code "aborted" (a view is closed). */
  signal?: AbortSignal;
  /**
   * No answer by then rejects it with code "timeout" (0: no limit). One-off commands default to
   * the client's `requestTimeoutMs`; views and connect() have no default.
   */
  timeoutMs?: number;
}

export interface ClientOptions {
  /** With one, publishes carry sequence numbers and are re-sent safely after a reconnect. */
  clientName?: string;
  userId?: string;
  password?: string;
  /** What this socket is, for people reading the server's /status (a screen's user and tab,
   * say): not an identity, and not unique. */
  label?: string;
  /** The WebSocket class to connect with: the runtime's own by default (browsers, Node.js 22+);
   * on Node.js 20, the ws package's (`import { WebSocket } from "ws"`). */
  WebSocket?: typeof WebSocket;
  /** 10000 by default; 0 turns heartbeats off. */
  heartbeatMs?: number;
  /** true by default; false: the first lost socket closes the client. */
  reconnect?: boolean;
  /** The longest wait between attempts (10000). */
  maxBackoffMs?: number;
  /** The whole backoff, if `maxBackoffMs` is not enough. */
  backoff?: Partial<Backoff>;
  /** An attempt that is not logged on by then fails and the next one is made (10000). */
  connectTimeoutMs?: number;
  /** The timeoutMs of one-off commands that name none (30000; 0: none). */
  requestTimeoutMs?: number;
  /** true by default: tell the server when the page is hidden (docs/protocol.md, Hidden views). */
  reportVisibility?: boolean;
}

/** A processed ack (docs/protocol.md, Messages from the server): what publish, deltaPublish, sowDelete, transaction and flush resolve with. */
export interface Ack {
  c: "ack";
  a: "processed";
  cid?: string;
  status: "success";
  /** "duplicate": the server had applied this publish already (its sequence number). */
  reason?: string;
  /** The sequence number of a command with one. */
  s?: number;
  bm?: string;
  /** sow_delete: records it matched and deleted. */
  matches?: number;
  records_deleted?: number;
  /** The server's words when the topic is not one it keeps (docs/protocol.md, Topics the server does not keep). */
  warning?: string;
  /** With `warning`: the topic is plain pub/sub. */
  pubsub?: true;
  /** With `warning`: the topic, as sent. */
  t?: string;
  /** With `warning`: the configured topics close to it, closest first. */
  did_you_mean?: string[];
  /** With `warning`: every configured topic, when the server has few. */
  configured_topics?: string[];
}

export interface PublishOptions extends RequestOptions {
  /** Seconds the record lives (0: for ever); absent: the topic's default. */
  expiration?: number;
}

export interface SowOptions extends RequestOptions {
  filter?: string;
  /** e.g. "/qty DESC, /order" */
  orderby?: string;
  topN?: number;
  skipN?: number;
  /** Options (docs/protocol.md, Commands), e.g. "select=[-/,+/order]". */
  options?: string;
}

/** Exactly one of `filter`, `keys` and `data`. */
export interface SowDeleteOptions extends RequestOptions {
  filter?: string;
  /** SowKeys, e.g. from `change.key`. */
  keys?: string[];
  /** A record with the key fields of the one to delete. */
  data?: Record<string, any>;
}

/** A command of a transaction (docs/protocol.md, Transactions). */
export type TransactionCommand =
  | { c: "publish" | "delta_publish"; t: string; data: Record<string, any>; e?: number }
  | { c: "sow_delete"; t: string; filter?: string; sow_keys?: string; data?: Record<string, any> };

export interface ClientEvents {
  /** Every change of the connection's state. */
  state: StateEvent;
  /** After a transaction's messages are all applied to the views, in one task. */
  transaction: { tx: string; views: Set<View> };
  /** The client is closed for good. */
  closed: { code?: number; reason?: string };
  /** A frame from the server that is not JSON (code "bad_frame"). */
  error: PushError;
  /** A view or a publish named a topic the server does not keep (said once per topic, also by console.warn). */
  warning: TopicWarning;
}

export declare class PushClient extends Emitter<ClientEvents> {
  constructor(url: string, options?: ClientOptions);
  readonly url: string;
  readonly options: ClientOptions;
  readonly connection: Connection;
  /** The open views, by sub_id. */
  readonly views: Map<string, View>;
  /** idle (before connect()), connecting, open, waiting (to reconnect), closed (for good). */
  readonly state: ConnectionState;
  /** The number of the attempt being made or to be made next; 0 while open. */
  readonly attempt: number;
  /** Whether the page is hidden (never, outside a browser). */
  readonly hidden: boolean;

  /**
   * Connect and log on: resolves once logged on, however many attempts that takes; rejects with a
   * ConnectionClosed when the client is closed for good first (close(); "bad_credentials" for a
   * refused logon; "replaced"). With a signal or timeoutMs, giving up before it is logged on
   * closes the client and rejects with "aborted" or "timeout".
   */
  connect(options?: RequestOptions): Promise<void>;
  /** Close for good: what waits fails with code "closed", views end (their loops finish). */
  close(): void;

  /** Publish a record; resolves on the processed ack (re-sent after a reconnect until acked). */
  publish<T = Record<string, any>>(topic: string, data: T, options?: PublishOptions): Promise<Ack>;
  /** Merge `data` into the record with its key (docs/protocol.md, Publish and delta publish). */
  deltaPublish<T = Record<string, any>>(topic: string, data: Partial<T>, options?: PublishOptions): Promise<Ack>;
  /** Delete records: by filter, by SowKeys, or the one with the key of `data`. */
  sowDelete(topic: string, which: SowDeleteOptions): Promise<Ack>;
  /** Several changes as one step: all or nothing, delivered whole (docs/protocol.md, Transactions). */
  transaction(commands: TransactionCommand[], options?: RequestOptions): Promise<Ack>;
  /** Resolves once the server has processed every command this client sent before it. */
  flush(options?: RequestOptions): Promise<Ack>;
  /** A one-off query: the matching records, in order. */
  sow<T = any>(topic: string, query?: SowOptions): Promise<T[]>;

  /** Live updates from now on (full records). */
  subscribe<T = any>(topic: string, settings?: ViewSettings): View<T>;
  /** The matching records, then live updates (full records). */
  sowAndSubscribe<T = any>(topic: string, settings?: ViewSettings): View<T>;
  /** Live updates as deltas (applied by the view). */
  deltaSubscribe<T = any>(topic: string, settings?: ViewSettings): View<T>;
  /** The matching records, then deltas. */
  sowAndDeltaSubscribe<T = any>(topic: string, settings?: ViewSettings): View<T>;
  /**
   * The rows `rows: [first, last]` (0-based, inclusive: [0, 49] is 50 rows; default [0, 99]) of
   * the view `filter` and `orderby` make of `topic`, live: `rows`, `keys`, `count`, moved in
   * place by moveTo, sortBy and filterBy.
   */
  viewport<T = any>(topic: string, settings?: ViewportSettings): Viewport<T>;
  /**
   * The same over the groups of an aggregated view: rows are group records keyed by the group's
   * key. Without `rows`: the first 10,000 groups (the whole view up to that; `count` tells).
   */
  aggregate<T = any>(topic: string, settings: AggregateSettings): Viewport<T>;
  /** view.close(), by the view or its sub_id. */
  unsubscribe(view: View | string): Promise<void>;
}
