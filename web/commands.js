// What a PushClient's callers ask for, as the commands it sends (docs/protocol.md, Commands):
// each field only when given. Pure: no socket, no state (client.js sends them).

/**
 * The logon of every connection attempt.
 * @param {{ clientName?: string, userId?: string, password?: string, label?: string }} who
 * @returns {Record<string, any>}
 */
export function logonCommand({ clientName, userId, password, label }) {
  /** @type {Record<string, any>} */
  const logon = { c: "logon" };
  if (clientName) logon.client_name = clientName;
  if (userId) logon.user_id = userId;
  if (password) logon.pw = password;
  if (label) logon.label = label;
  return logon;
}

/**
 * A publish or delta publish, with its expiration (seconds) when given.
 * @param {"publish" | "delta_publish"} c @param {string} topic @param {any} data
 * @param {number} [expiration]
 * @returns {Record<string, any>}
 */
export function publishCommand(c, topic, data, expiration) {
  /** @type {Record<string, any>} */
  const message = { c, t: topic, data };
  if (expiration !== undefined) message.e = expiration;
  return message;
}

/**
 * A delete by filter, by SowKeys or by the key of `data` (the server refuses more than one).
 * @param {string} topic @param {{ filter?: string, keys?: string[], data?: any }} which
 * @returns {Record<string, any>}
 */
export function sowDeleteCommand(topic, { filter, keys, data }) {
  /** @type {Record<string, any>} */
  const message = { c: "sow_delete", t: topic };
  if (filter !== undefined) message.filter = filter;
  if (keys !== undefined) message.sow_keys = keys.join(",");
  if (data !== undefined) message.data = data;
  return message;
}

/**
 * A one-off query.
 * @param {string} topic @param {string} queryId
 * @param {{ filter?: string, orderby?: string, topN?: number, skipN?: number, options?: string }} query
 * @returns {Record<string, any>}
 */
export function sowCommand(topic, queryId, { filter, orderby, topN, skipN, options }) {
  /** @type {Record<string, any>} */
  const message = { c: "sow", t: topic, query_id: queryId };
  if (filter) message.filter = filter;
  if (orderby) message.orderby = orderby;
  if (topN !== undefined) message.top_n = topN;
  if (skipN !== undefined) message.skip_n = skipN;
  if (options) message.o = options;
  return message;
}
