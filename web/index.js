// The browser client of the push server. See the README's "JavaScript client" section.
export { PushClient } from "./client.js";
export { Connection, backoffDelay } from "./connection.js";
export { View } from "./view.js";
export { LatencyWindow } from "./latency.js";
export { applyPatch } from "./patch.js";
export { mergeRecord } from "./merge.js";
