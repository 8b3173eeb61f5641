// Types of viewport.js: the rows first..last of a sorted, filtered view, live and movable in place
// (client.viewport(), and client.aggregate() over groups).

import type { RequestOptions, PushClient } from "./client.js";
import { View } from "./view.js";
import type { ViewEvents } from "./view.js";

/** [first, last]: 0-based and inclusive at both ends, as AG Grid's rows are ([0, 49] is 50 rows). */
export type RowRange = [first: number, last: number];

export interface ViewportSettings extends RequestOptions {
  /** A filter (docs/protocol.md, Filters), e.g. "/qty > 10". */
  filter?: string;
  /** e.g. "/qty DESC, /order"; without one the order is by SowKey. */
  orderby?: string;
  /** The window, 0-based, inclusive: [0, 49] is the first 50 rows. Default [0, 99]; at most 10,000 rows. */
  rows?: RowRange;
  /** More options, e.g. "select=[-/notes],conflation=250ms"; the viewport adds positions, count and oof. */
  options?: string;
  /** false: do not ask the server to count the view (`count` stays null). Default true. */
  count?: boolean;
  /** The viewport's sub_id (made up when absent). */
  subId?: string;
  /** The grouping fields of an aggregated view (client.aggregate), e.g. ["/desk", "/sym"]. */
  grouping?: string[];
  /** Its projection, e.g. ["/desk", "SUM(/qty) AS /qty", "COUNT(/order) AS /orders"]. */
  projection?: string[];
  /** Aborting it (at any time) closes the viewport: ready and pending moves fail with "aborted". */
  signal?: AbortSignal;
  /** The first window must be in by then, or the viewport is closed and fails with "timeout". */
  timeoutMs?: number;
}

/**
 * client.aggregate()'s settings: a `grouping`, a `projection`, or both (a projection alone makes
 * one group of every record; a grouping alone projects its fields and `/count`). Without
 * `rows`: the first 10,000 groups.
 */
export type AggregateSettings = Omit<ViewportSettings, "grouping" | "projection"> &
  ({ grouping: string[]; projection?: string[] } | { grouping?: string[]; projection: string[] });

/** What moveTo, sortBy and filterBy resolve with. */
export interface MoveResult {
  /**
   * true: a newer change replaced this one before it was sent, and it resolved at once (await
   * the newest move to know when its rows are there); false: its answer is applied.
   */
  superseded: boolean;
  /** The window applied when it settled. */
  first: number;
  last: number;
  count: number | null;
}

/** The "rows" event: once per frame from the server that changed the rows or the count. */
export interface RowsEvent<T = any> {
  first: number;
  last: number;
  /** The window's records in order: row `first + i` is `rows[i]`. */
  rows: T[];
  /** Their keys, parallel to `rows`. */
  keys: string[];
  count: number | null;
}

export interface ViewportEvents<T = any> extends ViewEvents<T> {
  rows: RowsEvent<T>;
  /** The whole view's size changed. */
  count: { count: number | null };
}

/** The rows of a viewport made without `rows`: [0, 99]. */
export declare const DEFAULT_ROWS: RowRange;
/** The most rows one window may hold (10,000). */
export declare const MAX_ROWS: number;
/** What is wrong with a range, or null when a window can have it. */
export declare function rangeProblem(first: number, last: number): string | null;

/**
 * A viewport: a View (its `records`, "change" events, `for await`, `ready`, "stale", close())
 * that also keeps the window's order and the view's size. Moves are replaces of the same
 * sub_id, one in flight at a time; changes asked meanwhile go together in the next one.
 */
export declare class Viewport<T = any> extends View<T> {
  constructor(client: PushClient, topic: string, settings: ViewportSettings & { subId: string });
  /** Resolves once the first window is in (after its "rows" event); rejects with a PushError. */
  readonly ready: Promise<Viewport<T>>;
  /** The window's records in window order: row `first + i` is `rows[i]`. */
  readonly rows: T[];
  /** Their keys (SowKeys, or group keys), parallel to `rows`. */
  readonly keys: string[];
  /** The first row of the window `rows` holds (as the server answered). */
  readonly first: number;
  /** Its last row: `rows` is shorter when the view ends inside the window. */
  readonly last: number;
  /** The order `rows` is in. */
  readonly orderby: string | undefined;
  /** The whole view's size (not the window's); null until the server says (or with `count: false`). */
  readonly count: number | null;
  /** The window last asked for (moves not yet answered included): where the viewport is going. */
  readonly wanted: Readonly<{ first: number; last: number; orderby: string | undefined; filter: string | undefined }>;
  /** The grouping fields, for client.aggregate(). */
  readonly grouping: string[] | undefined;
  readonly projection: string[] | undefined;
  /**
   * Show rows first..last (0-based, inclusive). Resolves once the server's answer is applied
   * (after its "rows" event), or at once with `superseded: true` when a newer moveTo replaced it
   * before it was sent; rejects with the server's CommandRefused (the window stays as it was),
   * with a RangeError for a range no window can have, or with the viewport's error if it ends.
   */
  moveTo(first: number, last: number): Promise<MoveResult>;
  /** A new order, same range: settles as moveTo (a newer sortBy supersedes it). */
  sortBy(orderby: string | undefined): Promise<MoveResult>;
  /** A new filter, same range: settles as moveTo (a newer filterBy supersedes it). */
  filterBy(filter: string | undefined): Promise<MoveResult>;

  on<K extends keyof ViewportEvents<T> & string>(name: K, listener: (event: ViewportEvents<T>[K]) => void): () => void;
  off<K extends keyof ViewportEvents<T> & string>(name: K, listener: (event: ViewportEvents<T>[K]) => void): void;
  emit<K extends keyof ViewportEvents<T> & string>(name: K, event: ViewportEvents<T>[K]): void;
}
