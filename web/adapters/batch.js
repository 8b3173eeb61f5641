// The changes of a view waiting to reach a grid, collapsed per key. Only a key's latest state
// matters to a grid, and what the grid must do with it depends on whether the grid already holds
// the key's row, so a batch keeps both: the latest state of each changed key, and the rows the
// grid holds. Taking the batch turns the difference into one transaction of adds, updates and
// removes. No grid library is imported here: any grid with row ids and transactions fits.
//
//   insert then oof       -> nothing (the grid never held the row)
//   insert then update    -> add, with the latest record
//   update then oof       -> remove
//   oof then insert       -> update (the row stays where it is, with the new record)
//   any number of updates -> one update, with the latest record

/** A key's state in a batch: its latest record, or `GONE` once it left the view. */
const GONE = Symbol("gone");

/**
 * @typedef {object} RowTransaction
 * @property {any[]} add  records of keys the grid did not hold
 * @property {any[]} update  the latest records of keys the grid holds
 * @property {any[]} remove  the records the grid holds for keys that left the view
 * @property {number} changes  the view changes this transaction carries (collapsed ones too)
 */

export class RowBatch {
  constructor() {
    /** @type {Map<string, any>} key -> its latest record, or GONE */
    this.pending = new Map();
    /** @type {Map<string, any>} key -> the record the grid holds (once what was taken is applied) */
    this.held = new Map();
    /** View changes since the last take (several may collapse into one row operation). */
    this.changes = 0;
  }

  /** Whether anything waits. */
  get size() {
    return this.pending.size;
  }

  /** A key's record entered the view or changed. @param {string} key @param {any} record */
  set(key, record) {
    this.pending.set(key, record);
    this.changes += 1;
  }

  /** A key left the view. @param {string} key */
  drop(key) {
    this.pending.set(key, GONE);
    this.changes += 1;
  }

  /**
   * Start again from what the grid holds, every pending change forgotten (the grid was just given
   * its whole content).
   * @param {Iterable<[string, any]>} rows
   */
  reset(rows) {
    this.pending.clear();
    this.held = new Map(rows);
    this.changes = 0;
  }

  /**
   * Everything waiting, as one transaction against what the grid holds; from now on the batch
   * counts it as held, so the caller must hand it to the grid.
   * @returns {RowTransaction}
   */
  take() {
    /** @type {RowTransaction} */
    const tx = { add: [], update: [], remove: [], changes: this.changes };
    for (const [key, record] of this.pending) {
      const held = this.held.get(key);
      if (record === GONE) {
        if (held === undefined) continue;
        this.held.delete(key);
        tx.remove.push(held);
      } else {
        this.held.set(key, record);
        (held === undefined ? tx.add : tx.update).push(record);
      }
    }
    this.pending.clear();
    this.changes = 0;
    return tx;
  }
}
