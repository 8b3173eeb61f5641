// Types of batch.js: a view's changes waiting for a grid, collapsed per key.

/** One transaction for a grid: what to add, update and remove to catch up with the view. */
export interface RowTransaction<T = any> {
  /** records of keys the grid did not hold */
  add: T[];
  /** the latest records of keys the grid holds */
  update: T[];
  /** the records the grid holds for keys that left the view */
  remove: T[];
  /** the view changes it carries (those collapsed into others included) */
  changes: number;
}

export declare class RowBatch<T = any> {
  /** key -> the record the grid holds (once what was taken is applied) */
  readonly held: Map<string, T>;
  /** View changes since the last take. */
  readonly changes: number;
  /** Whether anything waits (the number of keys with changes). */
  readonly size: number;
  /** A key's record entered the view or changed. */
  set(key: string, record: T): void;
  /** A key left the view. */
  drop(key: string): void;
  /** Start again from what the grid holds, every pending change forgotten. */
  reset(rows: Iterable<[string, T]>): void;
  /** Everything waiting as one transaction; from now on counted as held by the grid. */
  take(): RowTransaction<T>;
}
