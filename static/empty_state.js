// The words over an empty table: why a view has no rows, in the order a desk would ask.

/**
 * @param {{ topic: string, filter: string, quick: Record<string, string>, error: string,
 *   established: boolean, connection: { state: string, attempt: number }, count: number,
 *   notConfigured: string, unknownFields: { missing: string[], fields: string[], read: number, whole: boolean } | null | undefined,
 *   linkFilter: string }} view
 * @returns {[string, string]} its kind (a `data-kind` for the tests and the styles) and its text;
 *   both empty when the view has rows
 */
export function whyEmpty(view) {
  const { topic, filter, count, connection } = view;
  if (view.error && count === 0) return ["refused", `The server refused this view: ${view.error}`];
  if (!view.established && connection.state !== "open") return notConnected(connection);
  if (!view.established) return ["waiting", `Waiting for the first rows of ${topic}…`];
  if (count > 0) return ["", ""];
  if (Object.keys(view.quick).length) return ["quick", "No rows match the quick filters."];
  if (view.linkFilter) return ["linked", `No record of ${topic} matches the rows selected in the linked view (${view.linkFilter}).`];
  if (view.notConfigured) {
    return ["unknown", `${topic} is not a topic the server keeps records of (it says: ${view.notConfigured}). Live publishes to it appear here.`];
  }
  if (filter && view.unknownFields?.missing.length) {
    const { missing, fields, read, whole } = view.unknownFields;
    const named = missing.map((field) => `/${field}`).join(" or ");
    const have = fields.map((field) => `/${field}`).join(", ");
    // Said of the records read: all of them, or the first ones of a big topic.
    const which = whole ? `No record of ${topic} has` : `None of the first ${read} records of ${topic} has`;
    return ["unknown-field", `${which} ${named}: ${whole ? "its records have" : "they have"} ${have}.`];
  }
  if (filter) return ["no-match", `No record of ${topic} matches ${filter} yet.`];
  return ["no-records", `${topic} has no records yet.`];
}

/** Why a view not yet open waits, from the connection's state (web/connection.js): before the
 * first attempt (idle) and during it, it is connecting, not disconnected; an attempt is numbered
 * only once one has failed. @param {{ state: string, attempt: number }} connection
 * @returns {[string, string]} */
function notConnected({ state, attempt }) {
  if (state === "idle" || (state === "connecting" && attempt <= 1)) return ["connecting", "Connecting to the server…"];
  if (state === "closed") return ["disconnected", "Not connected to the server, and not retrying: reload the page to connect again."];
  const which = state === "waiting" ? `attempt ${attempt} soon` : `attempt ${attempt} under way`;
  return ["disconnected", `Not connected to the server (${which}); the view opens when it answers.`];
}
