// The client's one exception tree. Every promise the client rejects, every view it fails and every
// iterator it ends with an error gives a PushError, whose `code` is a stable string to switch on:
//
//   PushError            code, reason (the server's text, when there is one), command
//     CommandRefused     the server refused a command: code from its failure ack's reason
//     ConnectionClosed   the connection ended under a command: code from the close code
//     RequestTimeout     code "timeout": no answer within `timeoutMs`
//     RequestAborted     code "aborted": the caller's AbortSignal fired (its reason is the cause)
//     ViewDropped        code "dropped": the server dropped a view (`unsubscribed`, back pressure)
//
// The codes are the protocol's own words (docs/protocol.md, Messages from the server and Errors) with underscores, so a server reason
// "bad filter: expected ')' at column 14" is the code "bad_filter" and the reason in full.
//
// Beside them, not an error: a TopicWarning (topicWarning), the server's words when a view or a
// publish names a topic it does not keep (a typo): the view or publish goes on as plain pub/sub.

/** A failure ack's reason (its words before any colon) -> the error's code. */
export const REFUSAL_CODES = Object.freeze(/** @type {const} */ ({
  "bad filter": "bad_filter",
  "invalid topic": "invalid_topic",
  "invalid options": "invalid_options",
  "invalid order by": "invalid_order_by",
  "not entitled": "not_entitled",
  "auth failure": "auth_failure",
  "logon required": "logon_required",
  "subid in use": "subid_in_use",
  "no topic": "no_topic",
  "bad message": "bad_message",
  "name in use": "name_in_use",
  "unavailable": "unavailable",
}));

/** A WebSocket close code -> the error's code (any other code is "connection_lost"). */
export const CLOSE_CODES = Object.freeze(/** @type {const} */ ({
  1000: "closed", // close() on this side (or a plain close by the server)
  1001: "going_away", // the server is shutting down; the client reconnects
  1006: "connection_lost", // no close frame: the network or the server went away
  1008: "bad_credentials", // a refused logon: wrong password, or a client name of another user
  1009: "too_large", // a frame over the server's max_message_bytes
  1011: "server_error",
  4000: "given_up", // this side gave up on the socket: no heartbeat answer, or connect timeout
  4001: "slow_consumer", // the server's queue for this socket stayed full
  4002: "replaced", // a newer logon with the same client name took over
}));

/**
 * @typedef {typeof REFUSAL_CODES[keyof typeof REFUSAL_CODES] | "refused"} RefusalCode
 *   "refused": a reason this client does not know
 * @typedef {typeof CLOSE_CODES[keyof typeof CLOSE_CODES]} CloseCode
 * @typedef {RefusalCode | CloseCode | "timeout" | "aborted" | "dropped" | "bad_frame"} PushErrorCode
 */

/** @template {PushErrorCode} [Code=PushErrorCode] */
export class PushError extends Error {
  /**
   * @param {Code} code
   * @param {string} message
   * @param {{ reason?: string, command?: string, cause?: unknown }} [details]
   */
  constructor(code, message, { reason = "", command = "", cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "PushError";
    /** @type {Code} stable, to switch on */
    this.code = code;
    /** @type {string} the server's text (a failure ack's or a close's reason), or "" */
    this.reason = reason;
    /** @type {string} the command that failed ("publish", "sow", "subscribe", "logon", ...) */
    this.command = command;
  }
}

/** @extends {PushError<RefusalCode>} */
export class CommandRefused extends PushError {
  /** @param {string} reason  the failure ack's @param {string} command */
  constructor(reason, command) {
    const head = reason.split(":", 1)[0].trim();
    const code = /** @type {Record<string, RefusalCode>} */ (REFUSAL_CODES)[head] ?? "refused";
    super(code, reason, { reason, command });
    this.name = "CommandRefused";
  }
}

/** @extends {PushError<CloseCode>} */
export class ConnectionClosed extends PushError {
  /**
   * @param {number} closeCode @param {string} reason
   * @param {{ command?: string, cause?: unknown }} [details]
   */
  constructor(closeCode, reason, { command = "", cause } = {}) {
    const code = /** @type {Record<number, CloseCode>} */ (CLOSE_CODES)[closeCode] ?? "connection_lost";
    super(code, `connection closed (${closeCode}${reason ? `: ${reason}` : ""})`, { reason, command, cause });
    this.name = "ConnectionClosed";
    /** The WebSocket close code. */
    this.closeCode = closeCode;
  }
}

/** @extends {PushError<"timeout">} */
export class RequestTimeout extends PushError {
  /** @param {string} command @param {number} timeoutMs @param {string} [hint] */
  constructor(command, timeoutMs, hint = "") {
    super("timeout", `${command}: no answer within ${timeoutMs} ms${hint ? ` (${hint})` : ""}`, { command });
    this.name = "RequestTimeout";
    this.timeoutMs = timeoutMs;
  }
}

/** @extends {PushError<"aborted">} */
export class RequestAborted extends PushError {
  /** @param {string} command @param {unknown} cause  the signal's reason */
  constructor(command, cause) {
    super("aborted", `${command}: aborted`, { command, cause });
    this.name = "RequestAborted";
  }
}

/** @extends {PushError<"dropped">} */
export class ViewDropped extends PushError {
  /** @param {string} reason  the server's (`back_pressure`) @param {string} command */
  constructor(reason, command) {
    super("dropped", `the server dropped the view (${reason})`, { reason, command });
    this.name = "ViewDropped";
  }
}

/**
 * A topic the server does not keep (docs/protocol.md, Topics the server does not keep): a view's
 * `warning`, and the view's and the client's "warning" events.
 * @typedef {object} TopicWarning
 * @property {"unconfigured_topic"} code
 * @property {string} topic  as sent
 * @property {string} reason  the server's words, e.g. "unconfigured topic: 'ordrs' is not a
 *   configured topic of this server, so it is plain pub/sub (...); did you mean 'orders'? (...)"
 * @property {string[]} didYouMean  the configured topics close to it, closest first (may be empty)
 * @property {string[] | undefined} configuredTopics  every configured topic, when they are few
 * @property {string} command  the command it answered: "sow_and_subscribe", "publish", ...
 */

/**
 * The warning an ack or a group_end carries, or null when it carries none.
 * @param {any} message @param {string} topic @param {string} command
 * @returns {TopicWarning | null}
 */
export function topicWarning(message, topic, command) {
  if (typeof message?.warning !== "string") return null;
  return Object.freeze({
    code: /** @type {const} */ ("unconfigured_topic"),
    topic: typeof message.t === "string" ? message.t : topic,
    reason: message.warning,
    didYouMean: Array.isArray(message.did_you_mean) ? message.did_you_mean.map(String) : [],
    configuredTopics: Array.isArray(message.configured_topics) ? message.configured_topics.map(String) : undefined,
    command,
  });
}
