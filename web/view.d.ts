// Types of view.js: a live view of a topic, read through `records`, events, or `for await`.

import { Emitter } from "./emitter.js";
import type { PushErrorCode, PushError, TopicWarning } from "./errors.js";
import type { LatencyWindow } from "./latency.js";
import type { PushClient, RequestOptions } from "./client.js";

/** What happened to a record: in the snapshot, new in the view, changed, or out of it. */
export type ChangeKind = "snapshot" | "insert" | "update" | "oof";

export interface Change<T = any> {
  /** The SowKey (`#n` for a topic without keys: every message its own record). */
  key: string;
  /** The record now; for an oof, the body the server sent (see docs/protocol.md, Delta subscriptions and OOF). */
  record: T;
  kind: ChangeKind;
  /** For an oof: "deleted", "expired", "match", "entitlement", or "stale" (gone after a reconnect). */
  reason?: string;
  /** For an oof: true when a change took the record out of the view; false when a viewport's
   * move left it behind, a change pushed it across the window's edge, or a reconnect found it gone. */
  news?: boolean;
  /** For an oof: the record as the view held it until then (undefined when it held none). */
  previous?: T;
}

export interface ViewSettings extends RequestOptions {
  /** A filter (docs/protocol.md, Filters), e.g. "/qty > 10". */
  filter?: string;
  /** Options (docs/protocol.md, Commands), e.g. "oof,delta=merge,conflation=250ms". */
  options?: string;
  /** The view's sub_id (made up when absent). */
  subId?: string;
  /** sow_and_* views resume from their newest bookmark after a reconnect; false: a full snapshot. */
  resume?: boolean;
  /** Aborting it (at any time) closes the view: ready and its iterators fail with "aborted". */
  signal?: AbortSignal;
  /** The view must be ready by then, or it is closed and fails with "timeout". No default. */
  timeoutMs?: number;
}

export interface ViewErrorEvent {
  /** The server's reason, or what went wrong. */
  reason: string;
  /** The PushError's code, or "missing_record" (a delta for a record the view does not hold). */
  code: PushErrorCode | "missing_record";
  /** The view's failure: a refusal or a timeout. */
  error?: PushError;
}

export interface ViewEvents<T = any> {
  change: Change<T>;
  ready: View<T>;
  /** Refused by the server, timed out before it was ready, or a delta it could not apply. */
  error: ViewErrorEvent;
  /** The server dropped the view (back pressure): it has ended. */
  unsubscribed: { reason: string };
  /** true when the connection is lost (records kept), false once the view is back. */
  stale: { stale: boolean };
  /** The topic is not one the server keeps (a typo?): the view is plain pub/sub. Once per view. */
  warning: TopicWarning;
}

/** Live figures. */
export interface ViewStats {
  /** messages applied */
  updates: number;
  /** bytes received */
  bytes: number;
  /** bytes saved by deltas against full records */
  bytesSaved: number;
}

/**
 * A view, made by the client's subscribe methods. `for await (const change of view)` reads its
 * changes: first the records it holds at that moment (as "snapshot"), then every change, at most
 * one waiting per record key for a slow reader (its net change); the loop ends when the view is
 * closed and throws the view's PushError when it fails. `break` stops the loop, not the view.
 */
export declare class View<T = any> extends Emitter<ViewEvents<T>> implements AsyncIterable<Change<T>> {
  constructor(client: PushClient, command: string, topic: string, settings: ViewSettings & { subId: string });
  /** The subscribe command: "subscribe", "sow_and_subscribe", "delta_subscribe", ... */
  readonly command: string;
  readonly topic: string;
  readonly filter: string | undefined;
  readonly options: string | undefined;
  readonly subId: string;
  /** SowKey -> current record. */
  readonly records: Map<string, T>;
  readonly stats: ViewStats;
  /** Server `ts` to receipt of the live messages of the last minute (with the `timestamp` option). */
  readonly latency: LatencyWindow;
  /** Resolves once the view is established (its snapshot in, for sow_and_*); rejects with a PushError. */
  readonly ready: Promise<View<T>>;
  /** The server's reason when it refused the view. */
  error: string | null;
  /** Why the view failed: refused, timeout, aborted, dropped, or its client closed for good. */
  failure: PushError | null;
  /** The server's words when the topic is not one it keeps (a typo?): the view is plain pub/sub. */
  warning: TopicWarning | null;
  /** True once the view has ended (closed or failed). */
  closed: boolean;
  /** True while the connection is down: the records are the last values received. */
  stale: boolean;
  /** The newest bookmark of the complete view: where a resume starts. */
  bookmark: string | null;
  /** Whether the last snapshot was a resume (only the net change was sent). */
  resumed: boolean;
  /** Whether it resumes after a reconnect. */
  readonly resumes: boolean;
  readonly hasSnapshot: boolean;
  /**
   * Stop the view: it ends at once; resolves when the server has acknowledged the unsubscribe, at
   * once when the server does not hold it. Never rejects.
   */
  close(): Promise<void>;
  [Symbol.asyncIterator](): AsyncIterableIterator<Change<T>>;
}
