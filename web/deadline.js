// How a request stops waiting: the caller's AbortSignal fires (RequestAborted) or its timeoutMs
// passes (RequestTimeout). A Deadline fires at most once; clear() disarms it.

import { RequestAborted, RequestTimeout } from "./errors.js";

/**
 * @typedef {object} RequestOptions
 * @property {AbortSignal} [signal]  aborting it rejects the request at once with code "aborted"
 * @property {number} [timeoutMs]  no answer by then rejects it with code "timeout" (0: no limit)
 */

export class Deadline {
  /**
   * @param {string} command  named in the error
   * @param {RequestOptions} options
   * @param {(error: RequestAborted | RequestTimeout) => void} expire  called once, when it fires
   * @param {() => string} [hint]  why there may have been no answer, for the timeout's message
   */
  constructor(command, { signal, timeoutMs }, expire, hint) {
    this._expire = expire;
    this._signal = signal;
    this._onAbort = () => this._fire(new RequestAborted(command, signal?.reason));
    /** @type {ReturnType<typeof setTimeout> | null} */
    this._timer = null;
    this.fired = false;
    if (signal?.aborted) {
      this._fire(new RequestAborted(command, signal.reason));
      return;
    }
    signal?.addEventListener("abort", this._onAbort, { once: true });
    if (timeoutMs && timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      this._timer = setTimeout(() => this._fire(new RequestTimeout(command, timeoutMs, hint?.())), timeoutMs);
    }
  }

  /** Stop the timer only: the signal still counts (a view stays abortable once it is ready). */
  stopTimer() {
    if (this._timer !== null) clearTimeout(this._timer);
    this._timer = null;
  }

  /** Disarm both. */
  clear() {
    this.stopTimer();
    this._signal?.removeEventListener("abort", this._onAbort);
  }

  /** @param {RequestAborted | RequestTimeout} error */
  _fire(error) {
    if (this.fired) return;
    this.fired = true;
    this.clear();
    this._expire(error);
  }
}

/**
 * A promise for one request under a deadline. `start(resolve, reject)` begins the work and returns
 * how to cancel it; when the deadline fires first the work is cancelled and the promise rejects
 * with the deadline's error. It settles once; what comes after is ignored.
 * @template T
 * @param {string} command
 * @param {RequestOptions} options
 * @param {(resolve: (value: T) => void, reject: (error: Error) => void) => ((error: Error) => void) | void} start
 * @param {() => string} [hint]
 * @returns {Promise<T>}
 */
export function underDeadline(command, options, start, hint) {
  return new Promise((resolve, reject) => {
    let settled = false;
    /** @type {((error: Error) => void) | void} */
    let cancel;
    const deadline = new Deadline(command, options, (error) => {
      if (settled) return;
      settled = true;
      cancel?.(error);
      reject(error);
    }, hint);
    if (settled) return; // aborted before it began: nothing is started
    cancel = start(
      (value) => {
        if (settled) return;
        settled = true;
        deadline.clear();
        resolve(value);
      },
      (error) => {
        if (settled) return;
        settled = true;
        deadline.clear();
        reject(error);
      },
    );
  });
}
