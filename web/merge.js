// Delta merging (docs/protocol.md, Publish and delta publish): objects merge field by field, arrays and scalars replace,
// nothing is removed. Returns a new record; the inputs are not modified.

/** @param {unknown} value @returns {value is Record<string, any>} */
function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * @param {Record<string, any>} held @param {Record<string, any>} delta
 * @returns {Record<string, any>}
 */
export function mergeRecord(held, delta) {
  const merged = { ...held };
  for (const [name, value] of Object.entries(delta)) {
    merged[name] = isObject(value) && isObject(held?.[name]) ? mergeRecord(held[name], value) : value;
  }
  return merged;
}
