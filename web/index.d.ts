// Types of index.js, the browser client of the push server (see the README's "JavaScript
// client" section). TypeScript finds this file beside the module: no build step, no package.

export { PushClient } from "./client.js";
export type {
  Ack,
  ClientEvents,
  ClientOptions,
  PublishOptions,
  RequestOptions,
  SowDeleteOptions,
  SowOptions,
  TransactionCommand,
} from "./client.js";
export { Connection, backoffDelay } from "./connection.js";
export type { Backoff, ConnectionOptions, ConnectionState, StateEvent } from "./connection.js";
export { View } from "./view.js";
export type { Change, ChangeKind, ViewErrorEvent, ViewEvents, ViewSettings, ViewStats } from "./view.js";
export { DEFAULT_ROWS, MAX_ROWS, Viewport } from "./viewport.js";
export type {
  AggregateSettings,
  MoveResult,
  RowRange,
  RowsEvent,
  ViewportEvents,
  ViewportSettings,
} from "./viewport.js";
export * from "./errors.js"; // PushError and its subclasses, REFUSAL_CODES, CLOSE_CODES
export type { Emitter } from "./emitter.js";
export { LatencyWindow } from "./latency.js";
export type { Percentiles } from "./latency.js";
export { applyPatch } from "./patch.js";
export type { PatchOperation } from "./patch.js";
export { mergeRecord } from "./merge.js";
