// Types of latency.js: the server's `ts` to receipt, over the last minute.

export interface Percentiles {
  /** milliseconds, or null when no message arrived in the window */
  p50: number | null;
  p99: number | null;
  /** the number of messages they are of */
  count: number;
}

export declare class LatencyWindow {
  constructor(windowMs?: number);
  readonly windowMs: number;
  /** Note a message's server time (ISO-8601) received at `now` (ms since the epoch). */
  add(ts: string, now?: number): void;
  percentiles(now?: number): Percentiles;
}
