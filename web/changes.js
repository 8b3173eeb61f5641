// A view read as an async iterator: `for await (const change of view)`.
//
// Each iterator has its own buffer of the changes its reader has not taken yet, holding at most
// one change per record key: a reader slower than the stream gets, per record, the net change
// since it last saw that record, never a backlog. So the buffer is bounded by the view's own
// records (plus the keys that left since). The rules, from what the reader holds:
//
//   it does not hold the record (snapshot or insert waiting):  + update -> that kind, newest record
//                                                             + oof    -> nothing: it never saw it
//   it holds the record (update or oof waiting):              + oof    -> the oof
//                                                             + other  -> update, newest record
//
// A waiting change keeps its place in the order. The iterator ends (done) when the view is
// closed, and throws the view's PushError when it fails (refused, timed out, aborted, dropped, or
// its client closed for good), in both cases after the changes already waiting. Leaving the loop
// early (break, return, throw) stops this iterator only; the view stays open until view.close().

/**
 * @template [T=any]
 * @typedef {import("./view.js").Change<T>} Change
 */

/**
 * @template T
 * @typedef {{ resolve: (result: IteratorResult<Change<T>, undefined>) => void, reject: (error: Error) => void }} Reader
 */

/**
 * @template [T=any]
 * @implements {AsyncIterableIterator<Change<T>>}
 */
export class ChangeIterator {
  /**
   * @param {Iterable<[string, T]>} held  the view's records now: the reader starts from them
   * @param {(iterator: ChangeIterator<T>) => void} detach  called once, when it stops
   */
  constructor(held, detach) {
    /** @type {Map<string, Change<T>>} */
    this._waiting = new Map();
    for (const [key, record] of held) this._waiting.set(key, { key, record, kind: "snapshot" });
    this._detach = detach;
    /** @type {Reader<T>[]} next() calls waiting for a change, in order */
    this._readers = [];
    this._ended = false;
    /** @type {Error | null} thrown once the waiting changes are taken */
    this._error = null;
  }

  /** @param {Change<T>} change */
  push(change) {
    if (this._ended) return;
    const reader = this._readers.shift();
    if (reader) {
      reader.resolve({ value: change, done: false }); // (nothing waits while a reader does)
      return;
    }
    const waiting = this._waiting.get(change.key);
    if (waiting === undefined) {
      this._waiting.set(change.key, change);
    } else if (waiting.kind === "snapshot" || waiting.kind === "insert") {
      if (change.kind === "oof") this._waiting.delete(change.key);
      else this._waiting.set(change.key, { ...change, kind: waiting.kind });
    } else {
      this._waiting.set(change.key, change.kind === "oof" ? change : { ...change, kind: "update" });
    }
  }

  /** The view ended: done after the waiting changes, or `error` thrown after them. @param {Error | null} error */
  end(error) {
    if (this._ended) return;
    this._ended = true;
    this._error = error;
    this._detach(this);
    for (const reader of this._readers.splice(0)) this._settle(reader);
  }

  /** @returns {Promise<IteratorResult<Change<T>, undefined>>} */
  next() {
    return new Promise((resolve, reject) => {
      if (this._waiting.size || this._ended) this._settle({ resolve, reject });
      else this._readers.push({ resolve, reject });
    });
  }

  /**
   * Stop reading (a `break` out of the loop): the view is not closed.
   * @returns {Promise<IteratorResult<Change<T>, undefined>>} */
  return() {
    this._waiting.clear();
    this._error = null;
    this.end(null);
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** @param {Reader<T>} reader */
  _settle(reader) {
    const first = this._waiting.entries().next();
    if (!first.done) {
      this._waiting.delete(first.value[0]);
      reader.resolve({ value: first.value[1], done: false });
    } else if (this._error) {
      const error = this._error;
      this._error = null;
      reader.reject(error);
    } else {
      reader.resolve({ value: undefined, done: true });
    }
  }
}
