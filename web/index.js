// The browser client of the push server. See the README's "JavaScript client" section; the types
// are in the .d.ts file beside each module.
export { PushClient } from "./client.js";
export { Connection, backoffDelay } from "./connection.js";
export { View } from "./view.js";
export { DEFAULT_ROWS, MAX_ROWS, Viewport } from "./viewport.js";
export * from "./errors.js"; // PushError and its subclasses, REFUSAL_CODES, CLOSE_CODES
export { LatencyWindow } from "./latency.js";
export { applyPatch } from "./patch.js";
export { mergeRecord } from "./merge.js";
