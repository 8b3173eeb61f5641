// Types of errors.js: every rejection of the client is a PushError with a stable `code`.

/** The code of a command the server refused: its failure ack's reason, in words with underscores. */
export type RefusalCode =
  | "bad_filter"
  | "invalid_topic"
  | "invalid_options"
  | "invalid_order_by"
  | "not_entitled"
  | "auth_failure"
  | "logon_required"
  | "subid_in_use"
  | "no_topic"
  | "bad_message"
  | "name_in_use"
  | "unavailable"
  /** a reason this client does not know (`reason` holds it) */
  | "refused";

/** The code of a connection that ended, from its WebSocket close code (see CLOSE_CODES). */
export type CloseCode =
  | "closed"
  | "going_away"
  | "connection_lost"
  | "bad_credentials"
  | "too_large"
  | "server_error"
  | "given_up"
  | "slow_consumer"
  | "replaced";

/** Every code a PushError can have. */
export type PushErrorCode =
  | RefusalCode
  | CloseCode
  /** no answer within the request's timeoutMs */
  | "timeout"
  /** the request's AbortSignal fired */
  | "aborted"
  /** the server dropped a view (`unsubscribed`, back pressure) */
  | "dropped"
  /** a frame from the server that is not JSON (the client's "error" event) */
  | "bad_frame";

/** A failure ack's reason (its words before any colon) -> the error's code. */
export declare const REFUSAL_CODES: { readonly [reason: string]: RefusalCode };

/**
 * A WebSocket close code -> the error's code: 1000 closed, 1001 going_away, 1006 connection_lost,
 * 1008 bad_credentials, 1009 too_large, 1011 server_error, 4000 given_up (this side gave up on
 * the socket), 4001 slow_consumer, 4002 replaced (a newer logon with the same client name). Any
 * other close code is "connection_lost".
 */
export declare const CLOSE_CODES: { readonly [closeCode: number]: CloseCode };

/** The root of every error the client produces. */
export declare class PushError extends Error {
  constructor(code: PushErrorCode, message: string, details?: { reason?: string; command?: string; cause?: unknown });
  /** Stable, to switch on. */
  code: PushErrorCode;
  /** The server's text (a failure ack's or a close's reason), or "". */
  reason: string;
  /** The command that failed: "publish", "sow", "subscribe", "logon", "connect", ... */
  command: string;
}

/** The server refused a command: `code` is from its failure ack's reason, `reason` is that reason. */
export declare class CommandRefused extends PushError {
  constructor(reason: string, command: string);
  code: RefusalCode;
}

/**
 * The connection ended under a command (it had been sent and the answer was lost), or the client
 * is closed for good (everything waiting fails, and so does every command made afterwards).
 * A refused logon is a ConnectionClosed with code "bad_credentials" whose `cause` is the
 * CommandRefused (code "auth_failure" or "name_in_use").
 */
export declare class ConnectionClosed extends PushError {
  constructor(closeCode: number, reason: string, details?: { command?: string; cause?: unknown });
  code: CloseCode;
  /** The WebSocket close code. */
  closeCode: number;
}

/** No answer within the request's timeoutMs (code "timeout"). */
export declare class RequestTimeout extends PushError {
  constructor(command: string, timeoutMs: number, hint?: string);
  code: "timeout";
  timeoutMs: number;
}

/** The request's AbortSignal fired (code "aborted"); `cause` is the signal's reason. */
export declare class RequestAborted extends PushError {
  constructor(command: string, cause: unknown);
  code: "aborted";
}

/** The server dropped a view (code "dropped"); `reason` is the server's, e.g. "back_pressure". */
export declare class ViewDropped extends PushError {
  constructor(reason: string, command: string);
  code: "dropped";
}

/**
 * A topic the server does not keep (docs/protocol.md, Topics the server does not keep): not an
 * error, the view or the publish goes on as plain pub/sub. A view's `warning`, and the view's and
 * the client's "warning" events.
 */
export interface TopicWarning {
  readonly code: "unconfigured_topic";
  /** The topic, as sent. */
  readonly topic: string;
  /** The server's words: "unconfigured topic: 'ordrs' is not a configured topic of this server, ...; did you mean 'orders'? (configured: orders)". */
  readonly reason: string;
  /** The configured topics close to it, closest first (may be empty). */
  readonly didYouMean: string[];
  /** Every configured topic, when the server has few (at most 10). */
  readonly configuredTopics: string[] | undefined;
  /** The command it answered: "sow_and_subscribe", "publish", ... */
  readonly command: string;
}

/** The TopicWarning an ack or a group_end carries (its `warning` field), or null. */
export declare function topicWarning(message: unknown, topic: string, command: string): TopicWarning | null;
