// The changes asked of a viewport (moveTo, sortBy, filterBy) on their way to the server.
//
// At most one subscribe or replace of a viewport is in flight at a time: changes asked meanwhile
// wait, and the next replace states all of them at once (the latest range, order and filter).
// A grid that scrolls asks for a move per frame; one request per round trip keeps the server's
// work to the windows the user can still see, and the answer to the last request is the latest
// window asked for.
//
// Every change settles once:
// - applied: it resolves when the server's answer to the request that carried it is applied to
//   the viewport (after the "rows" event of that frame), with `superseded: false`;
// - superseded: a change still waiting whose every part a newer one replaces (a moveTo after a
//   moveTo, a sortBy after a sortBy...) is never sent; it resolves at once with
//   `superseded: true`, and the newer one's promise tells when the rows are there;
// - refused: the server refused the request (a bad filter, say): every change it carried rejects
//   with that CommandRefused and the viewport stays as it was;
// - ended: the viewport ended (closed, failed, its client closed for good): what is still waiting
//   rejects with the viewport's error (code "closed" after close()).
// A request lost with its connection is not a failure: its changes wait for the next connection,
// where the viewport subscribes again with everything asked.

/**
 * @typedef {"rows" | "orderby" | "filter"} Part
 *
 * @typedef {object} MoveResult  what a viewport's moveTo, sortBy and filterBy resolve with
 * @property {boolean} superseded  a newer change replaced this one before it was sent
 * @property {number} first  the window applied when it settled (rows first..last, inclusive)
 * @property {number} last
 * @property {number | null} count  the view's size, when the server counts it
 *
 * @typedef {object} Move  one change asked, until it settles
 * @property {Set<Part>} parts  what it changes
 * @property {(result: MoveResult) => void} resolve
 * @property {(error: Error) => void} reject
 */

export class Moves {
  constructor() {
    /** @type {Move[]} asked, not yet sent */
    this.waiting = [];
    /** @type {Move[] | null} carried by the request in flight (null: none in flight) */
    this.inFlight = null;
  }

  /**
   * A new change: it supersedes the waiting ones it covers.
   * @param {Part[]} parts
   * @param {() => MoveResult} now  the viewport's window, for a superseded one's result
   * @returns {Promise<MoveResult>}
   */
  ask(parts, now) {
    const covers = new Set(parts);
    const superseded = this.waiting.filter((move) => [...move.parts].every((part) => covers.has(part)));
    this.waiting = this.waiting.filter((move) => !superseded.includes(move));
    for (const move of superseded) move.resolve({ ...now(), superseded: true });
    const settled = new Promise((resolve, reject) => this.waiting.push({ parts: covers, resolve, reject }));
    // A grid moves without awaiting each move: one that fails (the viewport closed under it, a
    // refusal) must not be an unhandled rejection. The caller who awaits it still gets the error,
    // and a refusal is also the viewport's "error" event.
    settled.catch(() => {});
    return settled;
  }

  /** A request goes out carrying every waiting change. @returns {Move[]} */
  send() {
    this.inFlight = [...(this.inFlight ?? []), ...this.waiting.splice(0)];
    return this.inFlight;
  }

  /** The answer to the request in flight is applied: its changes, to settle. @returns {Move[]} */
  answered() {
    const done = this.inFlight ?? [];
    this.inFlight = null;
    return done;
  }

  /** The connection went away under the request in flight: its changes wait for the next one. */
  lost() {
    if (this.inFlight) this.waiting.unshift(...this.inFlight);
    this.inFlight = null;
  }

  /** Everything still waiting or in flight fails. @param {Error} error */
  failAll(error) {
    const all = [...(this.inFlight ?? []), ...this.waiting];
    this.inFlight = null;
    this.waiting = [];
    for (const move of all) move.reject(error);
  }
}
