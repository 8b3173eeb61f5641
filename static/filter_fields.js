// The fields a filter names, read as the server reads them, against the fields a topic's records
// have: an empty view whose filter names a field no record has says so (static/panel.js).

/** Records of a topic read to learn its fields, when a filtered view is empty. */
export const FIELD_SAMPLE = 200;

/**
 * The top-level fields ``filter`` names that none of ``records`` has, and the fields they have;
 * null when the records are none (an empty topic says nothing of its fields).
 * @param {string} filter @param {any[]} records
 * @returns {{ missing: string[], fields: string[], read: number, whole: boolean } | null}
 */
export function unknownFields(filter, records) {
  if (!records.length) return null;
  const fields = new Set();
  for (const record of records) {
    if (record && typeof record === "object") for (const field of Object.keys(record)) fields.add(field);
  }
  const missing = [...pathsOf(filter)].filter((field) => !fields.has(field));
  // ``whole``: the sample was the whole topic (fewer records than asked for).
  return { missing, fields: [...fields].sort(), read: records.length, whole: records.length < FIELD_SAMPLE };
}

/**
 * The first step of each path ``filter`` names, read as the server's lexer reads it
 * (server/core/filters/lexer.py): outside strings, a `/` right after an operand divides, any other
 * starts a path (`/a/b` is one path, of `a`); `[/odd name/x]` is a path of `odd name`.
 * @param {string} filter @returns {Set<string>}
 */
export function pathsOf(filter) {
  const found = new Set();
  const tokens = filter.matchAll(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\[\/([^\]\/]*)[^\]]*\]|\/([\p{L}\p{N}\p{M}_$@]+)(?:\[\d+\])*(?:\/[\p{L}\p{N}\p{M}_$@]+(?:\[\d+\])*)*|([\p{L}_][\p{L}\p{N}\p{M}_]*)|(\p{N}[\p{L}\p{N}.]*)|(\S)/gu);
  let afterOperand = false;
  for (const [token, bracketed, path, word] of tokens) {
    if (bracketed !== undefined) {
      found.add(bracketed);
      afterOperand = true;
    } else if (path !== undefined && !afterOperand) {
      found.add(path);
      afterOperand = true;
    } else if (word !== undefined) {
      afterOperand = ["NULL", "TRUE", "FALSE"].includes(word.toUpperCase());
    } else {
      // A string, a number or a closing parenthesis ends an operand; any other sign does not.
      afterOperand = path !== undefined || /^['"\d)]/.test(token);
    }
  }
  return found;
}
