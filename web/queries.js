// One-off queries (`sow`): the records between group_begin and group_end, by query_id. A query
// settles when its group_end is in, fails with the command's failure ack, and fails when the
// connection is lost under it: before its ack (requests.js says so), or after it, while its
// records are still coming.

import { underDeadline } from "./deadline.js";

/**
 * @typedef {import("./deadline.js").RequestOptions} RequestOptions
 * @typedef {import("./requests.js").Requests} Requests
 * @typedef {{ answered: boolean, receive: (message: any) => void, fail: (error: Error) => void }} Query
 */

export class Queries {
  /** @param {Requests} requests  where the sow commands go */
  constructor(requests) {
    this._requests = requests;
    /** @type {Map<string, Query>} */
    this._queries = new Map();
  }

  /**
   * Send a sow command (it has its query_id) and collect its records.
   * @param {Record<string, any>} message @param {RequestOptions} deadline @param {() => string} hint
   * @returns {Promise<any[]>}
   */
  ask(message, deadline, hint) {
    const queryId = String(message.query_id);
    return underDeadline(message.c, deadline, (resolve, reject) => {
      /** @type {any[]} */
      const records = [];
      /** @type {Query} */
      const query = {
        answered: false,
        fail: reject,
        receive: (m) => {
          if (m.c === "sow") records.push(m.data);
          if (m.c !== "group_end") return;
          this._queries.delete(queryId);
          resolve(records);
        },
      };
      this._queries.set(queryId, query);
      const cancel = new AbortController(); // the deadline is the query's; this takes the command back
      this._requests.request(message, { signal: cancel.signal }).then(
        () => { query.answered = true; },
        (error) => {
          this._queries.delete(queryId);
          reject(error);
        },
      );
      return () => {
        this._queries.delete(queryId);
        cancel.abort();
      };
    }, hint);
  }

  /** @param {any} message  one with a query_id @returns {boolean} whether it was a query's */
  receive(message) {
    const query = this._queries.get(String(message.query_id));
    query?.receive(message);
    return query !== undefined;
  }

  /**
   * The connection went away: the queries whose records were coming fail (the others wait, or
   * fail through their command); all of them when it is closed for good.
   * @param {(command: string) => Error} failure @param {boolean} final
   */
  lost(failure, final) {
    for (const [id, query] of this._queries) {
      if (final || query.answered) {
        this._queries.delete(id);
        query.fail(failure("sow"));
      }
    }
  }
}
